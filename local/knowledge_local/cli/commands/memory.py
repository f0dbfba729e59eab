"""The memory commands of ``knowledge`` (DESIGN §9), over the running API's memory tools:

    knowledge remember "fact" [--path --type --scope --team --key --agent --importance --ttl --supersedes
                               --pin]
    knowledge memories "query" [--mode --limit --path --type --scope --include-superseded --as-of
                                --consistent]
    knowledge recall ["query"] [--max-tokens --max-items --path-prefix --type --scope --team --agent
                                --as-of --consistent]
    knowledge forget NOTE_ID [--mode soft|redact|hard] [--dry-run]
    knowledge pin NOTE_ID [--order --reason --expires-at]
    knowledge unpin NOTE_ID
    knowledge pins

``remember`` prints what happened (created, updated, unchanged, duplicate) and the note id (and
``pinned`` with ``--pin``, ``not indexed yet`` until search finds it); ``memories`` one line per note
(rank, score, note id, path, content), then, on stderr, how many of the caller's notes the index
has not taken yet, when any (``--consistent`` includes them);
``recall`` the context pack's text on stdout, as an agent would paste it, then one summary line on
stderr (notes, tokens used of the budget, what was dropped and why); ``pin`` the pin (``pinned`` or
``already pinned``), ``unpin`` whether a pin was removed, ``forget`` the mode and one line per
store and kind of its receipt (``--dry-run``: what would go, nothing changed), ``pins`` one line per
pin, every page of them. ``--json`` prints the API's answer instead (``pins --json``:
``{"pins": [...]}``, all pages).
Errors and exit statuses are those of ``knowledge_local.cli.main``: an error answer's ``details`` (the
fields out of bounds, the current version...) follow its message, one indented line each.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import textwrap
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from knowledge.domain.ids import NOTE_PREFIX, is_well_formed
from knowledge_local.cli.arguments import moment
from knowledge_local.cli.client import KnowledgeClient

Command = Callable[[KnowledgeClient, argparse.Namespace], int]

MODES = ("hybrid", "lexical", "semantic", "rrf")
MEMORY_TYPES = ("fact", "preference", "decision", "event", "working", "identity")
NOTE_SCOPES = ("private", "team", "tenant")
FORGET_MODES = ("soft", "redact", "hard")

AS_OF_HELP = "answer as of this moment (ISO-8601 with a zone, e.g. 2026-05-01T12:00:00Z)"


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
        pin=arguments.pin or None,
    )
    if arguments.json:
        _print_json(answer)
        return 0
    note = answer["note"]
    pinned = ", pinned" if note.get("pinned") else ""
    unindexed = ", not indexed yet" if answer.get("indexed") is False else ""
    print(
        f"{answer['result']}: {note['note_id']} "
        f"(version {note['version']}, {note['scope']}, {note['path']}{pinned}{unindexed})"
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
        as_of=arguments.as_of,
        consistent=arguments.consistent or None,
    )
    if arguments.json:
        print(json.dumps(answer, indent=2, ensure_ascii=False))
        return 0
    results: list[dict[str, Any]] = answer.get("results") or []
    pending = answer.get("pending_index") or {}
    if pending.get("writes") and not pending.get("included"):
        print(
            f"{pending['writes']} of your notes are not indexed yet; --consistent includes them.",
            file=sys.stderr,
        )
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
    answer = client.call_tool(
        "forget_memory", note_id=arguments.note, mode=arguments.mode, dry_run=arguments.dry_run or None
    )
    if arguments.json:
        _print_json(answer)
        return 0
    verb = "would forget" if answer.get("dry_run") else "forgotten"
    print(f"{verb} ({answer['mode']}): {answer['note_id']}")
    for line in receipt_lines(answer.get("receipt") or {}):
        print(line)
    return 0


def receipt_lines(receipt: dict[str, Any]) -> list[str]:
    """One line per store and kind of a deletion receipt: ``"  index note: 1 scheduled"``."""
    lines: list[str] = []
    for store in ("table", "index", "pins", "embedding_cache", "queued_messages"):
        for entry in receipt.get(store) or []:
            lines.append(f"  {store} {entry['kind']}: {entry['count']} {entry['state']}")
    return lines


def _recall(client: KnowledgeClient, arguments: argparse.Namespace) -> int:
    answer = client.call_tool(
        "recall_context",
        query=arguments.query,
        max_tokens=arguments.max_tokens,
        max_items=arguments.max_items,
        path_prefix=arguments.path_prefix,
        memory_type=arguments.type,
        scope=arguments.scope,
        team_id=arguments.team,
        agent_id=arguments.agent,
        as_of=arguments.as_of,
        consistent=arguments.consistent or None,
    )
    if arguments.json:
        _print_json(answer)
        return 0
    text = str(answer.get("text") or "")
    if text:
        print(text, flush=True)
    print(recall_summary(answer), file=sys.stderr)
    return 0


def recall_summary(answer: dict[str, Any]) -> str:
    """One line on a ``memory_context`` answer: ``3 notes (1 pinned) of 12 candidates, 187 of 1,200
    tokens (cl100k_base); dropped: 2 budget, 1 duplicate``."""
    items: list[dict[str, Any]] = answer.get("items") or []
    budget: dict[str, Any] = answer.get("budget") or {}
    coverage: dict[str, Any] = answer.get("coverage") or {}
    pinned = sum(1 for item in items if item.get("pinned"))
    notes = f"{len(items)} note{'' if len(items) == 1 else 's'}" + (f" ({pinned} pinned)" if pinned else "")
    line = (
        f"{notes} of {int(coverage.get('candidates', len(items))):,} candidates, "
        f"{int(budget.get('used_tokens', 0)):,} of {int(budget.get('max_tokens', 0)):,} tokens "
        f"({budget.get('tokenizer', 'cl100k_base')})"
    )
    reasons = Counter(str(dropped.get("reason")) for dropped in coverage.get("dropped") or [])
    if reasons:
        line += "; dropped: " + ", ".join(f"{count} {reason}" for reason, count in sorted(reasons.items()))
    return line


def _pin(client: KnowledgeClient, arguments: argparse.Namespace) -> int:
    status, answer = client.call_tool_with_status(
        "pin_memory",
        note_id=arguments.note,
        order=arguments.order,
        reason=arguments.reason,
        expires_at=arguments.expires_at,
    )
    if arguments.json:
        _print_json(answer)
        return 0
    print(f"{'pinned' if status == 201 else 'already pinned'}: {_pin_line(answer)}")
    return 0


def _unpin(client: KnowledgeClient, arguments: argparse.Namespace) -> int:
    answer = client.call_tool("unpin_memory", note_id=arguments.note)
    if arguments.json:
        _print_json(answer)
        return 0
    if answer.get("removed"):
        print(f"unpinned: {answer['note_id']}")
    else:
        print(f"not pinned: {answer['note_id']} (nothing removed)")
    return 0


def _pins(client: KnowledgeClient, arguments: argparse.Namespace) -> int:
    pins = list(client.pins())
    if arguments.json:
        _print_json({"pins": pins})
        return 0
    if not pins:
        print("No pins.")
        return 0
    print(pins_table(pins))
    return 0


def _pin_line(pin: dict[str, Any]) -> str:
    fields = [f"pin {pin['pin_id']}", f"order {pin['order']}"]
    if pin.get("expires_at"):
        fields.append(f"expires {pin['expires_at']}")
    if pin.get("reason"):
        fields.append(f"reason: {pin['reason']}")
    return f"{pin['note_id']} ({', '.join(fields)})"


def pins_table(pins: list[dict[str, Any]]) -> str:
    """One line per pin, in the API's (pin) order: order, note id, pin id, pinned at, expiry, reason."""
    rows = [
        (
            str(pin.get("order", "")),
            str(pin.get("note_id", "")),
            str(pin.get("pin_id", "")),
            str(pin.get("created_at", "")),
            str(pin.get("expires_at") or "-"),
            " ".join(str(pin.get("reason") or "").split()),
        )
        for pin in pins
    ]
    header = ("order", "note", "pin", "pinned at", "expires", "reason")
    widths = [max(len(row[column]) for row in [header, *rows]) for column in range(len(header))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in [header, *rows]
    )


def _print_json(answer: Any) -> None:
    print(json.dumps(answer, indent=2, ensure_ascii=False))


def add_commands(commands: Any, shared: Sequence[argparse.ArgumentParser]) -> None:
    """Register ``remember``, ``memories``, ``recall``, ``forget``, ``pin``, ``unpin`` and ``pins`` on
    the ``knowledge`` parser's commands."""
    remember = commands.add_parser("remember", help="keep a durable fact (a note)", parents=shared)
    remember.add_argument("content")
    remember.add_argument("--path", help="a /-separated topic (default /)")
    remember.add_argument("--type", choices=MEMORY_TYPES, help="memory type (default fact)")
    remember.add_argument(
        "--scope",
        choices=NOTE_SCOPES,
        help="who may see it (default private; team and tenant need memory:share)",
    )
    remember.add_argument("--team", help="team id, for --scope team")
    remember.add_argument("--agent", help="agent id the note is about")
    remember.add_argument("--key", help="semantic key: remembering under it again updates the note")
    remember.add_argument("--importance", type=float, help="0-1 (default 0.5)")
    remember.add_argument("--ttl", type=int, help="seconds until the note expires")
    remember.add_argument("--supersedes", type=note_id, action="append", help="a note this one replaces")
    remember.add_argument("--pin", action="store_true", help="also pin the note (order 0)")
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
    memories.add_argument("--as-of", type=moment, help=AS_OF_HELP)
    memories.add_argument(
        "--consistent", action="store_true", help="also your notes written but not indexed yet"
    )
    memories.add_argument("--json", action="store_true", help="print the API's JSON answer")
    memories.set_defaults(run=_memories)

    recall = commands.add_parser(
        "recall", help="a context pack of your notes within a token budget, pins first", parents=shared
    )
    recall.add_argument(
        "query", nargs="?", help="what the pack is for (default: most important, then newest)"
    )
    recall.add_argument("--max-tokens", type=int, help="token budget of the text, 64-8000 (1200)")
    recall.add_argument("--max-items", type=int, help="notes at most, 1-50 (8)")
    recall.add_argument(
        "--path-prefix", "--path", dest="path_prefix", help="only notes at this path or below"
    )
    recall.add_argument("--type", choices=MEMORY_TYPES, help="only notes of this type")
    recall.add_argument("--scope", choices=NOTE_SCOPES, help="only notes of this scope")
    recall.add_argument("--team", help="only notes of this team")
    recall.add_argument("--agent", help="only notes about this agent")
    recall.add_argument("--as-of", type=moment, help=AS_OF_HELP)
    recall.add_argument(
        "--consistent", action="store_true", help="also your notes written but not indexed yet"
    )
    recall.add_argument("--json", action="store_true", help="print the API's JSON answer")
    recall.set_defaults(run=_recall)

    forget = commands.add_parser("forget", help="forget one note", parents=shared)
    forget.add_argument("note", type=note_id, help="note id (nt_...)")
    forget.add_argument(
        "--mode", choices=FORGET_MODES, default="soft", help="soft (restorable), redact or hard"
    )
    forget.add_argument(
        "--dry-run", action="store_true", help="print what would be removed, per store; change nothing"
    )
    forget.add_argument("--json", action="store_true", help="print the API's JSON answer")
    forget.set_defaults(run=_forget)

    pin = commands.add_parser("pin", help="pin a note: recall always brings it first", parents=shared)
    pin.add_argument("note", type=note_id, help="note id (nt_...)")
    pin.add_argument("--order", type=int, help="pins are recalled by order, 0 first (0)")
    pin.add_argument("--reason", help="why it must always be there")
    pin.add_argument("--expires-at", help="when the pin stops applying (ISO-8601 with a zone)")
    pin.add_argument("--json", action="store_true", help="print the API's JSON answer")
    pin.set_defaults(run=_pin)

    unpin = commands.add_parser("unpin", help="remove a note's pin", parents=shared)
    unpin.add_argument("note", type=note_id, help="note id (nt_...)")
    unpin.add_argument("--json", action="store_true", help="print the API's JSON answer")
    unpin.set_defaults(run=_unpin)

    pins = commands.add_parser("pins", help="list the pins: order, note, pin, reason", parents=shared)
    pins.add_argument("--json", action="store_true", help="print every pin as the API answers it")
    pins.set_defaults(run=_pins)
