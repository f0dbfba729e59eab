"""Lambda invocations, locally: every function runs in execution environments of its own, each a
process that handles one invocation at a time (``worker``), as on AWS.

An ``Invoker`` keeps a pool of environments per function. An invocation takes an idle environment
(the most recently used: the warmest), or starts a new one while the function has fewer than
``max_environments`` (a cold start: the process starts, runs ``setup`` and imports the handler,
within ``INIT_TIMEOUT_SECONDS``), or waits for one to be free, for at most
``QUEUE_TIMEOUT_SECONDS``, and then fails with ``InvocationThrottledError``. Concurrent clients
therefore never share a function's module state: Powertools' resolver, its current event and the
caller identity read from it, log keys and metrics all belong to one invocation at a time.

An invocation that runs past the function's ``Timeout`` fails with ``InvocationTimeoutError`` and its
environment is killed, as Lambda ends a timed-out environment; one whose process dies fails with
``InvocationError``, and the next invocation starts a fresh environment. A handler that raises fails
with ``InvocationError`` carrying the error's type and message (the traceback is in the function's
output); the environment stays warm.

Processes start from a fork server (``multiprocessing``'s ``forkserver``) that has imported the
heavy shared libraries once, so a cold start costs a fork and the function's own imports, and
environments share those pages. Each environment gets the runtime's environment variables as
they are when it starts, and writes to the runtime's stdout and stderr.

SIGINT and SIGTERM are blocked in the fork server and in every environment from the moment the
process exists (the thread that starts them blocks both while it does, and a process inherits its
starter's signal mask): Ctrl-C, or a SIGTERM sent to the runtime's whole process group, reaches
them too, and must not end an invocation halfway, nor the fork server (its end would end every
environment, ``worker``). The runtime stops them itself (``close``), and the kernel ends them when
the runtime is killed.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from multiprocessing import forkserver, resource_tracker
from multiprocessing.connection import Connection
from multiprocessing.context import ForkServerContext, ForkServerProcess
from typing import Any, Protocol

from knowledge_local.emulator.lambda_runtime import worker
from knowledge_local.emulator.lambda_runtime.context import LambdaContext
from knowledge_local.emulator.template.routes import FunctionSpec

DEFAULT_MAX_ENVIRONMENTS = 4
"""Execution environments per function at most: how many invocations of it run at once."""
INIT_TIMEOUT_SECONDS = 60.0
"""How long an environment may take to start and import its handler (Lambda allows 10 s; a
loaded laptop importing boto3 and Powertools needs more)."""
QUEUE_TIMEOUT_SECONDS = 60.0
"""How long an invocation waits for a free environment when all of its function's are busy."""
STOP_SECONDS = 2.0
STOP_SIGNALS = frozenset({signal.SIGINT, signal.SIGTERM})
"""Signals that stop the runtime, blocked in its helper processes and environments."""
PRELOADED_MODULES = [
    "boto3",
    "botocore.session",
    "pydantic",
    "aws_lambda_powertools.event_handler",
    "aws_lambda_powertools.utilities.batch",
    "aws_lambda_powertools.utilities.parser",
    "knowledge_local.emulator.lambda_runtime.worker",
]
"""Imported once by the fork server; every environment inherits them."""


class InvocationError(RuntimeError):
    """The function raised (``reason``: its error's type and message), or its environment died."""


class InvocationTimeoutError(InvocationError, TimeoutError):
    """The function did not answer within its ``Timeout``."""


class InvocationThrottledError(InvocationError):
    """Every environment of the function stayed busy for the function's ``Timeout``."""


class InvokerClosedError(InvocationError):
    """The invoker is closed, or closed while the invocation ran (its environment was ended): the
    runtime is stopping, the function did not fail."""


class Invocations(Protocol):
    """What the gateway and the event source pollers need of an invoker."""

    def invoke(self, function: FunctionSpec, event: dict[str, Any]) -> Any: ...

    def close(self, timeout: float) -> None: ...


class _Environment:
    """One execution environment: its process and the pipe to it. ``start`` forks the process,
    ``initialize`` waits for its handler to load."""

    _starting = threading.Lock()
    """Processes start one at a time: ``multiprocessing`` hands a new process its pipe through the
    fork server, and concurrent starts from several threads can leave a process without it."""

    def __init__(
        self, context: ForkServerContext, function: FunctionSpec, setup: worker.Setup | None
    ) -> None:
        self.function = function
        self.broken = False
        self.closing = False
        """Set by the invoker's ``close`` before it ends the process: its invocation then fails
        with ``InvokerClosedError``, not as a function that died."""
        self._lifecycle = threading.Lock()
        ours, theirs = context.Pipe()
        self._connection: Connection = ours
        self._theirs: Connection | None = theirs
        self._process: ForkServerProcess = context.Process(
            target=worker.run,
            args=(function, dict(os.environ), setup, theirs),
            name=f"lambda-{function.logical_id}",
            daemon=True,
        )

    def start(self) -> None:
        """Fork the process, unless the invoker's ``close`` got to this environment first."""
        with self._lifecycle:
            if self.closing:
                raise InvokerClosedError(f"{self.function.logical_id}: the invoker is closed")
            with self._starting, _stop_signals_blocked():
                self._process.start()
        if self._theirs is not None:
            self._theirs.close()
            self._theirs = None

    def initialize(self) -> None:
        """Wait for the handler to be imported; on failure the process is ended."""
        try:
            self._expect(worker.READY, INIT_TIMEOUT_SECONDS, "did not initialize in time")
        except InvocationError:
            self.end()
            raise

    def invoke(self, event: dict[str, Any], context: LambdaContext) -> Any:
        try:
            self._connection.send((event, context))
        except OSError:
            self.broken = True
            raise self._gone() from None
        return self._expect(worker.OK, self.function.timeout_seconds, "timed out")

    def _expect(self, kind: str, timeout: float, late: str) -> Any:
        name = self.function.logical_id
        try:
            ready = self._connection.poll(timeout)
            answered, payload = self._connection.recv() if ready else (None, None)
        except (EOFError, OSError):
            self.broken = True
            raise self._gone() from None
        if not ready:
            self.broken = True
            raise InvocationTimeoutError(f"{name} {late} after {timeout:g} s")
        if answered != kind:
            raise InvocationError(f"{name}: {payload}")
        return payload

    def _gone(self) -> InvocationError:
        name = self.function.logical_id
        if self.closing:
            return InvokerClosedError(f"{name}: the invoker closed while it ran")
        return InvocationError(f"{name}: its execution environment exited")

    def request_stop(self) -> None:
        """Ask the process to end after its current invocation (``stop`` waits for it)."""
        with contextlib.suppress(OSError):
            self._connection.send(None)

    def stop(self, timeout: float) -> None:
        """Ask the process to end; end it if it has not after ``timeout`` seconds."""
        self.request_stop()
        self._process.join(timeout)
        self.end()

    def end(self) -> None:
        """Kill the process (unless it has exited), wait for it and close the pipe. Only the thread
        that holds the environment closes the pipe; others use ``kill``."""
        self.kill()
        self._connection.close()

    def kill(self, *, wait: bool = True) -> None:
        """Kill the process unless it has exited, and (``wait``) wait until it has. Safe from any
        thread: the pipe is left to the environment's holder, whose read then ends."""
        with self._lifecycle:
            if self._process.pid is None:
                return
            if self._process.is_alive():
                self._process.kill()
            if wait:
                self._process.join(STOP_SECONDS)


class _Pool:
    """The environments of one function."""

    def __init__(self, start: Callable[[], _Environment], limit: int) -> None:
        self._start = start
        self._limit = limit
        self._idle: list[_Environment] = []
        self._all: set[_Environment] = set()
        """Every environment with a live process: idle, busy or initializing."""
        self._closed = False
        self._stopping: list[_Environment] = []
        self._changed = threading.Condition()

    def acquire(self, function: FunctionSpec) -> _Environment:
        deadline = time.monotonic() + QUEUE_TIMEOUT_SECONDS
        with self._changed:
            while not self._closed and not self._idle and len(self._all) >= self._limit:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise InvocationThrottledError(
                        f"{function.logical_id}: all {self._limit} execution environments stayed busy"
                    )
                self._changed.wait(remaining)
            if self._closed:
                raise InvokerClosedError(f"{function.logical_id}: the invoker is closed")
            if self._idle:
                return self._idle.pop()
            environment = self._start()
            self._all.add(environment)  # before it starts: close() sees it however far it got
        try:
            environment.start()
            environment.initialize()
        except BaseException:
            environment.end()
            with self._changed:
                self._all.discard(environment)
                self._changed.notify_all()
            raise
        return environment

    def release(self, environment: _Environment) -> None:
        with self._changed:
            keep = not environment.broken and not self._closed
            if keep:
                self._idle.append(environment)
            self._changed.notify_all()
        if environment.broken:
            environment.end()
        elif not keep:
            environment.stop(STOP_SECONDS)
        if not keep:
            with self._changed:
                self._all.discard(environment)
                self._changed.notify_all()

    def close(self) -> None:
        """Take no more invocations and ask the idle environments to end (``finish_closing``
        waits for them)."""
        with self._changed:
            self._closed = True
            self._stopping, self._idle = self._idle, []
            self._changed.notify_all()
        for environment in self._stopping:
            environment.request_stop()

    def finish_closing(self, deadline: float) -> None:
        """Wait for the idle environments asked to end and for the busy ones to finish; at
        ``deadline`` kill whatever still runs, initializing ones included. Returns once every
        process has ended."""
        for environment in self._stopping:
            environment.stop(max(0.0, deadline - time.monotonic()))
        with self._changed:
            self._all.difference_update(self._stopping)
            self._stopping = []
            while self._all and time.monotonic() < deadline:
                self._changed.wait(deadline - time.monotonic())
            busy = list(self._all)
        for environment in busy:
            environment.closing = True
            environment.kill(wait=False)
        for environment in busy:
            environment.kill()
        with self._changed:  # their holders see the pipe end, release them and close the pipes
            while self._all and time.monotonic() < deadline + STOP_SECONDS:
                self._changed.wait(0.05)


class Invoker:
    """Runs functions in execution environments, at most ``max_environments`` per function;
    ``setup`` (picklable: a module-level function or a ``functools.partial`` of one) runs in every
    environment before its handler is imported."""

    def __init__(
        self, *, max_environments: int = DEFAULT_MAX_ENVIRONMENTS, setup: worker.Setup | None = None
    ) -> None:
        if max_environments < 1:
            raise ValueError(f"max_environments must be at least 1, got {max_environments}")
        self._max_environments = max_environments
        self._setup = setup
        self._context = multiprocessing.get_context("forkserver")
        self._context.set_forkserver_preload(PRELOADED_MODULES)
        self._pools: dict[str, _Pool] = {}
        self._lock = threading.Lock()

    def invoke(self, function: FunctionSpec, event: dict[str, Any]) -> Any:
        """The handler's answer to ``event``, with a fresh context. Raises ``InvocationError`` (and
        its subclasses for a timeout or a throttle) as the module docs describe."""
        pool = self._pool(function)
        environment = pool.acquire(function)
        context = LambdaContext(
            function_name=function.logical_id,
            memory_limit_in_mb=function.memory_mb,
            timeout_seconds=function.timeout_seconds,
        )
        try:
            return environment.invoke(event, context)
        finally:
            pool.release(environment)

    def prepare(self, function: FunctionSpec) -> None:
        """Start one environment of ``function`` now (unless one is idle), so that its first
        invocation finds it warm. Raises ``InvocationError`` when it cannot initialize."""
        pool = self._pool(function)
        pool.release(pool.acquire(function))

    def close(self, timeout: float) -> None:
        """Stop every environment: idle ones now, busy ones when their invocation ends, and kill
        what still runs after ``timeout`` seconds (its invocation fails with
        ``InvokerClosedError``). Returns once every environment's process has ended."""
        deadline = time.monotonic() + timeout
        with self._lock:
            pools = list(self._pools.values())
        for pool in pools:
            pool.close()
        for pool in pools:
            pool.finish_closing(deadline)

    def _pool(self, function: FunctionSpec) -> _Pool:
        with self._lock:
            pool = self._pools.get(function.logical_id)
            if pool is None:
                pool = self._pools[function.logical_id] = _Pool(
                    lambda: _Environment(self._context, function, self._setup), self._max_environments
                )
            return pool


@contextlib.contextmanager
def _stop_signals_blocked() -> Iterator[None]:
    """Block ``STOP_SIGNALS`` in the calling thread (only: the process still receives them, in
    another thread) while the block runs, so that a process started in it, and the fork server it
    may start first, inherits them blocked (see the module docs). The resource tracker is started
    before: starting it unblocks both signals in the calling thread (it ignores them itself)."""
    resource_tracker.ensure_running()
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def stop_helper_processes() -> None:
    """End ``multiprocessing``'s fork server and resource tracker of this process, and wait for
    them (they would end on their own once they see this process gone, a moment after it exits),
    so that a stopped runtime leaves no process behind. Uses the ``_stop`` the standard library's
    own tests use; a later ``Invoker`` starts a new fork server."""
    for helper in (forkserver._forkserver, resource_tracker._resource_tracker):
        stop = getattr(helper, "_stop", None)
        if stop is not None:
            with contextlib.suppress(OSError):
                stop()
