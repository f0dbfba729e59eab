"""bench.failover without a cluster: its corpus, its client, its per-copy reads and its report."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest
from opensearchpy.exceptions import ConnectionError as OpenSearchConnectionError
from opensearchpy.exceptions import ConnectionTimeout, TransportError

from bench.failover import (
    CHUNKS_PER_ITEM,
    DIMENSION,
    PORT_RANGE,
    Layout,
    OneCopy,
    Run,
    WriteProbe,
    corpus,
    failure,
    free_ports,
    phases,
    report,
    search_client,
)
from bench.phases import Health, Outcome, Sample
from knowledge.domain.models import Scope
from knowledge.errors import DependencyUnavailableError


def test_corpus_is_deterministic_and_shaped_for_both_legs() -> None:
    first = corpus(items=40, tenants=4, queries=10, seed=3)
    again = corpus(items=40, tenants=4, queries=10, seed=3)

    assert first.items == again.items
    assert first.queries == again.queries
    assert {item.tenant_id for item in first.items} == {f"tenant-{n}" for n in range(4)}
    for item in first.items:
        assert len(item.chunks) == CHUNKS_PER_ITEM
        (passage,) = item.passages
        content = passage.text
        for chunk in item.chunks:
            assert content[chunk.start : chunk.end] == chunk.text
            assert np.linalg.norm(chunk.vector) == pytest.approx(1.0)
            assert len(chunk.vector) == DIMENSION
    assert any(item.scope == Scope.PRIVATE.value for item in corpus(200, 4, 1, seed=3).items)


def test_corpus_queries_come_from_visible_items_of_their_tenant() -> None:
    data = corpus(items=60, tenants=3, queries=20, seed=5)
    visible_words: dict[str, set[str]] = {}
    for item in data.items:
        if item.scope == Scope.TENANT.value:
            words = (word for chunk in item.chunks for word in chunk.text.split())
            visible_words.setdefault(item.tenant_id, set()).update(words)

    for query in data.queries:
        assert set(query.text.split()) <= visible_words[query.visibility.tenant_id]
        assert query.vector is not None
        assert np.linalg.norm(query.vector) == pytest.approx(1.0)


def test_free_ports_are_distinct_and_below_the_ephemeral_range() -> None:
    ports = free_ports(2, random.Random(1))

    assert len(set(ports)) == 2
    assert all(PORT_RANGE[0] <= port < PORT_RANGE[1] for port in ports)


def test_search_client_connects_to_every_node() -> None:
    client = search_client(["http://127.0.0.1:9201", "http://127.0.0.1:9202"])

    hosts = sorted(connection.host for connection in client.transport.connection_pool.connections)

    assert hosts == ["http://127.0.0.1:9201", "http://127.0.0.1:9202"]
    assert client.transport.max_retries == 2


class _Recording:
    def __init__(self) -> None:
        self.bodies: list[list[dict[str, Any]]] = []

    def msearch(self, *, index: str, body: list[dict[str, Any]]) -> dict[str, Any]:
        self.bodies.append(body)
        return {"responses": []}


def test_one_copy_adds_its_node_preference_to_every_header_line() -> None:
    recording = _Recording()
    headers = [{"routing": "t"}, {"query": {"match_all": {}}}, {"routing": "t"}, {"size": 3}]

    OneCopy(recording, "node-a").msearch(index="i", body=headers)

    (sent,) = recording.bodies
    assert sent[0] == sent[2] == {"routing": "t", "preference": "_only_nodes:node-a"}
    assert sent[1] == {"query": {"match_all": {}}}
    assert sent[3] == {"size": 3}


def test_failure_names_timeouts_refusals_answers_and_causes() -> None:
    timeout = ConnectionTimeout("TIMEOUT", "read timed out", None)
    refused = OpenSearchConnectionError("N/A", "refused", None)
    answer = TransportError(503, "cluster_manager_not_discovered_exception", {})
    domain = DependencyUnavailableError("The search index is unavailable.")
    domain.__cause__ = timeout

    assert failure(timeout) == "timeout"
    assert failure(refused) == "unreachable"
    assert failure(answer) == "503 cluster_manager_not_discovered_exception"
    assert failure(domain) == "DependencyUnavailableError (timeout)"
    assert failure(ValueError("x")) == "ValueError"


def _run(recovered: float | None) -> Run:
    samples = [Sample(10.0 + n * 0.25, 0.2, Outcome.SAME) for n in range(60)]
    samples.append(Sample(20.5, 1.5, Outcome.FAILED))
    return Run(
        arguments={"items": 10, "shards": 2, "tenants": 2, "clients": 2, "queries": 5, "fault": "kill"},
        layout=Layout(
            ids={"n1": "a", "n2": "b"},
            manager="n1",
            voters=["n1"],
            shards={0: {"primary": "n1 (STARTED)", "replica": "n2 (STARTED)"}},
        ),
        lost="n2",
        survivor="n1",
        routing={"tenant-0": 0},
        copies_differ=0,
        load_started=5.0,
        struck=20.0,
        recovered=recovered,
        ended=25.0,
        samples=samples,
        polls=[
            Health(19.5, "green", 2, 2, 0),
            Health(20.9, "green", 2, 2, 0),
            Health(21.0, "yellow", 1, 2, 2),
        ],
        errors={"DependencyUnavailableError (unreachable)": 1},
        probe=WriteProbe("ok", 0.05, "ok", 0.2),
    )


def test_phases_split_at_the_fault_and_the_recovery() -> None:
    assert phases(_run(21.0)) == [("before", 8.0, 20.0), ("failover", 20.0, 21.0), ("after", 21.0, 25.0)]
    assert [name for name, _, _ in phases(_run(None))] == ["before", "after the fault (no recovery)"]


def test_report_states_conditions_phases_and_recovery() -> None:
    text = report(_run(21.0))

    assert "not the manager" in text
    assert "1 searches in flight at the fault, 1 of them failed" in text
    assert "| failover | 1.00 |" in text
    assert "seen by the poll sent +1.00 s after the fault; the poll before, at +0.90 s, did not" in text
    assert "| +0.00 | yellow" not in text
    assert "| +1.00 | yellow | 1 | 2 | 2 |" in text
    assert "ensure_ready ok in 0.05 s, upsert ok in 0.20 s" in text
    assert "never" in report(_run(None))
