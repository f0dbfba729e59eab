"""Token lineage: a token minted by a token names its issuer and ancestors; revoking a token stops
every descendant from authenticating (also one minted during the revocation), siblings keep
working, and ``list_tokens`` shows exactly the tokens the caller may revoke."""

from __future__ import annotations

import json
from typing import Any

import pytest

from knowledge.adapters.in_process.store import InProcessKnowledgeStore
from knowledge.contract.writes import CreateTokenRequest, TokenResponse
from knowledge.domain.access.bearer_tokens import hash_token
from knowledge.domain.models import Principal, TokenRecord
from knowledge.errors import AuthenticationRequiredError, InsufficientScopeError, RequestValidationError
from knowledge.services.token_admin import TokenAdministration
from knowledge.services.tokens import MAX_LINEAGE_DEPTH, TokenService
from tests.support.store import TickingClock
from tests.unit.services.conftest import ADMIN, PLATFORM, READ, TENANT, WRITE, caller

BASE = "kb_01M8MSRAQ70QQ1SJHWP0AMCDPZ"
OTHER_BASE = "kb_01M8MSRAQ70QQ1SJHWP0AMCDQ0"


def _root(tokens: TokenService, *scopes: str, tenant_id: str = TENANT, **fields: Any) -> str:
    """A root token (as ``make run`` or an operator issues one)."""
    token, _ = tokens.issue(
        tenant_id=tenant_id, subject_id="root", scopes=scopes or (ADMIN.value, READ.value), **fields
    )
    return token


def _as(tokens: TokenService, token: str) -> Principal:
    """The principal the authorizer resolves ``token`` to."""
    record = tokens.resolve(token)
    assert record is not None, "the token does not authenticate"
    return record.principal()


def _mint(
    token_admin: TokenAdministration, tokens: TokenService, issuer: str, **fields: Any
) -> TokenResponse:
    request = CreateTokenRequest(**{"subject_id": "agent", "scopes": [ADMIN, READ], **fields})
    return token_admin.issue(_as(tokens, issuer), request)


def test_minted_token_names_its_issuer_and_its_lineage(
    token_admin: TokenAdministration, tokens: TokenService, store: InProcessKnowledgeStore
) -> None:
    root = _root(tokens)
    child = _mint(token_admin, tokens, root)
    grandchild = _mint(token_admin, tokens, child.token)

    root_id = _as(tokens, root).token_id
    assert child.issuer_token_id == root_id
    assert grandchild.issuer_token_id == child.token_id
    record = store.get_token(grandchild.token_id)
    assert record is not None
    assert record.ancestor_token_ids == (root_id, child.token_id)


def test_revoking_a_token_stops_its_grandchild_and_spares_the_sibling_branch(
    token_admin: TokenAdministration, tokens: TokenService
) -> None:
    root = _root(tokens)
    branch, sibling = _mint(token_admin, tokens, root), _mint(token_admin, tokens, root)
    leaf, sibling_leaf = _mint(token_admin, tokens, branch.token), _mint(token_admin, tokens, sibling.token)

    token_admin.revoke(_as(tokens, root), branch.token_id)

    assert tokens.resolve(branch.token) is None
    assert tokens.resolve(leaf.token) is None
    assert tokens.resolve(sibling.token) is not None
    assert tokens.resolve(sibling_leaf.token) is not None
    assert tokens.resolve(root) is not None


def test_revoking_twice_is_a_no_op_and_the_descendants_stay_refused(
    token_admin: TokenAdministration, tokens: TokenService
) -> None:
    root = _root(tokens)
    admin = _as(tokens, root)
    child = _mint(token_admin, tokens, root)
    grandchild = _mint(token_admin, tokens, child.token)

    token_admin.revoke(admin, child.token_id)
    token_admin.revoke(admin, child.token_id)

    assert (tokens.resolve(child.token), tokens.resolve(grandchild.token)) == (None, None)


def test_a_revoked_token_cannot_mint_even_while_the_authorizer_cache_still_accepts_it(
    token_admin: TokenAdministration, tokens: TokenService, store: InProcessKnowledgeStore
) -> None:
    root = _root(tokens)
    child = _mint(token_admin, tokens, root)
    cached = _as(tokens, child.token)
    token_admin.revoke(_as(tokens, root), child.token_id)

    with pytest.raises(AuthenticationRequiredError) as refused:
        token_admin.issue(cached, CreateTokenRequest(subject_id="late", scopes=[READ]))

    assert (refused.value.message, refused.value.details) == (
        "The bearer token has been revoked.",
        {"reason": "revoked"},
    )
    assert [record.subject_id for record in store.list_tokens(TENANT, limit=10, next_token=None).entries] == [
        "root",
        "agent",
    ]


class _RevokingOnWrite(InProcessKnowledgeStore):
    """A store where a revocation lands between the issuer's check and the new token's write."""

    def __init__(self, clock: TickingClock) -> None:
        super().__init__(clock=clock)
        self.revoke_before_next_put: str | None = None

    def put_token(self, record: TokenRecord) -> None:
        if self.revoke_before_next_put is not None:
            self.revoke_token(self.revoke_before_next_put)
            self.revoke_before_next_put = None
        super().put_token(record)


def test_a_child_minted_during_the_revocation_of_its_issuer_never_authenticates(
    clock: TickingClock,
) -> None:
    store = _RevokingOnWrite(clock)
    tokens = TokenService(store, clock=clock)
    token_admin = TokenAdministration(store, tokens)
    root = _root(tokens)
    child = _mint(token_admin, tokens, root)
    store.revoke_before_next_put = child.token_id

    raced = _mint(token_admin, tokens, child.token)

    assert store.get_token(raced.token_id) is not None
    assert tokens.resolve(raced.token) is None


def test_a_token_at_the_lineage_depth_limit_cannot_mint(
    token_admin: TokenAdministration, tokens: TokenService
) -> None:
    token = _root(tokens)
    for _ in range(MAX_LINEAGE_DEPTH):
        token = _mint(token_admin, tokens, token).token

    with pytest.raises(InsufficientScopeError) as raised:
        _mint(token_admin, tokens, token)

    assert raised.value.details == {"max_lineage_depth": MAX_LINEAGE_DEPTH}
    assert tokens.resolve(token) is not None


# -- listing --------------------------------------------------------------------------------------


def _listed(token_admin: TokenAdministration, principal: Principal, **options: Any) -> list[str]:
    page = token_admin.list_tokens(
        principal, tenant_id=options.get("tenant_id"), limit=options.get("limit", 50), next_token=None
    )
    return [entry.subject_id for entry in page.tokens]


def test_list_tokens_pages_in_creation_order_without_secrets(
    token_admin: TokenAdministration, tokens: TokenService
) -> None:
    root = _root(tokens)
    minted = [_mint(token_admin, tokens, root, subject_id=f"agent-{n}") for n in range(5)]
    admin = _as(tokens, root)

    seen, next_token, pages = [], None, 0
    while True:
        page = token_admin.list_tokens(admin, tenant_id=None, limit=2, next_token=next_token)
        seen.extend(page.tokens)
        pages += 1
        next_token = page.next_token
        if next_token is None:
            break

    assert pages == 3
    assert [entry.subject_id for entry in seen] == ["root"] + [f"agent-{n}" for n in range(5)]
    assert [entry.token_id for entry in seen[1:]] == [issued.token_id for issued in minted]
    dumped = json.dumps([entry.model_dump(mode="json") for entry in seen])
    assert all(issued.token not in dumped for issued in minted)
    assert root not in dumped
    assert "token" not in seen[0].model_dump()


def test_list_tokens_shows_the_revoked_ancestor_of_a_descendant(
    token_admin: TokenAdministration, tokens: TokenService
) -> None:
    root = _root(tokens)
    child = _mint(token_admin, tokens, root, subject_id="child")
    _mint(token_admin, tokens, child.token, subject_id="grandchild")
    admin = _as(tokens, root)

    token_admin.revoke(admin, child.token_id)

    entries = {
        entry.subject_id: entry
        for entry in token_admin.list_tokens(admin, tenant_id=None, limit=10, next_token=None).tokens
    }
    assert (entries["root"].revoked, entries["root"].revoked_ancestor_token_id) == (False, None)
    assert (entries["child"].revoked, entries["child"].revoked_ancestor_token_id) == (True, None)
    assert (entries["grandchild"].revoked, entries["grandchild"].revoked_ancestor_token_id) == (
        True,
        child.token_id,
    )
    assert entries["grandchild"].issuer_token_id == child.token_id


def test_list_tokens_never_shows_another_tenants_tokens(
    token_admin: TokenAdministration, tokens: TokenService
) -> None:
    mine = _root(tokens)
    _root(tokens, tenant_id="globex")

    assert _listed(token_admin, _as(tokens, mine)) == ["root"]
    with pytest.raises(InsufficientScopeError) as raised:
        _listed(token_admin, _as(tokens, mine), tenant_id="globex")
    assert raised.value.details == {"required_scope": PLATFORM.value}


def test_list_tokens_of_another_tenant_for_platform_admin(
    token_admin: TokenAdministration, tokens: TokenService
) -> None:
    _root(tokens, tenant_id="globex")
    operator = _as(tokens, _root(tokens, PLATFORM.value, tenant_id="platform"))

    assert _listed(token_admin, operator, tenant_id="globex") == ["root"]


def test_list_tokens_shows_a_narrow_admin_only_what_it_may_revoke(
    token_admin: TokenAdministration, tokens: TokenService
) -> None:
    root = _root(tokens, ADMIN.value, READ.value, WRITE.value)
    narrow = _mint(
        token_admin, tokens, root, subject_id="narrow", team_ids=["red"], knowledge_base_ids=[BASE]
    )
    _mint(token_admin, tokens, root, subject_id="other-base", knowledge_base_ids=[OTHER_BASE])
    _mint(token_admin, tokens, root, subject_id="writer", scopes=[READ, WRITE])
    _mint(token_admin, tokens, root, subject_id="same-base", knowledge_base_ids=[BASE])
    _mint(token_admin, tokens, root, subject_id="narrow", team_ids=["blue"], knowledge_base_ids=[BASE])
    _mint(token_admin, tokens, narrow.token, subject_id="narrow", scopes=[READ])
    principal = _as(tokens, narrow.token)

    listed = _listed(token_admin, principal)

    assert listed == ["narrow", "narrow"]
    for entry in reversed(
        token_admin.list_tokens(principal, tenant_id=None, limit=10, next_token=None).tokens
    ):
        token_admin.revoke(principal, entry.token_id)


def test_list_tokens_without_admin_scope_raises_insufficient_scope(
    token_admin: TokenAdministration,
) -> None:
    with pytest.raises(InsufficientScopeError) as raised:
        _listed(token_admin, caller("reader", READ))

    assert raised.value.details == {"required_scope": ADMIN.value}


def test_list_tokens_refuses_a_next_token_of_another_tenant(
    token_admin: TokenAdministration, tokens: TokenService
) -> None:
    root = _root(tokens)
    _mint(token_admin, tokens, root)
    first = token_admin.list_tokens(_as(tokens, root), tenant_id=None, limit=1, next_token=None)
    operator = _as(tokens, _root(tokens, PLATFORM.value, tenant_id="platform"))

    with pytest.raises(RequestValidationError):
        token_admin.list_tokens(operator, tenant_id="globex", limit=1, next_token=first.next_token)


def test_revoking_an_operators_token_reaches_the_tokens_it_minted_in_other_tenants(
    token_admin: TokenAdministration, tokens: TokenService
) -> None:
    operator = _root(tokens, PLATFORM.value, tenant_id="platform")
    globex_admin = _mint(token_admin, tokens, operator, tenant_id="globex")
    globex_agent = _mint(token_admin, tokens, globex_admin.token, scopes=[READ])

    token_admin.revoke(_as(tokens, operator), hash_token(operator))

    assert tokens.resolve(operator) is None
    assert tokens.resolve(globex_admin.token) is None
    assert tokens.resolve(globex_agent.token) is None
