"""The invoker runs each function in execution environments of its own, each a process with one
invocation at a time, as on Lambda: module state stays warm between invocations, never reaches
another function or a concurrent invocation, and a failing environment is replaced."""

from __future__ import annotations

import functools
import itertools
import os
import signal
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from multiprocessing import forkserver
from pathlib import Path
from typing import Any

import pytest

from knowledge_local.emulator.lambda_runtime import processes
from knowledge_local.emulator.lambda_runtime.invoker import (
    InvocationError,
    InvocationTimeoutError,
    Invoker,
    InvokerClosedError,
)
from knowledge_local.emulator.template.routes import FunctionSpec
from tests.fixtures.invoker.setup import mark, mark_slowly

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "invoker"


def _function(logical_id: str, handler: str, *, timeout: float = 10, code: Path = FIXTURES) -> FunctionSpec:
    return FunctionSpec(
        logical_id=logical_id, code_dir=code, handler=f"app.{handler}", timeout_seconds=timeout
    )


WHERE = _function("WhereProbe", "where")
OTHER = _function("OtherProbe", "where")
INDEXER = _function("IndexerProbe", "log_line")
AUTHORIZER = _function("AuthorizerProbe", "log_line")
MEASURE = _function("MeasureProbe", "measure")
SINGLE = _function("SingleProbe", "single")
FAIL = _function("FailProbe", "fail")
EXIT = _function("ExitProbe", "exit_process")
UNPICKLABLE = _function("UnpicklableProbe", "unpicklable")
SLOW = _function("SlowProbe", "where", timeout=0.5)
BROKEN = _function("BrokenProbe", "handler", code=FIXTURES / "broken")


@pytest.fixture
def invoker() -> Iterator[Invoker]:
    running = Invoker(max_environments=2, setup=functools.partial(mark, "done"))
    yield running
    running.close(timeout=5)


def test_invoker_warm_environment_keeps_module_state_and_runs_setup_first(invoker: Invoker) -> None:
    first = invoker.invoke(WHERE, {})
    second = invoker.invoke(WHERE, {})

    assert (second["pid"], second["invocations"]) == (first["pid"], 2)
    assert first["setup"] == "done"
    assert first["function_name"] == "WhereProbe"


def test_invoker_functions_never_share_an_environment(invoker: Invoker) -> None:
    where = invoker.invoke(WHERE, {})
    other = invoker.invoke(OTHER, {})

    assert other["pid"] != where["pid"]
    assert other["invocations"] == 1


def test_invoker_concurrent_invocations_run_one_per_environment(invoker: Invoker) -> None:
    with ThreadPoolExecutor(max_workers=6) as pool:
        answers = list(pool.map(lambda _: invoker.invoke(WHERE, {"seconds": 0.2}), range(6)))

    by_environment: dict[int, list[dict[str, Any]]] = {}
    for answer in answers:
        by_environment.setdefault(answer["pid"], []).append(answer)
    assert len(by_environment) == 2
    for runs in by_environment.values():
        runs.sort(key=lambda run: run["started"])
        assert all(earlier["ended"] <= later["started"] for earlier, later in itertools.pairwise(runs))


def test_invoker_function_keeps_its_own_log_keys_but_never_another_functions(invoker: Invoker) -> None:
    invoker.invoke(AUTHORIZER, {"append": {"tenant_id": "acme"}})
    invoker.invoke(INDEXER, {"append": {"batch": "first"}})
    authorizer_again = invoker.invoke(AUTHORIZER, {})
    indexer_again = invoker.invoke(INDEXER, {})

    assert authorizer_again["function_name"] == "AuthorizerProbe"
    assert authorizer_again["tenant_id"] == "acme"
    assert "batch" not in authorizer_again
    assert indexer_again["batch"] == "first"
    assert "tenant_id" not in indexer_again


def test_invoker_disabled_metrics_print_nothing_and_end_with_each_invocation(
    invoker: Invoker, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")

    answers = [invoker.invoke(MEASURE, {"error_code": f"code-{number}"}) for number in range(150)]
    printed = invoker.invoke(SINGLE, {})

    assert printed == ""
    assert {answer["printed"] for answer in answers} == {""}
    assert all(answer["held"] == {"metrics": 0, "metadata": {}} for answer in answers)


def test_invoker_enabled_metrics_still_print(invoker: Invoker, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "false")

    printed = invoker.invoke(SINGLE, {})

    assert '"Single"' in printed


def test_invoker_failing_function_reports_its_error_and_stays_warm(invoker: Invoker) -> None:
    with pytest.raises(InvocationError, match="ValueError: the function failed on purpose"):
        invoker.invoke(FAIL, {})
    with pytest.raises(InvocationError, match="ValueError"):
        invoker.invoke(FAIL, {})


def test_invoker_timed_out_environment_is_replaced(invoker: Invoker) -> None:
    before = invoker.invoke(SLOW, {})

    with pytest.raises(InvocationTimeoutError, match=r"timed out after 0\.5 s"):
        invoker.invoke(SLOW, {"seconds": 5})
    after = invoker.invoke(SLOW, {})

    assert after["pid"] != before["pid"]
    assert after["invocations"] == 1


def test_invoker_environment_that_exits_is_replaced(invoker: Invoker) -> None:
    with pytest.raises(InvocationError, match="exited"):
        invoker.invoke(EXIT, {})

    with pytest.raises(InvocationError, match="exited"):
        invoker.invoke(EXIT, {})


def test_invoker_answer_that_cannot_leave_the_environment_is_an_error(invoker: Invoker) -> None:
    with pytest.raises(InvocationError, match="UnpicklableProbe"):
        invoker.invoke(UNPICKLABLE, {})


def test_invoker_function_whose_init_fails_reports_it(invoker: Invoker) -> None:
    with pytest.raises(InvocationError, match="RuntimeError: init failed on purpose"):
        invoker.invoke(BROKEN, {})


def test_invoker_closed_stops_every_environment(invoker: Invoker) -> None:
    pid = invoker.invoke(WHERE, {})["pid"]

    invoker.close(timeout=5)

    assert not Path(f"/proc/{pid}").exists()
    with pytest.raises(InvocationError, match="closed"):
        invoker.invoke(WHERE, {})


def test_invoker_closed_during_an_invocation_ends_it_as_closed_not_as_a_failure(invoker: Invoker) -> None:
    pid = invoker.invoke(WHERE, {})["pid"]
    with ThreadPoolExecutor(max_workers=1) as pool:
        running = pool.submit(invoker.invoke, WHERE, {"seconds": 8})
        time.sleep(0.3)
        invoker.close(timeout=0.1)
        with pytest.raises(InvokerClosedError, match="WhereProbe: the invoker closed while it ran"):
            running.result(timeout=30)

    assert not Path(f"/proc/{pid}").exists()


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_invoker_stop_signal_to_the_process_group_ends_no_invocation(invoker: Invoker, signum: int) -> None:
    """What Ctrl-C or ``kill -TERM -<pgid>`` sends to an environment and to the fork server."""
    first = invoker.invoke(WHERE, {})
    fork_server = forkserver._forkserver._forkserver_pid  # type: ignore[attr-defined]
    with ThreadPoolExecutor(max_workers=1) as pool:
        running = pool.submit(invoker.invoke, WHERE, {"seconds": 1})
        time.sleep(0.3)
        for pid in (first["pid"], fork_server):
            os.kill(pid, signum)
        answer = running.result(timeout=30)
    started = invoker.invoke(OTHER, {})  # a new environment, from the same fork server

    assert (answer["pid"], answer["invocations"]) == (first["pid"], 2)
    assert answer["ended"] - answer["started"] >= 1
    assert started["invocations"] == 1
    assert Path(f"/proc/{fork_server}").exists()


def _environment_processes() -> set[int]:
    """The processes the fork server started (every invoker's environments in this process)."""
    pid = forkserver._forkserver._forkserver_pid  # type: ignore[attr-defined]
    return processes.descendants(pid) if pid else set()


def test_invoker_closed_while_an_environment_starts_ends_that_process_too() -> None:
    # every environment takes 1.5 s to start, so the close lands while the second one starts
    invoker = Invoker(max_environments=2, setup=functools.partial(mark_slowly, "done", 1.5))
    try:
        invoker.invoke(WHERE, {})  # the fork server runs
        before = _environment_processes()
        with ThreadPoolExecutor(max_workers=1) as pool:
            starting = pool.submit(invoker.invoke, OTHER, {})
            time.sleep(0.3)
            invoker.close(timeout=0)
            with pytest.raises(InvokerClosedError):
                starting.result(timeout=30)
    finally:
        invoker.close(timeout=5)

    assert _environment_processes() <= before
