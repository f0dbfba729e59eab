from __future__ import annotations

from datetime import UTC, datetime

import pytest

from knowledge.domain.access.visibility import VisibilityFilter, can_see
from knowledge.domain.models import BaseStatus, KnowledgeBase, Principal, Scope

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _base(
    scope: Scope,
    *,
    owner: str = "owner",
    team: str | None = None,
    tenant: str = "t1",
    status: BaseStatus = BaseStatus.ACTIVE,
    kb: str = "kb_1",
) -> KnowledgeBase:
    return KnowledgeBase(
        tenant_id=tenant,
        knowledge_base_id=kb,
        name="n",
        owner_id=owner,
        team_id=team,
        scope=scope,
        status=status,
        version=1,
        created_at=NOW,
        updated_at=NOW,
    )


def _principal(
    *,
    subject: str = "alice",
    teams: frozenset[str] = frozenset(),
    tenant: str = "t1",
    allow: frozenset[str] | None = None,
) -> Principal:
    return Principal(
        tenant_id=tenant,
        subject_id=subject,
        team_ids=teams,
        scopes=frozenset({"knowledge:read"}),
        knowledge_base_ids=allow,
    )


@pytest.mark.parametrize(
    ("base", "principal", "visible"),
    [
        (_base(Scope.TENANT), _principal(), True),
        (_base(Scope.TENANT, tenant="t2"), _principal(), False),
        (_base(Scope.TENANT, status=BaseStatus.INACTIVE), _principal(), False),
        (_base(Scope.TEAM, team="red"), _principal(teams=frozenset({"red"})), True),
        (_base(Scope.TEAM, team="red"), _principal(teams=frozenset({"blue"})), False),
        (_base(Scope.PRIVATE, owner="alice"), _principal(), True),
        (_base(Scope.PRIVATE, owner="bob"), _principal(), False),
        (_base(Scope.TEAM, team="red", owner="alice"), _principal(), True),
        (_base(Scope.TENANT), _principal(allow=frozenset({"kb_other"})), False),
        (_base(Scope.TENANT), _principal(allow=frozenset({"kb_1"})), True),
    ],
)
def test_can_see_rule_matches_design_table(base: KnowledgeBase, principal: Principal, visible: bool) -> None:
    assert can_see(principal, base) is visible
    # The index-side filter applies the same rule to chunk fields (status aside: inactive bases are
    # removed from the index, so the filter has no status to look at).
    if base.status is BaseStatus.ACTIVE:
        admitted = VisibilityFilter.for_principal(principal).admits(
            tenant_id=base.tenant_id,
            knowledge_base_id=base.knowledge_base_id,
            scope=base.scope.value,
            team_id=base.team_id,
            owner_id=base.owner_id,
        )
        assert admitted is visible


def test_visibility_filter_narrowed_to_one_base_admits_only_that_base() -> None:
    narrowed = VisibilityFilter.for_principal(_principal(), narrow_to="kb_1")
    assert narrowed.admits(
        tenant_id="t1", knowledge_base_id="kb_1", scope="tenant", team_id=None, owner_id="x"
    )
    assert not narrowed.admits(
        tenant_id="t1", knowledge_base_id="kb_2", scope="tenant", team_id=None, owner_id="x"
    )
