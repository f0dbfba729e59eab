"""The one AWS account the emulator plays: its id, its region, and the fixed credentials every
client of the local AWS endpoint signs with.

moto accepts any key pair; a fixed fake one keeps real credentials out of the local runtime, so
nothing it does can reach a real account.
"""

from __future__ import annotations

ACCOUNT_ID = "123456789012"
REGION = "us-east-1"
LOCAL_ACCESS_KEY = "local"
LOCAL_SECRET_KEY = "local"
