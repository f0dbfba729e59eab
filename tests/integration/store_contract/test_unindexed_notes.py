"""The store contract for read-your-own-writes (DESIGN §9): a note is among its owner's unindexed
notes from the commit that writes it until the indexed mark of that version, on every adapter."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from knowledge.domain.memory.lifecycle import (
    NoteDraft,
    NoteWrite,
    forgotten_note,
    new_note,
    revised_note,
    superseded_note,
)
from knowledge.domain.memory.notes import ForgetMode, MemoryType, Note, claims_of, content_claim
from knowledge.domain.models import Scope
from knowledge.ports import KnowledgeStore
from tests.integration.store_contract.conftest import OTHER_TENANT, TENANT

NOW = datetime(2026, 6, 1, tzinfo=UTC)
OWNER = "user-1"


def _draft(content: str) -> NoteDraft:
    return NoteDraft(
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


def _created(store: KnowledgeStore, content: str, owner: str = OWNER, tenant_id: str = TENANT) -> Note:
    note = new_note(tenant_id, owner, _draft(content), supersedes=(), now=NOW)
    store.commit_notes(tenant_id, [NoteWrite(previous=None, note=note, claim=tuple(claims_of(note)))])
    return note


def _unindexed(store: KnowledgeStore, owner: str = OWNER, tenant_id: str = TENANT) -> list[tuple[str, int]]:
    return [(note.note_id, note.version) for note in store.list_unindexed_notes(tenant_id, owner, limit=100)]


def test_list_unindexed_notes_new_note_listed_until_its_version_is_marked(store: KnowledgeStore) -> None:
    note = _created(store, "The build runs on Python 3.11.")

    assert _unindexed(store) == [(note.note_id, 1)]
    store.set_note_indexed_version(TENANT, note.note_id, 1, owner_id=OWNER)
    assert _unindexed(store) == []


def test_list_unindexed_notes_revision_after_the_mark_is_listed_at_its_new_version(
    store: KnowledgeStore,
) -> None:
    note = _created(store, "first")
    store.set_notes_indexed_versions(TENANT, [(note.note_id, 1)], owners={note.note_id: OWNER})
    revised = revised_note(note, _draft("second"), supersedes=(), now=NOW)
    store.commit_notes(
        TENANT,
        [
            NoteWrite(
                previous=note, note=revised, claim=(content_claim(revised),), release=(content_claim(note),)
            )
        ],
    )

    [listed] = store.list_unindexed_notes(TENANT, OWNER, limit=10)

    assert (listed.note_id, listed.version, listed.content) == (note.note_id, 2, "second")


def test_list_unindexed_notes_stale_mark_leaves_a_newer_version_listed(store: KnowledgeStore) -> None:
    note = _created(store, "first")
    revised = revised_note(note, _draft("second"), supersedes=(), now=NOW)
    store.commit_notes(
        TENANT,
        [
            NoteWrite(
                previous=note, note=revised, claim=(content_claim(revised),), release=(content_claim(note),)
            )
        ],
    )

    store.set_notes_indexed_versions(TENANT, [(note.note_id, 1)], owners={note.note_id: OWNER})

    assert _unindexed(store) == [(note.note_id, 2)]


def test_list_unindexed_notes_forgotten_superseded_and_deleted_notes_are_not_listed(
    store: KnowledgeStore,
) -> None:
    forgotten = _created(store, "to forget")
    store.commit_notes(
        TENANT,
        [NoteWrite(previous=forgotten, note=forgotten_note(forgotten, ForgetMode.SOFT, now=NOW))],
    )
    deleted = _created(store, "to delete")
    store.delete_note(TENANT, deleted.note_id, claims=claims_of(deleted), expected_version=1)
    old = _created(store, "old fact")
    successor = new_note(TENANT, OWNER, _draft("new fact"), supersedes=[old.note_id], now=NOW)
    store.commit_notes(
        TENANT,
        [
            NoteWrite(previous=None, note=successor, claim=tuple(claims_of(successor))),
            NoteWrite(
                previous=old,
                note=superseded_note(old, successor.note_id, now=NOW),
                release=tuple(claims_of(old)),
            ),
        ],
    )

    assert _unindexed(store) == [(successor.note_id, 1)]


def test_list_unindexed_notes_only_the_owners_notes_of_the_tenant(store: KnowledgeStore) -> None:
    mine = _created(store, "mine")
    _created(store, "someone else's", owner="user-2")
    _created(store, "another tenant's", tenant_id=OTHER_TENANT)

    assert _unindexed(store) == [(mine.note_id, 1)]
    assert len(_unindexed(store, "user-2")) == 1
    assert _unindexed(store, "user-3") == []


def test_list_unindexed_notes_newest_first_at_most_limit(store: KnowledgeStore) -> None:
    created = [_created(store, f"fact {n}").note_id for n in range(5)]

    listed = [note.note_id for note in store.list_unindexed_notes(TENANT, OWNER, limit=3)]

    assert listed == sorted(created, reverse=True)[:3]
    with pytest.raises(ValueError, match="limit"):
        store.list_unindexed_notes(TENANT, OWNER, limit=0)


def test_list_unindexed_notes_past_the_limit_keeps_the_newest(store: KnowledgeStore) -> None:
    created = [_created(store, f"fact number {n}").note_id for n in range(130)]

    listed = [note.note_id for note in store.list_unindexed_notes(TENANT, OWNER, limit=100)]

    assert listed == sorted(created, reverse=True)[:100]
    assert created[-1] in listed
