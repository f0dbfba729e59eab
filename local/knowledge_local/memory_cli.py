"""The memory commands of ``knowledge`` (DESIGN §9), over the running API's memory tools:

    knowledge remember "fact" [--path --type --scope --team --key --agent --importance --ttl --supersedes]
    knowledge memories "query" [--mode --limit --path --type --scope --include-superseded]
    knowledge forget NOTE_ID [--mode soft|redact|hard]

``remember`` prints what happened (created, updated, unchanged, duplicate) and the note id;
``memories`` one line per note (rank, score, note id, path, content); ``--json`` prints the API's
answer instead. Errors and exit statuses are those of ``knowledge_local.cli``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import textwrap
from collections.abc import Sequence
from typing import Any

from knowledge.domain.ids import NOTE_PREFIX, is_well_formed
from knowledge_local.client import KnowledgeClient

MODES = ("hybrid", "lexical", "semantic", "rrf")
MEMORY_TYPES = ("fact", "preference", "decision", "event", "working", "identity")
NOTE_SCOPES = ("private", "team", "tenant")
FORGET_MODES = ("soft", "redact", "hard")


def note_id(value: str) -> str:
    if not is_well_formed(value.strip(), NOTE_PREFIX):
        raise argparse.ArgumentTypeError(f"{value!r} is not a note id (nt_ followed by 26 characters)")
    return value.strip()


def _remember(client: KnowledgeClient, arguments: argparse.Namespace) -> int:
    answer = client.call_tool(
        "remember",
        content=arguments.content,
        path=arguments.path,
        memory_type=arguments.type,
        scope=arguments.scope,
        team_id=arguments.team,
        agent_id=arguments.agent,
        semantic_key=arguments.key,
        importance=arguments.importance,
        ttl_seconds=arguments.ttl,
        supersedes=arguments.supersedes or None,
    )
    if arguments.json:
        print(json.dumps(answer, indent=2, ensure_ascii=False))
        return 0
    note = answer["note"]
    print(
        f"{answer['result']}: {note['note_id']} (version {note['version']}, {note['scope']}, {note['path']})"
    )
    return 0


def _memories(client: KnowledgeClient, arguments: argparse.Namespace) -> int:
    answer = client.call_tool(
        "search_memory",
        query=arguments.query,
        mode=arguments.mode,
        limit=arguments.limit,
        path_prefix=arguments.path,
        memory_type=arguments.type,
        scope=arguments.scope,
        include_superseded=arguments.include_superseded or None,
    )
    if arguments.json:
        print(json.dumps(answer, indent=2, ensure_ascii=False))
        return 0
    results: list[dict[str, Any]] = answer.get("results") or []
    if not results:
        print("No memories.")
        return 0
    width = shutil.get_terminal_size((120, 24)).columns
    print(f"{'#':>2}  {'score':>6}  {'note':<29}  {'path':<16}  content")
    for rank, result in enumerate(results, start=1):
        path = textwrap.shorten(str(result["path"]), width=16, placeholder="…")
        prefix = f"{rank:>2}  {float(result['score']):>6.3f}  {result['note_id']:<29}  {path:<16}  "
        content = " ".join(str(result["content"]).split())
        print(prefix + textwrap.shorten(content, width=max(20, width - len(prefix)), placeholder="…"))
    return 0


def _forget(client: KnowledgeClient, arguments: argparse.Namespace) -> int:
    answer = client.call_tool("forget_memory", note_id=arguments.note, mode=arguments.mode)
    print(f"forgotten ({answer['mode']}): {answer['note_id']}")
    return 0


def add_memory_commands(commands: Any, shared: Sequence[argparse.ArgumentParser]) -> None:
    """Register ``remember``, ``memories`` and ``forget`` on the ``knowledge`` parser's commands."""
    remember = commands.add_parser("remember", help="keep a durable fact (a note)", parents=shared)
    remember.add_argument("content")
    remember.add_argument("--path", help="a /-separated topic (default /)")
    remember.add_argument("--type", choices=MEMORY_TYPES, help="memory type (default fact)")
    remember.add_argument("--scope", choices=NOTE_SCOPES, help="who may see it (default private)")
    remember.add_argument("--team", help="team id, for --scope team")
    remember.add_argument("--agent", help="agent id the note is about")
    remember.add_argument("--key", help="semantic key: remembering under it again updates the note")
    remember.add_argument("--importance", type=float, help="0-1 (default 0.5)")
    remember.add_argument("--ttl", type=int, help="seconds until the note expires")
    remember.add_argument("--supersedes", type=note_id, action="append", help="a note this one replaces")
    remember.add_argument("--json", action="store_true", help="print the API's JSON answer")
    remember.set_defaults(run=_remember)

    memories = commands.add_parser("memories", help="search your notes", parents=shared)
    memories.add_argument("query")
    memories.add_argument("--mode", choices=MODES, default="hybrid")
    memories.add_argument("--limit", type=int, default=10, help="1-50 (10)")
    memories.add_argument("--path", help="only notes at this path or below")
    memories.add_argument("--type", choices=MEMORY_TYPES, help="only notes of this type")
    memories.add_argument("--scope", choices=NOTE_SCOPES, help="only notes of this scope")
    memories.add_argument("--include-superseded", action="store_true", help="also superseded notes")
    memories.add_argument("--json", action="store_true", help="print the API's JSON answer")
    memories.set_defaults(run=_memories)

    forget = commands.add_parser("forget", help="forget one note", parents=shared)
    forget.add_argument("note", type=note_id, help="note id (nt_...)")
    forget.add_argument(
        "--mode", choices=FORGET_MODES, default="soft", help="soft (restorable), redact or hard"
    )
    forget.set_defaults(run=_forget)
