"""Stopping the runtime while clients search and write: whichever signal, sent to the runtime alone
or to its whole process group (as Ctrl-C in a terminal does, reaching the fork server and every
execution environment too), each request gets its real answer or ``503 service_unavailable`` with
``Retry-After``, and a connection is refused only once the listening socket is closed. Each test
runs a runtime of its own, in a process group of its own, without a seed."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import httpx2
import pytest

from tests.e2e.runtime_process import STOP_TIMEOUT_SECONDS, RuntimeProcess, eventually, start_runtime

SEARCHERS = 12
WRITERS = 3
ANSWERS_BEFORE_THE_SIGNAL = 10
NO_QUOTAS = {"TENANT_REQUESTS_PER_SECOND": "0", "TENANT_WRITES_PER_SECOND": "0"}


@dataclass(frozen=True)
class Outcome:
    """One request: its status (``None`` when no answer came), ``Retry-After``, error code, the
    transport error's type, and when it ended (``time.monotonic()``)."""

    status: int | None
    retry_after: str | None
    code: str | None
    transport_error: str | None
    ended: float


class Load:
    """Client threads, each on a new connection per request (``Connection: close`` clients such as
    curl), recording every outcome until ``stop``."""

    def __init__(self, runtime: RuntimeProcess) -> None:
        self.runtime = runtime
        self.outcomes: list[Outcome] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def start(self, base_id: str) -> None:
        def search(api: httpx2.Client) -> httpx2.Response:
            return api.post("/v1/tools/search_knowledge", json={"query": "espresso shot timing"})

        def write(api: httpx2.Client) -> httpx2.Response:
            item = {"title": "Espresso", "content": "Pull the shot for twenty-five seconds.", "publish": True}
            return api.post(f"/v1/knowledge-bases/{base_id}/items", json=item)

        for send in [search] * SEARCHERS + [write] * WRITERS:
            thread = threading.Thread(target=self._run, args=(send,))
            thread.start()
            self._threads.append(thread)

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=60)

    def answered(self) -> int:
        with self._lock:
            return sum(outcome.status is not None for outcome in self.outcomes)

    def _run(self, send: Callable[[httpx2.Client], httpx2.Response]) -> None:
        limits = httpx2.Limits(max_keepalive_connections=0)
        with (
            self.runtime.http() as api,
            httpx2.Client(base_url=api.base_url, headers=api.headers, timeout=60, limits=limits) as fresh,
        ):
            while not self._stop.is_set():
                try:
                    response = send(fresh)
                    error = response.json().get("error", {}) if response.status_code >= 400 else {}
                    outcome = Outcome(
                        response.status_code,
                        response.headers.get("retry-after"),
                        error.get("code"),
                        None,
                        time.monotonic(),
                    )
                except httpx2.TransportError as failure:
                    outcome = Outcome(None, None, None, type(failure).__name__, time.monotonic())
                    time.sleep(0.05)
                with self._lock:
                    self.outcomes.append(outcome)


def _acceptable(outcome: Outcome, signalled: float) -> bool:
    if outcome.status in (200, 201):
        return True
    if outcome.status == 503:
        return outcome.code == "service_unavailable" and outcome.retry_after == "5"
    # refused: the listening socket is closed, which happens only once the runtime stops
    return outcome.transport_error == "ConnectError" and outcome.ended >= signalled


@pytest.mark.parametrize(
    ("signum", "whole_group"),
    [(signal.SIGINT, True), (signal.SIGTERM, True), (signal.SIGTERM, False)],
    ids=["Ctrl-C to the group", "SIGTERM to the group", "SIGTERM to the runtime"],
)
def test_runtime_signal_under_load_answers_each_request_or_503(
    tmp_path: Path, signum: int, whole_group: bool
) -> None:
    runtime = start_runtime(tmp_path, seed_dir=None, environment=NO_QUOTAS, own_group=True)
    load = Load(runtime)
    try:
        runtime.wait_until_ready()
        with runtime.http() as api:
            base = api.post("/v1/knowledge-bases", json={"name": "stop", "scope": "tenant"})
        assert base.status_code == 201, base.text
        load.start(base.json()["knowledge_base_id"])
        eventually(lambda: load.answered() >= ANSWERS_BEFORE_THE_SIGNAL, timeout=120)
        signalled = time.monotonic()
        if whole_group:
            os.killpg(runtime.process.pid, signum)
        else:
            runtime.process.send_signal(signum)
        status = runtime.process.wait(timeout=STOP_TIMEOUT_SECONDS)
    finally:
        load.stop()
        if runtime.process.poll() is None:
            runtime.process.kill()

    unexpected = [outcome for outcome in load.outcomes if not _acceptable(outcome, signalled)]
    statuses = {outcome.status or outcome.transport_error for outcome in load.outcomes}
    assert unexpected == [], f"{unexpected[:5]}\n{runtime.log}"
    assert status == 0, runtime.log
    assert {200, 201} <= statuses  # searches and writes were answered before the stop
    assert "Traceback" not in runtime.log
    assert " ERROR " not in runtime.log
    assert runtime.log.rstrip().endswith("Stopped. Bye.")
