"""Cold starts of every Lambda handler: import time, first and second invocation, in fresh processes.

```sh
python -m bench.cold_start                     # every functions/*/app.py, 3 fresh processes each
python -m bench.cold_start --runs 5 search_knowledge mcp
python -m bench.cold_start --runs 1 --profile mcp   # and where each first call spends its time
python -m bench.cold_start --snapstart mcp          # first call after a simulated SnapStart restore
git archive main | tar -x -C /tmp/main-tree && python -m bench.cold_start --baseline /tmp/main-tree
```

It starts moto's server on a free port of 127.0.0.1 with the template's table and queues, then, for
each function directory, runs ``--runs`` fresh Python processes as Lambda's runtime would: the
function's directory and the layer on ``sys.path``, the environment of the local runtime
(``knowledge_local.config.function_environment``: embedded index, local embedder, tracing off)
plus the endpoint and table. Each process times ``import app`` and two invocations of
``app.handler`` with one of the repository's events (``EVENTS``; the first invocation builds the
function's adapters), and lists which heavy modules the import loaded. The table shows the median
of the runs in milliseconds and the HTTP status (or batch failures) of the answer; progress goes to
stderr. Figures on a shared machine are noisy: compare runs made side by side. ``--baseline`` names
another checkout of the repository (its ``functions/`` and ``layers/``, with this checkout's
virtualenv and events): each run then measures it and this checkout alternately, and the table
shows both (``baseline → this``). ``--snapstart`` simulates Lambda SnapStart in each process: after
the import it runs the function's before-snapshot hooks, then its after-restore hooks
(``knowledge.snapstart``), timing both, so the first call is the first call after a restore.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
LAYER = ROOT / "layers" / "knowledge"
FUNCTIONS = ROOT / "functions"
EVENTS_DIR = ROOT / "events"
HEAVY_MODULES = (
    "aws_xray_sdk",
    "numpy",
    "tantivy",
    "onnxruntime",
    "tokenizers",
    "opensearchpy",
    "mcp",
    "tiktoken",
    "boto3",
)
"""Third-party modules worth knowing about when a handler imports them."""
MEMORY_SCOPES = "knowledge:read memory:read memory:write"


def _event(name: str) -> dict[str, Any]:
    event: dict[str, Any] = json.loads((EVENTS_DIR / f"{name}.json").read_text(encoding="utf-8"))
    return event


def _tool_event(path: str, body: dict[str, Any], headers: dict[str, str] | None = None) -> dict[str, Any]:
    """``search_knowledge_query`` aimed at another ``POST`` route, with a caller holding memory scopes."""
    event = _event("search_knowledge_query")
    text = json.dumps(body)
    event.update(routeKey=f"POST {path}", rawPath=path, body=text, isBase64Encoded=False)
    event["requestContext"].update(routeKey=f"POST {path}")
    event["requestContext"]["http"]["path"] = path
    event["requestContext"]["authorizer"]["lambda"]["scopes"] = MEMORY_SCOPES
    event["headers"].update({"content-length": str(len(text.encode())), **(headers or {})})
    return event


EVENTS: dict[str, Callable[[], dict[str, Any]]] = {
    "authorizer": lambda: _event("authorizer_request"),
    "search_knowledge": lambda: _event("search_knowledge_query"),
    "mcp": lambda: _tool_event(
        "/mcp",
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        {"content-type": "application/json", "accept": "application/json, text/event-stream"},
    ),
    "knowledge_admin": lambda: _event("knowledge_admin_health"),
    "ingest_queue": lambda: _event("ingest_queue_batch"),
    "indexer": lambda: _event("indexer_item_insert"),
    "remember": lambda: _tool_event("/v1/tools/remember", {"content": "The staging database is pg-stage-2."}),
    "search_memory": lambda: _tool_event("/v1/tools/search_memory", {"query": "staging database"}),
    "forget_memory": lambda: _tool_event(
        "/v1/tools/forget_memory", {"note_id": "nt_01ABSENT00000000000000000000", "mode": "soft"}
    ),
}
"""The event each function is invoked with (twice); a function not listed is only imported."""
PROFILE_ENV = "COLD_START_PROFILE"
"""Set (to anything) in a child's environment by ``--profile``: the first call runs under cProfile."""
PROFILE_ROWS = 25
SNAPSTART_ENV = "COLD_START_SNAPSTART"
"""Set (to anything) in a child's environment by ``--snapstart``: the SnapStart hooks run after the
import."""
EVENT_NAMES = {
    "mcp": "tools/list",
    "remember": "remember",
    "search_memory": "search_memory",
    "forget_memory": "forget_memory (absent note)",
    "authorizer": "authorizer_request",
    "search_knowledge": "search_knowledge_query",
    "knowledge_admin": "knowledge_admin_health",
    "ingest_queue": "ingest_queue_batch",
    "indexer": "indexer_item_insert",
}


class _Context:
    """The attributes of a Lambda context that Powertools reads."""

    function_name = "cold-start"
    function_version = "$LATEST"
    memory_limit_in_mb = 1024
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:cold-start"
    aws_request_id = "00000000-0000-0000-0000-000000000000"
    log_group_name = "/aws/lambda/cold-start"
    log_stream_name = "cold-start"

    def get_remaining_time_in_millis(self) -> int:
        return 29_000


def _outcome(answer: Any) -> str:
    if isinstance(answer, dict) and "statusCode" in answer:
        return str(answer["statusCode"])
    if isinstance(answer, dict) and "batchItemFailures" in answer:
        return f"{len(answer['batchItemFailures'])} failed"
    if isinstance(answer, dict) and "isAuthorized" in answer:
        return "authorized" if answer["isAuthorized"] else "denied"
    return type(answer).__name__


def child(function: str, root: Path) -> None:
    """Run in a fresh process: import the handler of ``root``'s ``function``, invoke it twice, print
    the figures as JSON."""
    sys.path[:0] = [str(root / "functions" / function), str(root / "layers" / "knowledge")]
    started = time.perf_counter()
    import app  # type: ignore[import-not-found]

    imported = time.perf_counter()
    if not Path(sys.modules["knowledge"].__file__ or "").is_relative_to(root):
        raise RuntimeError(f"knowledge was imported from outside {root}")
    figures: dict[str, Any] = {
        "import_ms": 1000 * (imported - started),
        "heavy": sorted(name for name in HEAVY_MODULES if name in sys.modules),
    }
    if os.environ.get(SNAPSTART_ENV):
        from knowledge import snapstart

        started = time.perf_counter()
        snapstart.run_before_snapshot()
        figures["snapshot_ms"] = 1000 * (time.perf_counter() - started)
        started = time.perf_counter()
        snapstart.run_after_restore()
        figures["restore_ms"] = 1000 * (time.perf_counter() - started)
    build = EVENTS.get(function)
    if build is not None:
        for run in ("first", "second"):
            event = build()
            profile = cProfile.Profile() if run == "first" and os.environ.get(PROFILE_ENV) else None
            started = time.perf_counter()
            if profile is not None:
                profile.enable()
            answer = app.handler(event, _Context())
            figures[f"{run}_ms"] = 1000 * (time.perf_counter() - started)
            if profile is not None:
                profile.disable()
                report = io.StringIO()
                pstats.Stats(profile, stream=report).sort_stats("cumulative").print_stats(PROFILE_ROWS)
                figures["first_call_profile"] = report.getvalue()
            figures["outcome"] = _outcome(answer)
    print(json.dumps(figures))


def _environment(endpoint_url: str, table_name: str, state_dir: Path) -> dict[str, str]:
    from knowledge_local.config import RuntimeSettings, function_environment

    forced, defaults = function_environment(RuntimeSettings(knowledge_state_dir=state_dir))
    return {
        **defaults,
        **{key: value for key, value in os.environ.items() if key in ("PATH", "HOME", "LANG")},
        **forced,
        "AWS_ENDPOINT_URL": endpoint_url,
        "TABLE_NAME": table_name,
        "POWERTOOLS_LOG_LEVEL": "ERROR",
        "PYTHONDONTWRITEBYTECODE": "1",
    }


def _measure(function: str, root: Path, environment: dict[str, str]) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "bench.cold_start", "--child", function, "--root", str(root)],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        check=False,
    )
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"{function} failed:\n{done.stderr[-2000:]}")
    figures: dict[str, Any] = json.loads(lines[-1])
    return figures


def _median(runs: Sequence[dict[str, Any]], key: str) -> str:
    values = [run[key] for run in runs if key in run]
    return f"{statistics.median(values):.0f}" if values else "—"


def _cell(runs: dict[str, list[dict[str, Any]]], key: str) -> str:
    if "baseline" in runs:
        return f"{_median(runs['baseline'], key)} → {_median(runs['this'], key)}"
    return _median(runs["this"], key)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("functions", nargs="*", help="function directories (default: all)")
    parser.add_argument("--runs", type=int, default=3, help="fresh processes per function")
    parser.add_argument("--baseline", type=Path, help="another checkout to measure alongside")
    parser.add_argument(
        "--profile", action="store_true", help="cProfile each first call (the last run's, on stdout)"
    )
    parser.add_argument(
        "--snapstart",
        action="store_true",
        help="run the SnapStart hooks after the import (before snapshot, after restore) and time them",
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--root", type=Path, default=ROOT, help=argparse.SUPPRESS)
    arguments = parser.parse_args(argv)
    if arguments.child:
        child(arguments.child, arguments.root)
        return
    from moto.server import ThreadedMotoServer

    from knowledge_local.emulator.provisioning import provision
    from knowledge_local.emulator.template.resources import load_stack

    functions = arguments.functions or sorted(path.parent.name for path in FUNCTIONS.glob("*/app.py"))
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        endpoint_url = f"http://{host}:{port}"
        stack = load_stack(ROOT / "template.yaml")
        provision(stack, endpoint_url)
        table_name = next(iter(stack.tables.values())).name
        with tempfile.TemporaryDirectory(prefix="cold-start-") as state_dir:
            environment = _environment(endpoint_url, table_name, Path(state_dir))
            if arguments.profile:
                environment[PROFILE_ENV] = "1"
            if arguments.snapstart:
                environment[SNAPSTART_ENV] = "1"
            trees = {
                "this": ROOT,
                **({"baseline": arguments.baseline.resolve()} if arguments.baseline else {}),
            }
            rows = []
            for number, function in enumerate(functions, start=1):
                runs: dict[str, list[dict[str, Any]]] = {name: [] for name in trees}
                for run in range(arguments.runs):
                    print(
                        f"\r[{number}/{len(functions)}] {function}: run {run + 1}/{arguments.runs}   ",
                        end="",
                        file=sys.stderr,
                        flush=True,
                    )
                    for name, root in reversed(trees.items()):
                        if (root / "functions" / function / "app.py").is_file():
                            runs[name].append(_measure(function, root, environment))
                rows.append((function, runs))
            print(file=sys.stderr)
    finally:
        server.stop()
    _report(rows, arguments.runs, snapstart=arguments.snapstart)


def _report(
    rows: Sequence[tuple[str, dict[str, list[dict[str, Any]]]]], count: int, *, snapstart: bool = False
) -> None:
    print(f"median of {count} fresh processes per handler, milliseconds")
    hooks = " before snapshot | after restore |" if snapstart else ""
    print(f"| handler | import |{hooks} first call | second call | event → answer | heavy modules imported |")
    print("|---|---|" + ("---|---|" if snapstart else "") + "---|---|---|---|")
    for function, runs in rows:
        event = EVENT_NAMES.get(function, "—")
        last = runs["this"][-1]
        heavy = ", ".join(last["heavy"]) or "none"
        if runs.get("baseline"):
            heavy = f"{', '.join(runs['baseline'][-1]['heavy']) or 'none'} → {heavy}"
        hook_cells = f" {_cell(runs, 'snapshot_ms')} | {_cell(runs, 'restore_ms')} |" if snapstart else ""
        print(
            f"| {function} | {_cell(runs, 'import_ms')} |{hook_cells} {_cell(runs, 'first_ms')} | "
            f"{_cell(runs, 'second_ms')} | {event} → {last.get('outcome', '—')} | {heavy} |"
        )
    for function, runs in rows:
        if "first_call_profile" in runs["this"][-1]:
            print(f"\n### {function}: first call, cProfile (cumulative)\n")
            print(runs["this"][-1]["first_call_profile"])


if __name__ == "__main__":
    main()
