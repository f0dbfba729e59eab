"""The store contract for quota counters: at most ``limit`` uses counted per tenant, quota and
window, each window and tenant counted apart; the same on every adapter."""

from __future__ import annotations

import pytest

from knowledge.ports import KnowledgeStore
from tests.integration.store_contract.conftest import OTHER_TENANT, TENANT

WINDOW = 1_800_000_000
EXPIRES = WINDOW + 300


def _consume(
    store: KnowledgeStore, times: int, *, tenant_id: str = TENANT, window: int = WINDOW
) -> list[bool]:
    return [
        store.consume_quota(tenant_id, "requests_per_second", window=window, limit=3, expires_at=EXPIRES)
        for _ in range(times)
    ]


def test_consume_quota_counts_up_to_the_limit_then_refuses(store: KnowledgeStore) -> None:
    assert _consume(store, 5) == [True, True, True, False, False]


def test_consume_quota_windows_are_counted_apart(store: KnowledgeStore) -> None:
    _consume(store, 3)

    assert _consume(store, 4, window=WINDOW + 1) == [True, True, True, False]


def test_consume_quota_tenants_are_counted_apart(store: KnowledgeStore) -> None:
    _consume(store, 3)

    assert _consume(store, 1, tenant_id=OTHER_TENANT) == [True]
    assert _consume(store, 1) == [False]


def test_consume_quota_quotas_are_counted_apart(store: KnowledgeStore) -> None:
    _consume(store, 3)

    assert store.consume_quota(TENANT, "writes_per_second", window=WINDOW, limit=1, expires_at=EXPIRES)


def test_consume_quota_tenant_with_a_hash_is_refused(store: KnowledgeStore) -> None:
    with pytest.raises(ValueError, match="must not contain '#'"):
        store.consume_quota("a#b", "requests_per_second", window=WINDOW, limit=1, expires_at=EXPIRES)
