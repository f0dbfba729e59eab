"""The inside of one Lambda execution environment: a process that initializes one function and runs
its invocations one at a time, as the Lambda runtime does (``invoker`` starts and drives it).

``run`` is the process's entry point. Init: the process takes the environment variables it is
given (the runtime's at the moment the environment starts; SIGINT and SIGTERM come blocked from
its starter, ``invoker``: the runtime stops its environments itself, and a Ctrl-C reaches every
process of the terminal's group), silences disabled
metrics (``execution_environment``), runs ``setup`` (e.g. connecting to the runtime's search index),
imports the handler by file path (``import_handler``) and opens an event loop that lives as long as
the environment, which adapters such as Mangum reuse. Then it answers ``("ready", None)``, or
``("failed", reason)`` when init raised.

Each message received is ``(event, context)``; the answer is ``("ok", result)`` or, when the handler
raises or its result cannot be sent, ``("failed", reason)`` after the traceback is printed to the
process's stderr, as Lambda writes it to the function's log. ``None`` or a closed pipe ends the
process, quietly: an answer the runtime is no longer there to read (it stopped, or ended this
environment) ends it too, without a traceback, and so does the end of its parent (Linux's
``PR_SET_PDEATHSIG``), so no environment outlives a runtime that was killed. Module state
(imports, the handler module's globals, the container it builds) lives as long as the process, as
in a warm container.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import importlib.util
import os
import signal
import sys
import traceback
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

from knowledge_local.emulator.lambda_runtime import execution_environment
from knowledge_local.emulator.template.routes import FunctionSpec

Handler = Callable[[dict[str, Any], Any], Any]
Setup = Callable[[], None]

READY = "ready"
OK = "ok"
FAILED = "failed"


def run(
    function: FunctionSpec, environment: dict[str, str], setup: Setup | None, connection: Connection
) -> None:
    """Serve ``function``'s invocations on ``connection`` until told to stop (see the module docs)."""
    _end_with_parent()
    os.environ.clear()
    os.environ.update(environment)
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        execution_environment.install()
        if setup is not None:
            setup()
        handler = import_handler(function)
    except BaseException as error:
        if _parent_alive():
            traceback.print_exc()
        _send(connection, (FAILED, _reason(error)))
        return
    if not _send(connection, (READY, None)):
        return
    try:
        _serve(handler, function, connection)
    finally:
        loop.close()


def _serve(handler: Handler, function: FunctionSpec, connection: Connection) -> None:
    while True:
        try:
            job = connection.recv()
        except (EOFError, OSError):
            return
        if job is None:
            return
        event, context = job
        try:
            with execution_environment.invocation():
                answer = handler(event, context)
            sent = _send(connection, (OK, answer))
        except BaseException as error:
            if _parent_alive():
                print(f"[ERROR] {function.logical_id} failed", file=sys.stderr)
                traceback.print_exc()
            sent = _send(connection, (FAILED, _reason(error)))
        if not sent:
            return


def _send(connection: Connection, message: tuple[str, Any]) -> bool:
    """Send ``message``; ``False`` when the runtime's end of the pipe is gone (it stopped, or
    ended this environment): the process then just ends. An answer that cannot be pickled still
    raises (not an ``OSError``), to be answered as a failure."""
    try:
        connection.send(message)
    except (OSError, EOFError):
        return False
    return True


def _end_with_parent() -> None:
    """Have the kernel kill this process when its parent (multiprocessing's fork server, which ends
    with the runtime) ends, so that no environment outlives a runtime that was killed (Linux's
    ``PR_SET_PDEATHSIG``; elsewhere the closed pipe ends it at its next read)."""
    global _parent_pid
    _parent_pid = os.getppid()
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if not _parent_alive():
        os._exit(0)


def _parent_alive() -> bool:
    """Whether the process that started this one still runs (once it ends, the process is
    reparented and its parent id changes)."""
    return os.getppid() == _parent_pid


_PR_SET_PDEATHSIG = 1
_parent_pid = 0
"""The parent's id when ``run`` began (this module is imported by the fork server, the parent)."""


def _reason(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"


def import_handler(function: FunctionSpec) -> Handler:
    """The handler of ``function``: its module imported once by file path (under
    ``_lambda_functions.<LogicalId>``, without adding ``CodeUri`` to ``sys.path``)."""
    module_name = f"_lambda_functions.{function.logical_id}"
    module = sys.modules.get(module_name)
    if module is None:
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
