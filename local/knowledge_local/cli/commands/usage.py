"""``knowledge usage [--json]``: what the caller's tenant stores and how much of each quota is left
(``GET /v1/usage``): stored items and notes against the stored items quota and the bytes of
content stored, then one line per rate
quota (limit per second, used of the burst, remaining, seconds until the burst is back)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from typing import Any

from knowledge_local.cli.client import KnowledgeClient


def add_commands(commands: Any, shared: Sequence[argparse.ArgumentParser]) -> None:
    """Register ``usage`` on the ``knowledge`` parser's commands."""
    usage = commands.add_parser(
        "usage", help="the tenant's stored items and notes, and what is left of each quota", parents=shared
    )
    usage.add_argument("--json", action="store_true", help="print the API's JSON answer")
    usage.set_defaults(run=_usage)


def _usage(client: KnowledgeClient, arguments: argparse.Namespace) -> int:
    answer = client.request("GET", "/v1/usage")
    if arguments.json:
        print(json.dumps(answer, indent=2, ensure_ascii=False))
        return 0
    print(usage_text(answer))
    return 0


def usage_text(answer: dict[str, Any]) -> str:
    """The answer as a few lines: the tenant, what it stores, then each rate quota."""
    stored = answer["stored"]
    limit = stored.get("limit")
    quota = f" of {limit:,} ({stored['remaining']:,} left)" if limit is not None else " (no limit)"
    content = f", {stored['content_bytes']:,} bytes of content" if "content_bytes" in stored else ""
    lines = [
        f"tenant {answer['tenant_id']}",
        f"stored       {stored['total']:,}{quota}: {stored['items']:,} items, {stored['notes']:,} notes"
        + content,
    ]
    for rate in answer["rates"]:
        name = str(rate["quota"]).replace("_per_second", "/s")
        if rate.get("limit") is None:
            lines.append(f"{name:<12} no limit")
            continue
        lines.append(
            f"{name:<12} {rate['used']} used of {rate['limit']}, {rate['remaining']} left, "
            f"full again in {rate['reset_seconds']} s"
        )
    return "\n".join(lines)
