"""TokenAdministration: a token never reaches further than the token that issued it (scopes,
tenant, base allow-list, expiry), and a principal revokes exactly the tokens it could have issued."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from knowledge.adapters.in_process.store import InProcessKnowledgeStore
from knowledge.contract.writes import CreateTokenRequest, TokenResponse
from knowledge.domain.models import Principal
from knowledge.errors import InsufficientScopeError, ResourceUnavailableError
from knowledge.services.token_admin import TokenAdministration
from knowledge.services.tokens import TokenService
from tests.support.store import TickingClock
from tests.unit.services.conftest import ADMIN, PLATFORM, READ, TENANT, WRITE, caller

ADMIN_CALLER = caller("curator-1", ADMIN, READ, WRITE)
OPERATOR = caller("operator", PLATFORM, tenant_id="platform")
BASE = "kb_01M8MSRAQ70QQ1SJHWP0AMCDPZ"
OTHER_BASE = "kb_01M8MSRAQ70QQ1SJHWP0AMCDQ0"


def _request(**fields: Any) -> CreateTokenRequest:
    return CreateTokenRequest(**{"subject_id": "agent-1", "scopes": [READ], **fields})


def _issue(token_admin: TokenAdministration, principal: Principal, **fields: Any) -> TokenResponse:
    return token_admin.issue(principal, _request(**fields))


def test_issue_answers_a_token_whose_id_is_its_stored_hash(
    token_admin: TokenAdministration, tokens: TokenService, store: InProcessKnowledgeStore
) -> None:
    issued = _issue(token_admin, ADMIN_CALLER, team_ids=["platform"], expires_in=3600)

    record = store.get_token(issued.token_id)
    assert record is not None
    assert tokens.resolve(f"Bearer {issued.token}") == record
    assert (record.tenant_id, record.subject_id, record.team_ids, record.scopes) == (
        TENANT,
        "agent-1",
        frozenset({"platform"}),
        frozenset({READ.value}),
    )


def test_issue_with_a_scope_the_caller_lacks_raises_insufficient_scope(
    token_admin: TokenAdministration,
) -> None:
    with pytest.raises(InsufficientScopeError) as raised:
        _issue(token_admin, ADMIN_CALLER, scopes=[READ, PLATFORM])

    assert raised.value.details == {"missing_scopes": [PLATFORM.value]}


def test_issue_without_admin_scope_raises_insufficient_scope(token_admin: TokenAdministration) -> None:
    with pytest.raises(InsufficientScopeError) as raised:
        _issue(token_admin, caller("writer-1", READ, WRITE))

    assert raised.value.details == {"required_scope": ADMIN.value}


def test_issue_for_another_tenant_needs_platform_admin(
    token_admin: TokenAdministration, store: InProcessKnowledgeStore
) -> None:
    with pytest.raises(InsufficientScopeError) as refused:
        _issue(token_admin, ADMIN_CALLER, tenant_id="globex", scopes=[ADMIN, READ])
    issued = _issue(token_admin, OPERATOR, tenant_id="globex", scopes=[ADMIN, READ])

    assert refused.value.details == {"required_scope": PLATFORM.value}
    record = store.get_token(issued.token_id)
    assert record is not None
    assert record.tenant_id == "globex"


def test_issue_for_another_tenant_by_an_allow_listed_operator_raises_insufficient_scope(
    token_admin: TokenAdministration,
) -> None:
    narrow_operator = caller("operator", PLATFORM, knowledge_base_ids=[BASE])

    with pytest.raises(InsufficientScopeError) as raised:
        _issue(token_admin, narrow_operator, tenant_id="elsewhere", scopes=[PLATFORM])

    assert raised.value.details == {"tenant_id": "elsewhere"}
    assert "own tenant" in raised.value.message


def test_issue_by_an_allow_listed_caller_inherits_its_list_and_cannot_widen_it(
    token_admin: TokenAdministration, store: InProcessKnowledgeStore
) -> None:
    narrow = caller("curator-5", ADMIN, READ, knowledge_base_ids=[BASE])

    with pytest.raises(InsufficientScopeError) as widened:
        _issue(token_admin, narrow, subject_id="curator-5", knowledge_base_ids=[OTHER_BASE])
    inherited = _issue(token_admin, narrow, subject_id="curator-5")
    narrowed = _issue(token_admin, narrow, subject_id="curator-5", knowledge_base_ids=[BASE])

    assert widened.value.details == {"knowledge_base_ids": [OTHER_BASE]}
    for issued in (inherited, narrowed):
        record = store.get_token(issued.token_id)
        assert record is not None
        assert record.knowledge_base_ids == frozenset({BASE})


@pytest.mark.parametrize("expires_in", [None, 7_200, 315_360_000])
def test_issue_never_outlives_the_issuers_token(
    token_admin: TokenAdministration, clock: TickingClock, expires_in: int | None
) -> None:
    issuer_expiry = clock() + timedelta(hours=1)
    issuer = caller("curator-9", ADMIN, READ, expires_at=issuer_expiry)

    issued = _issue(token_admin, issuer, expires_in=expires_in)

    assert issued.expires_at == issuer_expiry


def test_issue_shorter_than_the_issuers_token_keeps_its_own_expiry(
    token_admin: TokenAdministration, store: InProcessKnowledgeStore, clock: TickingClock
) -> None:
    issuer = caller("curator-9", ADMIN, READ, expires_at=clock() + timedelta(hours=1))

    issued = _issue(token_admin, issuer, expires_in=60)

    record = store.get_token(issued.token_id)
    assert record is not None
    assert issued.expires_at == record.created_at + timedelta(seconds=60)


def test_revoke_marks_the_token_revoked_and_again_is_a_no_op(
    token_admin: TokenAdministration, tokens: TokenService
) -> None:
    issued = _issue(token_admin, ADMIN_CALLER)

    token_admin.revoke(ADMIN_CALLER, issued.token_id)
    token_admin.revoke(ADMIN_CALLER, issued.token_id)

    assert tokens.resolve(issued.token) is None


def test_revoke_by_platform_admin_of_another_tenant_is_allowed(
    token_admin: TokenAdministration, store: InProcessKnowledgeStore
) -> None:
    issued = _issue(token_admin, ADMIN_CALLER)

    token_admin.revoke(OPERATOR, issued.token_id)

    record = store.get_token(issued.token_id)
    assert record is not None
    assert record.revoked is True


@pytest.mark.parametrize("token_id", ["0" * 64, "not-a-token-id", "A" * 64, "kn_" + "a" * 61])
def test_revoke_unknown_or_malformed_token_raises_resource_unavailable(
    token_admin: TokenAdministration, token_id: str
) -> None:
    with pytest.raises(ResourceUnavailableError):
        token_admin.revoke(ADMIN_CALLER, token_id)


def test_revoke_token_of_another_tenant_raises_resource_unavailable_and_keeps_it(
    token_admin: TokenAdministration, store: InProcessKnowledgeStore
) -> None:
    issued = _issue(token_admin, ADMIN_CALLER)

    with pytest.raises(ResourceUnavailableError):
        token_admin.revoke(caller("curator-1", ADMIN, READ, tenant_id="globex"), issued.token_id)

    record = store.get_token(issued.token_id)
    assert record is not None
    assert record.revoked is False


def test_revoke_token_beyond_the_callers_reach_raises_resource_unavailable(
    token_admin: TokenAdministration,
) -> None:
    wider = _issue(token_admin, ADMIN_CALLER)
    stronger = _issue(token_admin, caller("operator", PLATFORM), scopes=[PLATFORM])
    narrow = caller("curator-5", ADMIN, READ, team_ids=["red"], knowledge_base_ids=[BASE])
    inside = _issue(token_admin, narrow, subject_id="curator-5", team_ids=["red"])
    same_bases_other_subject = _issue(token_admin, ADMIN_CALLER, knowledge_base_ids=[BASE])
    same_bases_other_team = _issue(
        token_admin, ADMIN_CALLER, subject_id="curator-5", team_ids=["blue"], knowledge_base_ids=[BASE]
    )

    for beyond in (wider, same_bases_other_subject, same_bases_other_team):
        with pytest.raises(ResourceUnavailableError):
            token_admin.revoke(narrow, beyond.token_id)
    with pytest.raises(ResourceUnavailableError):
        token_admin.revoke(ADMIN_CALLER, stronger.token_id)
    token_admin.revoke(narrow, inside.token_id)


def test_revoke_without_admin_scope_raises_insufficient_scope(token_admin: TokenAdministration) -> None:
    issued = _issue(token_admin, ADMIN_CALLER)

    with pytest.raises(InsufficientScopeError) as raised:
        token_admin.revoke(caller("writer-1", READ, WRITE), issued.token_id)

    assert raised.value.details == {"required_scope": ADMIN.value}


def test_issue_by_an_allow_listed_caller_for_another_subject_raises_insufficient_scope_naming_it(
    token_admin: TokenAdministration,
) -> None:
    narrow = caller("curator-5", ADMIN, READ, team_ids=["red"], knowledge_base_ids=[BASE])

    with pytest.raises(InsufficientScopeError) as raised:
        _issue(token_admin, narrow, subject_id="dave", team_ids=["red"])

    assert raised.value.details == {"subject_id": "dave"}
    assert "own subject_id" in raised.value.message


def test_issue_by_an_allow_listed_caller_for_a_team_it_is_not_in_raises_insufficient_scope_naming_it(
    token_admin: TokenAdministration,
) -> None:
    narrow = caller("curator-5", ADMIN, READ, team_ids=["red"], knowledge_base_ids=[BASE])

    with pytest.raises(InsufficientScopeError) as raised:
        _issue(token_admin, narrow, subject_id="curator-5", team_ids=["red", "blue", "amber"])

    assert raised.value.details == {"team_ids": ["amber", "blue"]}


def test_issue_by_an_allow_listed_caller_for_itself_and_some_of_its_teams_holds_them(
    token_admin: TokenAdministration, store: InProcessKnowledgeStore
) -> None:
    narrow = caller("curator-5", ADMIN, READ, team_ids=["red", "blue"], knowledge_base_ids=[BASE])

    issued = _issue(token_admin, narrow, subject_id="curator-5", team_ids=["blue"])

    record = store.get_token(issued.token_id)
    assert record is not None
    assert (record.subject_id, record.team_ids, record.knowledge_base_ids) == (
        "curator-5",
        frozenset({"blue"}),
        frozenset({BASE}),
    )


def test_issue_by_a_tenant_administrator_for_any_subject_and_teams_holds_them(
    token_admin: TokenAdministration, store: InProcessKnowledgeStore
) -> None:
    issued = _issue(token_admin, ADMIN_CALLER, subject_id="dave", team_ids=["blue", "amber"])

    record = store.get_token(issued.token_id)
    assert record is not None
    assert (record.subject_id, record.team_ids) == ("dave", frozenset({"blue", "amber"}))
