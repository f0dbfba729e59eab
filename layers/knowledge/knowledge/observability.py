"""Powertools Logger, Metrics and a tracer shared by every function.

The service name comes from ``POWERTOOLS_SERVICE_NAME``; the metrics namespace is fixed.

``tracer.capture_lambda_handler`` wraps a handler in Powertools' ``Tracer`` on its first invocation,
and only where tracing runs (``knowledge.settings.TracingSettings``: in Lambda, unless
``POWERTOOLS_TRACE_DISABLED``); elsewhere the handler runs as it is. So a function whose tracing is
off never imports the X-Ray SDK, the largest import of the stack, which also builds AWS clients.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar, cast

from aws_lambda_powertools.logging import Logger
from aws_lambda_powertools.metrics import Metrics

if TYPE_CHECKING:
    from aws_lambda_powertools.tracing import Tracer

_Handler = TypeVar("_Handler", bound=Callable[..., Any])


class LazyTracer:
    """Powertools' ``Tracer``, built when a traced handler first runs with tracing on."""

    def __init__(self) -> None:
        self._tracer: Tracer | None = None
        self._lock = threading.Lock()

    def capture_lambda_handler(
        self, *, capture_response: bool = True, capture_error: bool = True
    ) -> Callable[[_Handler], _Handler]:
        """A decorator: ``Tracer.capture_lambda_handler`` with these options when tracing runs."""

        def decorate(handler: _Handler) -> _Handler:
            chosen: list[Callable[..., Any]] = []

            @functools.wraps(handler)
            def run(event: Any, context: Any) -> Any:
                if not chosen:
                    chosen.append(self._traced(handler, capture_response, capture_error))
                return chosen[0](event, context)

            return cast("_Handler", run)

        return decorate

    def _traced(
        self, handler: Callable[..., Any], capture_response: bool, capture_error: bool
    ) -> Callable[..., Any]:
        from knowledge.settings import get_tracing_settings

        if not get_tracing_settings().enabled:
            return handler
        with self._lock:
            if self._tracer is None:
                from aws_lambda_powertools.tracing import Tracer

                self._tracer = Tracer()
            return self._tracer.capture_lambda_handler(
                handler, capture_response=capture_response, capture_error=capture_error
            )


logger = Logger()
tracer = LazyTracer()
metrics = Metrics(namespace="KnowledgeService")
