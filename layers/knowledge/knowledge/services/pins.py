"""The pin use cases (DESIGN §9): ``pin_memory``, ``unpin_memory``, ``GET /v1/pins``, and the pins
``recall_context`` puts first.

A pin is one per note and applies to every caller who can see its note. Pinning needs a note the
caller can read (visible, active, unexpired) that is not superseded, and the rights to write it
(``knowledge.domain.memory.rights``: ``memory:write``; ``memory:share`` for a note others see, whose
pin lands in their packs; ``memory:admin`` for another principal's note); unpinning needs the same;
pinning a pinned note again returns the same pin (same ``pin_id`` and ``created_at``), with the
``reason``, ``order`` or ``expires_at`` the call gives replacing the old ones. Unpinning a note
without a pin changes nothing (``removed: false``). Writes are conditioned on the pin read, and a
lost race is decided again from the store, up to ``ATTEMPTS`` times.

A pin follows its note: pins of notes that are forgotten, expired, superseded or gone, and expired
pins, are neither listed nor recalled; pinning again after a pin expired makes a new pin (201). A
redact or a hard forget deletes the pin. Listing pages are full (pins the caller may not see are
skipped, never counted) and their ``next_token`` resumes after the last pin shown.

Errors: ``RuntimeDisabledError``, ``InsufficientScopeError``, ``MemoryInvalidRequestError`` (bounds,
a superseded note, a ``limit`` outside 1–100), ``MemoryUnavailableError`` (a note the caller cannot
read: one answer for absent, unauthorized and forgotten), ``RetryableMemoryConflictError`` (other
writers kept changing the pin), ``DependencyUnavailableError``.
"""

from __future__ import annotations

from dataclasses import dataclass

from knowledge.contract.memory import (
    MemoryResponse,
    PinMemoryArguments,
    PinsResponse,
    PinView,
    RememberArguments,
    UnpinMemoryArguments,
    UnpinnedResponse,
    pin_problems,
)
from knowledge.domain import ids
from knowledge.domain.memory.notes import Note
from knowledge.domain.memory.pins import PINS_LIMIT_DEFAULT, PINS_LIMIT_MAX, Pin
from knowledge.domain.memory.retrieval import NoteFilter, holds
from knowledge.domain.models import Permission, Principal
from knowledge.errors import (
    ConflictError,
    MemoryConflictError,
    MemoryInvalidRequestError,
    MemoryUnavailableError,
    ResourceUnavailableError,
    RetryableMemoryConflictError,
)
from knowledge.observability import logger
from knowledge.ports import Clock, MemoryStore
from knowledge.services.notes import NoteService, Remembered, is_indexed

ATTEMPTS = 4
_SCAN_PAGE = 100
"""Pins read per store call while collecting the pins of a recall."""


@dataclass(frozen=True)
class Pinned:
    """What ``pin_memory`` did: the pin, and whether it is new (201)."""

    pin: PinView
    created: bool


class PinService:
    """Runs the pin tools for an authenticated principal. Thread-safe if its ports are."""

    def __init__(self, store: MemoryStore, notes: NoteService, clock: Clock) -> None:
        self._store = store
        self._notes = notes
        self._clock = clock

    def authorize_write(self, principal: Principal) -> None:
        """The check a pin write starts with (runtime switch, ``memory:write``)."""
        self._notes.authorize(principal, Permission.MEMORY_WRITE)

    def remember(self, principal: Principal, arguments: RememberArguments) -> Remembered:
        """``remember``, then, with ``pin: true``, pin the note it answers (order 0, or the pin it
        already has)."""
        remembered = self._notes.remember(principal, arguments)
        if not arguments.pin:
            return remembered
        note = remembered.response.note
        self.pin(principal, PinMemoryArguments(note_id=note.note_id))
        pinned = note.model_copy(update={"pinned": True})
        return Remembered(
            MemoryResponse(
                result=remembered.response.result, note=pinned, indexed=remembered.response.indexed
            )
        )

    def pin(self, principal: Principal, arguments: PinMemoryArguments) -> Pinned:
        self._notes.authorize(principal, Permission.MEMORY_WRITE)
        problems = pin_problems(arguments, self._clock())
        if problems:
            raise MemoryInvalidRequestError("A pin_memory argument is out of bounds.", {"fields": problems})
        for _ in range(ATTEMPTS):
            note = self._notes.readable(principal, arguments.note_id)
            self._notes.require_rights(principal, note)
            if note.superseded_by is not None:
                raise MemoryInvalidRequestError(
                    "A superseded memory cannot be pinned; pin the memory that supersedes it.",
                    {"fields": [{"field": "note_id", "problem": f"is superseded by {note.superseded_by}"}]},
                )
            try:
                return self._pin_once(principal, note, arguments)
            except ConflictError:
                continue
            except ResourceUnavailableError as error:
                raise MemoryUnavailableError() from error
        raise RetryableMemoryConflictError(
            "Other writers keep changing this pin; retry.", current_version=None
        )

    def _pin_once(self, principal: Principal, note: Note, arguments: PinMemoryArguments) -> Pinned:
        now = self._clock()
        stored = self._store.get_pin(principal.tenant_id, note.note_id)
        if stored is None or not stored.is_active(now):  # an expired pin is replaced by a new one
            pin = Pin(
                tenant_id=principal.tenant_id,
                pin_id=ids.new_pin_id(),
                note_id=note.note_id,
                reason=arguments.reason,
                order=arguments.order,
                expires_at=arguments.expires_at,
                created_by=principal.subject_id,
                created_at=now,
                updated_at=now,
            )
        else:
            given = arguments.model_fields_set
            changes: dict[str, object] = {
                name: getattr(arguments, name)
                for name in ("reason", "order", "expires_at")
                if name in given and getattr(arguments, name) != getattr(stored, name)
            }
            if not changes:
                return Pinned(pin_view(stored, indexed=is_indexed(note)), created=False)
            pin = stored.model_copy(update={**changes, "updated_at": now})
        self._store.put_pin(pin, previous=stored)
        logger.info("note pinned", extra={"tenant_id": pin.tenant_id, "note_id": pin.note_id})
        return Pinned(
            pin_view(pin, indexed=is_indexed(note)), created=stored is None or stored.pin_id != pin.pin_id
        )

    def unpin(self, principal: Principal, arguments: UnpinMemoryArguments) -> UnpinnedResponse:
        self._notes.authorize(principal, Permission.MEMORY_WRITE)
        for _ in range(ATTEMPTS):
            note = self._notes.readable(principal, arguments.note_id)
            self._notes.require_rights(principal, note)
            stored = self._store.get_pin(principal.tenant_id, note.note_id)
            if stored is None:
                return UnpinnedResponse(note_id=note.note_id, removed=False, indexed=is_indexed(note))
            try:
                self._store.delete_pin(principal.tenant_id, note.note_id, pin_id=stored.pin_id)
            except ConflictError:
                continue
            logger.info("note unpinned", extra={"tenant_id": principal.tenant_id, "note_id": note.note_id})
            return UnpinnedResponse(note_id=note.note_id, removed=True, indexed=is_indexed(note))
        raise RetryableMemoryConflictError(
            "Other writers keep changing this pin; retry.", current_version=None
        )

    def list_pins(self, principal: Principal, *, limit: int | None, next_token: str | None) -> PinsResponse:
        """One page of the tenant's pins in pin order, keeping those whose note the caller can read
        and that still apply (``limit``: 1–100, default 20)."""
        self._notes.authorize(principal, Permission.MEMORY_READ)
        size = PINS_LIMIT_DEFAULT if limit is None else limit
        if not 1 <= size <= PINS_LIMIT_MAX:
            raise MemoryInvalidRequestError(
                f"limit must be between 1 and {PINS_LIMIT_MAX}.",
                {"fields": [{"field": "limit", "problem": f"must be between 1 and {PINS_LIMIT_MAX}"}]},
            )
        readers = NoteFilter(
            tenant_id=principal.tenant_id,
            subject_id=principal.subject_id,
            team_ids=principal.team_ids,
            now=self._clock(),
        )
        kept: list[tuple[Pin, Note]] = []
        cursor = next_token
        while len(kept) <= size:
            page = self._store.list_pins(principal.tenant_id, limit=size + 1, next_token=cursor)
            kept.extend(self._applying(page.entries, readers))
            cursor = page.next_token
            if cursor is None:
                break
        shown = kept[:size]
        # The token resumes after the last pin shown (one the caller may see), never after a hidden
        # one: a listing's token names its last entry, and hidden pins are not the caller's to know.
        more = len(kept) > size
        token = self._store.resume_pins_after(shown[-1][0]) if more else None
        return PinsResponse(pins=[pin_view(pin) for pin, _ in shown], next_token=token)

    def replayable(self, principal: Principal, note_id: str, pin_id: str) -> None:
        """A stored ``pin_memory`` answer may be replayed only while its pin is still the note's:
        else ``MemoryConflictError`` (it was unpinned, replaced, or its note forgotten)."""
        note = self._notes.readable(principal, note_id)
        stored = self._store.get_pin(principal.tenant_id, note.note_id)
        if stored is None or stored.pin_id != pin_id or not stored.is_active(self._clock()):
            raise MemoryConflictError(
                "The pin this Idempotency-Key made is gone (unpinned, replaced or expired); pin again "
                "with a new key.",
                current_version=None,
            )

    def pinned_notes(self, note_filter: NoteFilter) -> list[tuple[Pin, Note]]:
        """Every pin that applies to ``note_filter``'s caller, in pin order, with its note: the note
        is admitted by the filter (visible, current, narrowed) and the pin has not expired."""
        found: list[tuple[Pin, Note]] = []
        next_token: str | None = None
        while True:
            page = self._store.list_pins(note_filter.tenant_id, limit=_SCAN_PAGE, next_token=next_token)
            found.extend(self._applying(page.entries, note_filter))
            next_token = page.next_token
            if next_token is None:
                return found

    def _applying(self, pins: list[Pin], note_filter: NoteFilter) -> list[tuple[Pin, Note]]:
        """``pins`` that have not expired, whose note still carries this pin (read beside the note,
        strongly consistent, while the listing may trail) and holds for ``note_filter``
        (``domain.memory.retrieval.holds``: stored and admitted now)."""
        if not pins:
            return []
        now = self._clock()
        notes = self._store.get_notes(pins[0].tenant_id, [pin.note_id for pin in pins])
        kept = []
        for pin in sorted(pins, key=Pin.sort_key):
            note = notes.get(pin.note_id)
            if note is not None and note.pinned and pin.is_active(now) and holds(note_filter, note):
                kept.append((pin, note))
        return kept


def pin_view(pin: Pin, *, indexed: bool | None = None) -> PinView:
    """The public shape of ``pin``; ``indexed`` (``pin_memory``'s answer only) as ``PinView`` says."""
    return PinView(
        indexed=indexed,
        pin_id=pin.pin_id,
        note_id=pin.note_id,
        reason=pin.reason,
        order=pin.order,
        expires_at=pin.expires_at,
        created_at=pin.created_at,
    )
