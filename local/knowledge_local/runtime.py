"""``make run``: the whole service on one machine, from ``template.yaml``, on embedded defaults.

``python -m knowledge_local.runtime`` starts the local stack (``stack``: moto with the template's
table and queues, the stream and queue pollers, the HTTP API), reuses or issues the state
directory's dev token (tenant ``dev``, every scope; ``dev_token``), writes the endpoints and the
token to the state directory (``state``; its files are the owner's alone, umask 077), ingests the
project's ``README.md`` and ``docs/`` (or ``KNOWLEDGE_SEED_DIR``) through the API with a progress
bar, waits until the index holds them, prints how to try it, and serves until SIGINT or SIGTERM.
Settings: ``config``. Exit status: 0 after a clean stop; 1 when it cannot start (another runtime
still serving from the same state directory, a port in use, a bad setting, an unreadable seed
folder, a state directory it cannot create, a damaged snapshot or journal), with a one-line
reason; such a failed start leaves no state directory behind that it created.
"""

from __future__ import annotations

import argparse
import logging
import os
import shlex
import signal
import sys
import time
import warnings
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

from knowledge_local.config import (
    ConfigurationError,
    RuntimeSettings,
    function_environment,
    load_settings,
    settings_help,
)
from knowledge_local.state import (
    ENDPOINTS_FILE,
    PRIVATE_UMASK,
    PROJECT_ROOT,
    TOKEN_FILE,
    Endpoints,
    display_path,
    state_dir_prefix,
)

if TYPE_CHECKING:
    from knowledge_local.stack import LocalStack, SeedPlan

EXAMPLE_QUERY = "How do I deploy to AWS?"
SIGNAL_CHECK_SECONDS = 0.2
TEMPLATE = PROJECT_ROOT / "template.yaml"


def main(argv: list[str] | None = None) -> int:
    """Run until SIGINT/SIGTERM; see the module docs for the exit status."""
    arguments = _parse_arguments(argv)
    try:
        settings = load_settings()
    except ConfigurationError as error:
        print(f"Invalid setting: {error}", file=sys.stderr)
        return 1
    _configure_process(settings)
    # Imported only now: the handlers' Powertools objects read the environment set just above.
    from knowledge_local.cli.documents import DocumentError
    from knowledge_local.emulator.journal import JournalError
    from knowledge_local.emulator.lambda_runtime.invoker import stop_helper_processes
    from knowledge_local.emulator.snapshot import SnapshotError
    from knowledge_local.emulator.template.routes import TemplateError
    from knowledge_local.opensearch_node import NodeError
    from knowledge_local.stack import InstanceRunningError, LocalStack, PortInUseError, StateDirectoryError

    try:
        stack = LocalStack(settings, template=arguments.template)
        plan = stack.seed_plan()
    except (DocumentError, TemplateError, OSError) as error:
        print(f"Cannot start: {error}", file=sys.stderr)
        return 1
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, _interrupt)
    code = 0
    try:
        _serve(stack, plan)
    except KeyboardInterrupt:
        print("\nStopping...", flush=True)
    except (
        InstanceRunningError,
        PortInUseError,
        StateDirectoryError,
        SnapshotError,
        JournalError,
        NodeError,
    ) as error:
        print(error, file=sys.stderr)
        code = 1
    finally:
        _ignore_signals()
        stack.stop()
        stop_helper_processes()  # "Stopped." only once no process of the runtime is left
    if code == 0:
        print("Stopped. Bye.")
    return code


def _serve(stack: LocalStack, plan: SeedPlan | None) -> None:
    from knowledge_local.cli.client import ApiError
    from knowledge_local.cli.dev_token import SCOPES, TENANT_ID
    from knowledge_local.cli.ingestion import IndexWaitTimeoutError
    from knowledge_local.emulator.journal import segments
    from knowledge_local.emulator.snapshot import SNAPSHOT_FILE
    from knowledge_local.startup import process_age

    started = time.monotonic()
    before = process_age()
    if before is not None:  # the interpreter's start and the imports, before this function ran
        stack.timings.record("imports", before)
        started -= before
    print(f"Starting the knowledge service on {_engine(stack.settings)}...", flush=True)
    state_dir = stack.settings.knowledge_state_dir
    if stack.settings.knowledge_persist and ((state_dir / SNAPSHOT_FILE).exists() or segments(state_dir)):
        print(f"Restoring the state kept in {display_path(state_dir)}; indexed before the API serves...")
    endpoints = stack.start()
    restored = stack.restored
    if restored.anything:
        print(
            f"  {'restored':<13} {restored.items} records, {restored.writes} journaled writes, "
            f"{restored.messages} queued messages; all indexed"
        )
    _print_endpoints(endpoints, state_dir, persist=stack.settings.knowledge_persist)
    switched_off = switch_notice(stack.settings)
    if switched_off is not None:
        print(switched_off)
    dev_token = stack.dev_token()
    token = dev_token.token
    print(f"  {'dev token':<13} {token}")
    print(f"  {'':<13} tenant {TENANT_ID}, scopes {', '.join(SCOPES)}")
    print(f"  {'':<13} {_token_origin(dev_token.reused, dev_token.revoked, state_dir)}", flush=True)
    if plan is not None:
        print(f"Ingesting {plan.origin} into the knowledge base {plan.base_name!r}...", flush=True)
        for skipped in plan.skipped:
            print(f"warning: skipped {skipped.path}: {skipped.reason}", file=sys.stderr)
        try:
            summary = stack.seed(plan, token)
            print(f"{plan.base_name} ({summary.knowledge_base_id}): {summary.describe()}; all indexed.")
        except IndexWaitTimeoutError as error:
            print(f"Seeding {plan.base_name}: {error}.", file=sys.stderr)
        except ApiError as error:
            print(
                f"Seeding {plan.base_name} stopped ({error}); serving what it stored before.",
                file=sys.stderr,
            )
    ready = time.monotonic() - started
    print(f"Ready in {ready:.1f} s: {endpoints.api_url}")
    print(f"  {'start-up':<13} {stack.timings.describe(ready)}")
    print(_ready_message(endpoints.api_url, state_dir), flush=True)
    while True:
        # Short naps: the kernel may deliver SIGINT to any of the runtime's threads, and then a
        # long sleep of this one is not interrupted; Python runs the handler once it wakes.
        time.sleep(SIGNAL_CHECK_SECONDS)


def _token_origin(reused: bool, revoked: int, state_dir: Path) -> str:
    """Where the dev token comes from, for the banner."""
    path = display_path(state_dir / TOKEN_FILE)
    if reused:
        return f"reused from {path} (rotate: {state_dir_prefix(state_dir)}knowledge token rotate)"
    replaced = f"; {revoked} earlier dev token{'s' if revoked != 1 else ''} revoked" if revoked else ""
    return f"saved in {path}{replaced}"


def _configure_process(settings: RuntimeSettings) -> None:
    os.umask(PRIVATE_UMASK)  # files of the runtime and of its functions' processes: owner only
    forced, defaults = function_environment(settings)
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "RUNTIME_SWITCH_PARAMETER"):
        os.environ.pop(name, None)
    os.environ.update(forced)
    for name, value in defaults.items():
        os.environ.setdefault(name, value)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_KeyValueFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    own = logging.getLogger("knowledge_local")
    own.addHandler(handler)
    own.setLevel(settings.log_level)
    own.propagate = False
    # Handlers publish no metrics locally; Powertools would warn about it once per process.
    warnings.filterwarnings("ignore", message="No application metrics to publish")


class _KeyValueFormatter(logging.Formatter):
    """The message followed by the record's ``extra`` fields as ``key=value``."""

    _standard = frozenset(vars(logging.makeLogRecord({}))) | {"message", "asctime"}

    def formatMessage(self, record: logging.LogRecord) -> str:  # noqa: N802 - logging's name
        line = super().formatMessage(record)
        extra = [f"{key}={value}" for key, value in vars(record).items() if key not in self._standard]
        return " ".join([line, *extra])


def _interrupt(signum: int, frame: FrameType | None) -> None:
    """SIGINT or SIGTERM: stop once; further signals are ignored while stopping."""
    _ignore_signals()
    raise KeyboardInterrupt


def _ignore_signals() -> None:
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, signal.SIG_IGN)


def switch_notice(settings: RuntimeSettings) -> str | None:
    """The banner's line saying the tools are off, when ``KNOWLEDGE_RUNTIME_ENABLED`` is false."""
    if settings.knowledge_runtime_enabled:
        return None
    return (
        f"  {'tools':<13} OFF (KNOWLEDGE_RUNTIME_ENABLED=false): search_knowledge and the memory tools "
        "answer 503 knowledge_runtime_disabled; the write API still works"
    )


def _print_endpoints(endpoints: Endpoints, state_dir: Path, *, persist: bool) -> None:
    kept = (
        f"{display_path(state_dir)}  (tables and queues, every write on disk before its answer; "
        "bucket objects at each clean stop)"
        if persist
        else "in memory only (KNOWLEDGE_PERSIST=false): gone at stop"
    )
    rows = [
        ("API", f"{endpoints.api_url}  (REST /v1/..., MCP /mcp)"),
        ("console", f"{endpoints.api_url.rstrip('/')}/console  (sign in with the dev token below)"),
        ("AWS endpoint", f"{endpoints.aws_endpoint_url}  (moto: DynamoDB, DynamoDB Streams, SQS, S3)"),
        ("table", endpoints.table_name),
        ("ingest queue", endpoints.ingest_queue_url or "-"),
        ("dead letters", endpoints.ingest_dlq_url or "-"),
        ("bucket", f"{endpoints.documents_bucket or '-'}  (knowledge sync; uploads searchable by events)"),
        *([("OpenSearch", _opensearch_row(endpoints.opensearch_url))] if endpoints.opensearch_url else []),
        ("state", kept),
        ("saved in", display_path(state_dir / ENDPOINTS_FILE)),
    ]
    for label, value in rows:
        print(f"  {label:<13} {value}")


def _engine(settings: RuntimeSettings) -> str:
    if settings.search_backend == "embedded":
        return "embedded defaults"
    if settings.opensearch_url:
        return f"OpenSearch at {settings.opensearch_url}"
    return "OpenSearch (a local node, started first)"


def _opensearch_row(url: str) -> str:
    indexes = f"{os.environ.get('OPENSEARCH_INDEX')}, {os.environ.get('OPENSEARCH_NOTES_INDEX')}"
    return f"{url}  (indexes {indexes})"


def _ready_message(api_url: str, state_dir: Path) -> str:
    """Commands to try, each reaching this runtime: the curl command reads this runtime's token
    file, and the ``knowledge`` command names the state directory when it is not the default."""
    cli = Path(sys.executable).parent / "knowledge"
    token_path = shlex.quote(display_path(state_dir / TOKEN_FILE))
    return (
        "Try it:\n"
        f"  curl -s {api_url}/v1/tools/search_knowledge \\\n"
        f'    -H "Authorization: Bearer $(cat {token_path})" \\\n'
        f'    -d \'{{"query": "{EXAMPLE_QUERY}", "max_results": 3}}\'\n'
        f'  {state_dir_prefix(state_dir)}{shlex.quote(display_path(cli))} search "{EXAMPLE_QUERY}"\n'
        "Press Ctrl-C to stop."
    )


def _parse_arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m knowledge_local.runtime",
        description="Serve the knowledge API locally on embedded defaults (what `make run` runs).",
        epilog=settings_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--template", type=Path, default=TEMPLATE, help="the SAM template to serve (default: the project's)"
    )
    return parser.parse_args(argv)


if __name__ == "__main__":
    status = main()
    # Everything is stopped by now (environments, pollers, servers) and the output is flushed:
    # tearing down the interpreter's heap object by object adds nothing but seconds of CPU.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)
