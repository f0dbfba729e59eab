"""The store contract for notes (DESIGN §9): versions, conditional commits, claims, redaction and
deletion, the same on every adapter."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import pytest

from knowledge.domain.memory.lifecycle import NoteDraft, NoteWrite, new_note, revised_note, superseded_note
from knowledge.domain.memory.notes import REDACTED, MemoryType, Note, claims_of, content_claim, key_claim
from knowledge.domain.models import Scope
from knowledge.errors import ClaimTakenError, ConflictError, RequestValidationError, ResourceUnavailableError
from knowledge.ports import KnowledgeStore
from tests.integration.store_contract.conftest import OTHER_TENANT, TENANT

NOW = datetime(2026, 6, 1, tzinfo=UTC)


def _draft(content: str = "The build runs on Python 3.11.", **changes: object) -> NoteDraft:
    fields: dict[str, object] = {
        "content": content,
        "scope": Scope.PRIVATE,
        "team_id": None,
        "agent_id": "agent-1",
        "path": "/projects/alpha",
        "memory_type": MemoryType.FACT,
        "importance": 0.73,
        "semantic_key": None,
        "expires_at": None,
        **changes,
    }
    return NoteDraft(**fields)  # type: ignore[arg-type]


def _created(store: KnowledgeStore, draft: NoteDraft | None = None, tenant_id: str = TENANT) -> Note:
    note = new_note(tenant_id, "user-1", draft or _draft(), supersedes=(), now=NOW)
    store.commit_notes(tenant_id, [NoteWrite(previous=None, note=note, claim=tuple(claims_of(note)))])
    return note


def _revise(store: KnowledgeStore, note: Note, content: str) -> Note:
    revised = revised_note(note, _draft(content), supersedes=(), now=NOW)
    store.commit_notes(
        TENANT,
        [
            NoteWrite(
                previous=note, note=revised, claim=(content_claim(revised),), release=(content_claim(note),)
            )
        ],
    )
    return revised


def test_commit_notes_new_note_reads_back_with_every_field(store: KnowledgeStore) -> None:
    note = _created(store)

    assert store.get_note(TENANT, note.note_id) == note
    assert store.get_notes(TENANT, [note.note_id, "nt_absent"]) == {note.note_id: note}
    assert store.get_note(OTHER_TENANT, note.note_id) is None


def test_commit_notes_new_note_with_a_stored_id_conflicts_with_its_version(store: KnowledgeStore) -> None:
    note = _created(store)

    with pytest.raises(ConflictError) as raised:
        store.commit_notes(TENANT, [NoteWrite(previous=None, note=note)])

    assert raised.value.current_version == 1


def test_commit_notes_stale_previous_conflicts_and_writes_nothing(store: KnowledgeStore) -> None:
    note = _created(store)
    second = _revise(store, note, "The build runs on Python 3.12.")
    stale = revised_note(note, _draft("Python 3.13"), supersedes=(), now=NOW)

    with pytest.raises(ConflictError) as raised:
        store.commit_notes(TENANT, [NoteWrite(previous=note, note=stale)])

    assert raised.value.current_version == 2
    assert store.get_note(TENANT, note.note_id) == second


def test_commit_notes_revision_of_an_absent_note_is_unavailable(store: KnowledgeStore) -> None:
    ghost = new_note(TENANT, "user-1", _draft(), supersedes=(), now=NOW)

    with pytest.raises(ResourceUnavailableError):
        store.commit_notes(
            TENANT, [NoteWrite(previous=ghost, note=revised_note(ghost, _draft(), supersedes=(), now=NOW))]
        )


def test_list_note_versions_newest_first_in_pages(store: KnowledgeStore) -> None:
    note = _created(store)
    latest = note
    for n in range(2, 6):
        latest = _revise(store, latest, f"revision {n}")

    first = store.list_note_versions(TENANT, note.note_id, limit=2, next_token=None)
    rest = store.list_note_versions(TENANT, note.note_id, limit=10, next_token=first.next_token)

    assert [v.version for v in first.entries] == [5, 4]
    assert [v.version for v in rest.entries] == [3, 2, 1]
    assert rest.next_token is None
    assert rest.entries[-1].content == note.content


def test_list_note_versions_token_of_another_note_is_refused(store: KnowledgeStore) -> None:
    note, other = _created(store), _created(store, _draft("another fact"))
    _revise(store, note, "changed")
    page = store.list_note_versions(TENANT, note.note_id, limit=1, next_token=None)

    with pytest.raises(RequestValidationError):
        store.list_note_versions(TENANT, other.note_id, limit=1, next_token=page.next_token)


def test_commit_notes_claim_held_by_a_current_note_is_taken_error(store: KnowledgeStore) -> None:
    keyed = _draft(semantic_key="build.python")
    _created(store, keyed)
    rival = new_note(
        TENANT, "user-1", _draft("other text", semantic_key="build.python"), supersedes=(), now=NOW
    )

    with pytest.raises(ClaimTakenError):
        store.commit_notes(TENANT, [NoteWrite(previous=None, note=rival, claim=tuple(claims_of(rival)))])

    assert store.get_note(TENANT, rival.note_id) is None


def test_commit_notes_claim_of_an_expired_note_is_taken_over(store: KnowledgeStore) -> None:
    expired = _created(store, _draft(expires_at=datetime(2000, 1, 1, tzinfo=UTC)))
    claim = content_claim(expired)
    successor = new_note(TENANT, "user-1", _draft(), supersedes=(), now=NOW)

    store.commit_notes(TENANT, [NoteWrite(previous=None, note=successor, claim=(claim,))])

    assert store.claim_holder(TENANT, claim) == successor.note_id


def test_commit_notes_released_claim_is_free_for_another_note(store: KnowledgeStore) -> None:
    old = _created(store)
    claim = content_claim(old)
    successor = new_note(
        TENANT, "user-1", _draft("The build runs on Python 3.12."), supersedes=(old.note_id,), now=NOW
    )
    store.commit_notes(
        TENANT,
        [
            NoteWrite(previous=old, note=superseded_note(old, successor.note_id, now=NOW), release=(claim,)),
            NoteWrite(previous=None, note=successor, claim=(content_claim(successor),)),
        ],
    )
    again = new_note(TENANT, "user-1", _draft(), supersedes=(), now=NOW)

    store.commit_notes(TENANT, [NoteWrite(previous=None, note=again, claim=(claim,))])

    assert store.claim_holder(TENANT, claim) == again.note_id
    assert store.get_note(TENANT, old.note_id).superseded_by == successor.note_id  # type: ignore[union-attr]


def test_set_note_indexed_version_marks_only_the_current_version(store: KnowledgeStore) -> None:
    note = _created(store)
    store.set_note_indexed_version(TENANT, note.note_id, 1)
    assert store.get_note(TENANT, note.note_id).indexed_version == 1  # type: ignore[union-attr]

    _revise(store, note, "moved on")
    with pytest.raises(ConflictError) as raised:
        store.set_note_indexed_version(TENANT, note.note_id, 1)
    assert raised.value.current_version == 2
    assert store.get_note(TENANT, note.note_id).indexed_version is None  # type: ignore[union-attr]
    with pytest.raises(ResourceUnavailableError):
        store.set_note_indexed_version(TENANT, "nt_01ARZ3NDEKTSV4RRFFQ69G5FAV", 1)


def test_set_notes_indexed_versions_marks_the_current_ones_and_skips_the_others(
    store: KnowledgeStore,
) -> None:
    current = [_created(store, _draft(f"Fact number {n} about the build.")) for n in range(3)]
    moved = _created(store, _draft("This fact moves on."))
    _revise(store, moved, "moved on")
    gone = "nt_01ARZ3NDEKTSV4RRFFQ69G5FAV"
    store.set_notes_indexed_versions(TENANT, [(note.note_id, 1) for note in current[:2]])
    assert store.get_note(TENANT, current[1].note_id).indexed_version == 1  # type: ignore[union-attr]

    store.set_notes_indexed_versions(
        TENANT, [(note.note_id, 1) for note in current] + [(moved.note_id, 1), (gone, 1)]
    )

    marks = store.get_notes(TENANT, [note.note_id for note in [*current, moved]])
    assert [marks[note.note_id].indexed_version for note in current] == [1, 1, 1]
    assert marks[moved.note_id].indexed_version is None
    assert marks[moved.note_id].version == 2
    assert store.get_note(TENANT, gone) is None
    store.set_notes_indexed_versions(TENANT, [])


def test_redact_note_versions_replaces_every_versions_content(store: KnowledgeStore) -> None:
    note = _created(store)
    _revise(store, note, "second secret")

    store.redact_note_versions(TENANT, note.note_id)

    versions = store.list_note_versions(TENANT, note.note_id, limit=10, next_token=None).entries
    assert [(v.version, v.content) for v in versions] == [(2, REDACTED), (1, REDACTED)]


def test_delete_note_removes_the_note_its_versions_and_its_claims(store: KnowledgeStore) -> None:
    note = _created(store, _draft(semantic_key="build.python"))
    revised = _revise(store, note, "second")
    claims = [key_claim("user-1", Scope.PRIVATE, "build.python"), content_claim(revised)]

    store.delete_note(TENANT, note.note_id, claims=claims, expected_version=2)

    assert store.get_note(TENANT, note.note_id) is None
    assert store.list_note_versions(TENANT, note.note_id, limit=10, next_token=None).entries == []
    assert [store.claim_holder(TENANT, claim) for claim in claims] == [None, None]


def test_delete_note_at_a_stale_version_conflicts_and_keeps_the_note(store: KnowledgeStore) -> None:
    note = _created(store, _draft(semantic_key="build.python"))
    revised = _revise(store, note, "second")
    claims = [key_claim("user-1", Scope.PRIVATE, "build.python"), content_claim(revised)]

    with pytest.raises(ConflictError) as raised:
        store.delete_note(TENANT, note.note_id, claims=claims, expected_version=1)

    assert raised.value.current_version == 2
    assert store.get_note(TENANT, note.note_id) == revised
    versions = store.list_note_versions(TENANT, note.note_id, limit=10, next_token=None).entries
    assert [v.content for v in versions] == ["second", note.content]
    assert [store.claim_holder(TENANT, claim) for claim in claims] == [note.note_id] * 2


def test_delete_note_racing_upserts_deletes_everything_or_nothing(store: KnowledgeStore) -> None:
    note = _created(store)
    writers = 6

    def revise(n: int) -> Callable[[], object]:
        revised = revised_note(note, _draft(f"writer {n}"), supersedes=(), now=NOW + timedelta(seconds=n))

        def run() -> object:
            try:
                store.commit_notes(TENANT, [NoteWrite(previous=note, note=revised)])
            except (ConflictError, ResourceUnavailableError) as error:
                return error
            return revised

        return run

    def delete() -> object:
        try:
            store.delete_note(TENANT, note.note_id, claims=claims_of(note), expected_version=1)
        except ConflictError as error:
            return error
        return None

    calls = [revise(n) for n in range(writers // 2)] + [delete] + [revise(n) for n in range(3, writers)]
    with ThreadPoolExecutor(max_workers=len(calls)) as pool:
        outcomes = list(pool.map(lambda call: call(), calls))

    deleted = outcomes[writers // 2]
    winners = [outcome for outcome in outcomes if isinstance(outcome, Note)]
    versions = store.list_note_versions(TENANT, note.note_id, limit=10, next_token=None).entries
    if isinstance(deleted, ConflictError):  # a writer won: nothing of the note is gone
        assert len(winners) == 1
        assert store.get_note(TENANT, note.note_id) == winners[0]
        assert [v.content for v in versions] == [winners[0].content, note.content]
    else:  # the delete won: every writer lost and nothing is left
        assert winners == []
        assert store.get_note(TENANT, note.note_id) is None
        assert versions == []


def test_commit_notes_concurrent_upserts_of_one_version_have_one_winner(store: KnowledgeStore) -> None:
    note = _created(store)
    writers = 8

    def write(n: int) -> Callable[[], object]:
        revised = revised_note(note, _draft(f"writer {n}"), supersedes=(), now=NOW + timedelta(seconds=n))

        def run() -> object:
            try:
                store.commit_notes(TENANT, [NoteWrite(previous=note, note=revised)])
            except ConflictError as error:
                return error
            return revised

        return run

    calls = [write(n) for n in range(writers)]
    with ThreadPoolExecutor(max_workers=writers) as pool:
        outcomes = list(pool.map(lambda call: call(), calls))

    winners = [outcome for outcome in outcomes if isinstance(outcome, Note)]
    losers = [outcome for outcome in outcomes if isinstance(outcome, ConflictError)]
    assert len(winners) == 1
    assert [loser.current_version for loser in losers] == [2] * (writers - 1)
    assert store.get_note(TENANT, note.note_id) == winners[0]
    versions = store.list_note_versions(TENANT, note.note_id, limit=10, next_token=None).entries
    assert [v.content for v in versions] == [winners[0].content, note.content]
