"""Access checks shared by the services: scopes (``require_scope``), and looking a base
(``find_base``) or an item and its base (``find_item``) up for a principal: a malformed id is a
``validation_error`` (its shape alone is checked, before any lookup), and an absent resource and one
the principal may not use get one answer, ``ResourceUnavailableError``, so existence never leaks
(DESIGN §5): neither by the answer nor by the work done for it."""

from __future__ import annotations

from collections.abc import Callable

from knowledge.domain import ids
from knowledge.domain.access.visibility import can_see
from knowledge.domain.models import KnowledgeBase, KnowledgeItem, Permission, Principal
from knowledge.errors import InsufficientScopeError, ResourceUnavailableError
from knowledge.ports import BaseStore, CatalogStore

ABSENT_BASE_ID = ids.KB_PREFIX + "0" * 26
"""A well-formed base id no base has (ids are ULIDs of their creation time, never the epoch): what
``find_item`` looks up when the item is absent, so that an absent item costs the store call an
existing one does."""


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


def find_item(
    store: CatalogStore,
    principal: Principal,
    knowledge_item_id: str,
    allowed: Callable[[Principal, KnowledgeBase], bool] = can_see,
) -> tuple[KnowledgeItem, KnowledgeBase]:
    """The item of the principal's tenant named ``knowledge_item_id`` and its base, when ``allowed``
    (by default the visibility rule) admits the base; ``ResourceUnavailableError`` otherwise.

    A well-formed id always costs exactly two store calls, ``get_item`` then ``get_base``, whether
    the item is absent (the base looked up is ``ABSENT_BASE_ID``), in a base the principal may not
    use, or visible, so the time to answer does not tell an absent item from an invisible one.
    Checks of the item itself (its status) are the caller's and cost no store call. A malformed id
    is ``RequestValidationError`` (field ``knowledge_item_id``), before any lookup."""
    ids.require_well_formed(knowledge_item_id, ids.ITEM_PREFIX, "knowledge_item_id")
    item = store.get_item(principal.tenant_id, knowledge_item_id)
    base = store.get_base(principal.tenant_id, ABSENT_BASE_ID if item is None else item.knowledge_base_id)
    if item is None or base is None or not allowed(principal, base):
        raise ResourceUnavailableError()
    return item, base


def require_scope(principal: Principal, scope: Permission, why: str | None = None) -> None:
    """``InsufficientScopeError`` (``details.required_scope``) unless ``principal`` holds ``scope``
    (``platform:admin`` implies every scope); ``why`` the scope is needed ends the message."""
    if not principal.has_scope(scope):
        reason = f": {why}" if why else ""
        raise InsufficientScopeError(
            f"The token lacks the {scope.value} scope{reason}.", {"required_scope": scope.value}
        )


def require_tenant_admin(principal: Principal, why: str) -> str:
    """The caller's tenant when it administers the whole tenant: ``knowledge:admin`` and
    ``memory:admin`` (``platform:admin`` implies both) on a token without a base allow-list; else
    ``InsufficientScopeError`` (403) ending with ``why``: ``details.required_scope`` names a scope
    the token lacks, ``details.knowledge_base_ids`` says its allow-list is what refuses it."""
    require_scope(principal, Permission.ADMIN, why)
    require_scope(principal, Permission.MEMORY_ADMIN, why)
    if principal.knowledge_base_ids is not None:
        raise InsufficientScopeError(
            f"A token with a knowledge base allow-list cannot do this: {why}.",
            {"knowledge_base_ids": "a token without a knowledge base allow-list is needed"},
        )
    return principal.tenant_id
