"""Who may write which note (DESIGN §9 and §10): the memory governance matrix.

Three cumulative rules decide the scopes a memory write needs, whatever the write is (``remember``
creating or updating a note, superseding one, ``pin_memory``, ``unpin_memory``, ``forget_memory``
in any mode, restore):

1. every memory write needs ``memory:write``;
2. a write that touches a note others see — ``team`` or ``tenant`` scope, before or after the
   write — also needs ``memory:share`` (writing shared text, moving a note into or out of a shared
   scope, pinning it into others' packs, unpinning or forgetting it);
3. a write to a note another principal owns (``owner_id`` is not the caller's subject) also needs
   ``memory:admin``. Only notes the caller can see can be written at all (others' private notes are
   ``memory_unavailable``), so ``memory:admin`` reaches the shared notes of the caller's tenant and
   teams, never further.

An agent's own private notes therefore need ``memory:write`` alone. ``platform:admin`` implies
every scope (``Principal.has_scope``). Reading (search, recall, note reads) needs ``memory:read``
and follows visibility only (``knowledge.domain.memory.notes.can_see_note``).
"""

from __future__ import annotations

from collections.abc import Iterable

from knowledge.domain.models import Permission, Scope

WHY = {
    Permission.MEMORY_SHARE: "a note others see (team or tenant scope) needs it",
    Permission.MEMORY_ADMIN: "another principal's note needs it",
}
"""Why the second and third rules' scopes are needed, for the ``insufficient_scope`` message."""


def rights_to_write(subject_id: str, owner_id: str, scopes: Iterable[Scope]) -> tuple[Permission, ...]:
    """The scopes a write by ``subject_id`` to a note owned by ``owner_id`` needs, in the order of
    the rules (a refusal names the first one missing); ``scopes`` are the note's scopes the write
    touches (before and after)."""
    needed = [Permission.MEMORY_WRITE]
    if any(scope is not Scope.PRIVATE for scope in scopes):
        needed.append(Permission.MEMORY_SHARE)
    if owner_id != subject_id:
        needed.append(Permission.MEMORY_ADMIN)
    return tuple(needed)
