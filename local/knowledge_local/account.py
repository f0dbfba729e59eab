"""The one AWS account the emulator plays: its id, its region, the fixed credentials every client
of the local AWS endpoint signs with, and ``aws_client(service, endpoint_url)``, which builds such a
client. The emulator (provisioning, durable state) and the CLI (rotating a running runtime's dev
token) both reach the endpoint through it.

moto accepts any key pair; a fixed fake one keeps real credentials out of the local runtime, so
nothing it does can reach a real account.
"""

from __future__ import annotations

from typing import Any

ACCOUNT_ID = "123456789012"
REGION = "us-east-1"
LOCAL_ACCESS_KEY = "local"
LOCAL_SECRET_KEY = "local"


def aws_client(service: str, endpoint_url: str) -> Any:
    """A boto3 client of ``service`` on ``endpoint_url`` with the local credentials and region, and
    account-id endpoint routing off (DynamoDB Streams on moto needs it). Thread-safe once built;
    build it on one thread."""
    import boto3  # the account's constants are read where boto3 is never needed
    from botocore.config import Config

    return boto3.session.Session().client(
        service,  # type: ignore[call-overload]
        endpoint_url=endpoint_url,
        region_name=REGION,
        aws_access_key_id=LOCAL_ACCESS_KEY,
        aws_secret_access_key=LOCAL_SECRET_KEY,
        config=Config(account_id_endpoint_mode="disabled", retries={"mode": "standard"}),
    )
