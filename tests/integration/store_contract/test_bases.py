"""The store contract: knowledge bases (creation, conditional updates, batch reads)."""

from __future__ import annotations

import pytest

from knowledge.domain.models import BaseStatus, KnowledgeBase
from knowledge.errors import ConflictError, RequestValidationError, ResourceUnavailableError
from knowledge.ports import KnowledgeStore
from tests.integration.store_contract.conftest import OTHER_TENANT, TENANT
from tests.support.store import make_base


def test_create_base_then_get_base_returns_equal_base(store: KnowledgeStore) -> None:
    created = make_base(store, TENANT)

    assert store.get_base(TENANT, created.knowledge_base_id) == created
    assert created.version == 1
    assert created.status is BaseStatus.ACTIVE


def test_get_base_other_tenant_returns_none(store: KnowledgeStore, base: KnowledgeBase) -> None:
    assert store.get_base(OTHER_TENANT, base.knowledge_base_id) is None


def test_update_base_matching_version_changes_fields_and_increments_version(
    store: KnowledgeStore, base: KnowledgeBase
) -> None:
    updated = store.update_base(
        TENANT, base.knowledge_base_id, expected_version=1, status=BaseStatus.INACTIVE, name="Archive"
    )

    assert (updated.version, updated.status, updated.name) == (2, BaseStatus.INACTIVE, "Archive")
    assert store.get_base(TENANT, base.knowledge_base_id) == updated


def test_update_base_stale_version_raises_conflict_with_current_version(
    store: KnowledgeStore, base: KnowledgeBase
) -> None:
    store.update_base(TENANT, base.knowledge_base_id, expected_version=1, name="Second")
    third = store.update_base(TENANT, base.knowledge_base_id, expected_version=2, name="Third")

    with pytest.raises(ConflictError) as raised:
        store.update_base(TENANT, base.knowledge_base_id, expected_version=1, name="Lost")

    assert raised.value.current_version == 3
    assert raised.value.details == {"current_version": 3}
    assert store.get_base(TENANT, base.knowledge_base_id) == third


def test_update_base_absent_base_raises_resource_unavailable_and_creates_nothing(
    store: KnowledgeStore, base: KnowledgeBase
) -> None:
    with pytest.raises(ResourceUnavailableError):
        store.update_base(OTHER_TENANT, base.knowledge_base_id, expected_version=1, name="Hijack")

    assert store.get_base(OTHER_TENANT, base.knowledge_base_id) is None


def test_get_bases_more_than_one_batch_returns_each_existing_base_once(store: KnowledgeStore) -> None:
    created = [make_base(store, TENANT) for _ in range(105)]
    wanted = [base.knowledge_base_id for base in created]

    found = store.get_bases(TENANT, [*wanted, wanted[0], "kb_01ABSENT00000000000000000000"])

    assert found == {base.knowledge_base_id: base for base in created}


def test_update_base_without_changes_still_moves_the_version(
    store: KnowledgeStore, base: KnowledgeBase
) -> None:
    updated = store.update_base(TENANT, base.knowledge_base_id, expected_version=1)

    assert (updated.version, updated.name, updated.status) == (2, base.name, base.status)
    assert store.get_base(TENANT, base.knowledge_base_id) == updated


def test_list_bases_token_of_another_tenant_raises_request_validation(store: KnowledgeStore) -> None:
    for _ in range(2):
        make_base(store, TENANT)
    token = store.list_bases(TENANT, limit=1, next_token=None).next_token
    assert token is not None

    with pytest.raises(RequestValidationError):
        store.list_bases(OTHER_TENANT, limit=1, next_token=token)
