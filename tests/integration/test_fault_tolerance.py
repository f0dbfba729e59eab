"""Faults injected at the adapters' transports (OpenSearch on a real node, DynamoDB on moto, Bedrock),
below their retries: what a fault the retries absorb answers, what one they cannot absorb answers,
and how a failed semantic leg degrades search to its lexical leg."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.config import Config

from knowledge.adapters.bedrock_embedder import BedrockEmbedder, create_bedrock_client
from knowledge.adapters.opensearch.engine import build_opensearch_client
from knowledge.adapters.opensearch.passages import OpenSearchIndex
from knowledge.adapters.runtime_switch import StaticRuntimeSwitch
from knowledge.bootstrap import build_container, use_container
from knowledge.services.search import SearchService
from knowledge.settings import Settings
from tests.conftest import TABLE_NAME
from tests.support.faults import KNN_DIMENSION, TIMEOUT, FaultyConnection, failing_sends
from tests.support.rest import SearchWorld, error_body, invoke, new_world, result_items, search_event
from tests.support.store import REGION, make_store
from tests.support.streams import StreamReader, run_indexer

TENANT = "acme"
RUNBOOK = "Blue-green deployments switch traffic at the router after the health checks pass."
POSTMORTEM = "The outage began when the cache cluster lost quorum during a rolling restart."


@pytest.fixture
def faulty_index(opensearch_url: str) -> Iterator[OpenSearchIndex]:
    """An ``OpenSearchIndex`` with the production client settings (2 transport retries on timeouts
    and 502/503/504), over a connection that first serves the scheduled faults."""
    FaultyConnection.reset()
    client = build_opensearch_client(
        opensearch_url, auth="none", region="us-east-1", connection_class=FaultyConnection
    )
    name = f"faults-{uuid.uuid4().hex[:12]}"
    yield OpenSearchIndex(client, name, refresh=True, bulk_backoff_seconds=0.01)
    FaultyConnection.reset()
    client.indices.delete(index=name, ignore_unavailable=True)


@pytest.fixture
def world(table: Any, faulty_index: OpenSearchIndex) -> Iterator[SearchWorld]:
    # The client the store builds in production: botocore's standard retry mode (three attempts).
    client = boto3.client("dynamodb", region_name=REGION, config=Config(retries={"mode": "standard"}))
    built = SearchWorld(store=make_store(client), dynamodb=client, settings=Settings(table_name=TABLE_NAME))
    built.index = faulty_index  # type: ignore[assignment]
    built.install()
    base = built.base(TENANT)
    built.publish(base, "Deployment runbook", RUNBOOK)
    built.publish(base, "Cache postmortem", POSTMORTEM)
    yield built
    use_container(None)


@pytest.fixture
def agent(world: SearchWorld) -> str:
    return world.token(TENANT)


# -- OpenSearch: timeouts, 5xx, 429 -----------------------------------------------------------------


def test_fault_search_timeout_once_is_retried_and_answered(world: SearchWorld, agent: str) -> None:
    FaultyConnection.schedule("_msearch", TIMEOUT)

    reply = world.search(agent, "deployment router", mode="lexical")

    assert [fault.kind for fault in FaultyConnection.served] == [TIMEOUT]
    assert reply.body["results"][0]["title"] == "Deployment runbook"
    assert "degraded" not in reply.body


def test_fault_search_two_503s_are_retried_and_answered(world: SearchWorld, agent: str) -> None:
    FaultyConnection.schedule("_msearch", 503, times=2)

    reply = world.search(agent, "cache quorum", mode="lexical")

    assert [fault.kind for fault in FaultyConnection.served] == [503, 503]
    assert reply.body["results"][0]["title"] == "Cache postmortem"


def test_fault_search_timeouts_beyond_the_retries_are_dependency_unavailable(
    world: SearchWorld, agent: str
) -> None:
    FaultyConnection.schedule("_msearch", TIMEOUT, times=3)

    reply = world.call({"query": "deployment", "mode": "lexical"}, agent)

    assert error_body(503, "dependency_unavailable", reply)["retryable"] is True
    assert len(FaultyConnection.served) == 3
    assert "injected" not in reply.text


def test_fault_search_429_is_dependency_unavailable_and_the_next_call_is_answered(
    world: SearchWorld, agent: str
) -> None:
    FaultyConnection.schedule("_msearch", 429)

    refused = world.call({"query": "deployment", "mode": "lexical"}, agent)

    assert error_body(503, "dependency_unavailable", refused)["retryable"] is True
    assert len(FaultyConnection.served) == 1  # a 429 is the caller's to retry, not the transport's
    assert result_items(world.search(agent, "deployment", mode="lexical"))


# -- a failed semantic leg degrades to the lexical leg ---------------------------------------------


def test_fault_knn_leg_failure_degrades_hybrid_search_to_lexical(world: SearchWorld, agent: str) -> None:
    # The node answers the kNN leg of the _msearch with its own 400; the lexical leg is answered.
    FaultyConnection.schedule("_msearch", KNN_DIMENSION)

    reply = world.search(agent, "deployment router", mode="hybrid")

    assert reply.body["degraded"] is True
    assert reply.body["results"][0]["title"] == "Deployment runbook"
    assert reply.body["results"][0]["scores"]["semantic"] is None


def test_fault_knn_leg_failure_in_semantic_mode_is_dependency_unavailable(
    world: SearchWorld, agent: str
) -> None:
    FaultyConnection.schedule("_msearch", KNN_DIMENSION)

    reply = world.call({"query": "deployment router", "mode": "semantic"}, agent)

    assert error_body(503, "dependency_unavailable", reply)["retryable"] is True


def test_fault_hybrid_search_without_faults_is_not_degraded(world: SearchWorld, agent: str) -> None:
    reply = world.search(agent, "deployment router", mode="hybrid")

    assert "degraded" not in reply.body
    assert reply.body["results"][0]["scores"]["semantic"] is not None


def test_fault_bedrock_throttling_degrades_hybrid_search_after_retries(table: Any) -> None:
    world = new_world()
    base = world.base(TENANT)
    world.publish(base, "Deployment runbook", RUNBOOK)
    agent = world.token(TENANT)
    bedrock = create_bedrock_client("us-east-1", max_attempts=2)
    switch = StaticRuntimeSwitch(True)
    bedrock_search = SearchService(
        world.store, world.index, BedrockEmbedder(dimension=256, client=bedrock), switch
    )
    world.container = build_container(
        world.settings,
        store=world.store,
        index=world.index,
        embedder=world.embedder,
        runtime_switch=switch,
        search=bedrock_search,
    )
    use_container(world.container)

    with failing_sends(bedrock, "InvokeModel", "ThrottlingException", times=10, status=429) as served:
        reply = world.search(agent, "deployment router")

    assert served == ["ThrottlingException"] * 2  # botocore's standard mode retried once
    assert reply.body["degraded"] is True
    assert result_items(reply) == [result_items(world.search(agent, "deployment", mode="lexical"))[0]]
    use_container(None)


# -- DynamoDB throttling ----------------------------------------------------------------------------


def test_fault_dynamodb_throttled_once_is_retried_and_answered(world: SearchWorld, agent: str) -> None:
    event = search_event({"query": "deployment", "mode": "lexical"}, agent)  # authorized before the fault
    with failing_sends(world.dynamodb, "BatchGetItem", "ThrottlingException", times=1) as served:
        reply = invoke(event)

    assert served == ["ThrottlingException"]
    assert reply.status == 200
    assert reply.body["results"][0]["title"] == "Deployment runbook"


def test_fault_dynamodb_persistent_throttling_is_dependency_unavailable(
    world: SearchWorld, agent: str
) -> None:
    event = search_event({"query": "deployment", "mode": "lexical"}, agent)
    with failing_sends(world.dynamodb, "BatchGetItem", "ThrottlingException", times=100) as served:
        reply = invoke(event)

    assert error_body(503, "dependency_unavailable", reply)["retryable"] is True
    assert len(served) > 1  # botocore retried before the store gave up
    assert "ThrottlingException" not in reply.text


# -- the indexer never acknowledges a record it did not apply ---------------------------------------


def test_fault_indexer_reports_records_the_index_refused_and_applies_them_on_retry(
    world: SearchWorld, agent: str
) -> None:
    reader = StreamReader()
    reader.read()
    base = world.base(TENANT, name="Incidents")
    item, _ = world.publish(base, "Pager rota", "The pager rota rotates every Monday at nine.", indexed=False)
    records = reader.read()
    FaultyConnection.schedule("_bulk", 429, times=4)  # one try and three bulk retries, all refused

    failures = run_indexer(records)

    assert failures  # nothing acknowledged that was not applied
    assert item.knowledge_item_id not in result_items(world.search(agent, "pager rota", mode="lexical"))
    retried = [record for record in records if record["dynamodb"]["SequenceNumber"] >= failures[0]]
    assert run_indexer(retried) == []
    assert result_items(world.search(agent, "pager rota", mode="lexical")) == [item.knowledge_item_id]
