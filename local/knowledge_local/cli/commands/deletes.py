"""``knowledge purge-item ITEM [--dry-run] [--json]``: delete an item for good
(``DELETE /v1/knowledge-items/{item}``, ``knowledge:admin``), at the version the item has now (read
first with ``GET /v1/knowledge-items/{item}``); prints one line per store and kind of the receipt
(``--dry-run``: what would go, nothing changed)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from typing import Any

from knowledge_local.cli.arguments import item_id
from knowledge_local.cli.client import KnowledgeClient
from knowledge_local.cli.commands.memory import receipt_lines


def add_commands(commands: Any, shared: Sequence[argparse.ArgumentParser]) -> None:
    """Register ``purge-item`` on the ``knowledge`` parser's commands."""
    purge = commands.add_parser(
        "purge-item",
        help="delete an item for good: records, index documents (history too), cached embeddings",
        parents=shared,
    )
    purge.add_argument("item", type=item_id, help="the item id (ki_...)")
    purge.add_argument(
        "--dry-run", action="store_true", help="print what would be removed, per store; change nothing"
    )
    purge.add_argument("--json", action="store_true", help="print the API's JSON answer")
    purge.set_defaults(run=_purge_item)


def _purge_item(client: KnowledgeClient, arguments: argparse.Namespace) -> int:
    item = client.item(arguments.item)
    params: dict[str, Any] = {"expected_version": item["version"]}
    if arguments.dry_run:
        params["dry_run"] = "true"
    answer = client.request("DELETE", f"/v1/knowledge-items/{arguments.item}", params=params)
    if arguments.json:
        print(json.dumps(answer, indent=2, ensure_ascii=False))
        return 0
    verb = "would purge" if answer.get("dry_run") else "purged"
    print(f"{verb}: {answer['knowledge_item_id']} (base {answer['knowledge_base_id']})")
    for line in receipt_lines(answer.get("receipt") or {}):
        print(line)
    return 0
