"""Issuing and revoking bearer tokens for a principal (``/v1/tokens``, DESIGN §6).

A token never reaches further than the token that issued it: what it holds (tenant, subject,
teams, scopes, base allow-list) is within its issuer's as ``knowledge.domain.access.reach`` defines
it, checked here by ``overreach`` and nowhere else. In short, an issuer holding ``knowledge:admin``
and no base allow-list (a tenant administrator; ``platform:admin``: of any tenant) issues for any
subject and teams of its tenant; an allow-listed one only for its own subject and teams, inside its
allow-list (passed on when none is asked for). Scopes are a subset of the issuer's; expiry is never
later than the issuer's own token (``Principal.expires_at``): a longer or omitted ``expires_in`` is
capped to it.

Lineage: a token minted by a token records it as its issuer, after the issuer's own ancestors
(``TokenRecord.ancestor_token_ids``). The issuer's record is re-read (strongly consistent) before
minting, so a token revoked since the authorizer cached its answer cannot mint; and a token minted
at the same moment as a revocation still carries the revoked token in its lineage, so it never
authenticates (``TokenService.rejection``). A token with ``MAX_LINEAGE_DEPTH`` ancestors cannot mint.

Revocation follows the same rule: a principal revokes exactly the tokens it could have issued,
expiry aside (an expiring administrator may revoke a token that outlives it). Any other token, an
unknown one and a malformed ``token_id`` answer the same ``ResourceUnavailableError``, so token ids
never leak across tenants. Revoking twice is a no-op,
and revoking a token revokes every descendant with it. Listing shows exactly the tokens a
principal may revoke, one tenant at a time.

Errors: ``InsufficientScopeError`` (403; ``details.required_scope``, ``details.tenant_id``,
``details.missing_scopes``, ``details.knowledge_base_ids``, ``details.subject_id``,
``details.team_ids`` or ``details.max_lineage_depth`` name the reason),
``AuthenticationRequiredError`` (401: the caller's token was revoked or expired since the authorizer
accepted it), ``ResourceUnavailableError`` (404), ``RequestValidationError`` (400: a
foreign ``next_token``), ``DependencyUnavailableError`` (503).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta

from knowledge.contract.writes import CreateTokenRequest, TokenEntry, TokenList, TokenResponse
from knowledge.domain.access.bearer_tokens import TokenRejection, is_token_id
from knowledge.domain.access.reach import TokenGrant, overreach
from knowledge.domain.models import Permission, Principal, TokenRecord
from knowledge.errors import AuthenticationRequiredError, InsufficientScopeError, ResourceUnavailableError
from knowledge.observability import logger
from knowledge.ports import TokenStore
from knowledge.services.access import require_scope
from knowledge.services.tokens import MAX_LINEAGE_DEPTH, TokenService


class TokenAdministration:
    """``POST /v1/tokens``, ``GET /v1/tokens`` and ``DELETE /v1/tokens/{token_id}`` for a principal.
    Thread-safe if its ports are."""

    def __init__(self, store: TokenStore, tokens: TokenService) -> None:
        self._store = store
        self._tokens = tokens

    def authorize_issue(self, principal: Principal, request: CreateTokenRequest) -> TokenGrant:
        """What the token ``request`` asks for would hold (without issuing it): the tenant
        (default: the caller's), subject, teams, scopes and base allow-list (the caller's own when
        it has one and none is asked for). ``InsufficientScopeError`` unless it is within
        ``principal`` (``token_reach.overreach``, whose ``details`` name the part refused)."""
        own = principal.knowledge_base_ids
        asked = None if request.knowledge_base_ids is None else frozenset(request.knowledge_base_ids)
        grant = TokenGrant(
            tenant_id=request.tenant_id or principal.tenant_id,
            subject_id=request.subject_id,
            team_ids=frozenset(request.team_ids),
            scopes=frozenset(scope.value for scope in request.scopes),
            knowledge_base_ids=own if asked is None else asked,
        )
        refusal = overreach(principal, grant)
        if refusal is not None:
            raise refusal
        return grant

    def issue(self, principal: Principal, request: CreateTokenRequest) -> TokenResponse:
        """A new bearer token, returned once (only its hash, the ``token_id``, is stored), with
        what it holds: tenant, subject, scopes, allow-list, issuer and expiry."""
        grant = self.authorize_issue(principal, request)
        ancestors = self._lineage_of(principal)
        token, record = self._tokens.issue(
            tenant_id=grant.tenant_id,
            subject_id=grant.subject_id,
            scopes=grant.scopes,
            team_ids=grant.team_ids,
            knowledge_base_ids=grant.knowledge_base_ids,
            expires_in=timedelta(seconds=request.expires_in) if request.expires_in is not None else None,
            not_after=principal.expires_at,
            ancestor_token_ids=ancestors,
        )
        logger.info(
            "token issued",
            extra={
                "tenant_id": record.tenant_id,
                "subject_id": record.subject_id,
                "scopes": sorted(record.scopes),
                "issuer_subject_id": principal.subject_id,
                "issuer_token_id": record.issuer_token_id,
                "lineage_depth": len(ancestors),
                "expires_at": record.expires_at.isoformat() if record.expires_at else None,
            },
        )
        return TokenResponse.of(token, record)

    def _lineage_of(self, principal: Principal) -> tuple[str, ...]:
        """The lineage of a token ``principal`` mints: its own token's, then its token (empty for a
        principal not resolved from a stored token)."""
        if principal.token_id is None:
            return ()
        issuer = self._store.get_token(principal.token_id) if is_token_id(principal.token_id) else None
        rejection = self._tokens.rejection(issuer)
        if rejection is not None or issuer is None:
            # The same fixed 401 as the authorizer's: API Gateway may still be replaying its answer.
            reason = rejection or TokenRejection.UNKNOWN
            raise AuthenticationRequiredError(reason.message, {"reason": reason.value})
        if len(issuer.ancestor_token_ids) >= MAX_LINEAGE_DEPTH:
            raise InsufficientScopeError(
                f"A token {MAX_LINEAGE_DEPTH} issuances below its root cannot issue tokens.",
                {"max_lineage_depth": MAX_LINEAGE_DEPTH},
            )
        return (*issuer.ancestor_token_ids, issuer.token_hash)

    def list_tokens(
        self, principal: Principal, *, tenant_id: str | None, limit: int, next_token: str | None
    ) -> TokenList:
        """One page (``limit`` ≥ 1) of the tokens of ``tenant_id`` (default: the caller's) that
        ``principal`` may revoke, in creation order, revoked and expired ones included; never a
        secret or a hash other than the public ``token_id``. Another tenant needs
        ``platform:admin`` and no allow-list (``InsufficientScopeError``)."""
        self.authorize_revoke(principal)
        tenant = tenant_id or principal.tenant_id
        if tenant != principal.tenant_id:
            require_scope(principal, Permission.PLATFORM_ADMIN)
            if principal.knowledge_base_ids is not None:
                raise InsufficientScopeError(
                    "A token with a knowledge base allow-list can only list tokens of its own tenant.",
                    {"tenant_id": tenant},
                )
        page = self._store.list_tokens(
            tenant, limit=limit, next_token=next_token, admits=lambda record: _may_revoke(principal, record)
        )
        # The listing may read an index that lags; revocation state comes from the records.
        wanted = [
            token_id
            for record in page.entries
            for token_id in (record.token_hash, *record.ancestor_token_ids)
        ]
        current = self._store.get_tokens(wanted) if wanted else {}
        listed = [current.get(record.token_hash, record) for record in page.entries]
        return TokenList(
            tokens=[
                TokenEntry.of(record, revoked_ancestor_token_id=_revoked_ancestor(record, current))
                for record in listed
            ],
            next_token=page.next_token,
        )

    def authorize_revoke(self, principal: Principal) -> None:
        """``InsufficientScopeError`` unless ``principal`` may revoke tokens at all (``knowledge:admin``);
        which tokens it may revoke ``revoke`` decides."""
        require_scope(principal, Permission.ADMIN)

    def revoke(self, principal: Principal, token_id: str) -> None:
        """Revoke the token named ``token_id`` and, through their lineage, every token below it
        (idempotent: one write, whatever the number of descendants). The authorizer caches its
        answers, so a revoked token may still be accepted for up to its cache time (300 s on AWS)."""
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


def _revoked_ancestor(record: TokenRecord, ancestors: Mapping[str, TokenRecord]) -> str | None:
    """The revoked ancestor of ``record`` closest to its root, when one is stored."""
    return next(
        (
            ancestor_id
            for ancestor_id in record.ancestor_token_ids
            if (ancestor := ancestors.get(ancestor_id)) is not None and ancestor.revoked
        ),
        None,
    )


def _may_revoke(principal: Principal, record: TokenRecord) -> bool:
    """True when ``principal`` could have issued ``record``, expiry aside (see the module docs)."""
    return overreach(principal, TokenGrant.of(record)) is None
