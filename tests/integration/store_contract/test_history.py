"""The store contract for the history ``as_of`` reads (DESIGN §11): every pin write and unpin is a
pin change listed per tenant in time order, gone with a hard delete; note versions read back by
``(note, version)``; every item write records its state. The same on every adapter."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from knowledge.domain.memory.lifecycle import NoteWrite, revised_note
from knowledge.domain.memory.lifecycle import draft_of as _draft_of
from knowledge.domain.memory.notes import claims_of
from knowledge.domain.memory.pins import pins_at
from knowledge.domain.models import ItemStatus, KnowledgeBase, Source
from knowledge.ports import KnowledgeStore
from tests.integration.store_contract.conftest import OTHER_TENANT, TENANT
from tests.integration.store_contract.test_pins import NOW, _note, _pin


def test_pin_changes_replay_to_the_pins_of_each_moment(store: KnowledgeStore) -> None:
    first, second = _note(store, "First pinned fact."), _note(store, "Second pinned fact.")
    elsewhere = _note(store, "Another tenant's fact.", tenant_id=OTHER_TENANT)
    pin = _pin(first, order=2)
    store.put_pin(pin, previous=None)
    moved = pin.model_copy(update={"order": 0, "updated_at": NOW + timedelta(seconds=10)})
    store.put_pin(moved, previous=pin)
    later = _pin(second).model_copy(update={"updated_at": NOW + timedelta(seconds=20)})
    store.put_pin(later, previous=None)
    store.delete_pin(TENANT, first.note_id, pin_id=pin.pin_id, at=NOW + timedelta(seconds=30))
    store.put_pin(_pin(elsewhere), previous=None)

    def standing(seconds: int) -> list[tuple[str, int]]:
        moment = NOW + timedelta(seconds=seconds)
        return [(kept.note_id, kept.order) for kept in pins_at(store.pin_changes(TENANT, moment), moment)]

    assert standing(-1) == []
    assert standing(0) == [(first.note_id, 2)]
    assert standing(15) == [(first.note_id, 0)]
    assert standing(25) == [(first.note_id, 0), (second.note_id, 0)]
    assert standing(30) == [(second.note_id, 0)]
    assert len(store.pin_changes(TENANT, NOW + timedelta(days=1))) == 4


def test_hard_delete_removes_the_notes_pin_changes(store: KnowledgeStore) -> None:
    note = _note(store, "Soon gone.")
    store.put_pin(_pin(note), previous=None)

    store.delete_note(TENANT, note.note_id, claims=claims_of(note), expected_version=note.version)

    assert store.pin_changes(TENANT, NOW + timedelta(days=1)) == []


def test_get_note_versions_reads_each_stored_version(store: KnowledgeStore) -> None:
    note = _note(store, "Version one.")
    draft = _draft_of(note)
    second = revised_note(
        note,
        type(draft)(**{**draft.__dict__, "content": "Version two."}),
        supersedes=(),
        now=NOW + timedelta(seconds=5),
    )
    store.commit_notes(TENANT, [NoteWrite(previous=note, note=second)])

    found = store.get_note_versions(TENANT, [(note.note_id, 1), (note.note_id, 2), (note.note_id, 3)])

    assert {key: version.content for key, version in found.items()} == {
        (note.note_id, 1): "Version one.",
        (note.note_id, 2): "Version two.",
    }


def test_every_item_write_records_its_state(store: KnowledgeStore, base: KnowledgeBase) -> None:
    item, first = store.create_item(
        TENANT,
        base.knowledge_base_id,
        title="Runbook",
        content="one",
        source=Source(),
        external_id="runbook",
        publish=False,
    )
    item = store.publish_revision(
        TENANT, item.knowledge_item_id, first.knowledge_revision_id, expected_version=1
    )
    item, second = store.add_revision(
        TENANT,
        item.knowledge_item_id,
        content="two",
        title=None,
        source=None,
        publish=True,
        expected_version=2,
    )
    item = store.archive_item(TENANT, item.knowledge_item_id, expected_version=3)

    states = store.list_item_states(TENANT, item.knowledge_item_id)

    assert [(state.version, state.status, state.current_revision_id) for state in states] == [
        (1, ItemStatus.DRAFT, None),
        (2, ItemStatus.PUBLISHED, first.knowledge_revision_id),
        (3, ItemStatus.PUBLISHED, second.knowledge_revision_id),
        (4, ItemStatus.ARCHIVED, second.knowledge_revision_id),
    ]
    assert [state.at for state in states] == sorted(state.at for state in states)
    assert states[-1].at == item.updated_at
    assert store.list_item_states(TENANT, "ki_01J9Z3K4QW5E6R7T8Y9V0A1B2C") == []
    assert all(state.at.tzinfo is not None for state in states)
    assert datetime(2020, 1, 1, tzinfo=UTC) < states[0].at
