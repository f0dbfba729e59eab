"""``make run``: the local runtime (not built yet)."""

from __future__ import annotations

import sys


def main() -> int:
    print("The local runtime is not built yet: `make test` runs the suite.", file=sys.stderr)
    return 1


if __name__ == "__main__":
    raise SystemExit(main())
