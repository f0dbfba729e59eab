"""TokenService: resolving a presented bearer token to its record, and issuing tokens (only their
SHA-256 is stored)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from knowledge.adapters.in_process.store import InProcessKnowledgeStore
from knowledge.domain.access.bearer_tokens import TokenRejection, hash_token
from knowledge.services.tokens import TokenService
from tests.support.store import TickingClock
from tests.unit.services.conftest import TENANT


def _issue(tokens: TokenService, expires_in: timedelta | None = None) -> str:
    token, _ = tokens.issue(
        tenant_id=TENANT, subject_id="agent-7", scopes=["knowledge:read"], expires_in=expires_in
    )
    return token


@pytest.mark.parametrize("form", ["Bearer {}", "bearer {}", "  Bearer   {}  ", "{}"])
def test_resolve_accepts_the_token_with_or_without_bearer_prefix(tokens: TokenService, form: str) -> None:
    token = _issue(tokens)

    record = tokens.resolve(form.format(token))

    assert record is not None
    assert (record.tenant_id, record.subject_id, record.scopes) == (
        TENANT,
        "agent-7",
        frozenset({"knowledge:read"}),
    )


@pytest.mark.parametrize("authorization", [None, "", "Bearer ", "Bearer kn_unknown"])
def test_resolve_absent_empty_or_unknown_token_is_none(
    tokens: TokenService, authorization: str | None
) -> None:
    assert tokens.resolve(authorization) is None


def test_resolve_expired_token_is_none(tokens: TokenService, clock: TickingClock) -> None:
    token = _issue(tokens, expires_in=timedelta(seconds=2))
    assert tokens.resolve(token) is not None

    for _ in range(3):
        clock()

    assert tokens.resolve(token) is None


def test_resolve_revoked_token_is_none(tokens: TokenService, store: InProcessKnowledgeStore) -> None:
    token = _issue(tokens)

    store.revoke_token(hash_token(token))

    assert tokens.resolve(f"Bearer {token}") is None


def test_issue_stores_the_hash_never_the_token(tokens: TokenService, store: InProcessKnowledgeStore) -> None:
    token, record = tokens.issue(tenant_id=TENANT, subject_id="agent-7", scopes=["knowledge:read"])

    assert record.token_hash == hash_token(token)
    assert store.get_token(hash_token(token)) == record
    assert token not in record.model_dump_json()


def test_issue_expires_at_the_earlier_of_expires_in_and_not_after(
    tokens: TokenService, clock: TickingClock
) -> None:
    soon = clock() + timedelta(minutes=5)

    _, capped = tokens.issue(
        tenant_id=TENANT, subject_id="a", scopes=[], expires_in=timedelta(hours=1), not_after=soon
    )
    _, shorter = tokens.issue(
        tenant_id=TENANT, subject_id="a", scopes=[], expires_in=timedelta(seconds=30), not_after=soon
    )
    _, forever = tokens.issue(tenant_id=TENANT, subject_id="a", scopes=[])

    assert capped.expires_at == soon
    assert shorter.expires_at is not None
    assert shorter.expires_at == shorter.created_at + timedelta(seconds=30)
    assert forever.expires_at is None


@pytest.mark.parametrize("authorization", [None, "", "  ", "Bearer", "Bearer   "])
def test_authenticate_without_a_token_is_missing(tokens: TokenService, authorization: str | None) -> None:
    assert tokens.authenticate(authorization) is TokenRejection.MISSING


def test_authenticate_token_not_in_the_store_is_unknown(tokens: TokenService) -> None:
    assert tokens.authenticate("Bearer kn_made-up") is TokenRejection.UNKNOWN


def test_authenticate_expired_token_is_expired(tokens: TokenService, clock: TickingClock) -> None:
    token = _issue(tokens, expires_in=timedelta(seconds=2))
    for _ in range(3):
        clock()

    assert tokens.authenticate(f"Bearer {token}") is TokenRejection.EXPIRED


def test_authenticate_revoked_token_is_revoked_even_when_also_expired(
    tokens: TokenService, store: InProcessKnowledgeStore, clock: TickingClock
) -> None:
    token = _issue(tokens, expires_in=timedelta(seconds=2))
    store.revoke_token(hash_token(token))
    for _ in range(3):
        clock()

    assert tokens.authenticate(token) is TokenRejection.REVOKED
