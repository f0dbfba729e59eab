"""find_base and require_scope: one answer (``ResourceUnavailableError``) for every base a caller
may not use, and scopes with ``platform:admin`` implying all of them."""

from __future__ import annotations

import pytest

from knowledge.adapters.in_process.store import InProcessKnowledgeStore
from knowledge.domain.ids import KB_PREFIX, shape_of
from knowledge.domain.models import BaseStatus, KnowledgeBase, Permission, Scope
from knowledge.errors import InsufficientScopeError, RequestValidationError, ResourceUnavailableError
from knowledge.services.access import find_base, require_scope
from tests.unit.services.conftest import ADMIN, PLATFORM, READ, TENANT, caller

READER = caller("agent-7", READ)


@pytest.fixture
def base(store: InProcessKnowledgeStore) -> KnowledgeBase:
    return store.create_base(TENANT, name="Ops", owner_id="owner-1", scope=Scope.TENANT, team_id=None)


def test_find_base_visible_base_is_returned(store: InProcessKnowledgeStore, base: KnowledgeBase) -> None:
    assert find_base(store, READER, base.knowledge_base_id) == base


def test_find_base_absent_id_raises_resource_unavailable(store: InProcessKnowledgeStore) -> None:
    with pytest.raises(ResourceUnavailableError):
        find_base(store, READER, "kb_01M8MSRAQ70QQ1SJHWP0AMCDPZ")


@pytest.mark.parametrize("base_id", ["kb_#EXT#x", "ki_01M8MSRAQ70QQ1SJHWP0AMCDPZ", "", "project-docs"])
def test_find_base_malformed_id_raises_validation_error_naming_the_field(
    store: InProcessKnowledgeStore, base_id: str
) -> None:
    with pytest.raises(RequestValidationError) as raised:
        find_base(store, READER, base_id)

    assert raised.value.details == {
        "fields": [{"field": "knowledge_base_id", "problem": shape_of(KB_PREFIX)}]
    }


def test_find_base_inactive_or_foreign_base_raises_resource_unavailable(
    store: InProcessKnowledgeStore, base: KnowledgeBase
) -> None:
    foreign = caller("agent-7", READ, tenant_id="globex")
    store.update_base(TENANT, base.knowledge_base_id, expected_version=1, status=BaseStatus.INACTIVE)

    with pytest.raises(ResourceUnavailableError):
        find_base(store, READER, base.knowledge_base_id)
    with pytest.raises(ResourceUnavailableError):
        find_base(store, foreign, base.knowledge_base_id)


def test_find_base_applies_the_given_rule(store: InProcessKnowledgeStore, base: KnowledgeBase) -> None:
    store.update_base(TENANT, base.knowledge_base_id, expected_version=1, status=BaseStatus.INACTIVE)

    found = find_base(store, READER, base.knowledge_base_id, allowed=lambda principal, candidate: True)

    assert found.status is BaseStatus.INACTIVE


def test_require_scope_missing_scope_names_it() -> None:
    with pytest.raises(InsufficientScopeError) as raised:
        require_scope(READER, Permission.WRITE)

    assert raised.value.details == {"required_scope": Permission.WRITE.value}


@pytest.mark.parametrize("scope", list(Permission))
def test_require_scope_platform_admin_holds_every_scope(scope: Permission) -> None:
    require_scope(caller("operator", PLATFORM), scope)


def test_require_scope_admin_does_not_imply_read() -> None:
    with pytest.raises(InsufficientScopeError):
        require_scope(caller("curator-1", ADMIN), Permission.READ)
