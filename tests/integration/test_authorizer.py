"""The HTTP API Lambda authorizer (``functions/authorizer``): always authorizes, and hands the function
the resolved token so the function answers 401 in the service's envelope."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import pytest

from knowledge.bootstrap import get_container, use_container
from knowledge.domain.access.bearer_tokens import hash_token
from knowledge.errors import DependencyUnavailableError
from knowledge.settings import get_settings
from tests.conftest import TABLE_NAME
from tests.support.rest import SearchWorld, authorize, new_world


@pytest.fixture
def world(table: Any) -> Iterator[SearchWorld]:
    built = new_world()
    yield built
    use_container(None)


def test_authorizer_valid_token_passes_principal_context(world: SearchWorld) -> None:
    bearer = world.token("acme", "agent-7", team_ids=["platform", "ops"], knowledge_base_ids=["kb_1"])

    answer = authorize(bearer)

    assert answer == {
        "isAuthorized": True,
        "context": {
            "authenticated": "true",
            "tenant_id": "acme",
            "subject_id": "agent-7",
            "scopes": "knowledge:read",
            "team_ids": json.dumps(["ops", "platform"]),
            "knowledge_base_ids": json.dumps(["kb_1"]),
            "expires_at": "",
            "token_id": hash_token(bearer.removeprefix("Bearer ")),
        },
    }


def test_authorizer_expiring_token_passes_its_expiry(world: SearchWorld) -> None:
    bearer = world.token(expires_in=timedelta(hours=1))
    record = world.store.get_token(hash_token(bearer.removeprefix("Bearer ")))
    assert record is not None
    assert record.expires_at is not None

    context = authorize(bearer)["context"]

    assert datetime.fromisoformat(context["expires_at"]) == record.expires_at


@pytest.mark.parametrize(
    ("header", "reason"),
    [(None, "missing"), ("", "missing"), ("Bearer unknown-token", "unknown"), ("Token abc", "unknown")],
)
def test_authorizer_missing_or_unknown_token_authorizes_as_unauthenticated_with_the_reason(
    world: SearchWorld, header: str | None, reason: str
) -> None:
    assert authorize(header) == {
        "isAuthorized": True,
        "context": {"authenticated": "false", "reason": reason},
    }


def test_authorizer_expired_token_authorizes_as_unauthenticated(world: SearchWorld) -> None:
    bearer = world.token(expires_in=timedelta(seconds=-5))

    assert authorize(bearer)["context"] == {"authenticated": "false", "reason": "expired"}


def test_authorizer_revoked_token_authorizes_as_unauthenticated(world: SearchWorld) -> None:
    bearer = world.token()
    world.store.revoke_token(hash_token(bearer.removeprefix("Bearer ")))

    assert authorize(bearer)["context"] == {"authenticated": "false", "reason": "revoked"}


def test_authorizer_bare_token_without_scheme_is_accepted(world: SearchWorld) -> None:
    bearer = world.token()

    assert authorize(bearer.removeprefix("Bearer "))["context"]["authenticated"] == "true"


def test_authorizer_store_outage_raises_so_gateway_answers_500_uncached(world: SearchWorld) -> None:
    def throttle(**_: Any) -> None:
        from botocore.exceptions import ClientError

        raise ClientError({"Error": {"Code": "ThrottlingException", "Message": "slow down"}}, "GetItem")

    world.dynamodb.meta.events.register("before-call.dynamodb.GetItem", throttle)

    with pytest.raises(DependencyUnavailableError):
        authorize("Bearer kn_anything")


def test_container_tokens_without_installed_container_read_configured_table(
    table: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_container(None)
    monkeypatch.setenv("TABLE_NAME", TABLE_NAME)
    get_settings.cache_clear()
    token, record = get_container().tokens.issue(
        tenant_id="acme", subject_id="agent-1", scopes=["knowledge:read"]
    )

    try:
        resolved = get_container().tokens.resolve(f"Bearer {token}")
    finally:
        use_container(None)

    assert resolved == record
