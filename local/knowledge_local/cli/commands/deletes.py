"""``knowledge purge-item ITEM [--dry-run] [--json]``: delete an item for good
(``DELETE /v1/knowledge-items/{item}``, ``knowledge:admin``), at the version the item has now (read
first with ``GET /v1/knowledge-items/{item}``); prints one line per store and kind of the receipt
(``--dry-run``: what would go, nothing changed).

``knowledge erase [--dry-run] [--confirm TENANT] [--base B ...] [--timeout S] [--json]``: erase the
whole tenant (``POST /v1/erasures``, ``knowledge:admin`` and ``memory:admin``): every base with its
items and every note, for good; with ``--base``, only those bases (no note). It follows the job on
stderr (phase, records so far, seconds) and prints the records erased by kind and one line per
store and kind of the receipt. A real erasure needs ``--confirm`` with the tenant id (the error
names it); ``--dry-run`` counts what would go. Exit status 1 when the job fails or has not ended
after ``--timeout`` seconds."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from knowledge_local.cli.arguments import UsageError, base_reference, item_id, positive_seconds
from knowledge_local.cli.client import ApiError, KnowledgeClient
from knowledge_local.cli.commands.bundles import TIMEOUT_HELP, describe, follow
from knowledge_local.cli.commands.memory import receipt_lines
from knowledge_local.cli.commands.search import base_id


def add_commands(commands: Any, shared: Sequence[argparse.ArgumentParser]) -> None:
    """Register ``purge-item`` and ``erase`` on the ``knowledge`` parser's commands."""
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
    erase = commands.add_parser(
        "erase",
        help="erase the whole tenant for good: every base, item and note (a job with a receipt)",
        parents=shared,
    )
    erase.add_argument("--dry-run", action="store_true", help="count what would be erased; change nothing")
    erase.add_argument("--confirm", metavar="TENANT", help="the tenant id: a real erasure needs it")
    erase.add_argument(
        "--base",
        action="append",
        type=base_reference,
        help="erase only this base (id kb_... or name) with its items, no note; repeatable",
    )
    erase.add_argument("--timeout", type=positive_seconds, default=None, help=TIMEOUT_HELP)
    erase.add_argument("--json", action="store_true", help="print the finished job's JSON")
    erase.set_defaults(run=_erase)


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


def _erase(client: KnowledgeClient, arguments: argparse.Namespace) -> int:
    body: dict[str, Any] = {"dry_run": arguments.dry_run}
    if arguments.confirm:
        body["confirm_tenant_id"] = arguments.confirm
    if arguments.base:
        body["knowledge_base_ids"] = [base_id(client, base, inactive=True) for base in arguments.base]
    try:
        job = client.request("POST", "/v1/erasures", json=body)
    except ApiError as error:
        tenant = error.details.get("tenant_id")
        if error.details.get("field") != "confirm_tenant_id" or tenant is None:
            raise
        if arguments.confirm and arguments.confirm != tenant:
            raise UsageError(
                f"--confirm {arguments.confirm} names another tenant than this token's ({tenant}): "
                f"give --confirm {tenant}, or check the token"
            ) from None
        what = "the chosen bases and their items" if arguments.base else "every base, item and note"
        raise UsageError(
            f"an erasure deletes {what} of tenant {tenant} for good: "
            f"run it with --confirm {tenant}, or with --dry-run to see what would go"
        ) from None
    print(f"erasure {job['erasure_id']} of tenant {job['tenant_id']} started", file=sys.stderr, flush=True)
    job = follow(client, f"/v1/erasures/{job['erasure_id']}", timeout=arguments.timeout)
    if arguments.json:
        print(json.dumps(job, indent=2, ensure_ascii=False))
    elif job["status"] == "succeeded":
        verb = "would erase" if job["dry_run"] else "erased"
        print(f"{verb}: {describe(job['erased'])} of tenant {job['tenant_id']}")
        for line in receipt_lines(job["receipt"]):
            print(line)
    if job["status"] != "succeeded":
        print(f"error: erasure {job['erasure_id']} failed: {job.get('error')}", file=sys.stderr)
        return 1
    return 0
