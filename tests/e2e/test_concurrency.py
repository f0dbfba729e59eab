"""Concurrent clients of the local runtime each get the answers of their own requests (statuses,
bodies, identities), with every function in its own execution environments."""

from __future__ import annotations

from bench.concurrency import run_mixed_load
from tests.e2e.runtime_process import RuntimeProcess

THREADS = 16
SECONDS = 4.0
"""``python -m bench.concurrency`` runs the same load for 30 s against `make run`."""


def test_runtime_concurrent_mixed_clients_each_get_their_own_answers(runtime: RuntimeProcess) -> None:
    report = run_mixed_load(runtime.api_url, runtime.token, threads=THREADS, seconds=SECONDS)

    assert report.mismatches == []
    assert set(report.requests) == {
        "post-item",
        "get-item",
        "get-bases",
        "search",
        "post-token",
        "delete-token",
    }
    assert report.requests["delete-token"] >= THREADS
