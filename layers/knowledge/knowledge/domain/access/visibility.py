"""The visibility rule of DESIGN §5, shared by the read-time truth check and the index filters.

A principal sees a base when the tenants match, the base is active, the token's optional base
allow-list admits it, and the base is ``tenant``-scoped, or ``team``-scoped with a team the principal
belongs to, or owned by the principal.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from knowledge.domain.models import BaseStatus, KnowledgeBase, Principal, Scope


def can_see(principal: Principal, base: KnowledgeBase) -> bool:
    """True when ``principal`` may see ``base`` and everything published in it."""
    if base.tenant_id != principal.tenant_id or base.status is not BaseStatus.ACTIVE:
        return False
    allow = principal.knowledge_base_ids
    if allow is not None and base.knowledge_base_id not in allow:
        return False
    if base.owner_id == principal.subject_id:
        return True
    if base.scope is Scope.TENANT:
        return True
    return base.scope is Scope.TEAM and base.team_id is not None and base.team_id in principal.team_ids


class VisibilityFilter(BaseModel):
    """The visibility rule in the form a search index applies inside every leg.

    A chunk matches when ``tenant_id`` equals, ``knowledge_base_id`` is in ``knowledge_base_ids``
    (when that is not ``None``), and (``scope == "tenant"`` or (``scope == "team"`` and ``team_id``
    in ``team_ids``) or ``owner_id == subject_id``). Inactive bases are removed from the index, and
    the truth check re-verifies every hit against the store.
    """

    model_config = ConfigDict(frozen=True)

    tenant_id: str
    subject_id: str
    team_ids: frozenset[str] = frozenset()
    knowledge_base_ids: frozenset[str] | None = None

    @classmethod
    def for_principal(cls, principal: Principal, narrow_to: str | None = None) -> VisibilityFilter:
        """The filter for ``principal``, optionally narrowed to one base (already checked visible)."""
        allow = principal.knowledge_base_ids
        if narrow_to is not None:
            allow = frozenset({narrow_to})
        return cls(
            tenant_id=principal.tenant_id,
            subject_id=principal.subject_id,
            team_ids=principal.team_ids,
            knowledge_base_ids=allow,
        )

    def admits(
        self, *, tenant_id: str, knowledge_base_id: str, scope: str, team_id: str | None, owner_id: str
    ) -> bool:
        """The rule evaluated on one chunk's fields (used by in-process indexes)."""
        if tenant_id != self.tenant_id:
            return False
        if self.knowledge_base_ids is not None and knowledge_base_id not in self.knowledge_base_ids:
            return False
        if owner_id == self.subject_id or scope == Scope.TENANT.value:
            return True
        return scope == Scope.TEAM.value and team_id is not None and team_id in self.team_ids
