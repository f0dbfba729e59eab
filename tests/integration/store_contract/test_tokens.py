"""The store contract: token records by hash; revoked or expired tokens are never valid."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from knowledge.domain.bearer_tokens import hash_token, new_token
from knowledge.domain.models import TokenRecord
from knowledge.errors import ConflictError, ResourceUnavailableError
from knowledge.ports import KnowledgeStore

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def _record(token: str, **overrides: Any) -> TokenRecord:
    values: dict[str, Any] = {
        "token_hash": hash_token(token),
        "tenant_id": "tenant-a",
        "subject_id": "agent-7",
        "team_ids": frozenset({"team-2", "team-1"}),
        "scopes": frozenset({"knowledge:read", "knowledge:write"}),
        "knowledge_base_ids": frozenset({"kb_1"}),
        "created_at": NOW,
        "expires_at": NOW + timedelta(hours=1),
    }
    values.update(overrides)
    return TokenRecord(**values)


def test_put_token_then_get_token_returns_equal_valid_record(store: KnowledgeStore) -> None:
    record = _record(new_token())

    store.put_token(record)

    stored = store.get_token(record.token_hash)
    assert stored == record
    assert stored.is_valid_at(NOW)


@pytest.mark.parametrize("allow_list", [None, frozenset()])
def test_put_token_allow_list_none_and_empty_stay_distinct(
    store: KnowledgeStore, allow_list: frozenset[str] | None
) -> None:
    record = _record(new_token(), knowledge_base_ids=allow_list, team_ids=frozenset(), expires_at=None)

    store.put_token(record)

    assert store.get_token(record.token_hash) == record


def test_get_token_absent_returns_none(store: KnowledgeStore) -> None:
    assert store.get_token(hash_token(new_token())) is None


def test_revoke_token_then_get_token_is_not_valid(store: KnowledgeStore) -> None:
    record = _record(new_token())
    store.put_token(record)

    store.revoke_token(record.token_hash)

    stored = store.get_token(record.token_hash)
    assert stored is not None
    assert stored.revoked
    assert not stored.is_valid_at(NOW)


def test_get_token_expired_record_is_not_valid(store: KnowledgeStore) -> None:
    record = _record(new_token(), expires_at=NOW - timedelta(seconds=1))
    store.put_token(record)

    stored = store.get_token(record.token_hash)

    assert stored is not None
    assert not stored.is_valid_at(NOW)


def test_revoke_token_absent_raises_resource_unavailable_and_creates_nothing(
    store: KnowledgeStore,
) -> None:
    token_hash = hash_token(new_token())

    with pytest.raises(ResourceUnavailableError):
        store.revoke_token(token_hash)

    assert store.get_token(token_hash) is None


def test_put_token_same_hash_twice_raises_conflict_and_keeps_first(store: KnowledgeStore) -> None:
    token = new_token()
    first = _record(token)
    store.put_token(first)

    with pytest.raises(ConflictError):
        store.put_token(_record(token, subject_id="intruder"))

    assert store.get_token(first.token_hash) == first


def test_put_token_same_record_again_succeeds_as_a_retry(store: KnowledgeStore) -> None:
    record = _record(new_token())
    store.put_token(record)

    store.put_token(record)

    assert store.get_token(record.token_hash) == record
