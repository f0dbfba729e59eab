"""Lambda invocations for the local gateway: handlers imported from their files, run on worker
threads that stand in for warm execution environments.

Each handler module is imported once (by file path, under ``_lambda_functions.<LogicalId>``, without
adding ``CodeUri`` to ``sys.path``), so module state survives between invocations as in a warm
container. Invocations run on a fixed set of worker threads; each worker owns an event loop for its
lifetime (as the Lambda runtime's thread does), so adapters such as Mangum reuse it, and closes it
when the invoker closes. An invocation past the function's ``Timeout`` is reported as failed; its
thread finishes in the background.

Every invocation runs in its function's execution environment on its worker thread
(``execution_environment``): Powertools log keys stay with that function, and its metrics are
cleared when it ends, as if each function ran in its own Lambda container.
"""

from __future__ import annotations

import asyncio
import importlib.util
import queue
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeoutError
from typing import Any

from knowledge_local import execution_environment
from knowledge_local.http_api import LambdaContext
from knowledge_local.routes import FunctionSpec

Handler = Callable[[dict[str, Any], Any], Any]
_Job = tuple[str, Handler, tuple[Any, ...], "Future[Any]"]


class InvocationTimeoutError(TimeoutError):
    """The function did not answer within its ``Timeout``."""


class Invoker:
    """Runs handlers of ``FunctionSpec``s on ``workers`` threads; at most that many at once."""

    def __init__(self, workers: int) -> None:
        execution_environment.install()
        self._lock = threading.Lock()
        self._handlers: dict[str, Handler] = {}
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._threads = [
            threading.Thread(target=self._work, name=f"lambda-worker-{number}", daemon=True)
            for number in range(workers)
        ]
        for thread in self._threads:
            thread.start()

    def invoke(self, function: FunctionSpec, event: dict[str, Any]) -> Any:
        """The handler's answer to ``event`` with a fresh context. Raises what the handler or its
        import raises, or ``InvocationTimeoutError`` after ``function.timeout_seconds``."""
        handler = self._handler(function)
        context = LambdaContext(
            function_name=function.logical_id,
            memory_limit_in_mb=function.memory_mb,
            timeout_seconds=function.timeout_seconds,
        )
        future: Future[Any] = Future()
        self._jobs.put((function.logical_id, handler, (event, context), future))
        try:
            return future.result(timeout=function.timeout_seconds)
        except FutureTimeoutError as error:
            raise InvocationTimeoutError(f"{function.logical_id} timed out") from error

    def close(self, timeout: float) -> None:
        """Stop the workers after the invocations already queued, waiting at most ``timeout`` seconds."""
        for _ in self._threads:
            self._jobs.put(None)
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(timeout=max(0.0, deadline - time.monotonic()))

    def _handler(self, function: FunctionSpec) -> Handler:
        with self._lock:
            if function.logical_id not in self._handlers:
                self._handlers[function.logical_id] = _import_handler(function)
            return self._handlers[function.logical_id]

    def _work(self) -> None:
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        try:
            while (job := self._jobs.get()) is not None:
                function_name, handler, args, future = job
                if not future.set_running_or_notify_cancel():
                    continue
                try:
                    with execution_environment.invocation(function_name):
                        answer = handler(*args)
                    future.set_result(answer)
                except BaseException as error:
                    future.set_exception(error)
        finally:
            asyncio.set_event_loop(None)
            loop.close()


def _import_handler(function: FunctionSpec) -> Handler:
    module_name = f"_lambda_functions.{function.logical_id}"
    spec = importlib.util.spec_from_file_location(module_name, function.module_file)
    if spec is None or spec.loader is None:
        raise ImportError(f"Cannot load {function.module_file}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    handler = getattr(module, function.attribute)
    if not callable(handler):
        raise TypeError(f"{function.handler} is not callable")
    return handler  # type: ignore[no-any-return]
