"""``IngestQueueFunction`` with the SQS events of ``events/`` and a real moto queue with redrive.

The events' base (tenant ``acme``) is put in the table from ``events/indexer_item_insert.json``'s
first record, the base's creation as the table's stream recorded it; the sample token the events are
signed with is stored as a valid token of that tenant (``store_events_token``).
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import boto3
import pytest

from knowledge.bootstrap import use_container
from knowledge.domain.models import ItemStatus, KnowledgeItem
from knowledge.services.ingest import IngestAction
from knowledge.settings import Settings
from tests.conftest import TABLE_NAME
from tests.support.events import load_event
from tests.support.queues import (
    EVENTS_AUTHORIZATION,
    EVENTS_TOKEN,
    QueuePoller,
    run_ingest,
    signed,
    sqs_event,
    sqs_record,
    store_events_token,
)
from tests.support.rest import SearchWorld, new_world, result_items
from tests.support.store import REGION, make_store, serialized_dynamodb
from tests.support.streams import StreamReader, apply_to_table, drain

TENANT = "acme"
MAX_CONTENT_CHARS = 5_000


@pytest.fixture
def world(table: Any) -> Iterator[SearchWorld]:
    built = new_world(settings=Settings(table_name=TABLE_NAME, max_content_chars=MAX_CONTENT_CHARS))
    apply_to_table(load_event("indexer_item_insert")["Records"][:1])
    store_events_token(built.store)
    yield built
    use_container(None)


@pytest.fixture
def base_id(world: SearchWorld) -> str:
    record = load_event("indexer_item_insert")["Records"][0]
    return str(record["dynamodb"]["NewImage"]["knowledge_base_id"]["S"])


def _bodies(name: str) -> list[dict[str, Any]]:
    return [json.loads(record["body"]) for record in load_event(name)["Records"]]


def _item(world: SearchWorld, base_id: str, external_id: str) -> KnowledgeItem:
    item = world.store.find_item_by_external_id(TENANT, base_id, external_id)
    assert item is not None
    return item


def _revision_count(world: SearchWorld, item: KnowledgeItem) -> int:
    page = world.store.list_revisions(TENANT, item.knowledge_item_id, limit=100, next_token=None)
    return len(page.entries)


def _upsert(base_id: str, external_id: str = "guide", **fields: Any) -> dict[str, Any]:
    return {
        "op": "upsert",
        "tenant_id": TENANT,
        "knowledge_base_id": base_id,
        "external_id": external_id,
        "title": "Deployment guide",
        "content": "Ship every change behind a feature flag.",
        "source": {"uri": "https://wiki.example.com/guide", "title": "Wiki"},
        "publish": True,
        **fields,
    }


def _ingest(*bodies: Any, authorization: str | None = EVENTS_AUTHORIZATION) -> list[str]:
    records = [
        sqs_record(body, message_id=f"m-{n}", authorization=authorization) for n, body in enumerate(bodies)
    ]
    return run_ingest(sqs_event(records))


# -- batches from events/ -------------------------------------------------------------------------


def test_ingest_batch_event_creates_published_items_that_become_searchable(
    world: SearchWorld, base_id: str
) -> None:
    reader = StreamReader()

    assert run_ingest(load_event("ingest_queue_batch")) == []
    drain(reader)

    items = [_item(world, base_id, body["external_id"]) for body in _bodies("ingest_queue_batch")]
    assert [(item.status, item.version, item.title) for item in items] == [
        (ItemStatus.PUBLISHED, 1, body["title"]) for body in _bodies("ingest_queue_batch")
    ]
    reply = world.search(world.token(TENANT), "snapshots kept thirty five days", mode="lexical")
    assert result_items(reply)[0] == items[2].knowledge_item_id
    assert all(item.current_revision_id is not None for item in items)


def test_ingest_redelivered_batch_creates_nothing_twice(world: SearchWorld, base_id: str) -> None:
    event = load_event("ingest_queue_batch")
    assert run_ingest(event) == []
    first = [_item(world, base_id, body["external_id"]) for body in _bodies("ingest_queue_batch")]

    assert run_ingest(event) == []
    assert run_ingest(event) == []

    again = [_item(world, base_id, body["external_id"]) for body in _bodies("ingest_queue_batch")]
    assert again == first
    assert [_revision_count(world, item) for item in again] == [1, 1, 1]


def test_ingest_malformed_message_fails_alone(world: SearchWorld, base_id: str) -> None:
    event = load_event("ingest_queue_malformed")
    malformed = event["Records"][1]["messageId"]

    failures = run_ingest(event)

    assert failures == [malformed]
    good = [body for body in _bodies("ingest_queue_malformed") if "content" in body]
    assert [_item(world, base_id, body["external_id"]).status for body in good] == [ItemStatus.PUBLISHED] * 2
    assert world.store.find_item_by_external_id(TENANT, base_id, "broken") is None


def test_ingest_rejection_is_logged_with_reason_and_without_content(
    world: SearchWorld, base_id: str, caplog: pytest.LogCaptureFixture
) -> None:
    body = _upsert(base_id, title=7, content="SECRET-CONTENT " * 20)

    with caplog.at_level(logging.DEBUG):
        assert _ingest(body) == ["m-0"]

    rejected = [record for record in caplog.records if record.getMessage() == "ingest message rejected"]
    assert [(record.message_id, record.problems) for record in rejected] == [
        ("m-0", [{"field": "upsert.title", "problem": "string_type"}])
    ]
    assert all("SECRET-CONTENT" not in repr(vars(record)) for record in caplog.records)


def test_ingest_archive_event_archives_item_and_repeat_is_a_noop(world: SearchWorld, base_id: str) -> None:
    assert run_ingest(load_event("ingest_queue_batch")) == []
    archived_id = _bodies("ingest_queue_archive")[0]["external_id"]
    item = _item(world, base_id, archived_id)

    assert run_ingest(load_event("ingest_queue_archive")) == []
    assert run_ingest(load_event("ingest_queue_archive")) == []

    stored = world.store.get_item(TENANT, item.knowledge_item_id)
    assert stored is not None
    assert (stored.status, stored.version) == (ItemStatus.ARCHIVED, item.version + 1)
    assert world.store.find_item_by_external_id(TENANT, base_id, archived_id) is None


def test_ingest_archive_of_unknown_external_id_succeeds_without_writing(
    world: SearchWorld, base_id: str
) -> None:
    body = {"op": "archive", "tenant_id": TENANT, "knowledge_base_id": base_id, "external_id": "never-seen"}

    assert _ingest(body) == []
    assert world.container is not None
    again = world.container.ingest.ingest(
        json.dumps(body), message_id="again", authorization=EVENTS_AUTHORIZATION
    )
    assert again is IngestAction.ABSENT


# -- upsert semantics -----------------------------------------------------------------------------


def test_ingest_changed_content_title_or_source_adds_a_revision(world: SearchWorld, base_id: str) -> None:
    assert _ingest(_upsert(base_id)) == []
    changes = [
        {"content": "Ship every change behind a flag, then remove the flag."},
        {"title": "Deployment guide (2026)"},
        {"source": {"uri": "https://wiki.example.com/guide-v2", "title": "Wiki"}},
    ]
    for change in changes:
        assert _ingest(_upsert(base_id, **change)) == []

    item = _item(world, base_id, "guide")
    assert (item.version, _revision_count(world, item)) == (4, 4)
    assert item.current_revision_id == item.latest_revision_id


def test_ingest_draft_then_same_content_with_publish_publishes_without_new_revision(
    world: SearchWorld, base_id: str
) -> None:
    assert _ingest(_upsert(base_id, publish=False)) == []
    draft = _item(world, base_id, "guide")

    assert _ingest(_upsert(base_id, publish=True)) == []
    published = _item(world, base_id, "guide")
    assert _ingest(_upsert(base_id, publish=True)) == []

    assert draft.status is ItemStatus.DRAFT
    assert (published.status, published.version) == (ItemStatus.PUBLISHED, 2)
    assert published.current_revision_id == draft.latest_revision_id
    assert _item(world, base_id, "guide") == published
    assert _revision_count(world, published) == 1


def test_ingest_upsert_after_archive_creates_a_new_item(world: SearchWorld, base_id: str) -> None:
    assert _ingest(_upsert(base_id)) == []
    first = _item(world, base_id, "guide")
    archive = {"op": "archive", "tenant_id": TENANT, "knowledge_base_id": base_id, "external_id": "guide"}
    assert _ingest(archive) == []

    assert _ingest(_upsert(base_id)) == []

    assert _item(world, base_id, "guide").knowledge_item_id != first.knowledge_item_id


def test_ingest_concurrent_duplicates_create_one_item_with_one_revision(
    world: SearchWorld, base_id: str
) -> None:
    assert world.container is not None
    ingest = world.container.ingest
    body = json.dumps(_upsert(base_id))
    start = threading.Barrier(8)

    def deliver(n: int) -> IngestAction:
        start.wait(timeout=30)
        return ingest.ingest(body, message_id=f"copy-{n}", authorization=EVENTS_AUTHORIZATION)

    with serialized_dynamodb(), ThreadPoolExecutor(max_workers=8) as pool:
        actions = list(pool.map(deliver, range(8)))

    item = _item(world, base_id, "guide")
    assert sorted(actions).count(IngestAction.CREATED) == 1
    assert set(actions) <= {IngestAction.CREATED, IngestAction.UNCHANGED}
    assert (item.version, _revision_count(world, item)) == (1, 1)


# -- permanent failures ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        "not json",
        {"op": "delete", "tenant_id": TENANT, "knowledge_base_id": "kb_01M8MSRAQ70QQ1SJHWP0AMCDPX"},
        {"op": "upsert"},
        "EXTRA",
        "BAD_TENANT",
        "BAD_BASE_ID",
    ],
)
def test_ingest_invalid_message_is_a_batch_item_failure(world: SearchWorld, base_id: str, body: Any) -> None:
    if body == "EXTRA":
        body = _upsert(base_id, priority="high")
    elif body == "BAD_TENANT":
        body = _upsert(base_id, tenant_id="ac#me")
    elif body == "BAD_BASE_ID":
        body = _upsert(base_id, knowledge_base_id="kb_#1")

    assert _ingest(body, _upsert(base_id)) == ["m-0"]
    assert _item(world, base_id, "guide").status is ItemStatus.PUBLISHED


@pytest.mark.parametrize("field", ["title", "content", "external_id", "source"])
def test_ingest_lone_surrogate_is_a_batch_item_failure_logged_without_the_value(
    world: SearchWorld, base_id: str, field: str, caplog: pytest.LogCaptureFixture
) -> None:
    body = _upsert(base_id, "broken")
    value = "confidential \ud800 text"
    body[field] = {"uri": value} if field == "source" else value
    escaped = json.dumps(body)  # sends the escape \ud800: JSON syntax, but not Unicode text
    assert "\\ud800" in escaped

    with caplog.at_level(logging.WARNING):
        failures = _ingest(escaped, _upsert(base_id))

    assert failures == ["m-0"]
    assert world.store.find_item_by_external_id(TENANT, base_id, "broken") is None
    assert _item(world, base_id, "guide").status is ItemStatus.PUBLISHED
    assert "confidential" not in caplog.text


def test_ingest_unknown_base_is_a_batch_item_failure(world: SearchWorld, base_id: str) -> None:
    other_tenant = _upsert(base_id, tenant_id="globex")
    unknown_base = _upsert("kb_01M8MSRAQ70QQ1SJHWP0AMCDPY".replace("Y", "Z"))

    assert _ingest(other_tenant, unknown_base) == ["m-0", "m-1"]
    assert world.store.find_item_by_external_id("globex", base_id, "guide") is None


def test_ingest_content_over_the_limit_is_a_batch_item_failure(world: SearchWorld, base_id: str) -> None:
    at_limit = _upsert(base_id, "at-limit", content="a" * MAX_CONTENT_CHARS)
    over = _upsert(base_id, "over", content="a" * (MAX_CONTENT_CHARS + 1))

    assert _ingest(at_limit, over) == ["m-1"]
    assert world.store.find_item_by_external_id(TENANT, base_id, "over") is None
    assert _item(world, base_id, "at-limit").status is ItemStatus.PUBLISHED


# -- a real queue with a dead-letter queue --------------------------------------------------------


def test_ingest_queue_poison_message_reaches_dead_letter_queue_while_others_succeed(
    world: SearchWorld, base_id: str
) -> None:
    sqs = boto3.client("sqs", region_name=REGION)
    dlq_url = sqs.create_queue(QueueName="ingest-dlq")["QueueUrl"]
    dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    queue_url = sqs.create_queue(
        QueueName="ingest",
        Attributes={"RedrivePolicy": json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": "2"})},
    )["QueueUrl"]
    bodies = [record["body"] for record in load_event("ingest_queue_malformed")["Records"]]
    for body in bodies:
        sqs.send_message(QueueUrl=queue_url, MessageBody=body, MessageAttributes=signed(EVENTS_AUTHORIZATION))

    QueuePoller(queue_url).drain()

    dead = sqs.receive_message(QueueUrl=dlq_url, MaxNumberOfMessages=10)["Messages"]
    assert [message["Body"] for message in dead] == [bodies[1]]
    assert sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10).get("Messages", []) == []
    good = [json.loads(body)["external_id"] for body in (bodies[0], bodies[2])]
    assert [_revision_count(world, _item(world, base_id, external_id)) for external_id in good] == [1, 1]


# -- signed messages ------------------------------------------------------------------------------


def _table() -> list[dict[str, Any]]:
    """Every record of the table, in key order."""
    client = boto3.client("dynamodb", region_name=REGION)
    items = client.scan(TableName=TABLE_NAME, ConsistentRead=True)["Items"]
    return sorted(items, key=lambda item: (item["PK"]["S"], item["SK"]["S"]))


def _notes_of(tenant_id: str) -> list[str]:
    """The ids of the tenant's notes (their ``META`` records)."""
    prefix = f"T#{tenant_id}#NOTE#"
    return [
        i["PK"]["S"].removeprefix(prefix)
        for i in _table()
        if i["PK"]["S"].startswith(prefix) and i["SK"]["S"] == "META"
    ]


def _memory(**fields: Any) -> dict[str, Any]:
    return {"op": "remember", "content": "The nightly export lands in bucket exports-7.", **fields}


def _revoked_child(world: SearchWorld) -> str:
    """A token minted by a token that was then revoked (the lineage cascade)."""
    assert world.container is not None
    _, parent_record = world.container.tokens.issue(
        tenant_id=TENANT, subject_id="issuer", scopes=["knowledge:write", "memory:write"]
    )
    child, _ = world.container.tokens.issue(
        tenant_id=TENANT,
        subject_id="ingest-pipeline",
        scopes=["knowledge:write", "memory:write"],
        ancestor_token_ids=[parent_record.token_hash],
    )
    world.store.revoke_token(parent_record.token_hash)
    return f"Bearer {child}"


@pytest.mark.parametrize(
    "case",
    [
        "no-attribute",
        "unknown-token",
        "revoked-parent",
        "missing-scope",
        "tenant-mismatch",
        "subject-mismatch",
    ],
)
def test_ingest_message_without_a_valid_signature_fails_alone_and_writes_nothing(
    world: SearchWorld, base_id: str, case: str, caplog: pytest.LogCaptureFixture
) -> None:
    memory_writer = world.token(TENANT, "ingest-pipeline", scopes=["memory:write"])
    body, authorization = {
        "no-attribute": (_upsert(base_id, "rejected"), None),
        "unknown-token": (_upsert(base_id, "rejected"), "Bearer kn_not-a-token-of-this-service"),
        "revoked-parent": (_upsert(base_id, "rejected"), _revoked_child(world)),
        "missing-scope": (_upsert(base_id, "rejected"), world.token(TENANT, scopes=["knowledge:read"])),
        "tenant-mismatch": (_upsert(base_id, "rejected", tenant_id="globex"), EVENTS_AUTHORIZATION),
        "subject-mismatch": (_memory(subject_id="someone-else"), memory_writer),
    }[case]
    before = _table()

    with caplog.at_level(logging.INFO):
        failures = run_ingest(sqs_event([sqs_record(body, message_id="bad", authorization=authorization)]))

    assert failures == ["bad"]
    assert _table() == before
    assert _ingest(_upsert(base_id)) == []  # the same consumer applies a signed message meanwhile
    rejected = [r for r in caplog.records if r.getMessage() == "ingest message rejected"]
    assert [r.__dict__["message_id"] for r in rejected] == ["bad"]
    token = (authorization or "").removeprefix("Bearer ")
    assert not token or token not in caplog.text


def test_ingest_signed_message_writes_as_the_token_principal(world: SearchWorld, base_id: str) -> None:
    writer = world.token(
        TENANT, "ingest-pipeline", scopes=["memory:write", "memory:share"], team_ids=["team-ops"]
    )
    upsert = _upsert(base_id, "unsigned-body")
    del upsert["tenant_id"]

    assert _ingest(upsert) == []
    assert _ingest(_memory(scope="team", team_id="team-ops"), authorization=writer) == []

    assert _item(world, base_id, "unsigned-body").tenant_id == TENANT
    [note_id] = _notes_of(TENANT)
    note = world.store.get_note(TENANT, note_id)
    assert note is not None
    assert (note.owner_id, note.team_id) == ("ingest-pipeline", "team-ops")


def test_ingest_unsigned_message_reaches_the_dead_letter_queue(world: SearchWorld, base_id: str) -> None:
    sqs = boto3.client("sqs", region_name=REGION)
    dlq_url = sqs.create_queue(QueueName="ingest-dlq")["QueueUrl"]
    dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    queue_url = sqs.create_queue(
        QueueName="ingest",
        Attributes={"RedrivePolicy": json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": "2"})},
    )["QueueUrl"]
    unsigned = json.dumps(_upsert(base_id, "unsigned"))
    sqs.send_message(QueueUrl=queue_url, MessageBody=unsigned)
    sqs.send_message(
        QueueUrl=queue_url,
        MessageBody=json.dumps(_upsert(base_id, "forged")),
        MessageAttributes=signed("Bearer kn_forged"),
    )
    sqs.send_message(
        QueueUrl=queue_url,
        MessageBody=json.dumps(_upsert(base_id)),
        MessageAttributes=signed(EVENTS_AUTHORIZATION),
    )

    QueuePoller(queue_url).drain()

    dead = sqs.receive_message(QueueUrl=dlq_url, MaxNumberOfMessages=10)["Messages"]
    assert sorted(json.loads(message["Body"])["external_id"] for message in dead) == ["forged", "unsigned"]
    assert world.store.find_item_by_external_id(TENANT, base_id, "unsigned") is None
    assert _revision_count(world, _item(world, base_id, "guide")) == 1
    assert EVENTS_TOKEN not in json.dumps(dead)  # the dead letters' bodies never held the token


@pytest.fixture
def no_container(table: Any) -> Iterator[None]:
    use_container(None)
    yield
    use_container(None)


def test_ingest_consumer_needs_no_search_index_or_embedder(
    no_container: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # With no container installed, the consumer builds the store alone: a search backend that
    # cannot be built (no URL) and a model it cannot reach never matter to it.
    monkeypatch.setenv("TABLE_NAME", TABLE_NAME)
    monkeypatch.setenv("SEARCH_BACKEND", "opensearch")
    monkeypatch.setenv("EMBEDDER", "bedrock")
    apply_to_table(load_event("indexer_item_insert")["Records"][:1])
    store_events_token(make_store())
    base_id = load_event("indexer_item_insert")["Records"][0]["dynamodb"]["NewImage"]["knowledge_base_id"][
        "S"
    ]

    failures = run_ingest(load_event("ingest_queue_batch"))

    assert failures == []
    store = make_store()
    found = [
        store.find_item_by_external_id(TENANT, base_id, body["external_id"])
        for body in _bodies("ingest_queue_batch")
    ]
    assert all(item is not None and item.status is ItemStatus.PUBLISHED for item in found)
