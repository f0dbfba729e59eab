"""Lambda execution environments for the functions sharing this process: what Powertools keeps
between log lines and metrics stays with one function's invocations, as it does on Lambda.

On Lambda each function runs in its own process, one invocation at a time. Locally every function
runs in this process, concurrently on the invokers' worker threads, and shares the Powertools
``Logger`` and ``Metrics`` of ``knowledge.observability``: without help, one function's log lines
would carry another's keys (``inject_lambda_context`` appends ``function_name``, ``cold_start``,
``correlation_id``... to one process-wide formatter), and metrics would pile up across invocations.
The handlers stay unchanged; ``install()`` (once, idempotent) and ``invocation()`` (around every
invocation, see ``invoker``) do the rest:

- **Log keys** live per execution environment: one per worker thread and function, like a warm
  container. An invocation sees the keys its function left in that environment (as a warm
  container does without ``clear_state``) and never another function's or another thread's.
  Asyncio tasks and ``anyio`` worker threads started by an invocation inherit its environment
  (it is a context variable); code outside any invocation uses one environment per thread.
- **Metrics** are cleared after every invocation, as ``log_metrics`` clears them on Lambda once
  published, so nothing accumulates and no metadata (``error_code``...) outlives its invocation.
- **Metrics are silent** while ``POWERTOOLS_METRICS_DISABLED`` is set (the local runtime sets it):
  Powertools applies that setting only in ``flush_metrics``, while ``single_metric`` (the
  ``ColdStart`` metric of ``log_metrics(capture_cold_start_metric=True)``) and ``add_metric``'s
  automatic flush at 100 metrics print their EMF documents regardless; ``install()`` makes those
  two modules' ``print`` drop its output while metrics are disabled.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from aws_lambda_powertools.logging.formatter import LambdaPowertoolsFormatter
from aws_lambda_powertools.metrics import base as metrics_base
from aws_lambda_powertools.metrics.functions import is_metrics_disabled
from aws_lambda_powertools.metrics.provider.cloudwatch_emf import cloudwatch as emf_provider


class _Environment:
    """The log keys of one execution environment, per formatter (``id(formatter)``)."""

    def __init__(self) -> None:
        self.keys: dict[int, dict[str, Any]] = {}


_current: ContextVar[_Environment | None] = ContextVar("lambda_execution_environment", default=None)
_per_thread = threading.local()
_install_lock = threading.Lock()


def _environment() -> _Environment:
    """The environment of the running invocation, else this thread's own."""
    current = _current.get()
    if current is not None:
        return current
    if not hasattr(_per_thread, "outside"):
        _per_thread.outside = _Environment()
    outside: _Environment = _per_thread.outside
    return outside


def _function_environment(function_name: str) -> _Environment:
    """This worker thread's environment of ``function_name``."""
    if not hasattr(_per_thread, "functions"):
        _per_thread.functions = {}
    functions: dict[str, _Environment] = _per_thread.functions
    return functions.setdefault(function_name, _Environment())


class _EnvironmentFormatter(LambdaPowertoolsFormatter):
    """Powertools' JSON formatter whose ``log_format`` (the keys it adds to every line) belongs to
    the current execution environment; a new environment starts with the keys the formatter had
    when ``install()`` ran (service, sampling rate...)."""

    _initial_keys: dict[str, Any]

    @property
    def log_format(self) -> dict[str, Any]:
        keys = _environment().keys
        if id(self) not in keys:
            keys[id(self)] = dict(self._initial_keys)
        return keys[id(self)]

    @log_format.setter
    def log_format(self, value: dict[str, Any]) -> None:
        _environment().keys[id(self)] = value

    @staticmethod
    def adopt(formatter: LambdaPowertoolsFormatter) -> None:
        """Turn ``formatter`` (in use by a Logger) into one of these, keeping its settings; its
        current keys become every environment's initial keys."""
        initial = dict(formatter.__dict__.pop("log_format"))
        formatter.__class__ = _EnvironmentFormatter
        formatter.__dict__["_initial_keys"] = initial


def install() -> None:
    """Scope the log keys of ``knowledge.observability.logger`` to execution environments and
    silence disabled metrics (see the module docs); calling it again changes nothing."""
    from knowledge.observability import logger

    with _install_lock:
        formatter = logger.registered_formatter
        if isinstance(formatter, LambdaPowertoolsFormatter) and not isinstance(
            formatter, _EnvironmentFormatter
        ):
            _EnvironmentFormatter.adopt(formatter)
        for module in (metrics_base, emf_provider):
            vars(module)["print"] = _print_unless_metrics_disabled


@contextmanager
def invocation(function_name: str) -> Iterator[None]:
    """Run one invocation of ``function_name`` in this thread's environment of that function;
    clear the metrics it left when it ends."""
    token = _current.set(_function_environment(function_name))
    try:
        yield
    finally:
        _current.reset(token)
        _clear_metrics()


def _clear_metrics() -> None:
    from knowledge.observability import metrics

    metrics.clear_metrics()


def _print_unless_metrics_disabled(*values: Any, **options: Any) -> None:
    """``print``, unless ``POWERTOOLS_METRICS_DISABLED`` (or ``POWERTOOLS_DEV``) disables metrics."""
    if not is_metrics_disabled():
        print(*values, **options)
