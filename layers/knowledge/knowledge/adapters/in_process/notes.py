"""The ``NoteStore`` and ``PinStore`` ports in process memory, as a part of ``InProcessKnowledgeStore``
(which holds the lock and the clock), and the tenants' stored items counts. Every method runs under
the store's lock, so a commit applies whole or not at all, as the DynamoDB transaction does. A
note's ``pinned`` is read from its pin, as the DynamoDB store reads it."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from knowledge.adapters import next_tokens
from knowledge.adapters.in_process.listing import found, page
from knowledge.domain.access.rates import content_bytes
from knowledge.domain.memory.lifecycle import MAX_NOTE_WRITES, NoteWrite, redacted
from knowledge.domain.memory.notes import Note, NoteClaim, NoteStatus, claims_of
from knowledge.domain.memory.pins import Pin, PinChange
from knowledge.domain.models import Page
from knowledge.errors import ClaimTakenError, ConflictError, ResourceUnavailableError, StoredItemsQuotaError
from knowledge.ports import Clock

_RACE_LOST = "The note was changed by another writer; re-read it and retry with its current version."
_PIN_RACE_LOST = "The pin was changed by another writer; re-read it and retry."


@dataclass(frozen=True)
class _Claim:
    note_id: str
    expires_at: datetime | None


class InProcessNoteStore:
    """Notes, their versions and their claims in dictionaries."""

    _lock: threading.RLock
    _clock: Clock

    def _init_notes(self, stored_items_limit: int) -> None:
        if stored_items_limit < 0:
            raise ValueError("stored_items_limit must be 0 (no limit) or more")
        self._stored_items_limit = stored_items_limit
        self._stored_items: dict[str, int] = {}
        """tenant → its live knowledge items and notes, as the table's ``STORED_ITEMS`` counter."""
        self._stored_bytes: dict[str, int] = {}
        """tenant → the content bytes it stores, as that counter's ``content_bytes``."""
        self._notes: dict[tuple[str, str], Note] = {}
        self._note_versions: dict[tuple[str, str], dict[int, Note]] = {}
        self._claims: dict[tuple[str, str], _Claim] = {}
        self._pins: dict[tuple[str, str], Pin] = {}
        self._pin_changes: list[PinChange] = []
        self._expiry_counted: set[tuple[str, str]] = set()
        """(tenant, note) of notes removed by their expiry and counted out, as ``EXPIRY_COUNTED``."""

    def get_note(self, tenant_id: str, note_id: str) -> Note | None:
        with self._lock:
            note = self._notes.get((tenant_id, note_id))
            return self._with_pin(note) if note is not None else None

    def get_notes(self, tenant_id: str, note_ids: Sequence[str]) -> dict[str, Note]:
        with self._lock:
            notes = found(self._notes, tenant_id, note_ids)
            return {note_id: self._with_pin(note) for note_id, note in notes.items()}

    def _with_pin(self, note: Note) -> Note:
        pin = self._pins.get((note.tenant_id, note.note_id))
        pinned = pin is not None and pin.is_active(self._clock())
        return note if note.pinned == pinned else note.model_copy(update={"pinned": pinned})

    def claim_holder(self, tenant_id: str, claim: NoteClaim) -> str | None:
        with self._lock:
            held = self._claims.get((tenant_id, claim.digest))
            return held.note_id if held is not None else None

    def commit_notes(self, tenant_id: str, writes: Sequence[NoteWrite]) -> None:
        if not 1 <= len(writes) <= MAX_NOTE_WRITES:
            raise ValueError(f"a commit changes 1..{MAX_NOTE_WRITES} notes")
        with self._lock:
            now = self._clock()
            for write in writes:
                self._check_write(tenant_id, write, now)
            self._count_stored(tenant_id, sum(1 for write in writes if write.previous is None))
            self._count_bytes(
                tenant_id,
                sum(
                    content_bytes(write.note.content)
                    - (content_bytes(write.previous.content) if write.previous is not None else 0)
                    for write in writes
                ),
            )
            for write in writes:
                note = write.note.model_copy(update={"indexed_version": None, "pinned": False})
                self._notes[tenant_id, note.note_id] = note
                self._note_versions.setdefault((tenant_id, note.note_id), {})[note.version] = note
                for claim in write.release:
                    self._claims.pop((tenant_id, claim.digest), None)
                for claim in write.claim:
                    self._claims[tenant_id, claim.digest] = _Claim(note.note_id, note.expires_at)

    def set_note_indexed_version(
        self, tenant_id: str, note_id: str, version: int, *, owner_id: str | None = None
    ) -> None:
        with self._lock:
            note = self._notes.get((tenant_id, note_id))
            if note is None:
                raise ResourceUnavailableError()
            if note.version != version:
                raise ConflictError(_RACE_LOST, current_version=note.version)
            self._notes[tenant_id, note_id] = note.model_copy(update={"indexed_version": version})

    def set_notes_indexed_versions(
        self,
        tenant_id: str,
        marks: Sequence[tuple[str, int]],
        *,
        owners: Mapping[str, str] | None = None,
    ) -> None:
        with self._lock:
            for note_id, version in marks:
                note = self._notes.get((tenant_id, note_id))
                if note is not None and note.version == version:
                    self._notes[tenant_id, note_id] = note.model_copy(update={"indexed_version": version})

    def list_unindexed_notes(self, tenant_id: str, owner_id: str, *, limit: int) -> list[Note]:
        if limit < 1:
            raise ValueError("limit must be at least 1")
        with self._lock:
            pending = [
                self._with_pin(note)
                for (tenant, _), note in sorted(self._notes.items(), reverse=True)
                if tenant == tenant_id
                and note.owner_id == owner_id
                and note.status is NoteStatus.ACTIVE
                and note.superseded_by is None
                and note.indexed_version != note.version
            ]
            return pending[:limit]

    def list_note_versions(
        self, tenant_id: str, note_id: str, *, limit: int, next_token: str | None
    ) -> Page[Note]:
        with self._lock:
            versions = list(self._note_versions.get((tenant_id, note_id), {}).values())
        listing = f"note-versions:{tenant_id}:{note_id}"
        return page(listing, versions, _version_key, limit=limit, next_token=next_token, newest_first=True)

    def get_note_versions(
        self, tenant_id: str, keys: Sequence[tuple[str, int]]
    ) -> dict[tuple[str, int], Note]:
        with self._lock:
            return {
                (note_id, version): stored
                for note_id, version in keys
                if (stored := self._note_versions.get((tenant_id, note_id), {}).get(version)) is not None
            }

    def redact_note_versions(self, tenant_id: str, note_id: str) -> None:
        with self._lock:
            versions = self._note_versions.get((tenant_id, note_id), {})
            for number, version in versions.items():
                versions[number] = redacted(version)

    def delete_note(
        self, tenant_id: str, note_id: str, *, claims: Sequence[NoteClaim], expected_version: int | None
    ) -> None:
        with self._lock:
            note = self._notes.get((tenant_id, note_id))
            if expected_version is not None:
                if note is None:
                    raise ResourceUnavailableError()
                if note.version != expected_version:
                    raise ConflictError(_RACE_LOST, current_version=note.version)
            self._note_versions.pop((tenant_id, note_id), None)
            for claim in claims:
                held = self._claims.get((tenant_id, claim.digest))
                if held is not None and held.note_id == note_id:
                    del self._claims[tenant_id, claim.digest]
            self._pins.pop((tenant_id, note_id), None)
            self._pin_changes = [
                change
                for change in self._pin_changes
                if (change.tenant_id, change.note_id) != (tenant_id, note_id)
            ]
            if expected_version is not None and note is not None:
                del self._notes[tenant_id, note_id]
                self._count_stored(tenant_id, -1)
                self._count_bytes(tenant_id, -content_bytes(note.content))

    def release_expired_note(self, tenant_id: str, note_id: str, *, content_bytes: int = 0) -> bool:
        with self._lock:
            if (tenant_id, note_id) in self._expiry_counted:
                return False
            self._expiry_counted.add((tenant_id, note_id))
            if self._stored_items.get(tenant_id, 0) <= 0:
                return False
            self._count_stored(tenant_id, -1)
            self._count_bytes(tenant_id, -content_bytes)
            return True

    def list_notes(self, tenant_id: str, *, limit: int, next_token: str | None) -> Page[Note]:
        with self._lock:
            notes = [self._with_pin(note) for (tenant, _), note in self._notes.items() if tenant == tenant_id]
        return page(f"notes:{tenant_id}", notes, _note_id, limit=limit, next_token=next_token)

    def restore_note(self, note: Note, versions: Sequence[Note]) -> bool:
        tenant_id = note.tenant_id
        with self._lock:
            if (tenant_id, note.note_id) in self._notes:
                return False
            now = self._clock()
            claims = claims_of(note) if note.is_current(now) else []
            for claim in claims:
                held = self._claims.get((tenant_id, claim.digest))
                if held is not None and held.note_id != note.note_id:
                    raise ClaimTakenError("Another note holds this note's semantic key or content.")
            self._count_stored(tenant_id, 1)
            self._count_bytes(tenant_id, content_bytes(note.content))
            unmarked = {"indexed_version": None, "pinned": False}
            self._notes[tenant_id, note.note_id] = note.model_copy(update=unmarked)
            self._note_versions[tenant_id, note.note_id] = {
                version.version: version.model_copy(update=unmarked) for version in versions
            }
            for claim in claims:
                self._claims[tenant_id, claim.digest] = _Claim(note.note_id, note.expires_at)
            return True

    def restore_pin(self, pin: Pin) -> bool:
        with self._lock:
            key = (pin.tenant_id, pin.note_id)
            if key in self._pins or key not in self._notes:
                return False
            self._pins[key] = pin
            change = PinChange(tenant_id=pin.tenant_id, note_id=pin.note_id, at=pin.updated_at, pin=pin)
            self._pin_changes.append(change)
            return True

    def _count_stored(self, tenant_id: str, delta: int) -> None:
        """Move the tenant's stored items count by ``delta``; ``StoredItemsQuotaError`` (nothing
        moves) when a growth would pass the limit. Callers hold the lock."""
        count = self._stored_items.get(tenant_id, 0) + delta
        if delta > 0 and 0 < self._stored_items_limit < count:
            raise StoredItemsQuotaError(self._stored_items_limit)
        self._stored_items[tenant_id] = count

    def _count_bytes(self, tenant_id: str, delta: int) -> None:
        """Move the tenant's stored content bytes by ``delta``. Callers hold the lock."""
        self._stored_bytes[tenant_id] = self._stored_bytes.get(tenant_id, 0) + delta

    def get_pin(self, tenant_id: str, note_id: str) -> Pin | None:
        with self._lock:
            return self._pins.get((tenant_id, note_id))

    def put_pin(self, pin: Pin, *, previous: Pin | None) -> None:
        key = (pin.tenant_id, pin.note_id)
        with self._lock:
            if key not in self._notes:
                raise ResourceUnavailableError()
            stored = self._pins.get(key)
            if (stored.pin_id if stored else None) != (previous.pin_id if previous else None):
                raise ConflictError(_PIN_RACE_LOST, current_version=None)
            self._pins[key] = pin
            self._pin_changes.append(
                PinChange(tenant_id=pin.tenant_id, note_id=pin.note_id, at=pin.updated_at, pin=pin)
            )

    def delete_pin(self, tenant_id: str, note_id: str, *, pin_id: str, at: datetime | None = None) -> None:
        with self._lock:
            stored = self._pins.get((tenant_id, note_id))
            if stored is None:
                return
            if stored.pin_id != pin_id:
                raise ConflictError(_PIN_RACE_LOST, current_version=None)
            del self._pins[tenant_id, note_id]
            self._pin_changes.append(PinChange(tenant_id=tenant_id, note_id=note_id, at=at or self._clock()))

    def pin_changes(self, tenant_id: str, until: datetime) -> list[PinChange]:
        with self._lock:
            kept = [
                change for change in self._pin_changes if change.tenant_id == tenant_id and change.at <= until
            ]
        return sorted(kept, key=lambda change: change.at)

    def list_pins(self, tenant_id: str, *, limit: int, next_token: str | None) -> Page[Pin]:
        with self._lock:
            pins = [pin for (tenant, _), pin in self._pins.items() if tenant == tenant_id]
        return page(f"pins:{tenant_id}", pins, pin_listing_key, limit=limit, next_token=next_token)

    def resume_pins_after(self, pin: Pin) -> str:
        return next_tokens.encode({"l": f"pins:{pin.tenant_id}", "k": pin_listing_key(pin)})

    def _check_write(self, tenant_id: str, write: NoteWrite, now: datetime) -> None:
        note_id = write.note.note_id
        stored = self._notes.get((tenant_id, note_id))
        if write.previous is None and stored is not None:
            raise ConflictError(_RACE_LOST, current_version=stored.version)
        if write.previous is not None:
            if stored is None:
                raise ResourceUnavailableError()
            if stored.version != write.previous.version:
                raise ConflictError(_RACE_LOST, current_version=stored.version)
        for claim in write.claim:
            held = self._claims.get((tenant_id, claim.digest))
            if held is None or held.note_id == note_id:
                continue
            if held.expires_at is None or held.expires_at > now:
                raise ClaimTakenError()
        for claim in write.release:
            held = self._claims.get((tenant_id, claim.digest))
            if held is not None and held.note_id != note_id:
                raise ClaimTakenError()


def _version_key(note: Note) -> str:
    return f"{note.version:06d}"


def pin_listing_key(pin: Pin) -> str:
    """The pin's place in its tenant's listing: order (six digits), then pin id (a ULID)."""
    return f"{pin.order:06d}#{pin.pin_id}"


def _note_id(note: Note) -> str:
    return note.note_id
