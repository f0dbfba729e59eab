"""Stream records of ``events/`` (real table changes) decoded into ``StoreChange``."""

from __future__ import annotations

from typing import Any

import pytest

from knowledge.adapters.dynamodb.stream import decode_stream_record
from knowledge.domain.changes import ChangeKind
from knowledge.domain.models import BaseStatus, ItemStatus, KnowledgeBase, KnowledgeItem, Revision
from tests.support.events import load_event


def _records(name: str) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = load_event(name)["Records"]
    return records


def test_decode_stream_record_insert_batch_yields_base_revision_and_item_models() -> None:
    changes = [decode_stream_record(record) for record in _records("indexer_item_insert")]

    assert [change.kind for change in changes] == [ChangeKind.INSERT] * 5
    assert [type(change.new).__name__ if change.new else None for change in changes] == [
        KnowledgeBase.__name__,
        None,  # page
        Revision.__name__,
        KnowledgeItem.__name__,
        None,  # external-id guard
    ]
    assert all(change.old is None for change in changes)


def test_decode_stream_record_item_modify_carries_both_versions() -> None:
    change = decode_stream_record(_records("indexer_item_modify")[-1])

    assert change.kind is ChangeKind.MODIFY
    pair = change.item
    assert pair is not None
    old, new = pair
    assert old is not None
    assert new is not None
    assert (old.version, new.version) == (1, 2)
    assert change.base is None


def test_decode_stream_record_archive_and_deactivation_report_new_states() -> None:
    archived, guard_removed = (decode_stream_record(record) for record in _records("indexer_item_archive"))
    deactivated = decode_stream_record(_records("indexer_base_deactivate")[0])

    assert isinstance(archived.new, KnowledgeItem)
    assert archived.new.status is ItemStatus.ARCHIVED
    assert (guard_removed.kind, guard_removed.old, guard_removed.new) == (ChangeKind.REMOVE, None, None)
    pair = deactivated.base
    assert pair is not None
    assert [base.status for base in pair if base is not None] == [BaseStatus.ACTIVE, BaseStatus.INACTIVE]


def test_decode_stream_record_unknown_event_name_raises_value_error() -> None:
    record = {**_records("indexer_base_deactivate")[0], "eventName": "TRUNCATE"}

    with pytest.raises(ValueError, match="TRUNCATE"):
        decode_stream_record(record)


TTL_IDENTITY = {"type": "Service", "principalId": "dynamodb.amazonaws.com"}


def test_decode_stream_record_removal_by_ttl_is_expired_and_a_writers_is_not() -> None:
    _, removed = _records("indexer_item_archive")
    other_service = {"type": "Service", "principalId": "replication.dynamodb.amazonaws.com"}

    by_ttl = decode_stream_record({**removed, "userIdentity": TTL_IDENTITY})
    by_writer = decode_stream_record(removed)
    by_other = decode_stream_record({**removed, "userIdentity": other_service})

    assert (by_ttl.kind, by_ttl.expired) == (ChangeKind.REMOVE, True)
    assert (by_writer.expired, by_other.expired) == (False, False)


def test_decode_stream_record_only_a_removal_is_expired() -> None:
    modified = _records("indexer_item_modify")[-1]

    assert decode_stream_record({**modified, "userIdentity": TTL_IDENTITY}).expired is False
