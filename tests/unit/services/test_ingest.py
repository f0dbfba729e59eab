"""IngestService: one queue message applied idempotently; a message that can never apply is
rejected with its reason (never its content), one whose base is missing raises so SQS retries it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from knowledge.adapters.memory_store import InMemoryKnowledgeStore
from knowledge.domain.models import ItemStatus, KnowledgeBase, Scope
from knowledge.errors import ResourceUnavailableError
from knowledge.services.ingest import IngestAction, IngestService, MessageRejectedError
from tests.unit.services.conftest import MAX_CONTENT_CHARS, TENANT


@pytest.fixture
def ingest(store: InMemoryKnowledgeStore) -> IngestService:
    return IngestService(store, max_content_chars=MAX_CONTENT_CHARS)


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
