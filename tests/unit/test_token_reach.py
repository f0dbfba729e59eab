"""``token_reach.overreach``: each part of a grant is within its issuer's, scopes by a plain
subset, so a scope this release does not know follows the same rule."""

from __future__ import annotations

from knowledge.domain.access.reach import TokenGrant, is_tenant_administrator, overreach
from knowledge.domain.models import Principal

ADMIN, PLATFORM = "knowledge:admin", "platform:admin"
BASE = "kb_01M8MSRAQ70QQ1SJHWP0AMCDPZ"


def _issuer(
    *scopes: str, bases: frozenset[str] | None = None, teams: frozenset[str] = frozenset()
) -> Principal:
    return Principal(
        tenant_id="acme", subject_id="ana", team_ids=teams, scopes=frozenset(scopes), knowledge_base_ids=bases
    )


def _grant(*scopes: str, **fields: object) -> TokenGrant:
    parts: dict[str, object] = {"tenant_id": "acme", "subject_id": "ana", "scopes": frozenset(scopes)}
    return TokenGrant.model_validate({**parts, **fields})


def test_overreach_of_a_scope_the_release_does_not_know_is_a_subset_check() -> None:
    holder = _issuer(ADMIN, "memory:share")

    assert overreach(holder, _grant("memory:share")) is None
    refused = overreach(_issuer(ADMIN), _grant("memory:share", "knowledge:read"))
    assert refused is not None
    assert refused.details == {"missing_scopes": ["knowledge:read", "memory:share"]}
    assert overreach(_issuer(PLATFORM), _grant("memory:share")) is None


def test_overreach_of_a_grant_without_allow_list_from_an_allow_listed_issuer_names_every_base() -> None:
    refused = overreach(_issuer(ADMIN, bases=frozenset({BASE})), _grant())

    assert refused is not None
    assert refused.details == {"knowledge_base_ids": None}


def test_is_tenant_administrator_needs_admin_no_allow_list_and_platform_elsewhere() -> None:
    assert is_tenant_administrator(_issuer(ADMIN), "acme")
    assert not is_tenant_administrator(_issuer(ADMIN), "globex")
    assert is_tenant_administrator(_issuer(PLATFORM), "globex")
    assert not is_tenant_administrator(_issuer(PLATFORM, bases=frozenset({BASE})), "acme")
    assert not is_tenant_administrator(_issuer("knowledge:read"), "acme")
