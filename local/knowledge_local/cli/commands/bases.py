"""``knowledge bases [--json]``: the knowledge bases the caller can list, one line each (id, name,
scope with its team, status)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from typing import Any

from knowledge_local.cli.client import KnowledgeClient


def add_commands(commands: Any, shared: Sequence[argparse.ArgumentParser]) -> None:
    """Register ``bases`` on the ``knowledge`` parser's commands."""
    bases_parser = commands.add_parser(
        "bases", help="list the knowledge bases: id, name, scope, status", parents=shared
    )
    bases_parser.add_argument("--json", action="store_true", help="print every base as the API answers it")
    bases_parser.set_defaults(run=_bases)


def _bases(client: KnowledgeClient, arguments: argparse.Namespace) -> int:
    bases = list(client.bases())
    if arguments.json:
        print(json.dumps({"knowledge_bases": bases}, indent=2, ensure_ascii=False))
        return 0
    if not bases:
        print("No knowledge bases.")
        return 0
    print(bases_table(bases))
    return 0


def bases_table(bases: list[dict[str, Any]]) -> str:
    """One line per base: id, name, scope (with its team) and status, in aligned columns."""
    rows = [
        (
            str(base.get("knowledge_base_id", "")),
            str(base.get("name", "")),
            f"team {base['team_id']}" if base.get("team_id") else str(base.get("scope", "")),
            str(base.get("status", "")),
        )
        for base in bases
    ]
    header = ("id", "name", "scope", "status")
    widths = [max(len(row[column]) for row in [header, *rows]) for column in range(len(header))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in [header, *rows]
    )
