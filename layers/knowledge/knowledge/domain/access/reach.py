"""A token's reach, and when one token's reach is within another's (DESIGN §6 and §10, reach).

A token reaches by what it holds: its **tenant**, its **principal** (``subject_id`` and
``team_ids``: whose private, team and tenant-scoped bases (§5) and notes (§9) it sees), its
**base allow-list**, its **scopes** and its **expiry**. Holding ``knowledge:admin`` adds the
tokens it may issue and revoke, and that adds everything those tokens reach, so how far an
administrator reaches depends on whom it may issue for:

- a **tenant administrator** (``knowledge:admin`` and no base allow-list) speaks for its whole
  tenant: it issues tokens for any subject and teams there, so it reaches every principal of its
  tenant, limited to its own scopes;
- ``platform:admin`` implies every scope, and without an allow-list it is a tenant administrator
  of every tenant;
- any other administrator (one with a base allow-list) reaches what its own principal reaches and
  no more: it issues only for its own subject and a subset of its own teams, in its own tenant.

A grant (``TokenGrant``: what a token holds, expiry aside) is **within** an issuer when each part
is: the issuer holds ``knowledge:admin``; the tenant is the issuer's, or any tenant for a
``platform:admin`` without an allow-list; every scope is one the issuer holds (a plain subset, so a
scope added later fits without a change here); the issuer has no allow-list, or the grant has one
inside it; and the issuer is a tenant administrator of that tenant, or the subject is its own and
the teams are among its own. Expiry is within by construction: ``TokenService.issue`` caps a new
token to its issuer's expiry instead of refusing it.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from knowledge.domain.models import Permission, Principal, TokenRecord
from knowledge.errors import InsufficientScopeError


class TokenGrant(BaseModel):
    """What a token holds, expiry aside: the tenant, the principal it speaks for, its scopes and its
    base allow-list (``None``: every base of the tenant)."""

    model_config = ConfigDict(frozen=True)

    tenant_id: str
    subject_id: str
    team_ids: frozenset[str] = frozenset()
    scopes: frozenset[str] = frozenset()
    knowledge_base_ids: frozenset[str] | None = None

    @classmethod
    def of(cls, record: TokenRecord) -> TokenGrant:
        """What the stored token ``record`` holds."""
        return cls(
            tenant_id=record.tenant_id,
            subject_id=record.subject_id,
            team_ids=record.team_ids,
            scopes=record.scopes,
            knowledge_base_ids=record.knowledge_base_ids,
        )


def is_tenant_administrator(principal: Principal, tenant_id: str) -> bool:
    """True when ``principal`` may issue tokens for any subject and teams of ``tenant_id``:
    ``knowledge:admin`` without a base allow-list, in its own tenant or, with ``platform:admin``,
    in any."""
    return (
        principal.has_scope(Permission.ADMIN)
        and principal.knowledge_base_ids is None
        and (tenant_id == principal.tenant_id or principal.has_scope(Permission.PLATFORM_ADMIN))
    )


def overreach(issuer: Principal, grant: TokenGrant) -> InsufficientScopeError | None:
    """Why ``grant`` is not within ``issuer`` (see the module docs), or ``None`` when it is.

    The error is ``insufficient_scope`` (403) and its ``details`` name the first part refused, in
    this order: ``required_scope`` (``knowledge:admin``, or ``platform:admin`` for another tenant),
    ``tenant_id`` (another tenant asked by an allow-listed issuer), ``missing_scopes`` (sorted),
    ``knowledge_base_ids`` (the bases outside the issuer's allow-list, sorted; ``null`` when the
    grant has no allow-list at all), ``subject_id`` (not the issuer's own), ``team_ids`` (the teams
    outside the issuer's, sorted)."""
    if not issuer.has_scope(Permission.ADMIN):
        return _lacks(Permission.ADMIN)
    if grant.tenant_id != issuer.tenant_id:
        if not issuer.has_scope(Permission.PLATFORM_ADMIN):
            return _lacks(Permission.PLATFORM_ADMIN)
        if issuer.knowledge_base_ids is not None:
            return InsufficientScopeError(
                "A token with a knowledge base allow-list can only issue tokens for its own tenant.",
                {"tenant_id": grant.tenant_id},
            )
    missing = sorted(scope for scope in grant.scopes if not _holds(issuer, scope))
    if missing:
        return InsufficientScopeError(
            "A token cannot hold scopes its issuer lacks.", {"missing_scopes": missing}
        )
    own = issuer.knowledge_base_ids
    if own is not None and (grant.knowledge_base_ids is None or not grant.knowledge_base_ids <= own):
        outside = None if grant.knowledge_base_ids is None else sorted(grant.knowledge_base_ids - own)
        return InsufficientScopeError(
            "A token cannot admit knowledge bases outside its issuer's allow-list.",
            {"knowledge_base_ids": outside},
        )
    if is_tenant_administrator(issuer, grant.tenant_id):
        return None
    if grant.subject_id != issuer.subject_id:
        return InsufficientScopeError(
            "A token with a knowledge base allow-list can only issue tokens for its own subject_id.",
            {"subject_id": grant.subject_id},
        )
    foreign = sorted(grant.team_ids - issuer.team_ids)
    if foreign:
        return InsufficientScopeError(
            "A token with a knowledge base allow-list can only issue tokens for teams it belongs to.",
            {"team_ids": foreign},
        )
    return None


def _holds(principal: Principal, scope: str) -> bool:
    """``Principal.has_scope`` for any scope name, known to this release or not."""
    return scope in principal.scopes or Permission.PLATFORM_ADMIN.value in principal.scopes


def _lacks(scope: Permission) -> InsufficientScopeError:
    return InsufficientScopeError(
        f"The token lacks the {scope.value} scope.", {"required_scope": scope.value}
    )
