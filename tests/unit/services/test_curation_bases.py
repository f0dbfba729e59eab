"""CurationService: knowledge bases (DESIGN §6). Admins create, update, list and re-index the bases
of their tenant that their allow-list admits; every other base answers like an absent one."""

from __future__ import annotations

import pytest

from knowledge.contract.writes import (
    CreateItemRequest,
    CreateKnowledgeBaseRequest,
    KnowledgeBaseResponse,
    UpdateKnowledgeBaseRequest,
)
from knowledge.domain.models import BaseStatus, Scope
from knowledge.errors import (
    ConflictError,
    InsufficientScopeError,
    RequestValidationError,
    ResourceUnavailableError,
)
from knowledge.services.curation import CurationService
from tests.unit.services.conftest import ADMIN, PLATFORM, READ, WRITE, caller

ADMIN_CALLER = caller("curator-1", ADMIN, READ, WRITE)
ABSENT_BASE = "kb_01M8MSRAQ70QQ1SJHWP0AMCDPZ"


def _base(
    curation: CurationService, name: str = "Ops", scope: Scope = Scope.TENANT, team_id: str | None = None
) -> KnowledgeBaseResponse:
    return curation.create_base(
        ADMIN_CALLER, CreateKnowledgeBaseRequest(name=name, scope=scope, team_id=team_id)
    )


def test_create_base_is_active_at_version_one_and_owned_by_the_caller(curation: CurationService) -> None:
    base = _base(curation, "Platform", Scope.TEAM, "platform")

    assert base.knowledge_base_id.startswith("kb_")
    assert (base.name, base.scope, base.team_id, base.owner_id, base.status, base.version) == (
        "Platform",
        Scope.TEAM,
        "platform",
        "curator-1",
        BaseStatus.ACTIVE,
        1,
    )


@pytest.mark.parametrize("scopes", [(READ, WRITE), (READ,), ()])
def test_create_base_without_admin_scope_raises_insufficient_scope(
    curation: CurationService, scopes: tuple[str, ...]
) -> None:
    writer = caller("writer-1", *scopes)

    with pytest.raises(InsufficientScopeError) as raised:
        curation.create_base(writer, CreateKnowledgeBaseRequest(name="Ops", scope=Scope.TENANT))

    assert raised.value.details == {"required_scope": ADMIN.value}


def test_create_base_by_platform_admin_is_allowed(curation: CurationService) -> None:
    operator = caller("operator", PLATFORM)

    base = curation.create_base(operator, CreateKnowledgeBaseRequest(name="Ops", scope=Scope.TENANT))

    assert base.owner_id == "operator"


def test_update_base_renames_then_deactivates_moving_the_version(curation: CurationService) -> None:
    base = _base(curation)

    renamed = curation.update_base(
        ADMIN_CALLER,
        base.knowledge_base_id,
        UpdateKnowledgeBaseRequest(name="Operations", expected_version=1),
    )
    deactivated = curation.update_base(
        ADMIN_CALLER,
        base.knowledge_base_id,
        UpdateKnowledgeBaseRequest(status=BaseStatus.INACTIVE, expected_version=2),
    )

    assert renamed == base.model_copy(update={"name": "Operations", "version": 2})
    assert deactivated == base.model_copy(update={"name": "Operations", "status": "inactive", "version": 3})


def test_update_base_stale_version_raises_conflict_with_current_version(curation: CurationService) -> None:
    base = _base(curation)
    curation.update_base(
        ADMIN_CALLER,
        base.knowledge_base_id,
        UpdateKnowledgeBaseRequest(name="Operations", expected_version=1),
    )

    with pytest.raises(ConflictError) as raised:
        curation.update_base(
            ADMIN_CALLER,
            base.knowledge_base_id,
            UpdateKnowledgeBaseRequest(status=BaseStatus.INACTIVE, expected_version=1),
        )

    assert raised.value.details == {"current_version": 2}


def test_update_absent_base_raises_resource_unavailable(curation: CurationService) -> None:
    with pytest.raises(ResourceUnavailableError):
        curation.update_base(
            ADMIN_CALLER, ABSENT_BASE, UpdateKnowledgeBaseRequest(name="x", expected_version=1)
        )


@pytest.mark.parametrize("base_id", ["kb_#EXT", "not-an-id"])
def test_update_malformed_base_id_raises_validation_error(curation: CurationService, base_id: str) -> None:
    with pytest.raises(RequestValidationError):
        curation.update_base(ADMIN_CALLER, base_id, UpdateKnowledgeBaseRequest(name="x", expected_version=1))


def test_update_base_of_another_tenant_raises_resource_unavailable(curation: CurationService) -> None:
    base = _base(curation)
    foreign = caller("curator-1", ADMIN, tenant_id="globex")

    with pytest.raises(ResourceUnavailableError):
        curation.update_base(foreign, base.knowledge_base_id, UpdateKnowledgeBaseRequest(expected_version=1))


def test_update_base_outside_the_admins_allow_list_raises_resource_unavailable(
    curation: CurationService,
) -> None:
    base, other = _base(curation), _base(curation, "Other")
    narrow = caller("curator-2", ADMIN, knowledge_base_ids=[other.knowledge_base_id])

    with pytest.raises(ResourceUnavailableError):
        curation.authorize_base_management(narrow, base.knowledge_base_id)
    curation.authorize_base_management(narrow, other.knowledge_base_id)


def test_list_bases_shows_readers_visible_bases_and_admins_every_base(curation: CurationService) -> None:
    shared = _base(curation, "Shared")
    _base(curation, "Mine", Scope.PRIVATE)
    closed = _base(curation, "Closed")
    curation.update_base(
        ADMIN_CALLER,
        closed.knowledge_base_id,
        UpdateKnowledgeBaseRequest(status=BaseStatus.INACTIVE, expected_version=1),
    )
    curation.create_base(
        caller("curator-3", ADMIN, tenant_id="globex"),
        CreateKnowledgeBaseRequest(name="Globex", scope=Scope.TENANT),
    )

    seen_by_reader = curation.list_bases(caller("reader-1", READ), limit=50, next_token=None)
    seen_by_admin = curation.list_bases(caller("curator-2", ADMIN, READ), limit=50, next_token=None)

    assert [entry.name for entry in seen_by_reader.knowledge_bases] == ["Shared"]
    assert [entry.name for entry in seen_by_admin.knowledge_bases] == ["Shared", "Mine", "Closed"]
    assert seen_by_admin.knowledge_bases[0] == shared
    assert seen_by_reader.next_token is None


def test_list_bases_paginates_in_id_order(curation: CurationService) -> None:
    created = [_base(curation, f"Base {n}").knowledge_base_id for n in range(5)]
    pages, token = [], None
    while True:
        page = curation.list_bases(ADMIN_CALLER, limit=2, next_token=token)
        pages.append([entry.knowledge_base_id for entry in page.knowledge_bases])
        token = page.next_token
        if token is None:
            break

    assert [len(page) for page in pages] == [2, 2, 1]
    assert [entry for page in pages for entry in page] == created


def test_list_bases_without_read_scope_raises_insufficient_scope(curation: CurationService) -> None:
    with pytest.raises(InsufficientScopeError):
        curation.list_bases(caller("writer-9", WRITE), limit=10, next_token=None)


def test_reindex_base_rebuilds_the_index_of_published_items(curation: CurationService) -> None:
    base = _base(curation)
    for n in range(3):
        curation.create_item(
            ADMIN_CALLER,
            base.knowledge_base_id,
            CreateItemRequest(title=f"Runbook {n}", content="Blue green switch.", publish=True),
        )
    curation.create_item(
        ADMIN_CALLER, base.knowledge_base_id, CreateItemRequest(title="Draft", content="Not yet.")
    )

    counts = curation.reindex_base(ADMIN_CALLER, base.knowledge_base_id)

    assert (counts.status, counts.scanned, counts.indexed, counts.removed, counts.skipped) == (
        BaseStatus.ACTIVE,
        4,
        3,
        1,
        0,
    )


def test_reindex_inactive_base_scans_nothing(curation: CurationService) -> None:
    base = _base(curation)
    curation.update_base(
        ADMIN_CALLER,
        base.knowledge_base_id,
        UpdateKnowledgeBaseRequest(status=BaseStatus.INACTIVE, expected_version=1),
    )

    counts = curation.reindex_base(ADMIN_CALLER, base.knowledge_base_id)

    assert (counts.status, counts.scanned) == (BaseStatus.INACTIVE, 0)


def test_reindex_without_admin_scope_raises_insufficient_scope(curation: CurationService) -> None:
    base = _base(curation)

    with pytest.raises(InsufficientScopeError):
        curation.reindex_base(caller("writer-1", READ, WRITE), base.knowledge_base_id)
