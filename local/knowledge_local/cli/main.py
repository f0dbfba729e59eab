"""``knowledge``: the command line of a running knowledge API (``make run`` or a deployed stack).

    knowledge ingest PATH --base BASE [--archive-missing --source-base-url URL]   .md, .txt, .rst
    knowledge search "query" [--mode --alpha --max-results --base]
    knowledge read ITEM [--revision --offset --limit]
    knowledge bases
    knowledge token create [--subject --scopes --teams --bases --expires-in --tenant]
    knowledge token list [--limit --next-token --tenant --json]
    knowledge token revoke TOKEN_ID
    knowledge token rotate                       (``make run`` only: a new dev token, the old revoked)
    knowledge remember "fact" [--path --type --scope --key ...]   (``memory_cli``)
    knowledge memories "query" [--mode --limit --path --type --scope]
    knowledge forget NOTE_ID [--mode soft|redact|hard]
    knowledge recall ["query"] [--max-tokens --max-items --path-prefix --type]
    knowledge pin NOTE_ID [--order --reason] / knowledge unpin NOTE_ID / knowledge pins

``--base`` takes a base id (``kb_...``) or a name; a name that several bases share is a usage error
listing their ids, and a name no base has is an error naming the close ones (``ingest`` creates
it instead, and says so). ``ingest`` skips files it cannot send (not UTF-8, empty, too large, links
out of the folder) with a warning each and counts them as skipped; it fails only when nothing can
be ingested. Each item's ``source.uri`` is the file's path under the folder (``guides/http2.md``),
appended to ``--source-base-url`` when given (such as the repository's tree), never the
local absolute path. The API URL and token come from ``--api-url`` / ``--token`` (before or after the
command), else ``KNOWLEDGE_API_URL`` / ``KNOWLEDGE_TOKEN``, else the files ``make run`` writes
(``.knowledge/endpoints.json`` and ``.knowledge/dev-token``, see ``state``). Only HTTP is used.
Nothing printed shows a token: whatever looks like one (``kn_...``) in an error is masked.

Exit status: 0 on success, 1 when the API refuses (its error code and message are printed, then
one indented line per entry of its ``details``, such as ``max_results: must be between 1 and 50``,
and a hint for a token that is missing, unknown, expired or revoked, or an id from an earlier
``make run``), cannot be reached, or there is nothing to ingest, 2 for a usage error (numbers are
checked to be finite, item, revision and token ids to be well formed and not placeholders such as
``<knowledge_item_id>``).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shlex
import shutil
import sys
import textwrap
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

from knowledge.domain.access.bearer_tokens import TOKEN_PREFIX, is_token_id
from knowledge.domain.ids import ITEM_PREFIX, KB_PREFIX, REVISION_PREFIX, is_well_formed
from knowledge.domain.models import Permission
from knowledge.domain.sources import is_safe_uri
from knowledge_local.cli.client import ApiError, KnowledgeClient
from knowledge_local.cli.commands.memory import add_memory_commands
from knowledge_local.cli.documents import DocumentError, collect_documents
from knowledge_local.cli.ingestion import (
    AmbiguousBaseError,
    IndexWaitTimeoutError,
    archive_missing,
    ensure_base,
    find_base,
    ingest_into,
    similar_names,
    wait_until_indexed,
)
from knowledge_local.state import (
    TOKEN_FILE,
    StateError,
    display_path,
    read_endpoints,
    read_token,
    state_dir,
    state_dir_prefix,
)

MODES = ("hybrid", "lexical", "semantic", "rrf")
SCOPES = tuple(permission.value for permission in Permission)
_DURATION = re.compile(r"^(\d+)([smhd]?)$")
_SECONDS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86_400}
_TOKEN = re.compile(r"(?<![A-Za-z0-9_-])kn_[A-Za-z0-9_-]+")
_TOKEN_OPTION = re.compile(r"(--tok[a-z-]*(?:=|\s+))(?!kn_)\S+")
_PLACEHOLDER = re.compile(r"^\s*<[^<>]*>\s*$")
MASKED = "***"


class UsageError(Exception):
    """A bad argument the parser could not catch (exit status 2)."""


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    arguments = parser.parse_args(argv)
    try:
        if getattr(arguments, "state_only", False):  # works on the state directory, not the API
            local: Callable[[argparse.Namespace], int] = arguments.run
            return local(arguments)
        with _client(arguments) as client:
            command: Callable[[KnowledgeClient, argparse.Namespace], int] = arguments.run
            return command(client, arguments)
    except (UsageError, AmbiguousBaseError) as error:
        parser.error(str(error))
    except ApiError as error:
        print(redact(f"error: {error.code}: {error.message}"), file=sys.stderr)
        for line in error.detail_lines():
            print(redact(f"  {line}"), file=sys.stderr)
        hint = _hint(error, arguments.command)
        if hint is not None:
            print(f"hint: {hint}", file=sys.stderr)
    except (StateError, DocumentError, IndexWaitTimeoutError) as error:
        print(redact(f"error: {error}"), file=sys.stderr)
    except KeyboardInterrupt:
        return 130
    return 1


def redact(text: str) -> str:
    """``text`` with every bearer token in it masked: anything shaped like one (``kn_...``) and the
    value of a ``--token`` option (or of a misspelt one, such as ``--tokn``)."""
    return _TOKEN.sub(f"kn_{MASKED}", _TOKEN_OPTION.sub(rf"\g<1>{MASKED}", text))


class _Parser(argparse.ArgumentParser):
    """argparse, with tokens masked in its error messages (``unrecognized arguments: ...`` and
    ``invalid choice: ...`` repeat what was typed)."""

    def error(self, message: str) -> NoReturn:
        super().error(redact(message))


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
    base, created = ensure_base(client, arguments.base)
    if created:
        _announce_created(client, base)
    summary = ingest_into(
        client, collection.documents, base, created=created, source_base_url=arguments.source_base_url
    )
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
    names = _base_names(client)
    print(_results_table(results, shutil.get_terminal_size((120, 24)).columns, names))
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
        api_url = getattr(arguments, "api_url", None)
        target = f" --api-url {shlex.quote(api_url)}" if api_url else ""
        command = f"{state_dir_prefix(state_dir())}{program_name()} read {answer.get('knowledge_item_id')}"
        fields.append(
            f"next page: {command} --revision {answer.get('knowledge_revision_id')} "
            f"--offset {end} --limit {arguments.limit}{target}"
        )
    print("\n".join(["---", *fields]), file=sys.stderr)
    return 0


def program_name() -> str:
    """The command as the user ran it (``.venv/bin/knowledge`` when typed so, shell-quoted), for
    commands printed to copy; ``knowledge`` when it was not run as that script."""
    typed = sys.argv[0] if sys.argv else ""
    return shlex.quote(typed) if Path(typed).name == "knowledge" else "knowledge"


def _bases(client: KnowledgeClient, arguments: argparse.Namespace) -> int:
    bases = list(client.bases())
    if arguments.json:
        print(json.dumps({"knowledge_bases": bases}, indent=2, ensure_ascii=False))
        return 0
    if not bases:
        print("No knowledge bases.")
        return 0
    print(_bases_table(bases))
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


def _token_list(client: KnowledgeClient, arguments: argparse.Namespace) -> int:
    page = client.tokens(limit=arguments.limit, next_token=arguments.next_token, tenant_id=arguments.tenant)
    if arguments.json:
        print(json.dumps(page, indent=2, ensure_ascii=False))
        return 0
    tokens = page.get("tokens") or []
    print(_tokens_table(tokens) if tokens else "No tokens.")
    next_token = page.get("next_token")
    if next_token:
        more = [
            f"{state_dir_prefix(state_dir())}{program_name()} token list --limit {arguments.limit}",
            *(["--tenant", shlex.quote(arguments.tenant)] if arguments.tenant else []),
            "--next-token",
            shlex.quote(str(next_token)),
        ]
        print(f"more tokens: {' '.join(more)}", file=sys.stderr)
    return 0


def _token_revoke(client: KnowledgeClient, arguments: argparse.Namespace) -> int:
    client.revoke_token(arguments.token_id)
    print(f"Revoked {arguments.token_id} and every token it issued (directly or not).")
    return 0


def _token_rotate(arguments: argparse.Namespace) -> int:
    from knowledge_local.cli.dev_token import rotate_running  # boto3 and the store: only for this command

    if getattr(arguments, "api_url", None) or getattr(arguments, "token", None):
        raise UsageError(
            "token rotate replaces the dev token of the local runtime's state directory "
            "(KNOWLEDGE_STATE_DIR); it takes no --api-url or --token"
        )
    directory = state_dir()
    rotated = rotate_running(directory)
    print(
        f"New dev token written to {display_path(directory / TOKEN_FILE)}; {rotated.revoked} earlier "
        "dev token(s) revoked, with every token they issued."
    )
    return 0


# -- helpers ----------------------------------------------------------------------------------------


def _client(arguments: argparse.Namespace) -> KnowledgeClient:
    api_url = getattr(arguments, "api_url", None) or os.environ.get("KNOWLEDGE_API_URL")
    token = _given_token(getattr(arguments, "token", None))
    directory = state_dir()
    if not api_url:
        api_url = read_endpoints(directory).api_url
    if not token:
        token = read_token(directory)
    return KnowledgeClient(api_url, token)


def _given_token(option: str | None) -> str | None:
    """The token of ``--token``, else of ``KNOWLEDGE_TOKEN``; ``None`` when neither is set (the dev
    token is then read). A value that is set but blank is a ``UsageError``: an unset variable in
    ``--token "$AGENT_TOKEN"`` must fail, not run as the dev token."""
    for name, value in (("--token", option), ("KNOWLEDGE_TOKEN", os.environ.get("KNOWLEDGE_TOKEN"))):
        if value is None:
            continue
        if not value.strip():
            raise UsageError(
                f"the token given ({name}) is empty: give a token (kn_...), or drop it to use the dev token"
            )
        return value.strip()
    return None


def _base_id(client: KnowledgeClient, base: str) -> str:
    """``base`` as a knowledge base id: ids pass through (the API checks them), names are looked
    up (``AmbiguousBaseError`` when several bases share one)."""
    if is_well_formed(base, KB_PREFIX):
        return base
    found = find_base(client, base)
    if found is None:
        names = [str(known.get("name")) for known in client.bases() if known.get("status") == "active"]
        close = similar_names(base, names)
        suggestion = f" Did you mean {_either(close)}?" if close else ""
        raise ApiError(
            404,
            "knowledge_resource_unavailable",
            f"No knowledge base named {base!r}.{suggestion} `knowledge bases` lists them all.",
        )
    return str(found["knowledge_base_id"])


def _announce_created(client: KnowledgeClient, base: dict[str, Any]) -> None:
    """Say on stderr that ``ingest`` created ``base``, naming existing bases it may be a typo of."""
    name, base_id = str(base.get("name")), str(base["knowledge_base_id"])
    others = [
        str(known.get("name"))
        for known in client.bases()
        if known.get("knowledge_base_id") != base_id and known.get("status") == "active"
    ]
    close = similar_names(name, others)
    note = f" (existing bases with a close name: {', '.join(close)})" if close else ""
    print(f"created knowledge base {name} ({base_id}){note}", file=sys.stderr, flush=True)


def _either(names: Sequence[str]) -> str:
    """``'a'``, ``'a' or 'b'``, ``'a', 'b' or 'c'``."""
    quoted = [repr(name) for name in names]
    return quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"


def _hint(error: ApiError, command: str) -> str | None:
    """One line on what an error most likely means for a user of ``make run``, if there is one."""
    if error.code == "authentication_required":
        return _token_hint(str(error.details.get("reason", "")))
    if error.code == "service_unavailable":
        again = "; files already ingested count as unchanged" if command == "ingest" else ""
        return f"the local runtime is stopping: start it again (`make run`) and repeat the command{again}"
    if error.code == "knowledge_resource_unavailable" and command == "read":
        return (
            "no such item here (an id from an in-memory run, KNOWLEDGE_PERSIST=false, or another state "
            "directory, or a base you cannot see); search again to get current ids"
        )
    if error.code == "knowledge_resource_unavailable" and command == "token":
        return "`knowledge token list` shows the tokens you may revoke"
    return None


def _token_hint(reason: str) -> str:
    """What to do about a 401, by its ``details.reason`` (``TokenRejection``)."""
    dev_token = display_path(state_dir() / TOKEN_FILE)
    renew = f"issue a new one (`knowledge token create`) or use the dev token in {dev_token}"
    if reason == "expired":
        return f"the token has expired: {renew}"
    if reason == "revoked":
        return f"the token was revoked: {renew}"
    if reason == "missing":
        return f"no token was sent: pass --token or set KNOWLEDGE_TOKEN (`make run` writes {dev_token})"
    return (
        "this API does not know the token (mistyped, or issued by an earlier `make run`, whose tokens "
        f"are gone): the current dev token is in {dev_token}"
    )


def _bases_table(bases: list[dict[str, Any]]) -> str:
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


def _tokens_table(tokens: list[dict[str, Any]]) -> str:
    """One line per token: id, subject, scopes, bases, issuer, expiry and state, in aligned columns
    (ids shortened to 12 characters: enough to tell them apart, ``--json`` has them whole)."""

    def short(token_id: Any) -> str:
        return str(token_id)[:12] if token_id else "-"

    def state(token: dict[str, Any]) -> str:
        if token.get("revoked_ancestor_token_id"):
            return f"revoked (via {short(token['revoked_ancestor_token_id'])})"
        return "revoked" if token.get("revoked") else "active"

    rows = [
        (
            str(token.get("token_id", "")),
            str(token.get("subject_id", "")),
            ",".join(token.get("scopes") or []),
            ",".join(token["knowledge_base_ids"]) if token.get("knowledge_base_ids") is not None else "all",
            short(token.get("issuer_token_id")),
            str(token.get("expires_at") or "never"),
            state(token),
        )
        for token in tokens
    ]
    header = ("token_id", "subject", "scopes", "bases", "issuer", "expires", "state")
    widths = [max(len(row[column]) for row in [header, *rows]) for column in range(len(header))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in [header, *rows]
    )


def _results_table(
    results: list[dict[str, Any]], width: int, base_names: dict[str, str] | None = None
) -> str:
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


def item_id(value: str) -> str:
    """``value`` as a knowledge item id (argparse ``type``): ``ki_`` and 26 base32 characters."""
    return _identifier(value, ITEM_PREFIX, "knowledge item id", "the item column of `knowledge search`")


def revision_id(value: str) -> str:
    """``value`` as a knowledge revision id (argparse ``type``): ``kr_`` and 26 base32 characters."""
    return _identifier(value, REVISION_PREFIX, "knowledge revision id", "`knowledge search --json`")


def token_id(value: str) -> str:
    """``value`` as a token id (argparse ``type``): 64 lowercase hex characters, never a token."""
    if is_token_id(value):
        return value
    if value.startswith(TOKEN_PREFIX):
        raise argparse.ArgumentTypeError(
            "that is a token, not its id: give the token_id (64 hex characters) of `knowledge token list`"
        )
    problem = f"{value!r} is a placeholder" if _PLACEHOLDER.match(value) else f"{value!r} is not a token id"
    raise argparse.ArgumentTypeError(
        f"{problem}: give a token_id, 64 hex characters, as in `knowledge token list`"
    )


def _page_size(value: str) -> int:
    try:
        size = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {value!r}") from None
    if not 1 <= size <= 100:
        raise argparse.ArgumentTypeError(f"must be 1 to 100, not {size}")
    return size


def source_base_url(value: str) -> str:
    """``value`` as the base URL of ``ingest``'s source links (argparse ``type``): an http(s) URL
    with a host, as the write API accepts it (``knowledge.domain.sources``)."""
    if not (value.lower().startswith(("https://", "http://")) and is_safe_uri(value)):
        raise argparse.ArgumentTypeError(
            f"{value!r} is not an https:// or http:// URL with a host (such as https://docs.example.com/)"
        )
    return value


def base_reference(value: str) -> str:
    """``value`` as a base id or name (argparse ``type``): anything but empty or a placeholder."""
    if not value.strip():
        raise argparse.ArgumentTypeError("empty: give a knowledge base name or id (`knowledge bases`)")
    if _PLACEHOLDER.match(value):
        raise argparse.ArgumentTypeError(
            f"{value!r} is a placeholder: put a knowledge base name or id in its place (`knowledge bases`)"
        )
    return value


def _identifier(value: str, prefix: str, kind: str, source: str) -> str:
    if is_well_formed(value, prefix):
        return value
    if not value.strip():
        problem = "empty (an unset shell variable?)"
    elif _PLACEHOLDER.match(value):
        problem = f"{value!r} is a placeholder"
    else:
        problem = f"{value!r} is not a {kind}"
    raise argparse.ArgumentTypeError(
        f"{problem}: give a {kind}, {prefix} followed by 26 base32 characters, as in {source}"
    )


def parse_duration(value: str) -> int:
    """Seconds in ``value``: ``3600``, ``90m``, ``12h`` or ``30d``."""
    matched = _DURATION.match(value.strip().lower())
    if matched is None or int(matched.group(1)) == 0:
        raise UsageError(f"--expires-in must be a positive number of seconds, or end in m, h or d: {value!r}")
    return int(matched.group(1)) * _SECONDS[matched.group(2)]


def _parser() -> argparse.ArgumentParser:
    connection = _Parser(add_help=False)
    connection.add_argument(
        "--api-url",
        default=argparse.SUPPRESS,
        help="API base URL (default: $KNOWLEDGE_API_URL or the running `make run`)",
    )
    connection.add_argument(
        "--token",
        default=argparse.SUPPRESS,
        help="bearer token (default: $KNOWLEDGE_TOKEN or .knowledge/dev-token)",
    )
    shared = [connection]
    parser = _Parser(
        prog="knowledge",
        description="Ingest, search and read knowledge, and keep and search memories, through a running "
        "knowledge API.",
        epilog="Defaults come from `make run` (.knowledge/endpoints.json and .knowledge/dev-token). "
        "--api-url and --token go before or after the command.",
        parents=shared,
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    ingest_parser = commands.add_parser(
        "ingest", help="ingest files or folders of .md, .txt, .rst", parents=shared
    )
    ingest_parser.add_argument("path", help="a file or a folder (searched recursively)")
    ingest_parser.add_argument(
        "--base",
        required=True,
        type=base_reference,
        help="knowledge base id (kb_...) or name (a new name creates the base)",
    )
    ingest_parser.add_argument(
        "--archive-missing",
        action="store_true",
        help="archive the base's items whose file (external_id) is no longer in the folder "
        "(default: they stay published)",
    )
    ingest_parser.add_argument(
        "--source-base-url",
        type=source_base_url,
        help="https:// or http:// URL each file's path (file name included) is appended to for its "
        "source.uri: one that serves the files under their own names, such as a repository's tree "
        "(default: the path under the folder, relative)",
    )
    ingest_parser.add_argument(
        "--no-wait", dest="wait", action="store_false", help="do not wait until the index holds the documents"
    )
    ingest_parser.add_argument(
        "--timeout", type=positive_seconds, default=600.0, help="seconds to wait for the index (600)"
    )
    ingest_parser.set_defaults(run=_ingest)

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
    read_parser.add_argument("--limit", type=int, default=4000, help="characters, 1-10000 (4000)")
    read_parser.add_argument("--json", action="store_true", help="print the API's JSON answer")
    read_parser.set_defaults(run=_read)

    bases_parser = commands.add_parser(
        "bases", help="list the knowledge bases: id, name, scope, status", parents=shared
    )
    bases_parser.add_argument("--json", action="store_true", help="print every base as the API answers it")
    bases_parser.set_defaults(run=_bases)

    token_parser = commands.add_parser("token", help="manage bearer tokens", parents=shared)
    token_commands = token_parser.add_subparsers(dest="token_command", required=True, metavar="COMMAND")
    create = token_commands.add_parser("create", help="issue a token (printed once)", parents=shared)
    create.add_argument("--subject", default="agent", help="subject id the token acts as (agent)")
    create.add_argument(
        "--scopes", default=Permission.READ.value, help=f"comma-separated, of {', '.join(SCOPES)}"
    )
    create.add_argument("--teams", help="comma-separated team ids")
    create.add_argument("--bases", help="comma-separated knowledge base ids the token is limited to")
    create.add_argument(
        "--expires-in",
        help="lifetime: seconds, or 90m, 12h, 30d (default: never; a token minted by an expiring token "
        "expires with it, at the latest)",
    )
    create.add_argument("--tenant", help="tenant id (default: the caller's; another needs platform:admin)")
    create.set_defaults(run=_token_create)
    listing = token_commands.add_parser(
        "list", help="list the tokens you may revoke (never their secrets)", parents=shared
    )
    listing.add_argument("--limit", type=_page_size, default=50, help="tokens per page, 1-100 (50)")
    listing.add_argument("--next-token", help="the next_token a previous page printed")
    listing.add_argument("--tenant", help="tenant id (default: the caller's; another needs platform:admin)")
    listing.add_argument("--json", action="store_true", help="print the API's JSON answer")
    listing.set_defaults(run=_token_list)
    revoke = token_commands.add_parser(
        "revoke", help="revoke a token and every token it issued", parents=shared
    )
    revoke.add_argument("token_id", type=token_id, help="the token's id (64 hex characters, `token list`)")
    revoke.set_defaults(run=_token_revoke)
    rotate = token_commands.add_parser(
        "rotate",
        help="make run only: write a new dev token to the state directory and revoke the old one "
        "(and every token it issued)",
    )
    rotate.set_defaults(run=_token_rotate, state_only=True)
    add_memory_commands(commands, shared)
    return parser
