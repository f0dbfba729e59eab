"""Issuing and revoking bearer tokens for a principal (``/v1/tokens``, DESIGN §6).

A token never reaches further than the token that issued it:

- scopes: at most the issuer's (``platform:admin`` implies every scope);
- tenant: the issuer's own; another tenant needs ``platform:admin`` and an issuer without a base
  allow-list (an allow-listed issuer could otherwise mint an unrestricted token elsewhere, which
  mints an unrestricted one back in the first tenant);
- base allow-list: an issuer holding one passes it on when none is asked for and refuses any base
  outside it;
- expiry: never later than the issuer's own token (``Principal.expires_at``); a longer or omitted
  ``expires_in`` is capped to it.

Revocation follows the same rule: a principal revokes exactly the tokens it could have issued
(its tenant, or any with ``platform:admin``; scopes it holds; an allow-list inside its own when it
has one). Any other token, an unknown one and a malformed ``token_id`` answer the same
``ResourceUnavailableError``, so token ids never leak across tenants. Revoking twice is a no-op.

Errors: ``InsufficientScopeError`` (403; ``details.required_scope``, ``details.missing_scopes``,
``details.knowledge_base_ids`` or ``details.tenant_id`` name the reason), ``ResourceUnavailableError``
(404), ``DependencyUnavailableError`` (503).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from knowledge.domain.bearer_tokens import is_token_id
from knowledge.domain.models import Permission, Principal, TokenRecord
from knowledge.domain.write_contract import CreateTokenRequest, TokenResponse
from knowledge.errors import InsufficientScopeError, ResourceUnavailableError
from knowledge.observability import logger
from knowledge.ports import TokenStore
from knowledge.services.access import require_scope
from knowledge.services.tokens import TokenService


@dataclass(frozen=True)
class TokenGrant:
    """What an authorized ``POST /v1/tokens`` may issue: the tenant and the base allow-list."""

    tenant_id: str
    knowledge_base_ids: list[str] | None


class TokenAdministration:
    """``POST /v1/tokens`` and ``DELETE /v1/tokens/{token_id}`` for a principal. Thread-safe if its
    ports are."""

    def __init__(self, store: TokenStore, tokens: TokenService) -> None:
        self._store = store
        self._tokens = tokens

    def authorize_issue(self, principal: Principal, request: CreateTokenRequest) -> TokenGrant:
        """Check that ``principal`` may issue the token ``request`` asks for (without issuing it)."""
        require_scope(principal, Permission.ADMIN)
        tenant_id = request.tenant_id or principal.tenant_id
        if tenant_id != principal.tenant_id:
            require_scope(principal, Permission.PLATFORM_ADMIN)
            if principal.knowledge_base_ids is not None:
                raise InsufficientScopeError(
                    "A token with a knowledge base allow-list can only issue tokens for its own tenant.",
                    {"tenant_id": tenant_id},
                )
        missing = sorted(scope.value for scope in set(request.scopes) if not principal.has_scope(scope))
        if missing:
            raise InsufficientScopeError(
                "A token cannot hold scopes its issuer lacks.", {"missing_scopes": missing}
            )
        return TokenGrant(tenant_id=tenant_id, knowledge_base_ids=_allow_list(principal, request))

    def issue(self, principal: Principal, request: CreateTokenRequest) -> TokenResponse:
        """A new bearer token, returned once (only its hash, the ``token_id``, is stored)."""
        grant = self.authorize_issue(principal, request)
        token, record = self._tokens.issue(
            tenant_id=grant.tenant_id,
            subject_id=request.subject_id,
            scopes=[scope.value for scope in request.scopes],
            team_ids=request.team_ids,
            knowledge_base_ids=grant.knowledge_base_ids,
            expires_in=timedelta(seconds=request.expires_in) if request.expires_in is not None else None,
            not_after=principal.expires_at,
        )
        logger.info(
            "token issued",
            extra={
                "tenant_id": record.tenant_id,
                "subject_id": record.subject_id,
                "scopes": sorted(record.scopes),
                "issuer_subject_id": principal.subject_id,
                "expires_at": record.expires_at.isoformat() if record.expires_at else None,
            },
        )
        return TokenResponse(token=token, token_id=record.token_hash, expires_at=record.expires_at)

    def authorize_revoke(self, principal: Principal) -> None:
        """``InsufficientScopeError`` unless ``principal`` may revoke tokens at all (``knowledge:admin``);
        which tokens it may revoke ``revoke`` decides."""
        require_scope(principal, Permission.ADMIN)

    def revoke(self, principal: Principal, token_id: str) -> None:
        """Revoke the token named ``token_id`` (idempotent). The authorizer caches its answers, so
        a revoked token may still be accepted for up to its cache time (300 s on AWS)."""
        self.authorize_revoke(principal)
        record = self._store.get_token(token_id) if is_token_id(token_id) else None
        if record is None or not _may_revoke(principal, record):
            raise ResourceUnavailableError()
        if not record.revoked:
            self._store.revoke_token(token_id)
        logger.info(
            "token revoked",
            extra={
                "tenant_id": record.tenant_id,
                "subject_id": record.subject_id,
                "issuer_subject_id": principal.subject_id,
                "already_revoked": record.revoked,
            },
        )


def _allow_list(principal: Principal, request: CreateTokenRequest) -> list[str] | None:
    """The new token's base allow-list: the issuer's own when none is asked for, and never wider."""
    own = principal.knowledge_base_ids
    if own is None:
        return request.knowledge_base_ids
    if request.knowledge_base_ids is None:
        return sorted(own)
    outside = sorted(set(request.knowledge_base_ids) - own)
    if outside:
        raise InsufficientScopeError(
            "A token cannot admit knowledge bases outside its issuer's allow-list.",
            {"knowledge_base_ids": outside},
        )
    return request.knowledge_base_ids


def _may_revoke(principal: Principal, record: TokenRecord) -> bool:
    """True when ``principal`` could have issued ``record`` (see the module docs)."""
    own = principal.knowledge_base_ids
    if record.tenant_id != principal.tenant_id and (
        own is not None or not principal.has_scope(Permission.PLATFORM_ADMIN)
    ):
        return False
    held = principal.scopes
    if Permission.PLATFORM_ADMIN.value not in held and not record.scopes <= held:
        return False
    return own is None or (record.knowledge_base_ids is not None and record.knowledge_base_ids <= own)
