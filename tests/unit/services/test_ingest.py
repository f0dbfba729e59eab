"""IngestService: one queue message applied idempotently; a message that can never apply is
rejected with its reason (never its content), one whose base is missing raises so SQS retries it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from knowledge.adapters.memory_store import InMemoryKnowledgeStore
from knowledge.bootstrap import queued_notes
from knowledge.domain.models import ItemStatus, KnowledgeBase, Scope
from knowledge.errors import MemoryInvalidRequestError, ResourceUnavailableError
from knowledge.services.ingest import IngestAction, IngestService, MessageRejectedError
from tests.support.embedding import HashingEmbedder
from tests.unit.services.conftest import MAX_CONTENT_CHARS, TENANT


@pytest.fixture
def ingest(store: InMemoryKnowledgeStore) -> IngestService:
    return IngestService(
        store, queued_notes(store, HashingEmbedder().forget), max_content_chars=MAX_CONTENT_CHARS
    )


@pytest.fixture
def base(store: InMemoryKnowledgeStore) -> KnowledgeBase:
    return store.create_base(TENANT, name="Ops", owner_id="pipeline", scope=Scope.TENANT, team_id=None)


def _upsert(base: KnowledgeBase, **fields: Any) -> str:
    return json.dumps(
        {
            "op": "upsert",
            "tenant_id": TENANT,
            "knowledge_base_id": base.knowledge_base_id,
            "external_id": "doc-1",
            "title": "Runbook",
            "content": "Roll out with the blue green switch.",
            **fields,
        }
    )


def _archive(base: KnowledgeBase, external_id: str = "doc-1") -> str:
    return json.dumps(
        {
            "op": "archive",
            "tenant_id": TENANT,
            "knowledge_base_id": base.knowledge_base_id,
            "external_id": external_id,
        }
    )


def test_ingest_upsert_creates_a_published_item_and_a_redelivery_changes_nothing(
    ingest: IngestService, store: InMemoryKnowledgeStore, base: KnowledgeBase
) -> None:
    first = ingest.ingest(_upsert(base), message_id="m-1")
    again = ingest.ingest(_upsert(base), message_id="m-1")

    item = store.find_item_by_external_id(TENANT, base.knowledge_base_id, "doc-1")
    assert (first, again) == (IngestAction.CREATED, IngestAction.UNCHANGED)
    assert item is not None
    assert (item.status, item.version) == (ItemStatus.PUBLISHED, 1)


def test_ingest_changed_content_adds_a_revision(ingest: IngestService, base: KnowledgeBase) -> None:
    ingest.ingest(_upsert(base), message_id="m-1")

    assert ingest.ingest(_upsert(base, content="Canary releases."), message_id="m-2") is IngestAction.REVISED


def test_ingest_draft_then_publish_of_the_same_content_publishes_it(
    ingest: IngestService, base: KnowledgeBase
) -> None:
    assert ingest.ingest(_upsert(base, publish=False), message_id="m-1") is IngestAction.CREATED
    assert ingest.ingest(_upsert(base), message_id="m-2") is IngestAction.PUBLISHED


def test_ingest_archive_archives_the_item_and_a_repeat_finds_nothing(
    ingest: IngestService, store: InMemoryKnowledgeStore, base: KnowledgeBase
) -> None:
    ingest.ingest(_upsert(base), message_id="m-1")

    first = ingest.ingest(_archive(base), message_id="m-2")
    again = ingest.ingest(_archive(base), message_id="m-2")

    assert (first, again) == (IngestAction.ARCHIVED, IngestAction.ABSENT)
    assert store.find_item_by_external_id(TENANT, base.knowledge_base_id, "doc-1") is None


def test_ingest_upsert_after_archive_creates_a_new_item(
    ingest: IngestService, store: InMemoryKnowledgeStore, base: KnowledgeBase
) -> None:
    ingest.ingest(_upsert(base), message_id="m-1")
    archived = store.find_item_by_external_id(TENANT, base.knowledge_base_id, "doc-1")
    ingest.ingest(_archive(base), message_id="m-2")

    assert ingest.ingest(_upsert(base), message_id="m-3") is IngestAction.CREATED
    recreated = store.find_item_by_external_id(TENANT, base.knowledge_base_id, "doc-1")
    assert archived is not None
    assert recreated is not None
    assert recreated.knowledge_item_id != archived.knowledge_item_id


@pytest.mark.parametrize(
    "body",
    [
        "not json",
        json.dumps({"op": "delete"}),
        json.dumps({"op": "archive", "tenant_id": TENANT, "knowledge_base_id": "kb_x", "external_id": "d"}),
        json.dumps({"op": "archive", "tenant_id": "a#b", "knowledge_base_id": "kb_x", "external_id": "d"}),
    ],
    ids=["not-json", "unknown-op", "malformed-base", "malformed-tenant"],
)
def test_ingest_malformed_message_is_rejected_with_its_fields(ingest: IngestService, body: str) -> None:
    with pytest.raises(MessageRejectedError) as raised:
        ingest.ingest(body, message_id="m-1")

    assert raised.value.code == "validation_error"
    assert raised.value.details["fields"]


def test_ingest_content_over_the_limit_is_rejected_without_the_content(
    ingest: IngestService, base: KnowledgeBase
) -> None:
    content = "secret " * (MAX_CONTENT_CHARS // 7 + 1)

    with pytest.raises(MessageRejectedError) as raised:
        ingest.ingest(_upsert(base, content=content), message_id="m-1")

    assert raised.value.details["max_chars"] == MAX_CONTENT_CHARS
    assert "secret" not in json.dumps(raised.value.details) + raised.value.message


def test_ingest_into_an_unknown_base_raises_resource_unavailable(
    ingest: IngestService, base: KnowledgeBase
) -> None:
    with pytest.raises(ResourceUnavailableError):
        ingest.ingest(_upsert(base, knowledge_base_id="kb_01M8MSRAQ70QQ1SJHWP0AMCDPZ"), message_id="m-1")


# -- memory messages (DESIGN §9) -------------------------------------------------------------------


def _memory(op: str, **fields: Any) -> str:
    return json.dumps({"op": op, "tenant_id": TENANT, "subject_id": "pipeline-agent", **fields})


def test_ingest_remember_message_keeps_a_note_for_its_subject_once(
    ingest: IngestService, store: InMemoryKnowledgeStore
) -> None:
    body = _memory("remember", content="The nightly export lands in bucket exports-7.", path="/ops")

    first = ingest.ingest(body, message_id="m-1")
    again = ingest.ingest(body, message_id="m-1")

    assert (first, again) == (IngestAction.REMEMBERED, IngestAction.REMEMBERED)
    notes = [note for note in store._notes.values() if note.owner_id == "pipeline-agent"]
    assert [(note.content, note.path, note.version) for note in notes] == [
        ("The nightly export lands in bucket exports-7.", "/ops", 1)
    ]


def test_ingest_remember_message_with_pin_pins_the_note_once(
    ingest: IngestService, store: InMemoryKnowledgeStore
) -> None:
    body = _memory("remember", content="Escalate outages to the platform lead.", pin=True)

    ingest.ingest(body, message_id="m-1")
    ingest.ingest(body, message_id="m-1")

    [note] = store._notes.values()
    pins = store.list_pins(TENANT, limit=10, next_token=None).entries
    assert [(pin.note_id, pin.created_by) for pin in pins] == [(note.note_id, "pipeline-agent")]
    assert store.get_note(TENANT, note.note_id).pinned is True  # type: ignore[union-attr]


def test_ingest_forget_message_forgets_and_its_redelivery_is_a_no_op(
    ingest: IngestService, store: InMemoryKnowledgeStore
) -> None:
    ingest.ingest(_memory("remember", content="Temporary fact."), message_id="m-1")
    [note] = store._notes.values()
    forget = _memory("forget", note_id=note.note_id, mode="hard")

    assert ingest.ingest(forget, message_id="m-2") is IngestAction.FORGOTTEN
    assert ingest.ingest(forget, message_id="m-2") is IngestAction.ABSENT
    assert store.get_note(TENANT, note.note_id) is None


def test_ingest_memory_message_with_unknown_fields_is_rejected(ingest: IngestService) -> None:
    with pytest.raises(MessageRejectedError):
        ingest.ingest(_memory("remember", content="x", colour="red"), message_id="m-1")


def test_ingest_remember_message_out_of_bounds_raises_so_it_reaches_the_dead_letter_queue(
    ingest: IngestService,
) -> None:
    with pytest.raises(MemoryInvalidRequestError):
        ingest.ingest(_memory("remember", content="x", importance=2.0), message_id="m-1")


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        ({"expected_version": 10**38}, MemoryInvalidRequestError),
        ({"expected_version": -1}, MemoryInvalidRequestError),
        ({"ttl_seconds": 10**38}, MemoryInvalidRequestError),
        ({"expected_version": True}, MessageRejectedError),
        ({"ttl_seconds": 1.5}, MessageRejectedError),
    ],
)
def test_ingest_remember_message_integer_out_of_bounds_or_no_integer_is_rejected_naming_the_field(
    ingest: IngestService, fields: dict[str, Any], error: type[Exception]
) -> None:
    body = _memory("remember", content="A fact.", semantic_key="fact", **fields)

    with pytest.raises(error) as raised:
        ingest.ingest(body, message_id="m-1")

    [field] = fields
    problems = raised.value.details["fields"]  # type: ignore[attr-defined]
    # A malformed message names the field under its op ("remember.ttl_seconds").
    assert [problem["field"].removeprefix("remember.") for problem in problems] == [field]


def test_ingest_remember_message_with_1e400_is_rejected_naming_the_field(ingest: IngestService) -> None:
    body = _memory("remember", content="A fact.", semantic_key="fact", ttl_seconds=1)
    body = body.replace('"ttl_seconds": 1', '"ttl_seconds": 1e400')

    with pytest.raises(MessageRejectedError) as raised:
        ingest.ingest(body, message_id="m-1")

    assert [problem["field"] for problem in raised.value.details["fields"]] == ["remember.ttl_seconds"]


def test_ingest_remember_message_with_a_huge_ttl_is_rejected_and_logged_without_values(
    ingest: IngestService, caplog: pytest.LogCaptureFixture
) -> None:
    body = _memory("remember", content="secret fact", ttl_seconds=9_223_372_036_854_775_807)

    with pytest.raises(MemoryInvalidRequestError) as raised:
        ingest.ingest(body, message_id="m-1")

    assert [problem["field"] for problem in raised.value.details["fields"]] == ["ttl_seconds"]
    [record] = [record for record in caplog.records if record.getMessage() == "ingest message rejected"]
    assert record.__dict__["problems"] == raised.value.details["fields"]
    assert "secret" not in str(record.__dict__["problems"])


def test_ingest_memory_message_failing_unexpectedly_is_logged_with_its_error_type(
    ingest: IngestService, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*_: Any) -> None:
        raise OverflowError("date value out of range: secret")

    monkeypatch.setattr(ingest._notes, "remember", broken)

    with pytest.raises(OverflowError):
        ingest.ingest(_memory("remember", content="secret fact"), message_id="m-1")

    [record] = [record for record in caplog.records if record.getMessage() == "ingest message failed"]
    assert record.__dict__["error_type"] == "OverflowError"
    assert "secret" not in json.dumps({k: str(v) for k, v in record.__dict__.items() if k != "msg"})


def test_ingest_remember_message_with_a_blank_semantic_key_is_rejected(
    ingest: IngestService, store: InMemoryKnowledgeStore
) -> None:
    with pytest.raises(MemoryInvalidRequestError) as raised:
        ingest.ingest(_memory("remember", content="A fact.", semantic_key=" "), message_id="m-1")

    assert [problem["field"] for problem in raised.value.details["fields"]] == ["semantic_key"]
    assert list(store._notes.values()) == []
