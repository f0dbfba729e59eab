"""The store contract: token records by hash; revoked or expired tokens are never valid."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from knowledge.domain.access.bearer_tokens import hash_token, new_token
from knowledge.domain.models import TokenRecord
from knowledge.errors import ConflictError, RequestValidationError, ResourceUnavailableError
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


def test_put_token_keeps_its_lineage_root_first(store: KnowledgeStore) -> None:
    root, parent = hash_token(new_token()), hash_token(new_token())
    record = _record(new_token(), ancestor_token_ids=(root, parent))

    store.put_token(record)

    stored = store.get_token(record.token_hash)
    assert stored == record
    assert stored.ancestor_token_ids == (root, parent)
    assert stored.issuer_token_id == parent


def test_get_tokens_returns_the_stored_ones_by_hash(store: KnowledgeStore) -> None:
    first, second = _record(new_token()), _record(new_token(), tenant_id="tenant-b")
    store.put_token(first)
    store.put_token(second)
    absent = hash_token(new_token())

    found = store.get_tokens([first.token_hash, absent, second.token_hash, first.token_hash])

    assert found == {first.token_hash: first, second.token_hash: second}


def test_get_tokens_sees_a_revocation_at_once(store: KnowledgeStore) -> None:
    record = _record(new_token())
    store.put_token(record)

    store.revoke_token(record.token_hash)

    assert store.get_tokens([record.token_hash])[record.token_hash].revoked


def test_list_tokens_pages_through_the_tenants_tokens_in_creation_order(store: KnowledgeStore) -> None:
    mine = [_record(new_token(), created_at=NOW + timedelta(seconds=n)) for n in range(5)]
    theirs = _record(new_token(), tenant_id="tenant-b", created_at=NOW + timedelta(seconds=2))
    for record in [*reversed(mine), theirs]:
        store.put_token(record)
    store.revoke_token(mine[1].token_hash)

    pages, next_token = [], None
    while True:
        page = store.list_tokens("tenant-a", limit=2, next_token=next_token)
        pages.append([record.token_hash for record in page.entries])
        next_token = page.next_token
        if next_token is None:
            break

    assert pages == [
        [mine[0].token_hash, mine[1].token_hash],
        [mine[2].token_hash, mine[3].token_hash],
        [mine[4].token_hash],
    ]
    assert store.list_tokens("tenant-a", limit=10, next_token=None).entries[1].revoked


def test_list_tokens_with_admits_keeps_pages_full(store: KnowledgeStore) -> None:
    records = [
        _record(new_token(), created_at=NOW + timedelta(seconds=n), subject_id=f"agent-{n % 2}")
        for n in range(7)
    ]
    for record in records:
        store.put_token(record)
    wanted = [record.token_hash for record in records if record.subject_id == "agent-1"]

    def admits(record: TokenRecord) -> bool:
        return record.subject_id == "agent-1"

    first = store.list_tokens("tenant-a", limit=2, next_token=None, admits=admits)
    second = store.list_tokens("tenant-a", limit=2, next_token=first.next_token, admits=admits)

    assert [record.token_hash for record in first.entries] == wanted[:2]
    assert [record.token_hash for record in second.entries] == wanted[2:]
    assert second.next_token is None


def test_list_tokens_of_another_tenant_is_empty_and_refuses_a_foreign_next_token(
    store: KnowledgeStore,
) -> None:
    for n in range(3):
        store.put_token(_record(new_token(), created_at=NOW + timedelta(seconds=n)))
    page = store.list_tokens("tenant-a", limit=1, next_token=None)
    assert page.next_token is not None

    assert store.list_tokens("tenant-b", limit=5, next_token=None).entries == []
    with pytest.raises(RequestValidationError):
        store.list_tokens("tenant-b", limit=5, next_token=page.next_token)
