"""An invoker for tests that run the real handlers in the test's own process: with ``mock_aws``,
an installed container of fakes, or failures injected into a client the handlers use.

Handlers run in the calling thread, one invocation at a time for the whole process (the
Powertools objects are the process's), so a gateway in front of it answers requests one after
another. ``knowledge_local.emulator.lambda_runtime.invoker.Invoker`` is the runtime's: a process per execution
environment.
"""

from __future__ import annotations

import threading
from typing import Any

from knowledge_local.emulator.lambda_runtime import execution_environment
from knowledge_local.emulator.lambda_runtime.context import LambdaContext
from knowledge_local.emulator.lambda_runtime.worker import Handler, import_handler
from knowledge_local.emulator.template.routes import FunctionSpec

_one_at_a_time = threading.Lock()


class InlineInvoker:
    """``knowledge_local.emulator.lambda_runtime.invoker.Invocations`` in this process."""

    def __init__(self) -> None:
        execution_environment.install()
        self._handlers: dict[str, Handler] = {}

    def invoke(self, function: FunctionSpec, event: dict[str, Any]) -> Any:
        context = LambdaContext(
            function_name=function.logical_id,
            memory_limit_in_mb=function.memory_mb,
            timeout_seconds=function.timeout_seconds,
        )
        with _one_at_a_time:
            if function.logical_id not in self._handlers:
                self._handlers[function.logical_id] = import_handler(function)
            with execution_environment.invocation():
                return self._handlers[function.logical_id](event, context)

    def close(self, timeout: float) -> None:
        """Nothing runs in the background."""
