"""The write path end to end: the admin API and the ingest queue write DynamoDB, the stream poller
runs the indexer, and search serves the result. Waits are on ``indexed_revision_id``."""

from __future__ import annotations

import json
import uuid
from typing import Any

import httpx2
import pytest

from tests.e2e.runtime_process import RuntimeProcess, eventually, search_knowledge, titles


def _create_base(api: httpx2.Client, name: str) -> str:
    response = api.post("/v1/knowledge-bases", json={"name": name, "scope": "tenant"})
    assert response.status_code == 201, response.text
    return str(response.json()["knowledge_base_id"])


def _indexed(api: httpx2.Client, item_id: str, revision_id: str) -> dict[str, Any] | None:
    item: dict[str, Any] = api.get(f"/v1/knowledge-items/{item_id}").json()
    return item if item.get("indexed_revision_id") == revision_id else None


@pytest.fixture
def sqs(runtime: RuntimeProcess) -> Any:
    return runtime.aws("sqs")


def test_admin_health_answers_without_a_token(runtime: RuntimeProcess) -> None:
    response = httpx2.get(f"{runtime.api_url}/v1/health")

    assert response.status_code == 200
    assert response.json() == {"status": "ok", "runtime_enabled": True}


def test_admin_published_item_becomes_searchable(api: httpx2.Client) -> None:
    base_id = _create_base(api, "write-path")
    created = api.post(
        f"/v1/knowledge-bases/{base_id}/items",
        json={
            "title": "Glacier retrieval tiers",
            "content": "Bulk retrieval of archives takes five to twelve hours.",
        },
    )
    assert created.status_code == 201, created.text
    item, revision_id = created.json(), created.json()["knowledge_revision_id"]

    published = api.post(
        f"/v1/knowledge-items/{item['knowledge_item_id']}/publish",
        json={"revision_id": revision_id, "expected_version": item["version"]},
    )
    assert published.status_code == 200, published.text
    eventually(lambda: _indexed(api, item["knowledge_item_id"], revision_id))
    hits = search_knowledge(api, query="bulk retrieval of archives", knowledge_base_id=base_id)

    assert titles(hits) == ["Glacier retrieval tiers"]
    assert hits["results"][0]["knowledge_revision_id"] == revision_id


def _signed(runtime: RuntimeProcess) -> dict[str, Any]:
    """The ``Authorization`` message attribute every ingest message carries: the dev token."""
    return {"Authorization": {"DataType": "String", "StringValue": f"Bearer {runtime.token}"}}


def test_queue_upsert_message_becomes_searchable(
    api: httpx2.Client, runtime: RuntimeProcess, sqs: Any
) -> None:
    base_id = _create_base(api, "queue-path")
    message = {
        "op": "upsert",
        "tenant_id": "dev",
        "knowledge_base_id": base_id,
        "external_id": "kafka/lag.md",
        "title": "Consumer lag",
        "content": "When consumer lag grows, add partitions and scale out the consumer group.",
        "source": {"uri": "s3://docs/kafka/lag.md", "title": "Kafka notes"},
        "publish": True,
    }

    sqs.send_message(
        QueueUrl=runtime.endpoints["ingest_queue_url"],
        MessageBody=json.dumps(message),
        MessageAttributes=_signed(runtime),
    )

    def indexed_item() -> dict[str, Any] | None:
        found = api.get(f"/v1/knowledge-bases/{base_id}/items", params={"external_id": "kafka/lag.md"})
        items = found.json()["items"]
        return (
            _indexed(api, items[0]["knowledge_item_id"], items[0]["current_revision_id"]) if items else None
        )

    item = eventually(indexed_item)
    hits = search_knowledge(api, query="scale out the consumer group", knowledge_base_id=base_id)
    assert [hit["knowledge_item_id"] for hit in hits["results"]] == [item["knowledge_item_id"]]


def test_queue_poison_message_ends_in_the_dead_letter_queue(runtime: RuntimeProcess, sqs: Any) -> None:
    queue_url, dlq_url = runtime.endpoints["ingest_queue_url"], runtime.endpoints["ingest_dlq_url"]
    original = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["VisibilityTimeout"])[
        "Attributes"
    ]
    body = json.dumps({"op": "upsert", "note": f"not an ingest message {uuid.uuid4()}"})
    # Redeliveries wait for the visibility timeout; one second keeps the receives quick.
    sqs.set_queue_attributes(QueueUrl=queue_url, Attributes={"VisibilityTimeout": "1"})
    try:
        sqs.send_message(QueueUrl=queue_url, MessageBody=body, MessageAttributes=_signed(runtime))

        def dead_letter() -> dict[str, Any] | None:
            received = sqs.receive_message(
                QueueUrl=dlq_url, WaitTimeSeconds=1, MessageSystemAttributeNames=["All"]
            )
            return next(
                (message for message in received.get("Messages", []) if message["Body"] == body), None
            )

        moved = eventually(dead_letter, timeout=60)
    finally:
        sqs.set_queue_attributes(QueueUrl=queue_url, Attributes=original)

    left = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["All"])["Attributes"]
    assert int(moved["Attributes"]["ApproximateReceiveCount"]) >= 1
    assert (left["ApproximateNumberOfMessages"], left["ApproximateNumberOfMessagesNotVisible"]) == ("0", "0")
