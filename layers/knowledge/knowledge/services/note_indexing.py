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

With a history index (DESIGN §10 "Time"), every sync also makes it hold each active version of the
note with its validity interval (``domain.as_of.note_history``), read from the note's immutable
version records: a version's interval is closed when the next one is written, so the whole history
is rewritten from the table each time (idempotent; a note has few versions). A gone or redacted
note leaves the history index too (its tombstone keeps late writes out). This costs one version
listing, one embedding call (the embedder's cache answers for versions seen before) and one index
write per synced note.

``apply_many`` applies the note changes of one stream batch together, with the same outcome for
each note as ``apply``: one batched read of the notes per tenant (``get_notes``), one ``embed`` call
for every note to index, one ``upsert_notes`` (one index commit) and the indexed marks in one
write per tenant (``set_notes_indexed_versions``), then for the history index one version listing
per note, one ``embed`` call and one ``upsert_notes`` for all their versions; a note reported by
several records of the batch is synced once (its later records answer ``SUPERSEDED``). When the
embedding or the index write of the batch fails, it is tried again one note at a time, so an error
is the outcome of the records it concerns only (a failed read: that tenant's records) and the
consumer reports failures per record.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from datetime import datetime

from knowledge.domain.access.rates import content_bytes
from knowledge.domain.as_of import note_history
from knowledge.domain.changes import ChangeKind, IndexAction, StoreChange
from knowledge.domain.memory.notes import VERSIONS_LIMIT_MAX, Note, NoteStatus
from knowledge.domain.memory.retrieval import IndexedNote
from knowledge.errors import ConflictError, ResourceUnavailableError
from knowledge.observability import logger
from knowledge.ports import Embedder, NoteIndex, NoteStore

NoteOutcome = IndexAction | Exception
"""What applying one record did, or the error it met."""


@dataclass
class _Target:
    """A note to sync in a batch: the highest version its records reported, and their positions."""

    tenant_id: str
    note_id: str
    last_known_version: int
    positions: list[int] = field(default_factory=list)

    @property
    def key(self) -> tuple[str, str]:
        return self.tenant_id, self.note_id


class NoteIndexingService:
    """Builds note index entries from the store. Thread-safe if its ports are."""

    def __init__(
        self, store: NoteStore, index: NoteIndex, embedder: Embedder, history: NoteIndex | None = None
    ) -> None:
        self._store = store
        self._index = index
        self._embedder = embedder
        self._history = history

    def held_version(self, tenant_id: str, note_id: str) -> int:
        """The highest version the note index and the history index hold for the note, live or a
        tombstone (0 for none)."""
        indexes = [self._index] if self._history is None else [self._index, self._history]
        return max((index.held_version(tenant_id, note_id) or 0) for index in indexes)

    def apply(self, change: StoreChange) -> IndexAction:
        """Bring the index in line with the store for the note ``change`` touched (``IGNORED`` for
        any other record)."""
        known = self._known(change)
        if known is None:
            return IndexAction.IGNORED
        return self.sync_note(known.tenant_id, known.note_id, last_known_version=known.version)

    def apply_many(self, changes: Sequence[StoreChange]) -> list[NoteOutcome]:
        """``apply`` for every change of one batch, together (see the module docs); one outcome per
        change, in order: its ``IndexAction`` or the exception that applying it raised."""
        outcomes: list[NoteOutcome | None] = [None] * len(changes)
        targets: dict[tuple[str, str], _Target] = {}
        for position, change in enumerate(changes):
            try:
                known = self._known(change)
            except Exception as error:
                outcomes[position] = error
                continue
            if known is None:
                outcomes[position] = IndexAction.IGNORED
                continue
            key = (known.tenant_id, known.note_id)
            target = targets.setdefault(key, _Target(known.tenant_id, known.note_id, known.version))
            target.last_known_version = max(target.last_known_version, known.version)
            target.positions.append(position)
        actions = self._sync_many(list(targets.values()))
        synced = [target for target in targets.values() if not isinstance(actions[target.key], Exception)]
        actions.update(self._sync_histories(synced))
        for target in targets.values():
            action = actions[(target.tenant_id, target.note_id)]
            first, *later = target.positions
            outcomes[first] = action
            for position in later:
                outcomes[position] = action if isinstance(action, Exception) else IndexAction.SUPERSEDED
        return [outcome if outcome is not None else IndexAction.IGNORED for outcome in outcomes]

    def sync_note(self, tenant_id: str, note_id: str, *, last_known_version: int) -> IndexAction:
        """Make the index (and the history index) hold what the store says of one note now (see the
        module docs)."""
        action = self._sync_current(tenant_id, note_id, last_known_version=last_known_version)
        self.sync_history(tenant_id, note_id, last_known_version=last_known_version)
        return action

    def sync_history(self, tenant_id: str, note_id: str, *, last_known_version: int) -> None:
        """Make the history index hold every active version of the note with its interval, or
        nothing of a gone or redacted note (no-op without a history index)."""
        outcome = self._sync_histories([_Target(tenant_id, note_id, last_known_version)])
        error = outcome.get((tenant_id, note_id))
        if isinstance(error, Exception):
            raise error

    def _sync_histories(self, targets: list[_Target]) -> dict[tuple[str, str], NoteOutcome]:
        """``sync_history`` for every target: one version listing per note, then one embedding call
        and one index write for all the versions to hold (when one fails, again one note at a time,
        so an error is the outcome of its own notes only). Only errors are returned."""
        if self._history is None or not targets:
            return {}
        errors: dict[tuple[str, str], NoteOutcome] = {}
        entries: list[tuple[_Target, Note, datetime, datetime | None]] = []
        for target in targets:
            try:
                versions = self._versions(target.tenant_id, target.note_id)
                intervals = note_history(versions)
                if not intervals:
                    newest = max((version.version for version in versions), default=0)
                    version = max(newest, target.last_known_version)
                    self._history.remove_note(target.tenant_id, target.note_id, version=version)
                entries.extend((target, *interval) for interval in intervals)
            except Exception as error:
                errors[target.key] = error
        if not entries:
            return errors
        try:
            vectors = self._embedder.embed([version.content for _, version, _, _ in entries])
            self._history.upsert_notes(
                [
                    indexed_note(version, vector).model_copy(update={"valid_from": start, "valid_to": end})
                    for (_, version, start, end), vector in zip(entries, vectors, strict=True)
                ]
            )
        except Exception:
            if len(targets) == 1:
                raise
            for target in {entry[0].key: entry[0] for entry in entries}.values():
                errors.update(self._sync_histories([target]))
        return errors

    def _versions(self, tenant_id: str, note_id: str) -> list[Note]:
        versions: list[Note] = []
        next_token: str | None = None
        while True:
            page = self._store.list_note_versions(
                tenant_id, note_id, limit=VERSIONS_LIMIT_MAX, next_token=next_token
            )
            versions.extend(page.entries)
            next_token = page.next_token
            if next_token is None:
                return versions

    def _sync_current(self, tenant_id: str, note_id: str, *, last_known_version: int) -> IndexAction:
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
            self._store.set_note_indexed_version(tenant_id, note_id, note.version, owner_id=note.owner_id)
        return IndexAction.INDEXED

    def _known(self, change: StoreChange) -> Note | None:
        """The note image ``change`` reports (``None``: nothing to sync), after releasing an expired
        note's count as ``apply`` does."""
        notes = change.note
        if notes is None:
            return None
        old, new = notes
        if (
            change.kind is ChangeKind.MODIFY
            and old is not None
            and new is not None
            and old.version == new.version
        ):
            return None
        if change.kind is ChangeKind.REMOVE and change.expired and old is not None:
            self._store.release_expired_note(
                old.tenant_id, old.note_id, content_bytes=content_bytes(old.content)
            )
        return new or old

    def _sync_many(self, targets: list[_Target]) -> dict[tuple[str, str], NoteOutcome]:
        """``sync_note`` for every target: one read per tenant, one embedding call, one index write,
        one marking write per tenant."""
        outcomes: dict[tuple[str, str], NoteOutcome] = {}
        current: dict[tuple[str, str], Note | None] = {}
        by_tenant: dict[str, list[_Target]] = {}
        for target in targets:
            by_tenant.setdefault(target.tenant_id, []).append(target)
        for tenant_id, tenant_targets in by_tenant.items():
            try:
                stored = self._store.get_notes(tenant_id, [target.note_id for target in tenant_targets])
            except Exception as error:
                outcomes.update({(tenant_id, target.note_id): error for target in tenant_targets})
                continue
            current.update(
                {(tenant_id, target.note_id): stored.get(target.note_id) for target in tenant_targets}
            )
        to_index: list[Note] = []
        for target in targets:
            key = (target.tenant_id, target.note_id)
            if key in outcomes:
                continue
            note = current[key]
            if note is not None and note.status is not NoteStatus.FORGOTTEN:
                to_index.append(note)
                continue
            try:
                version = target.last_known_version if note is None else note.version
                self._index.remove_note(target.tenant_id, target.note_id, version=version)
            except Exception as error:
                outcomes[key] = error
                continue
            if note is None:
                logger.info(
                    "note removed from the index",
                    extra={"tenant_id": target.tenant_id, "note_id": target.note_id},
                )
            outcomes[key] = IndexAction.REMOVED
        outcomes.update(self._index_many(to_index))
        return outcomes

    def _index_many(self, notes: list[Note]) -> dict[tuple[str, str], NoteOutcome]:
        """Embed and write ``notes`` at their versions (one call each; when a call fails, again one
        note at a time, so its error is the outcome of the notes it concerns only), then mark the
        written ones, one write per tenant."""
        outcomes: dict[tuple[str, str], NoteOutcome] = {}
        by_tenant: dict[str, list[IndexedNote]] = {}
        for entry in self._written(self._embedded(notes, outcomes), outcomes):
            by_tenant.setdefault(entry.tenant_id, []).append(entry)
        for tenant_id, entries in by_tenant.items():
            # a note that moved on meanwhile keeps its mark: its own change re-indexes it
            try:
                self._store.set_notes_indexed_versions(
                    tenant_id,
                    [(entry.note_id, entry.version) for entry in entries],
                    owners={entry.note_id: entry.owner_id for entry in entries},
                )
            except Exception as error:
                outcomes.update({(tenant_id, entry.note_id): error for entry in entries})
                continue
            outcomes.update({(tenant_id, entry.note_id): IndexAction.INDEXED for entry in entries})
        return outcomes

    def _embedded(self, notes: list[Note], outcomes: dict[tuple[str, str], NoteOutcome]) -> list[IndexedNote]:
        """``notes`` with the embeddings of their contents; a note whose embedding failed is left
        out, with its error in ``outcomes``."""
        if not notes:
            return []
        try:
            vectors = self._embedder.embed([note.content for note in notes])
        except Exception as error:
            if len(notes) == 1:
                outcomes[(notes[0].tenant_id, notes[0].note_id)] = error
                return []
            return [entry for note in notes for entry in self._embedded([note], outcomes)]
        return [indexed_note(note, vector) for note, vector in zip(notes, vectors, strict=True)]

    def _written(
        self, entries: list[IndexedNote], outcomes: dict[tuple[str, str], NoteOutcome]
    ) -> list[IndexedNote]:
        """The entries the index took (``upsert_notes``, one commit); the others' outcome is
        ``SUPERSEDED`` (it holds a newer version) or the error their write met."""
        if not entries:
            return []
        try:
            taken = self._index.upsert_notes(entries)
        except Exception as error:
            if len(entries) == 1:
                outcomes[(entries[0].tenant_id, entries[0].note_id)] = error
                return []
            return [written for entry in entries for written in self._written([entry], outcomes)]
        for entry, held in zip(entries, taken, strict=True):
            if not held:
                outcomes[(entry.tenant_id, entry.note_id)] = IndexAction.SUPERSEDED
        return [entry for entry, held in zip(entries, taken, strict=True) if held]


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
