"""DynamoDB record codec and listing tokens: lossless round trips, UTC timestamps, bound tokens."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from knowledge.adapters.dynamodb import codec
from knowledge.adapters.dynamodb.paging import INDEX_KEY, TABLE_KEY, Listing
from knowledge.domain.models import (
    BaseStatus,
    ItemStatus,
    KnowledgeBase,
    KnowledgeItem,
    Revision,
    Scope,
    Source,
    TokenRecord,
)
from knowledge.errors import RequestValidationError

NOW = datetime(2026, 5, 4, 3, 2, 1, 123456, tzinfo=UTC)


def _item(status: ItemStatus = ItemStatus.PUBLISHED) -> KnowledgeItem:
    return KnowledgeItem(
        tenant_id="t1",
        knowledge_base_id="kb_1",
        knowledge_item_id="ki_1",
        title="Title",
        status=status,
        current_revision_id="kr_1",
        latest_revision_id="kr_2",
        latest_sha256="ab" * 32,
        external_id="doc-1",
        version=3,
        created_at=NOW,
        updated_at=NOW + timedelta(seconds=5),
    )


def test_encode_then_decode_returns_equal_models() -> None:
    base = KnowledgeBase(
        tenant_id="t1",
        knowledge_base_id="kb_1",
        name="Handbook",
        owner_id="u1",
        team_id="team-1",
        scope=Scope.TEAM,
        status=BaseStatus.INACTIVE,
        version=2,
        created_at=NOW,
        updated_at=NOW,
    )
    revision = Revision(
        tenant_id="t1",
        knowledge_base_id="kb_1",
        knowledge_item_id="ki_1",
        knowledge_revision_id="kr_1",
        title="Title",
        source=Source(uri="https://example.com"),
        sha256="cd" * 32,
        total_chars=10,
        page_size=4,
        page_count=3,
        created_at=NOW,
    )
    token = TokenRecord(
        token_hash="ef" * 32,
        tenant_id="t1",
        subject_id="agent",
        team_ids=frozenset({"b", "a"}),
        scopes=frozenset({"knowledge:read"}),
        created_at=NOW,
    )

    assert codec.decode_base(codec.encode_base(base)) == base
    assert codec.decode_item(codec.encode_item(_item())) == _item()
    assert codec.decode_revision(codec.encode_revision(revision)) == revision
    assert codec.decode_token(codec.encode_token(token)) == token


def test_decode_record_dispatches_on_entity_and_ignores_other_records() -> None:
    page = codec.encode_page(
        Revision(
            tenant_id="t1",
            knowledge_base_id="kb_1",
            knowledge_item_id="ki_1",
            knowledge_revision_id="kr_1",
            title="T",
            sha256="0" * 64,
            total_chars=1,
            page_size=1,
            page_count=1,
            created_at=NOW,
        ),
        0,
        "x",
    )

    assert codec.decode_record(codec.encode_item(_item())) == _item()
    assert codec.decode_record(page) is None
    assert codec.decode_record({"PK": {"S": "EMB#x"}, "SK": {"S": "META"}}) is None


def test_encode_item_archived_item_is_listed_under_its_bases_archived_items() -> None:
    listed = codec.encode_item(_item())
    archived = codec.encode_item(_item(ItemStatus.ARCHIVED))

    assert listed["GSI1PK"] == {"S": "T#t1#KB#kb_1"}
    assert archived["GSI1PK"] == {"S": "T#t1#KB#kb_1#ARCHIVED"}
    assert archived["GSI1SK"] == listed["GSI1SK"]


def test_timestamp_converts_offsets_to_utc_and_rejects_naive() -> None:
    moment = datetime(2026, 5, 4, 5, 2, 1, tzinfo=timezone(timedelta(hours=2)))

    assert codec.timestamp(moment) == "2026-05-04T03:02:01.000000Z"
    with pytest.raises(ValueError, match="timezone-aware"):
        codec.timestamp(datetime(2026, 5, 4))


def test_update_sets_values_and_removes_cleared_fields() -> None:
    change = codec.update({"title": "New", "current_revision_id": None}, remove=("GSI1PK",))

    assert change.expression == "SET #title = :title REMOVE #current_revision_id, #GSI1PK"
    assert change.values == {":title": {"S": "New"}}
    assert set(change.names) == {"#title", "#current_revision_id", "#GSI1PK"}


def test_listing_token_round_trips_its_start_key() -> None:
    listing = Listing("revisions", "PK", "T#t1#ITEM#ki_1", TABLE_KEY)
    start = {"PK": {"S": "T#t1#ITEM#ki_1"}, "SK": {"S": "REV#kr_9"}}

    assert listing.decode(listing.encode(start)) == start


def test_listing_token_of_other_partition_raises_request_validation() -> None:
    mine = Listing("items", "GSI1PK", "T#t1#KB#kb_1", INDEX_KEY)
    theirs = Listing("items", "GSI1PK", "T#t2#KB#kb_1", INDEX_KEY)
    start = {
        "PK": {"S": "p"},
        "SK": {"S": "META"},
        "GSI1PK": {"S": "T#t2#KB#kb_1"},
        "GSI1SK": {"S": "ITEM#x"},
    }

    with pytest.raises(RequestValidationError):
        mine.decode(theirs.encode(start))
