"""The principal as the authorizer hands it over in an API Gateway HTTP API v2 event.

The authorizer (``functions/authorizer``) answers a simple response whose ``context`` holds
``authenticated`` ("true"/"false"; when "false", ``reason`` says why: ``missing``, ``unknown``,
``expired`` or ``revoked``, see ``TokenRejection``), ``tenant_id``, ``subject_id``, ``scopes``
(space-separated), ``team_ids`` and ``knowledge_base_ids`` (JSON arrays as strings;
``knowledge_base_ids`` empty when the token has no allow-list), ``expires_at`` (the token's
expiry, ISO-8601 UTC; empty when it never expires) and ``token_id`` (the token's SHA-256 hex, the
issuer of the tokens it mints). API Gateway exposes it at ``requestContext.authorizer.lambda``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Request
from aws_lambda_powertools.event_handler.depends import Depends

from knowledge.domain.access.bearer_tokens import TokenRejection
from knowledge.domain.models import Principal, TokenRecord
from knowledge.errors import AuthenticationRequiredError


def authorizer_context(record: TokenRecord | TokenRejection | None) -> dict[str, str]:
    """The authorizer's ``context`` for a resolved token, or for why there is none (``None``: no
    reason known, answered as ``unknown``)."""
    if not isinstance(record, TokenRecord):
        return {"authenticated": "false", "reason": (record or TokenRejection.UNKNOWN).value}
    return {
        "authenticated": "true",
        "tenant_id": record.tenant_id,
        "subject_id": record.subject_id,
        "scopes": " ".join(sorted(record.scopes)),
        "team_ids": json.dumps(sorted(record.team_ids)),
        "knowledge_base_ids": ""
        if record.knowledge_base_ids is None
        else json.dumps(sorted(record.knowledge_base_ids)),
        "expires_at": "" if record.expires_at is None else record.expires_at.isoformat(),
        "token_id": record.token_hash,
    }


def principal_from_event(event: Mapping[str, Any]) -> Principal:
    """The caller of an HTTP API v2 event.

    Raises ``AuthenticationRequiredError`` with ``details.reason`` (``TokenRejection``) when there
    is none (the authorizer's ``reason``; ``missing`` without any authorizer context), when its
    ``expires_at`` is not an ISO-8601 datetime (``unknown``: an expiry is never guessed), or when
    that time has passed (``expired``): API Gateway caches the authorizer's answer for up to 300 s,
    and an expired token must not ride that cache.
    """
    context = (event.get("requestContext") or {}).get("authorizer") or {}
    claims = context.get("lambda") or {}
    if str(claims.get("authenticated", "false")).lower() != "true" or not claims.get("tenant_id"):
        raise unauthenticated(_rejection(claims.get("reason")) if claims else TokenRejection.MISSING)
    allow = claims.get("knowledge_base_ids") or ""
    expires_at = _expiry(claims.get("expires_at"))
    if expires_at is not None and expires_at <= datetime.now(UTC):
        raise unauthenticated(TokenRejection.EXPIRED)
    return Principal(
        tenant_id=str(claims["tenant_id"]),
        subject_id=str(claims.get("subject_id", "")),
        scopes=frozenset(str(claims.get("scopes", "")).split()),
        team_ids=frozenset(_string_list(claims.get("team_ids"))),
        knowledge_base_ids=frozenset(_string_list(allow)) if allow else None,
        expires_at=expires_at,
        token_id=str(claims["token_id"]) if claims.get("token_id") else None,
    )


def current_principal(request: Request) -> Principal:
    """The caller of the request a Powertools resolver is serving (see ``principal_from_event``);
    routes take it as a ``CallerPrincipal`` parameter."""
    return principal_from_event(request.resolved_event.raw_event)


CallerPrincipal = Annotated[Principal, Depends(current_principal)]
"""A route parameter holding the authenticated caller; ``AuthenticationRequiredError`` (401) without one."""


def unauthenticated(reason: TokenRejection) -> AuthenticationRequiredError:
    """The 401 for ``reason``: its fixed message and ``details.reason``."""
    return AuthenticationRequiredError(reason.message, {"reason": reason.value})


def _rejection(value: Any) -> TokenRejection:
    try:
        return TokenRejection(str(value))
    except ValueError:
        return TokenRejection.UNKNOWN


def _expiry(value: Any) -> datetime | None:
    if not value:
        return None
    try:
        parsed = datetime.fromisoformat(str(value))
    except ValueError:
        raise unauthenticated(TokenRejection.UNKNOWN) from None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def _string_list(value: Any) -> list[str]:
    if isinstance(value, list):
        return [str(entry) for entry in value]
    if not value:
        return []
    decoded = json.loads(str(value))
    return [str(entry) for entry in decoded] if isinstance(decoded, list) else []
