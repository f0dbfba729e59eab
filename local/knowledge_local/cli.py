"""The ``knowledge`` command (not built yet)."""

from __future__ import annotations

import sys


def main() -> int:
    print("The knowledge command is not built yet.", file=sys.stderr)
    return 1
