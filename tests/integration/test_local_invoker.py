"""The invoker runs each function in its own execution environment: Powertools' log keys and
metrics of one function never reach another's, as on Lambda, where each has its own container."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from knowledge.observability import metrics
from knowledge_local.invoker import Invoker
from knowledge_local.routes import FunctionSpec

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "invoker"


def _function(logical_id: str, handler: str) -> FunctionSpec:
    return FunctionSpec(logical_id=logical_id, code_dir=FIXTURES, handler=f"app.{handler}")


INDEXER = _function("IndexerProbe", "log_line")
AUTHORIZER = _function("AuthorizerProbe", "log_line")
MEASURE = _function("MeasureProbe", "measure")
SINGLE = _function("SingleProbe", "single")


@pytest.fixture
def invoker() -> Iterator[Invoker]:
    running = Invoker(2)
    yield running
    running.close(timeout=5)


def test_invoker_concurrent_functions_log_with_their_own_keys(invoker: Invoker) -> None:
    entered, gate = threading.Event(), threading.Event()
    with ThreadPoolExecutor(max_workers=1) as pool:
        slow = pool.submit(invoker.invoke, INDEXER, {"entered": entered, "gate": gate})
        assert entered.wait(timeout=10)
        other = invoker.invoke(AUTHORIZER, {"append": {"tenant_id": "acme"}})
        gate.set()
        indexer_line: dict[str, Any] = slow.result(timeout=10)

    assert other["function_name"] == "AuthorizerProbe"
    assert other["tenant_id"] == "acme"
    assert indexer_line["function_name"] == "IndexerProbe"
    assert "tenant_id" not in indexer_line


def test_invoker_function_keeps_its_own_keys_but_never_another_functions() -> None:
    invoker = Invoker(1)
    try:
        invoker.invoke(AUTHORIZER, {"append": {"tenant_id": "acme"}})
        invoker.invoke(INDEXER, {"append": {"batch": "first"}})
        authorizer_again = invoker.invoke(AUTHORIZER, {})
        indexer_again = invoker.invoke(INDEXER, {})
    finally:
        invoker.close(timeout=5)

    assert authorizer_again["tenant_id"] == "acme"
    assert "batch" not in authorizer_again
    assert indexer_again["batch"] == "first"
    assert "tenant_id" not in indexer_again


def test_invoker_disabled_metrics_print_nothing_and_end_with_each_invocation(
    invoker: Invoker, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")

    for number in range(150):
        invoker.invoke(MEASURE, {"error_code": f"code-{number}"})
    invoker.invoke(SINGLE, {})

    assert capsys.readouterr().out == ""
    assert metrics.metric_set == {}
    assert metrics.metadata_set == {}


def test_invoker_enabled_metrics_still_print(
    invoker: Invoker, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "false")

    invoker.invoke(SINGLE, {})

    assert '"Single"' in capsys.readouterr().out
