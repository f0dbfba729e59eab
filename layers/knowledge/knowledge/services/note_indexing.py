"""Keeping the note index in step with the store (DESIGN §9: notes are indexed from the table's
stream like items, into their own index).

The stream record is only a trigger: the indexer reads the note's current state and makes the
index match it, with the note's version as the index's external version, so duplicated, replayed
or out-of-order records cannot regress anything.

- active note (superseded or not, expired or not: search filters those at read time) → its
  content, embedded, at ``version = note.version``; then ``indexed_version`` is marked on the note,
  conditioned on that version;
- forgotten note → removed (``remove_note`` at its version, a tombstone);
- note gone (a hard forget, a TTL sweep) → removed at the last version the stream reported.

A note removed by its own expiry (the TTL sweep: ``StoreChange.expired``) is also taken off the
tenant's stored items count, which a hard forget does in its own transaction; the store counts each
note out once (``release_expired_note``), so redelivered and replayed records change nothing more.

Writes that left ``version`` unchanged (the indexer's own mark) are ignored. Errors propagate.
"""

from __future__ import annotations

from contextlib import suppress

from knowledge.domain.changes import ChangeKind, IndexAction, StoreChange
from knowledge.domain.memory.notes import Note, NoteStatus
from knowledge.domain.memory.retrieval import IndexedNote
from knowledge.errors import ConflictError, ResourceUnavailableError
from knowledge.observability import logger
from knowledge.ports import Embedder, NoteIndex, NoteStore


class NoteIndexingService:
    """Builds note index entries from the store. Thread-safe if its ports are."""

    def __init__(self, store: NoteStore, index: NoteIndex, embedder: Embedder) -> None:
        self._store = store
        self._index = index
        self._embedder = embedder

    def apply(self, change: StoreChange) -> IndexAction:
        """Bring the index in line with the store for the note ``change`` touched (``IGNORED`` for
        any other record)."""
        notes = change.note
        if notes is None:
            return IndexAction.IGNORED
        old, new = notes
        if (
            change.kind is ChangeKind.MODIFY
            and old is not None
            and new is not None
            and old.version == new.version
        ):
            return IndexAction.IGNORED
        if change.kind is ChangeKind.REMOVE and change.expired and old is not None:
            self._store.release_expired_note(old.tenant_id, old.note_id)
        known = new or old
        assert known is not None  # a note change carries at least one image
        return self.sync_note(known.tenant_id, known.note_id, last_known_version=known.version)

    def sync_note(self, tenant_id: str, note_id: str, *, last_known_version: int) -> IndexAction:
        """Make the index hold what the store says of one note now (see the module docs)."""
        note = self._store.get_note(tenant_id, note_id)
        if note is None:
            self._index.remove_note(tenant_id, note_id, version=last_known_version)
            logger.info("note removed from the index", extra={"tenant_id": tenant_id, "note_id": note_id})
            return IndexAction.REMOVED
        if note.status is NoteStatus.FORGOTTEN:
            self._index.remove_note(tenant_id, note_id, version=note.version)
            return IndexAction.REMOVED
        [vector] = self._embedder.embed([note.content])
        [written] = self._index.upsert_notes([indexed_note(note, vector)])
        if not written:
            return IndexAction.SUPERSEDED
        # the note may have moved on meanwhile: its own change re-indexes it
        with suppress(ConflictError, ResourceUnavailableError):
            self._store.set_note_indexed_version(tenant_id, note_id, note.version)
        return IndexAction.INDEXED


def indexed_note(note: Note, vector: list[float]) -> IndexedNote:
    """What the note index holds of ``note`` at its version, with the embedding of its content."""
    return IndexedNote(
        tenant_id=note.tenant_id,
        note_id=note.note_id,
        version=note.version,
        owner_id=note.owner_id,
        team_id=note.team_id,
        scope=note.scope,
        agent_id=note.agent_id,
        memory_type=note.memory_type,
        path=note.path,
        content=note.content,
        importance=note.importance,
        updated_at=note.updated_at,
        superseded=note.superseded_by is not None,
        expires_at=note.expires_at,
        vector=vector,
    )
