"""The store contract for pins (DESIGN §9): one pin per note, written on the pin it replaces, read
beside the note (``pinned``), listed per tenant in pin order, gone with a hard delete; the same on
every adapter."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from knowledge.domain import ids
from knowledge.domain.memory.lifecycle import NoteDraft, NoteWrite, new_note
from knowledge.domain.memory.notes import MemoryType, Note, claims_of
from knowledge.domain.memory.pins import Pin
from knowledge.domain.models import Scope
from knowledge.errors import ConflictError, RequestValidationError, ResourceUnavailableError
from knowledge.ports import KnowledgeStore
from tests.integration.store_contract.conftest import OTHER_TENANT, TENANT

NOW = datetime(2026, 6, 1, tzinfo=UTC)


def _note(store: KnowledgeStore, content: str, tenant_id: str = TENANT) -> Note:
    draft = NoteDraft(
        content=content,
        scope=Scope.PRIVATE,
        team_id=None,
        agent_id=None,
        path="/",
        memory_type=MemoryType.FACT,
        importance=0.5,
        semantic_key=None,
        expires_at=None,
    )
    note = new_note(tenant_id, "user-1", draft, supersedes=(), now=NOW)
    store.commit_notes(tenant_id, [NoteWrite(previous=None, note=note, claim=tuple(claims_of(note)))])
    return note


def _pin(note: Note, *, order: int = 0, expires_at: datetime | None = None, reason: str | None = None) -> Pin:
    return Pin(
        tenant_id=note.tenant_id,
        pin_id=ids.new_pin_id(),
        note_id=note.note_id,
        reason=reason,
        order=order,
        expires_at=expires_at,
        created_by="user-1",
        created_at=NOW,
        updated_at=NOW,
    )


def test_put_pin_reads_back_and_marks_the_note_pinned(store: KnowledgeStore) -> None:
    note = _note(store, "Pinned fact.")
    other = _note(store, "Unpinned fact.")
    pin = _pin(note, order=7, reason="always", expires_at=datetime(2030, 1, 1, tzinfo=UTC))

    store.put_pin(pin, previous=None)

    assert store.get_pin(TENANT, note.note_id) == pin
    assert store.get_note(TENANT, note.note_id).pinned is True  # type: ignore[union-attr]
    assert store.get_note(TENANT, other.note_id).pinned is False  # type: ignore[union-attr]
    assert {
        note_id: found.pinned
        for note_id, found in store.get_notes(TENANT, [note.note_id, other.note_id]).items()
    } == {
        note.note_id: True,
        other.note_id: False,
    }


def test_put_pin_of_an_absent_note_is_resource_unavailable(store: KnowledgeStore) -> None:
    ghost = _note(store, "Soon gone.")
    store.delete_note(TENANT, ghost.note_id, claims=claims_of(ghost), expected_version=ghost.version)

    with pytest.raises(ResourceUnavailableError):
        store.put_pin(_pin(ghost), previous=None)
    assert store.get_pin(TENANT, ghost.note_id) is None


def test_put_pin_is_conditioned_on_the_pin_it_replaces(store: KnowledgeStore) -> None:
    note = _note(store, "Contested pin.")
    first = _pin(note)
    store.put_pin(first, previous=None)

    with pytest.raises(ConflictError):
        store.put_pin(_pin(note), previous=None)  # a second new pin: one per note
    with pytest.raises(ConflictError):
        store.put_pin(_pin(note, order=2), previous=_pin(note))  # replacing a pin that is not stored
    moved = first.model_copy(update={"order": 3})
    store.put_pin(moved, previous=first)

    assert store.get_pin(TENANT, note.note_id) == moved


def test_delete_pin_removes_only_the_pin_it_names(store: KnowledgeStore) -> None:
    note = _note(store, "Unpin me.")
    pin = _pin(note)
    store.put_pin(pin, previous=None)

    with pytest.raises(ConflictError):
        store.delete_pin(TENANT, note.note_id, pin_id=ids.new_pin_id())
    store.delete_pin(TENANT, note.note_id, pin_id=pin.pin_id)
    store.delete_pin(TENANT, note.note_id, pin_id=pin.pin_id)  # nothing left: nothing to do

    assert store.get_pin(TENANT, note.note_id) is None
    assert store.get_note(TENANT, note.note_id).pinned is False  # type: ignore[union-attr]


def test_an_expired_pin_does_not_mark_its_note_pinned(store: KnowledgeStore) -> None:
    note = _note(store, "Briefly pinned.")
    store.put_pin(_pin(note, expires_at=datetime(2020, 1, 1, tzinfo=UTC)), previous=None)

    assert store.get_note(TENANT, note.note_id).pinned is False  # type: ignore[union-attr]
    assert store.get_pin(TENANT, note.note_id) is not None  # the record stays until the TTL sweep


def test_list_pins_pages_in_order_then_pin_time_within_the_tenant(store: KnowledgeStore) -> None:
    notes = [_note(store, f"Fact {n}.") for n in range(5)]
    pins = [_pin(note, order=order) for note, order in zip(notes, [3, 1, 2, 1, 0], strict=True)]
    for pin in pins:
        store.put_pin(pin, previous=None)
    store.put_pin(_pin(_note(store, "Other tenant's.", tenant_id=OTHER_TENANT)), previous=None)

    first = store.list_pins(TENANT, limit=3, next_token=None)
    rest = store.list_pins(TENANT, limit=3, next_token=first.next_token)

    expected = [pins[4], pins[1], pins[3], pins[2], pins[0]]
    assert first.entries + rest.entries == expected
    assert rest.next_token is None
    with pytest.raises(RequestValidationError):
        store.list_pins(OTHER_TENANT, limit=3, next_token=first.next_token)
    with pytest.raises(ValueError, match="limit"):
        store.list_pins(TENANT, limit=0, next_token=None)


def test_a_moved_pin_is_listed_once_at_its_new_place(store: KnowledgeStore) -> None:
    low, high = _note(store, "Low."), _note(store, "High.")
    low_pin, high_pin = _pin(low, order=5), _pin(high, order=1)
    store.put_pin(low_pin, previous=None)
    store.put_pin(high_pin, previous=None)

    moved = low_pin.model_copy(update={"order": 0, "updated_at": NOW + timedelta(seconds=1)})
    store.put_pin(moved, previous=low_pin)

    assert store.list_pins(TENANT, limit=10, next_token=None).entries == [moved, high_pin]


def test_hard_delete_of_a_note_removes_its_pin(store: KnowledgeStore) -> None:
    note = _note(store, "Delete me and my pin.")
    store.put_pin(_pin(note), previous=None)

    store.delete_note(TENANT, note.note_id, claims=claims_of(note), expected_version=note.version)

    assert store.get_pin(TENANT, note.note_id) is None
    assert store.list_pins(TENANT, limit=10, next_token=None).entries == []
