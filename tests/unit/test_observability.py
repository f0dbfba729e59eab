"""The tracer: Powertools' X-Ray tracer only where tracing runs, the handler untouched elsewhere."""

from __future__ import annotations

from typing import Any

import pytest

from knowledge.observability import LazyTracer
from knowledge.settings import TracingSettings, get_tracing_settings


@pytest.mark.parametrize(
    ("environment", "enabled"),
    [
        ({"LAMBDA_TASK_ROOT": "/var/task"}, True),
        ({"LAMBDA_TASK_ROOT": "/var/task", "POWERTOOLS_TRACE_DISABLED": "true"}, False),
        ({"LAMBDA_TASK_ROOT": "/var/task", "POWERTOOLS_TRACE_DISABLED": "false"}, True),
        ({"LAMBDA_TASK_ROOT": "/var/task", "AWS_SAM_LOCAL": "true"}, False),
        ({"LAMBDA_TASK_ROOT": "/var/task", "AWS_CHALICE_CLI_MODE": "true"}, False),
        ({}, False),
    ],
)
def test_tracing_settings_enabled_only_inside_lambda_unless_disabled(
    monkeypatch: pytest.MonkeyPatch, environment: dict[str, str], enabled: bool
) -> None:
    for name in ("LAMBDA_TASK_ROOT", "POWERTOOLS_TRACE_DISABLED", "AWS_SAM_LOCAL", "AWS_CHALICE_CLI_MODE"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)

    assert TracingSettings().enabled is enabled


def test_lazy_tracer_with_tracing_off_runs_the_handler_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POWERTOOLS_TRACE_DISABLED", "true")
    get_tracing_settings.cache_clear()
    calls: list[tuple[Any, Any]] = []

    @LazyTracer().capture_lambda_handler(capture_response=False)
    def handler(event: Any, context: Any) -> dict[str, str]:
        calls.append((event, context))
        return {"answer": "ok"}

    try:
        assert handler({"n": 1}, "context") == {"answer": "ok"}
        assert handler({"n": 2}, "context") == {"answer": "ok"}
    finally:
        get_tracing_settings.cache_clear()

    assert calls == [({"n": 1}, "context"), ({"n": 2}, "context")]
    assert handler.__name__ == "handler"
