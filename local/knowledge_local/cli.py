"""``knowledge``: the command line of a running knowledge API (``make run`` or a deployed stack).

    knowledge ingest PATH --base BASE [--archive-missing]   files or folders of .md, .txt, .rst
    knowledge search "query" [--mode --alpha --max-results --base]
    knowledge read ITEM [--revision --offset --limit]
    knowledge token create [--subject --scopes --teams --bases --expires-in]

``--base`` takes a base id (``kb_...``) or a name; a name that several bases share is a usage error
listing their ids. ``ingest`` skips files it cannot send (not UTF-8, empty, too large, links out of
the folder) with a warning each and counts them as skipped; it fails only when nothing can be
ingested. The API URL and token come from ``--api-url`` / ``--token``, else ``KNOWLEDGE_API_URL`` /
``KNOWLEDGE_TOKEN``, else the files ``make run`` writes (``.knowledge/endpoints.json`` and
``.knowledge/dev-token``, see ``state``). Only HTTP is used. Exit status: 0 on success, 1 when the
API refuses (its error code and message are printed), cannot be reached, or there is nothing to
ingest, 2 for a usage error (numbers are checked to be finite).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import sys
import textwrap
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from knowledge.domain.ids import KB_PREFIX, is_well_formed
from knowledge.domain.models import Permission
from knowledge_local.client import ApiError, KnowledgeClient
from knowledge_local.documents import DocumentError, collect_documents
from knowledge_local.ingestion import (
    AmbiguousBaseError,
    IndexWaitTimeoutError,
    archive_missing,
    find_base,
    ingest,
    wait_until_indexed,
)
from knowledge_local.state import StateError, read_endpoints, read_token, state_dir

MODES = ("hybrid", "lexical", "semantic", "rrf")
SCOPES = tuple(permission.value for permission in Permission)
_DURATION = re.compile(r"^(\d+)([smhd]?)$")
_SECONDS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86_400}


class UsageError(Exception):
    """A bad argument the parser could not catch (exit status 2)."""


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    arguments = parser.parse_args(argv)
    try:
        with _client(arguments) as client:
            command: Callable[[KnowledgeClient, argparse.Namespace], int] = arguments.run
            return command(client, arguments)
    except (UsageError, AmbiguousBaseError) as error:
        parser.error(str(error))
    except ApiError as error:
        print(f"error: {error.code}: {error.message}", file=sys.stderr)
    except (StateError, DocumentError, IndexWaitTimeoutError) as error:
        print(f"error: {error}", file=sys.stderr)
    except KeyboardInterrupt:
        return 130
    return 1


# -- commands ---------------------------------------------------------------------------------------


def _ingest(client: KnowledgeClient, arguments: argparse.Namespace) -> int:
    path = Path(arguments.path)
    collection = collect_documents(path)
    if arguments.archive_missing and not path.is_dir():
        raise UsageError(f"--archive-missing needs a folder, and {path} is a file")
    for skipped in collection.skipped:
        print(f"warning: skipped {skipped.path}: {skipped.reason}", file=sys.stderr)
    if not collection.documents:
        raise DocumentError(
            f"Nothing to ingest under {path}: no .md, .txt or .rst file with text "
            f"({len(collection.skipped)} skipped)."
        )
    summary = ingest(client, collection.documents, arguments.base)
    summary.skipped = len(collection.skipped)
    if arguments.archive_missing:
        summary.archived = archive_missing(client, summary.knowledge_base_id, collection.external_ids)
    line = f"{summary.base_name} ({summary.knowledge_base_id}): {summary.describe()}"
    if arguments.wait:
        print(f"{line}; waiting for the index...", file=sys.stderr, flush=True)
        items = [str(item["knowledge_item_id"]) for item in summary.items.values()]
        wait_until_indexed(client, items, timeout=arguments.timeout)
        line += ", all indexed"
    print(line)
    return 0


def _search(client: KnowledgeClient, arguments: argparse.Namespace) -> int:
    answer = client.search_knowledge(
        query=arguments.query,
        mode=arguments.mode,
        alpha=arguments.alpha,
        max_results=arguments.max_results,
        knowledge_base_id=_base_id(client, arguments.base) if arguments.base else None,
    )
    if arguments.json:
        print(json.dumps(answer, indent=2, ensure_ascii=False))
        return 0
    results = answer.get("results") or []
    if not results:
        print("No results.")
        return 0
    print(_results_table(results, shutil.get_terminal_size((120, 24)).columns))
    return 0


def _read(client: KnowledgeClient, arguments: argparse.Namespace) -> int:
    answer = client.search_knowledge(
        knowledge_item_id=arguments.item,
        knowledge_revision_id=arguments.revision,
        offset=arguments.offset,
        limit_chars=arguments.limit,
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
    if answer.get("content_truncated"):
        fields.append(
            f"next page: knowledge read {answer.get('knowledge_item_id')} "
            f"--revision {answer.get('knowledge_revision_id')} --offset {end}"
        )
    print("\n".join(["---", *fields]), file=sys.stderr)
    return 0


def _token_create(client: KnowledgeClient, arguments: argparse.Namespace) -> int:
    scopes = _list(arguments.scopes)
    unknown = sorted(set(scopes) - set(SCOPES))
    if unknown:
        raise UsageError(f"unknown scope(s) {', '.join(unknown)}; choose from {', '.join(SCOPES)}")
    answer = client.create_token(
        tenant_id=arguments.tenant,
        subject_id=arguments.subject,
        scopes=scopes,
        team_ids=_list(arguments.teams),
        knowledge_base_ids=_list(arguments.bases) if arguments.bases is not None else None,
        expires_in=parse_duration(arguments.expires_in) if arguments.expires_in is not None else None,
    )
    print(answer["token"])
    print(
        f"Token for {arguments.subject} with {', '.join(scopes)}: shown once, store it now.", file=sys.stderr
    )
    return 0


# -- helpers ----------------------------------------------------------------------------------------


def _client(arguments: argparse.Namespace) -> KnowledgeClient:
    api_url = arguments.api_url or os.environ.get("KNOWLEDGE_API_URL")
    token = arguments.token or os.environ.get("KNOWLEDGE_TOKEN")
    directory = state_dir()
    if not api_url:
        api_url = read_endpoints(directory).api_url
    if not token:
        token = read_token(directory)
    return KnowledgeClient(api_url, token)


def _base_id(client: KnowledgeClient, base: str) -> str:
    """``base`` as a knowledge base id: ids pass through (the API checks them), names are looked
    up (``AmbiguousBaseError`` when several bases share one)."""
    if is_well_formed(base, KB_PREFIX):
        return base
    found = find_base(client, base)
    if found is None:
        raise ApiError(404, "knowledge_resource_unavailable", f"No knowledge base named {base!r}.")
    return str(found["knowledge_base_id"])


def _results_table(results: list[dict[str, Any]], width: int) -> str:
    """One line per result: rank, final score, title, item id, then the excerpt on one line,
    shortened to the terminal's width."""
    title_width = min(40, max(len(str(result.get("title", ""))) for result in results))
    lines = [f"{'#':>2}  {'score':>6}  {'title':<{title_width}}  {'item':<29}  excerpt"]
    for rank, result in enumerate(results, start=1):
        title = textwrap.shorten(str(result.get("title", "")), width=title_width, placeholder="…")
        score = float((result.get("scores") or {}).get("final") or 0.0)
        prefix = (
            f"{rank:>2}  {score:>6.3f}  {title:<{title_width}}  {result.get('knowledge_item_id', ''):<29}  "
        )
        room = max(20, width - len(prefix))
        excerpt = textwrap.shorten(
            " ".join(str(result.get("excerpt", "")).split()), width=room, placeholder="…"
        )
        lines.append(prefix + excerpt)
    return "\n".join(lines)


def _list(value: str | None) -> list[str]:
    return [entry.strip() for entry in (value or "").split(",") if entry.strip()]


def finite_number(value: str) -> float:
    """``value`` as a finite float (argparse ``type``): NaN and infinities are usage errors."""
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {value!r}") from None
    if not math.isfinite(number):
        raise argparse.ArgumentTypeError(f"must be a finite number, not {value!r}")
    return number


def positive_seconds(value: str) -> float:
    """``value`` as a finite number of seconds above zero (argparse ``type``)."""
    seconds = finite_number(value)
    if seconds <= 0:
        raise argparse.ArgumentTypeError(f"must be more than 0 seconds, not {value!r}")
    return seconds


def parse_duration(value: str) -> int:
    """Seconds in ``value``: ``3600``, ``90m``, ``12h`` or ``30d``."""
    matched = _DURATION.match(value.strip().lower())
    if matched is None or int(matched.group(1)) == 0:
        raise UsageError(f"--expires-in must be a positive number of seconds, or end in m, h or d: {value!r}")
    return int(matched.group(1)) * _SECONDS[matched.group(2)]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="knowledge",
        description="Ingest, search and read knowledge through a running knowledge API.",
        epilog="Defaults come from `make run` (.knowledge/endpoints.json and .knowledge/dev-token).",
    )
    parser.add_argument(
        "--api-url", help="API base URL (default: $KNOWLEDGE_API_URL or the running `make run`)"
    )
    parser.add_argument("--token", help="bearer token (default: $KNOWLEDGE_TOKEN or .knowledge/dev-token)")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    ingest_parser = commands.add_parser("ingest", help="ingest files or folders of .md, .txt, .rst")
    ingest_parser.add_argument("path", help="a file or a folder (searched recursively)")
    ingest_parser.add_argument(
        "--base", required=True, help="knowledge base id (kb_...) or name (a new name creates the base)"
    )
    ingest_parser.add_argument(
        "--archive-missing",
        action="store_true",
        help="archive the base's items whose file (external_id) is no longer in the folder "
        "(default: they stay published)",
    )
    ingest_parser.add_argument(
        "--no-wait", dest="wait", action="store_false", help="do not wait until the index holds the documents"
    )
    ingest_parser.add_argument(
        "--timeout", type=positive_seconds, default=600.0, help="seconds to wait for the index (600)"
    )
    ingest_parser.set_defaults(run=_ingest)

    search_parser = commands.add_parser("search", help="ranked search over published knowledge")
    search_parser.add_argument("query")
    search_parser.add_argument("--mode", choices=MODES, default="hybrid")
    search_parser.add_argument(
        "--alpha", type=finite_number, default=0.5, help="lexical weight of hybrid, 0-1 (0.5)"
    )
    search_parser.add_argument("--max-results", type=int, default=10, help="1-50 (10)")
    search_parser.add_argument("--base", help="knowledge base id or name to search in")
    search_parser.add_argument("--json", action="store_true", help="print the API's JSON answer")
    search_parser.set_defaults(run=_search)

    read_parser = commands.add_parser("read", help="read one item (or one revision) a page at a time")
    read_parser.add_argument("item", help="knowledge item id (ki_...)")
    read_parser.add_argument("--revision", help="revision id (kr_...); default: the current one")
    read_parser.add_argument("--offset", type=int, default=0, help="first character (0)")
    read_parser.add_argument("--limit", type=int, default=4000, help="characters, 1-10000 (4000)")
    read_parser.add_argument("--json", action="store_true", help="print the API's JSON answer")
    read_parser.set_defaults(run=_read)

    token_parser = commands.add_parser("token", help="manage bearer tokens")
    token_commands = token_parser.add_subparsers(dest="token_command", required=True, metavar="COMMAND")
    create = token_commands.add_parser("create", help="issue a token (printed once)")
    create.add_argument("--subject", default="agent", help="subject id the token acts as (agent)")
    create.add_argument(
        "--scopes", default=Permission.READ.value, help=f"comma-separated, of {', '.join(SCOPES)}"
    )
    create.add_argument("--teams", help="comma-separated team ids")
    create.add_argument("--bases", help="comma-separated knowledge base ids the token is limited to")
    create.add_argument("--expires-in", help="lifetime: seconds, or 90m, 12h, 30d (default: never)")
    create.add_argument("--tenant", help="tenant id (default: the caller's; another needs platform:admin)")
    create.set_defaults(run=_token_create)
    return parser
