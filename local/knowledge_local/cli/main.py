"""``knowledge``: the command line of a running knowledge API (``make run`` or a deployed stack).

    knowledge ingest PATH --base BASE [--archive-missing --source-base-url URL]   documents (docs/formats.md)
    knowledge search "query" [--mode --alpha --max-results --base]
    knowledge read ITEM [--revision --offset --limit]
    knowledge bases
    knowledge sync --base BASE [--prefix --include --bucket --no-wait --timeout]   (``commands.sync``)
    knowledge token create [--subject --scopes --teams --bases --expires-in --tenant]
    knowledge token list [--limit --next-token --tenant --json]
    knowledge token revoke TOKEN_ID
    knowledge token rotate                       (``make run`` only: a new dev token, the old revoked)
    knowledge remember "fact" [--path --type --scope --key ...]   (``commands.memory``)
    knowledge memories "query" [--mode --limit --path --type --scope]
    knowledge forget NOTE_ID [--mode soft|redact|hard] [--dry-run]
    knowledge recall ["query"] [--max-tokens --max-items --path-prefix --type]
    knowledge pin NOTE_ID [--order --reason] / knowledge unpin NOTE_ID / knowledge pins
    knowledge usage [--json]                     the tenant's stored counts and quotas left
    knowledge export [--base --path-prefix --no-notes --vectors --out]   a JSONL bundle (``commands.bundles``)
    knowledge import FILE                         a bundle into the tenant
    knowledge purge-item ITEM [--dry-run] [--json]   delete an item for good (``commands.deletes``)
    knowledge erase [--dry-run] [--confirm TENANT] [--base B]   the tenant or bases (``commands.deletes``)

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

Each command group is a module of ``commands`` that adds its own subcommands: ``ingest``,
``search`` (with ``read``), ``bases``, ``sync``, ``tokens``, ``memory``, ``usage``, ``bundles`` and
``deletes``; the argument types they share are ``arguments``. ``main`` builds the parser, runs the
command and turns its errors into the exit status and the lines below.

Exit status: 0 on success, 1 when the API refuses (its error code and message are printed, then
one indented line per entry of its ``details``, such as ``max_results: must be between 1 and 50``,
and a hint for a token that is missing, unknown, expired or revoked, or an id from an earlier
``make run``), cannot be reached, or there is nothing to ingest, 2 for a usage error (numbers are
checked to be finite, item, revision and token ids to be well formed and not placeholders such as
``<knowledge_item_id>``).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn

from knowledge_local.cli.arguments import UsageError
from knowledge_local.cli.client import ApiError, KnowledgeClient
from knowledge_local.cli.commands import bases, bundles, deletes, ingest, memory, search, sync, tokens, usage
from knowledge_local.cli.documents import DocumentError
from knowledge_local.cli.ingestion import AmbiguousBaseError, IndexWaitTimeoutError
from knowledge_local.state import TOKEN_FILE, StateError, display_path, read_endpoints, read_token, state_dir

_TOKEN = re.compile(r"(?<![A-Za-z0-9_-])kn_[A-Za-z0-9_-]+")
_TOKEN_OPTION = re.compile(r"(--tok[a-z-]*(?:=|\s+))(?!kn_)\S+")
MASKED = "***"


def main(argv: Sequence[str] | None = None) -> int:
    """Run one ``knowledge`` command: its exit status. Output cut short by its reader (``| head``)
    ends the command quietly with 141, as a process stopped by ``SIGPIPE`` does."""
    try:
        code = _main(argv)
        sys.stdout.flush()
    except BrokenPipeError:
        _quiet_stdout()
        return 141
    return code


def _quiet_stdout() -> None:
    """Point standard output at ``/dev/null``, so the interpreter's last flush finds no closed pipe."""
    try:
        descriptor = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # not a file (a test's capture)
        return
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, descriptor)
    os.close(null)


def _main(argv: Sequence[str] | None) -> int:
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
    except (StateError, DocumentError) as error:
        print(redact(f"error: {error}"), file=sys.stderr)
    except IndexWaitTimeoutError as error:
        print(redact(f"error: {error}"), file=sys.stderr)
        if error.hint is not None:
            print(redact(f"hint: {error.hint}"), file=sys.stderr)
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
    ingest.add_commands(commands, shared)
    search.add_commands(commands, shared)
    bases.add_commands(commands, shared)
    sync.add_commands(commands, shared)
    tokens.add_commands(commands, shared)
    memory.add_commands(commands, shared)
    usage.add_commands(commands, shared)
    bundles.add_commands(commands, shared)
    deletes.add_commands(commands, shared)
    return parser
