"""``knowledge search "query" [--mode --alpha --max-results --base --consistent --as-of --json]``: the
ranked results, one line each (rank, final score, base name, title, item id, excerpt shortened to
the terminal), and on stderr how many published items the index has not taken yet, when any
(``--consistent`` includes them); ``--as-of`` answers as of that moment;
``knowledge read ITEM [--revision --offset | --page --limit --as-of --json]``: one item (or revision)
a page of characters at a time (``--page``: from a converted PDF's page), the position, where it is
in the original (page, sheet and rows, section) and the next page's command on stderr; ``--as-of``
reads the revision that was current at that moment."""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
import sys
import textwrap
from collections.abc import Sequence
from typing import Any

from knowledge.domain.ids import KB_PREFIX, is_well_formed
from knowledge_local.cli.arguments import (
    UsageError,
    base_reference,
    finite_number,
    item_id,
    moment,
    program_name,
    revision_id,
)
from knowledge_local.cli.client import ApiError, KnowledgeClient
from knowledge_local.cli.ingestion import AmbiguousBaseError, similar_names
from knowledge_local.state import state_dir, state_dir_prefix

MODES = ("hybrid", "lexical", "semantic", "rrf")


def add_commands(commands: Any, shared: Sequence[argparse.ArgumentParser]) -> None:
    """Register ``search`` and ``read`` on the ``knowledge`` parser's commands."""
    search_parser = commands.add_parser(
        "search", help="ranked search over published knowledge", parents=shared
    )
    search_parser.add_argument("query")
    search_parser.add_argument("--mode", choices=MODES, default="hybrid")
    search_parser.add_argument(
        "--alpha", type=finite_number, default=0.5, help="lexical weight of hybrid, 0-1 (0.5)"
    )
    search_parser.add_argument("--max-results", type=int, default=10, help="1-50 (10)")
    search_parser.add_argument("--base", type=base_reference, help="knowledge base id or name to search in")
    search_parser.add_argument(
        "--consistent", action="store_true", help="also the items published but not indexed yet"
    )
    search_parser.add_argument(
        "--as-of",
        type=moment,
        help="answer as of this moment (ISO-8601 with a zone, e.g. 2026-05-01T12:00:00Z)",
    )
    search_parser.add_argument("--json", action="store_true", help="print the API's JSON answer")
    search_parser.set_defaults(run=_search)

    read_parser = commands.add_parser(
        "read", help="read one item (or one revision) a page at a time", parents=shared
    )
    read_parser.add_argument("item", type=item_id, help="knowledge item id (ki_...)")
    read_parser.add_argument(
        "--revision", type=revision_id, help="revision id (kr_...); default: the current one"
    )
    read_parser.add_argument("--offset", type=int, default=0, help="first character (0)")
    read_parser.add_argument(
        "--page", type=int, default=None, help="start at this page of a converted PDF (instead of --offset)"
    )
    read_parser.add_argument("--limit", type=int, default=4000, help="characters, 1-10000 (4000)")
    read_parser.add_argument(
        "--as-of",
        type=moment,
        help="read as of this moment (ISO-8601 with a zone, e.g. 2026-05-01T12:00:00Z)",
    )
    read_parser.add_argument("--json", action="store_true", help="print the API's JSON answer")
    read_parser.set_defaults(run=_read)


def _search(client: KnowledgeClient, arguments: argparse.Namespace) -> int:
    answer = client.search_knowledge(
        query=arguments.query,
        mode=arguments.mode,
        alpha=arguments.alpha,
        max_results=arguments.max_results,
        knowledge_base_id=base_id(client, arguments.base) if arguments.base else None,
        consistent=arguments.consistent or None,
        as_of=arguments.as_of,
    )
    if arguments.json:
        print(json.dumps(answer, indent=2, ensure_ascii=False))
        return 0
    pending = answer.get("pending_index") or {}
    if pending.get("writes") and not pending.get("included"):
        print(
            f"{pending['writes']} published items are not indexed yet; --consistent includes them.",
            file=sys.stderr,
        )
    results = answer.get("results") or []
    if not results:
        print("No results.")
        return 0
    names = _base_names(client)
    print(results_table(results, shutil.get_terminal_size((120, 24)).columns, names))
    return 0


def _base_names(client: KnowledgeClient) -> dict[str, str]:
    """Base id → name for the bases the caller can list (empty when it cannot: the table then
    shows ids)."""
    try:
        return {str(base["knowledge_base_id"]): str(base.get("name", "")) for base in client.bases()}
    except ApiError:
        return {}


def _read(client: KnowledgeClient, arguments: argparse.Namespace) -> int:
    answer = client.search_knowledge(
        knowledge_item_id=arguments.item,
        knowledge_revision_id=arguments.revision,
        offset=arguments.offset,
        page=arguments.page,
        limit_chars=arguments.limit,
        as_of=arguments.as_of,
    )
    if arguments.json:
        print(json.dumps(answer, indent=2, ensure_ascii=False))
        return 0
    print(answer.get("content", ""), flush=True)
    start = int(answer.get("content_offset", 0))
    end = start + len(answer.get("content", ""))
    total = answer.get("content_total_chars")
    state = "current" if answer.get("is_current") else f"superseded by {answer.get('current_revision_id')}"
    fields = [
        f"title: {answer.get('title')}",
        f"item: {answer.get('knowledge_item_id')}  revision: {answer.get('knowledge_revision_id')} ({state})",
        f"characters {start}-{end} of {total}; content_offset={start} "
        f"content_limit={answer.get('content_limit')} "
        f"content_truncated={str(answer.get('content_truncated')).lower()}",
    ]
    place = original_place(answer.get("locator") or {})
    if place:
        fields.append(f"in the original: {place}")
    if answer.get("content_truncated"):
        api_url = getattr(arguments, "api_url", None)
        target = f" --api-url {shlex.quote(api_url)}" if api_url else ""
        command = f"{state_dir_prefix(state_dir())}{program_name()} read {answer.get('knowledge_item_id')}"
        as_of = f" --as-of {shlex.quote(arguments.as_of)}" if arguments.as_of else ""
        fields.append(
            f"next page: {command} --revision {answer.get('knowledge_revision_id')} "
            f"--offset {end} --limit {arguments.limit}{as_of}{target}"
        )
    print("\n".join(["---", *fields]), file=sys.stderr)
    return 0


def original_place(locator: dict[str, Any]) -> str:
    """Where a locator's span is in the original document (``page 3``, ``sheet Berths, rows
    27-31``, ``section Rotor inspection``); empty when it names nothing."""
    parts = []
    if locator.get("page") is not None:
        parts.append(f"page {locator['page']}")
    if locator.get("sheet") is not None:
        parts.append(f"sheet {locator['sheet']}")
    rows = locator.get("rows")
    if rows:
        parts.append(f"rows {rows['first']}-{rows['last']}")
    if locator.get("section") is not None:
        parts.append(f"section {locator['section']}")
    return ", ".join(parts)


def base_id(client: KnowledgeClient, base: str, *, inactive: bool = False) -> str:
    """``base`` as a knowledge base id: well-formed ids pass through (the API checks them), names
    are looked up among the active bases, and among the inactive ones too with ``inactive`` (a
    delete or an export reaches those). ``UsageError`` for a malformed ``kb_`` id,
    ``AmbiguousBaseError`` when several bases share the name, ``ApiError`` 404 for none (an
    inactive one named as such)."""
    if is_well_formed(base, KB_PREFIX):
        return base
    if base.startswith(KB_PREFIX):
        raise UsageError(
            f"{base!r} is not a knowledge base id (kb_ and 26 Crockford base32 characters): "
            "`knowledge bases` lists them"
        )
    listed = list(client.bases())  # one listing answers every case below
    named = [known for known in listed if known.get("name") == base]
    usable = named if inactive else [known for known in named if known.get("status") == "active"]
    if len(usable) > 1:
        raise AmbiguousBaseError(base, [str(known["knowledge_base_id"]) for known in usable])
    if usable:
        return str(usable[0]["knowledge_base_id"])
    if named:
        raise ApiError(
            404,
            "knowledge_resource_unavailable",
            f"The knowledge base {base!r} ({named[0]['knowledge_base_id']}) is inactive: it is in no "
            "answer until `PATCH /v1/knowledge-bases/{kb}` sets it active again.",
        )
    names = [str(known.get("name")) for known in listed if inactive or known.get("status") == "active"]
    close = similar_names(base, names)
    suggestion = f" Did you mean {_either(close)}?" if close else ""
    raise ApiError(
        404,
        "knowledge_resource_unavailable",
        f"No knowledge base named {base!r}.{suggestion} `knowledge bases` lists them all.",
    )


def _either(names: Sequence[str]) -> str:
    """``'a'``, ``'a' or 'b'``, ``'a', 'b' or 'c'``."""
    quoted = [repr(name) for name in names]
    return quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"


def results_table(results: list[dict[str, Any]], width: int, base_names: dict[str, str] | None = None) -> str:
    """One line per result: rank, final score, base (its name from ``base_names``, else its id),
    title, item id, then the excerpt on one line, shortened to the terminal's width."""
    names = base_names or {}
    bases = [
        names.get(str(result.get("knowledge_base_id", ""))) or str(result.get("knowledge_base_id", ""))
        for result in results
    ]
    base_width = min(29, max(len("base"), *(len(base) for base in bases)))
    title_width = min(40, max(len(str(result.get("title", ""))) for result in results))
    lines = [
        f"{'#':>2}  {'score':>6}  {'base':<{base_width}}  {'title':<{title_width}}  {'item':<29}  excerpt"
    ]
    for rank, (result, base_name) in enumerate(zip(results, bases, strict=True), start=1):
        title = textwrap.shorten(str(result.get("title", "")), width=title_width, placeholder="…")
        base = textwrap.shorten(base_name, width=base_width, placeholder="…")
        score = float((result.get("scores") or {}).get("final") or 0.0)
        prefix = (
            f"{rank:>2}  {score:>6.3f}  {base:<{base_width}}  {title:<{title_width}}  "
            f"{result.get('knowledge_item_id', ''):<29}  "
        )
        room = max(20, width - len(prefix))
        excerpt = textwrap.shorten(
            " ".join(str(result.get("excerpt", "")).split()), width=room, placeholder="…"
        )
        lines.append(prefix + excerpt)
    return "\n".join(lines)
