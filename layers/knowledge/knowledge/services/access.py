"""Access checks shared by the services: scopes (``require_scope``), and looking a base up for a
principal (``find_base``): a malformed id is a ``validation_error`` (its shape alone is checked,
before any lookup), and an absent base and a base the principal may not use get one answer,
``ResourceUnavailableError``, so existence never leaks (DESIGN §5)."""

from __future__ import annotations

from collections.abc import Callable

from knowledge.domain import ids
from knowledge.domain.models import KnowledgeBase, Permission, Principal
from knowledge.domain.visibility import can_see
from knowledge.errors import InsufficientScopeError, ResourceUnavailableError
from knowledge.ports import BaseStore


def find_base(
    store: BaseStore,
    principal: Principal,
    knowledge_base_id: str,
    allowed: Callable[[Principal, KnowledgeBase], bool] = can_see,
) -> KnowledgeBase:
    """The base of the principal's tenant named ``knowledge_base_id`` when ``allowed`` (by default
    the visibility rule); ``ResourceUnavailableError`` otherwise, and ``RequestValidationError``
    (field ``knowledge_base_id``) when the id is not ``kb_`` and a ULID."""
    ids.require_well_formed(knowledge_base_id, ids.KB_PREFIX, "knowledge_base_id")
    base = store.get_base(principal.tenant_id, knowledge_base_id)
    if base is None or not allowed(principal, base):
        raise ResourceUnavailableError()
    return base


def require_scope(principal: Principal, scope: Permission) -> None:
    """``InsufficientScopeError`` (``details.required_scope``) unless ``principal`` holds ``scope``
    (``platform:admin`` implies every scope)."""
    if not principal.has_scope(scope):
        raise InsufficientScopeError(
            f"The token lacks the {scope.value} scope.", {"required_scope": scope.value}
        )
