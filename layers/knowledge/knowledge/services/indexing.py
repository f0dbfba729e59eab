"""Keeping the search index in step with the store (DESIGN §6: the table's stream is the outbox).

The stream is only a trigger: for every relevant change the indexer reads the *current* state from
the store and makes the index match it, writing with the item's version as the index's external
version. Duplicated, replayed or out-of-order records therefore cannot regress anything; at worst
they repeat work that the index refuses (``upsert`` → ``False``: it already holds a newer version).

What the index holds for an item (``sync_item``):

- published item with a current revision in an active base → that revision, chunked and embedded
  (``build_indexed_item``), at ``version = item.version``; the item's ``indexed_revision_id`` is
  then set, conditioned on the version that was indexed, so a slow indexer never overwrites a newer
  mark;
- draft or archived item → nothing: ``remove_item(version=item.version)`` tombstones it, and the
  ``indexed_revision_id`` mark is cleared;
- item of an inactive or missing base → left alone: the base's own change removed its chunks
  (``remove_base``) and its reactivation re-indexes every item. A per-item tombstone here would
  refuse that re-index, which writes the same item versions again. Search re-checks every hit
  against the store (read-time truth), so a chunk that slips in meanwhile is never answered.

With a work queue (``work``; SQS on AWS and in the local runtime) the stream consumer only reads
and enqueues: a publishable item becomes ``IndexWork`` messages, one per part of its current
revision (``index_work.part_count``: about 8,000 characters each, a second or two of embedding),
of which the first ``FANOUT_WINDOW`` (one) is sent at once; the work consumer indexes a part
(``index_part``), writing it with ``SearchIndex.upsert_part`` at the item's version, and then sends
the next part, which queues behind whatever arrived meanwhile. So a large revision never holds up
the stream, every item being indexed holds one place in the queue, and another item's work waits
for at most one part of each. A part planned for a version the item has left is dropped
(the newer version's own change queued its parts), and the index refuses it anyway. The
``indexed_revision_id`` mark is set by the part whose write completed the version. Without a work
queue (tests, scripts) the same parts are indexed in process, one after another.

A base whose ``status`` changed (``sync_base``): inactive or gone → ``remove_base``; active → every
listed item is re-synced, a page at a time. Notes go to ``NoteIndexingService``. Other records
(revisions, pages, guards, tokens,
embedding-cache and idempotency records) and item writes that left ``version`` unchanged (the
indexer's own ``set_indexed_revision``) are ignored, so the indexer never feeds itself.

Errors propagate (``DependencyUnavailableError`` and the like): a change is never reported applied
unless it was.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from knowledge.domain.changes import ChangeKind, IndexAction, StoreChange
from knowledge.domain.models import BaseStatus, ItemStatus, KnowledgeBase, KnowledgeItem, Revision
from knowledge.domain.retrieval.chunking import Chunker, embedding_text
from knowledge.domain.retrieval.hits import Chunk, IndexedItem, history_key
from knowledge.domain.retrieval.index_work import (
    FANOUT_WINDOW,
    ORDINAL_STRIDE,
    IndexWork,
    part_count,
    part_span,
    part_window,
)
from knowledge.errors import ConflictError, DependencyUnavailableError, ResourceUnavailableError
from knowledge.observability import logger
from knowledge.ports import CorpusStore, Embedder, SearchIndex, WorkQueue
from knowledge.services.documents import build_indexed_item

if TYPE_CHECKING:
    from knowledge.services.note_indexing import NoteIndexingService

REINDEX_PAGE_SIZE = 50
"""Items read, embedded and written to the index per step of a base re-index."""


@dataclass
class ReindexCounts:
    """Outcome of re-syncing a base: ``scanned`` items, of which ``indexed``, ``queued`` (sent to
    the work queue), ``removed`` (draft), ``superseded`` (index already newer) and ``skipped``;
    ``active`` is the base's status."""

    knowledge_base_id: str
    active: bool
    scanned: int = 0
    indexed: int = 0
    queued: int = 0
    removed: int = 0
    superseded: int = 0
    skipped: int = 0

    def count(self, action: IndexAction) -> None:
        self.scanned += 1
        if action is IndexAction.INDEXED:
            self.indexed += 1
        elif action is IndexAction.QUEUED:
            self.queued += 1
        elif action is IndexAction.REMOVED:
            self.removed += 1
        elif action is IndexAction.SUPERSEDED:
            self.superseded += 1
        else:
            self.skipped += 1


@dataclass
class IndexingBatch:
    """Applies the changes of one stream batch, syncing each item and base at most once.

    Every record of a batch was written before the batch was read, so the first sync of an item
    (which reads the store afterwards) already reflects every later record of it in the batch.
    """

    service: IndexingService
    _synced: set[tuple[str, str]] = field(default_factory=set)

    def apply(self, change: StoreChange) -> IndexAction:
        """Apply one change; see ``IndexingService.apply``."""
        return self.service.apply(change, synced=self._synced)

    def apply_many(self, changes: Sequence[StoreChange]) -> list[IndexAction | Exception]:
        """Apply every change of the batch; one outcome per change, in order: its ``IndexAction``,
        or the exception applying it raised (the consumer reports that record failed).

        The note changes are applied together (``NoteIndexingService.apply_many``: one read per
        tenant, one embedding call, one index write); the others one by one, in order, as ``apply``.
        """
        outcomes: list[IndexAction | Exception] = [IndexAction.IGNORED] * len(changes)
        notes = [position for position, change in enumerate(changes) if change.note is not None]
        if notes and self.service.notes is not None:
            applied = self.service.notes.apply_many([changes[position] for position in notes])
            for position, outcome in zip(notes, applied, strict=True):
                outcomes[position] = outcome
        for position, change in enumerate(changes):
            if change.note is not None:
                continue
            try:
                outcomes[position] = self.apply(change)
            except Exception as error:
                outcomes[position] = error
        return outcomes


class IndexingService:
    """Builds index entries from the store. Thread-safe if its ports are."""

    def __init__(
        self,
        store: CorpusStore,
        index: SearchIndex,
        embedder: Embedder,
        chunker: Chunker,
        notes: NoteIndexingService | None = None,
        work: WorkQueue | None = None,
        history: SearchIndex | None = None,
    ) -> None:
        """``notes`` indexes the notes the stream reports (their changes are ignored without it);
        ``work`` receives the parts to index (without it, they are indexed in process); ``history``
        is the knowledge history index (``sync_history``; none is kept without it)."""
        self._history = history
        self._notes = notes
        self._work = work
        self._store = store
        self._index = index
        self._embedder = embedder
        self._chunker = chunker

    @property
    def notes(self) -> NoteIndexingService | None:
        """The note indexer the stream's note changes go to (``None``: they are ignored)."""
        return self._notes

    def batch(self) -> IndexingBatch:
        """A fresh batch scope for the records of one stream invocation."""
        return IndexingBatch(self)

    def apply(self, change: StoreChange, *, synced: set[tuple[str, str]] | None = None) -> IndexAction:
        """Bring the index in line with the store for the record ``change`` touched.

        ``synced`` collects ``(tenant_id, id)`` of items and bases already synced in this batch; a
        later change of one of them is answered ``SUPERSEDED`` without reading the store again.
        """
        if change.note is not None:
            return self._notes.apply(change) if self._notes is not None else IndexAction.IGNORED
        seen = synced if synced is not None else set()
        items = change.item
        if items is not None:
            return self._apply_item_change(change.kind, *items, seen)
        bases = change.base
        if bases is not None:
            return self._apply_base_change(change.kind, *bases, seen)
        return IndexAction.IGNORED

    def sync_item(
        self,
        tenant_id: str,
        knowledge_item_id: str,
        *,
        last_known_version: int,
        history_since: int | None = None,
    ) -> IndexAction:
        """Make the index hold what the store says of one item now (see the module docs).

        ``last_known_version`` tombstones an item that no longer exists in the store, and names the
        write whose transition the history index records (``sync_history``), unless
        ``history_since`` names an earlier state to record from.
        """
        # The live index first: what is searchable now must not wait for the history.
        action = self._sync_live(tenant_id, knowledge_item_id, last_known_version=last_known_version)
        self.sync_history(
            tenant_id,
            knowledge_item_id,
            since_version=last_known_version if history_since is None else history_since,
        )
        return action

    def _sync_live(self, tenant_id: str, knowledge_item_id: str, *, last_known_version: int) -> IndexAction:
        item = self._store.get_item(tenant_id, knowledge_item_id)
        if item is None:
            self._index.remove_item(tenant_id, knowledge_item_id, version=last_known_version)
            return IndexAction.REMOVED
        if not _is_publishable(item):
            return self._remove(item)
        base = self._store.get_base(tenant_id, item.knowledge_base_id)
        if base is None or base.status is not BaseStatus.ACTIVE:
            return IndexAction.SKIPPED
        return self._sync_publishable([(item, base)])[0]

    def sync_history(
        self, tenant_id: str, knowledge_item_id: str, *, since_version: int, whole: bool = False
    ) -> int:
        """Record in the history index (DESIGN §11) the transitions from the item's state
        ``since_version`` on: the state before it is closed at that state's moment, and each state
        from it on is written with its interval (open while current). Only published states with a
        current revision are held; a state's entry is ``{item}@{state version}``, written at the
        version of the state that closed it (its own while open), so a late open write never
        reopens a closed one. Returns the entries written; 0 without a history index, for an item
        the store does not hold (or whose base it does not), or with no such state.

        One state listing of the item, and per revision involved one revision read, one content read
        and one embedding call (the embedding cache answers for a revision seen before). With a work
        queue, the open state's revision of more than one part is left out (``_deferred``) unless
        ``whole``: the work consumer records it once its parts are indexed (``index_part``).
        """
        if self._history is None:
            return 0
        item = self._store.get_item(tenant_id, knowledge_item_id)
        if item is None:
            return 0
        base = self._store.get_base(tenant_id, item.knowledge_base_id)
        if base is None:
            return 0
        states = sorted(self._store.list_item_states(tenant_id, knowledge_item_id), key=lambda s: s.version)
        built: dict[str, IndexedItem | None] = {}
        entries: list[IndexedItem] = []
        for position, state in enumerate(states):
            if state.version < since_version - 1:
                continue
            if state.status is not ItemStatus.PUBLISHED or state.current_revision_id is None:
                continue
            revision_id = state.current_revision_id
            if revision_id not in built:
                revision = self._store.get_revision(tenant_id, knowledge_item_id, revision_id)
                is_open = position == len(states) - 1
                built[revision_id] = (
                    None
                    if revision is None or (is_open and not whole and self._deferred(revision))
                    else self._indexed_revision(item, base, revision)
                )
            entry = built[revision_id]
            if entry is None:
                continue
            following = states[position + 1] if position + 1 < len(states) else None
            entries.append(
                entry.model_copy(
                    update={
                        "knowledge_item_id": history_key(knowledge_item_id, state.version),
                        "version": following.version if following is not None else state.version,
                        "valid_from": state.at,
                        "valid_to": following.at if following is not None else None,
                    }
                )
            )
        if entries:
            self._history.upsert_many(entries)
        logger.info(
            "item history indexed",
            extra={"tenant_id": tenant_id, "knowledge_item_id": knowledge_item_id, "entries": len(entries)},
        )
        return len(entries)

    def embedded_texts(self, revision: Revision) -> list[str]:
        """The texts the indexer embeds for ``revision``: each chunk with the title prepended
        (``embedding_text``), chunked part by part as both indexes do, and whole as entries written
        by an earlier version were (the same chunks when the revision is one part), distinct, in
        order. These name
        the revision's rows of the embedding cache. One content read; nothing is embedded."""
        content = self._store.read_all_content(revision)
        spans = [content]
        parts = part_count(revision.total_chars)
        if parts > 1:
            for part in range(parts):
                start, end = part_span(content, 0, part=part, total_chars=revision.total_chars)
                spans.append(content[start:end])
        texts = (
            embedding_text(revision.title, chunk.text)
            for span in spans
            for chunk in (self._chunker.split(span) or [Chunk(ordinal=0, start=0, end=0, text="")])
        )
        return list(dict.fromkeys(texts))

    def purge_item(
        self, tenant_id: str, knowledge_item_id: str, *, version: int, history_keys: Sequence[str]
    ) -> None:
        """Remove the item's documents from the live index and its ``history_keys`` entries from
        the history index now, each left as a tombstone at ``version`` (ids and version only, no
        text) so a late write of the item, which carries at most that version, is refused."""
        self._index.remove_item(tenant_id, knowledge_item_id, version=version)
        if self._history is not None:
            for key in history_keys:
                self._history.remove_item(tenant_id, key, version=version)
        logger.info(
            "item purged from the indexes",
            extra={
                "tenant_id": tenant_id,
                "knowledge_item_id": knowledge_item_id,
                "history": len(history_keys),
            },
        )

    def remove_base(self, tenant_id: str, knowledge_base_id: str) -> None:
        """Remove every document of the base from the live index now (``SearchIndex.remove_base``)."""
        self._index.remove_base(tenant_id, knowledge_base_id)

    def held_item_version(self, tenant_id: str, knowledge_item_id: str) -> int:
        """The version the live index holds for the item, live or its tombstone (0 for none): a
        restore below it would be refused (``BundleService``)."""
        return self._index.held_version(tenant_id, knowledge_item_id) or 0

    def held_note_version(self, tenant_id: str, note_id: str) -> int:
        """The highest version the note indexes hold for the note (0 for none, or without a note
        indexer)."""
        return 0 if self._notes is None else self._notes.held_version(tenant_id, note_id)

    def forget_texts(self, texts: Sequence[str]) -> None:
        """Drop the cached embeddings of ``texts`` (``Embedder.forget``)."""
        if texts:
            self._embedder.forget(texts)

    def _deferred(self, revision: Revision) -> bool:
        """True for a revision the stream consumer leaves out of the history index while it is the
        open state's: with a work queue, one of several parts, whose embedding would hold up the
        stream (DESIGN §11); the work consumer records it once its last part is indexed."""
        if self._work is None or part_count(revision.total_chars) == 1:
            return False
        logger.info(
            "revision's history left to its last part",
            extra={"knowledge_revision_id": revision.knowledge_revision_id, "chars": revision.total_chars},
        )
        return True

    def index_part(self, work: IndexWork) -> IndexAction:
        """Index one part (the work consumer's step): read the part's pages, chunk and embed them,
        write them with ``upsert_part``; set the indexed mark when the version is complete, and
        send the part ``FANOUT_WINDOW`` further on unless the index already holds it.

        A message planned for another part layout (``parts`` other than ``part_count`` of the
        revision: sent before a change of ``PART_TARGET_CHARS``) is dropped, never written at the
        wrong offsets.

        Answers ``INDEXED`` (the version is complete), ``PARTIAL``, ``SUPERSEDED`` (the item left
        the planned version or revision, or the index holds a newer one) or ``SKIPPED`` (its base
        is inactive or missing). Errors propagate (``DependencyUnavailableError``), so the message
        is retried; a retry repeats nothing the index already holds.
        """
        item = self._store.get_item(work.tenant_id, work.knowledge_item_id)
        if (
            item is None
            or item.version != work.version
            or not _is_publishable(item)
            or item.current_revision_id != work.knowledge_revision_id
        ):
            logger.info(
                "index work superseded",
                extra={"knowledge_item_id": work.knowledge_item_id, "version": work.version},
            )
            return IndexAction.SUPERSEDED
        base = self._store.get_base(work.tenant_id, item.knowledge_base_id)
        if base is None or base.status is not BaseStatus.ACTIVE:
            return IndexAction.SKIPPED
        revision = self._revision(item)
        if work.parts != part_count(revision.total_chars):
            logger.warning(
                "index work of another part layout dropped",
                extra={"knowledge_item_id": work.knowledge_item_id, "parts": work.parts},
            )
            return IndexAction.SUPERSEDED
        offset, limit = part_window(work.part, revision.total_chars)
        window = self._store.read_content(revision, offset=offset, limit=limit)
        start, end = part_span(window.text, window.offset, part=work.part, total_chars=revision.total_chars)
        text = window.text[start - window.offset : end - window.offset]
        entry = self._build(item, base, revision, text, offset=start, part=work.part)
        outcome = self._index.upsert_part(entry, part=work.part, parts=work.parts)
        if not outcome.written:
            return IndexAction.SUPERSEDED
        following = work.part + FANOUT_WINDOW
        if self._work is not None and following < work.parts and following not in outcome.held:
            self._work.send([work.model_copy(update={"part": following})])
        logger.info(
            "item part indexed",
            extra={
                "tenant_id": item.tenant_id,
                "knowledge_item_id": item.knowledge_item_id,
                "version": item.version,
                "part": work.part,
                "parts": work.parts,
                "held": len(outcome.held),
                "chunks": len(entry.chunks),
            },
        )
        if not outcome.complete:
            return IndexAction.PARTIAL
        self._mark(item, revision.knowledge_revision_id)
        if work.parts > 1:  # the stream consumer left this revision to the history: record it now
            self.sync_history(item.tenant_id, item.knowledge_item_id, since_version=item.version, whole=True)
        return IndexAction.INDEXED

    def sync_base(self, tenant_id: str, knowledge_base_id: str) -> ReindexCounts:
        """Make the index hold what the store says of a whole base now.

        Inactive or missing → every chunk of the base is removed; active → each listed (not archived)
        item is re-read and re-synced, ``REINDEX_PAGE_SIZE`` at a time, with one index write per page.
        """
        base = self._store.get_base(tenant_id, knowledge_base_id)
        counts = ReindexCounts(
            knowledge_base_id=knowledge_base_id, active=base is not None and base.status is BaseStatus.ACTIVE
        )
        if base is None or base.status is not BaseStatus.ACTIVE:
            self._index.remove_base(tenant_id, knowledge_base_id)
            logger.info(
                "knowledge base removed from the index",
                extra={"tenant_id": tenant_id, "knowledge_base_id": knowledge_base_id},
            )
            return counts
        next_token: str | None = None
        while True:
            page = self._store.list_items(
                tenant_id, knowledge_base_id, limit=REINDEX_PAGE_SIZE, next_token=next_token
            )
            for action in self._sync_listed(base, [entry.knowledge_item_id for entry in page.entries]):
                counts.count(action)
            next_token = page.next_token
            if next_token is None:
                break
        logger.info(
            "knowledge base re-indexed",
            extra={
                "tenant_id": tenant_id,
                "knowledge_base_id": knowledge_base_id,
                "scanned": counts.scanned,
                "indexed": counts.indexed,
                "removed": counts.removed,
                "superseded": counts.superseded,
            },
        )
        return counts

    # -- changes ----------------------------------------------------------------------------------

    def _apply_item_change(
        self,
        kind: ChangeKind,
        old: KnowledgeItem | None,
        new: KnowledgeItem | None,
        synced: set[tuple[str, str]],
    ) -> IndexAction:
        if kind is ChangeKind.MODIFY and old is not None and new is not None and old.version == new.version:
            return IndexAction.IGNORED  # e.g. the indexer's own indexed_revision_id mark
        known = new or old
        assert known is not None  # the change is an item change, so one side is an item
        key = (known.tenant_id, known.knowledge_item_id)
        if key in synced:
            return IndexAction.SUPERSEDED
        # An item inserted past its first version is a table restored (the local runtime replays
        # its stream): its whole history is recorded, not only its last transition.
        action = self.sync_item(
            known.tenant_id,
            known.knowledge_item_id,
            last_known_version=max(record.version for record in (old, new) if record is not None),
            history_since=1 if old is None else None,
        )
        synced.add(key)
        return action

    def _apply_base_change(
        self,
        kind: ChangeKind,
        old: KnowledgeBase | None,
        new: KnowledgeBase | None,
        synced: set[tuple[str, str]],
    ) -> IndexAction:
        if kind is ChangeKind.INSERT:
            return IndexAction.IGNORED  # a new base has no items yet
        if kind is ChangeKind.MODIFY and old is not None and new is not None and old.status == new.status:
            return IndexAction.IGNORED  # a rename: nothing indexed depends on the name
        known = new or old
        assert known is not None
        key = (known.tenant_id, known.knowledge_base_id)
        if key in synced:
            return IndexAction.SUPERSEDED
        counts = self.sync_base(known.tenant_id, known.knowledge_base_id)
        synced.add(key)
        return IndexAction.REINDEXED if counts.active else IndexAction.REMOVED

    # -- index writes -----------------------------------------------------------------------------

    def _sync_listed(self, base: KnowledgeBase, item_ids: list[str]) -> list[IndexAction]:
        """Re-sync listed items from a consistent read (listings come from an eventually consistent
        index), one ``upsert_many`` for the publishable ones."""
        current = self._store.get_items(base.tenant_id, item_ids)
        actions: dict[str, IndexAction] = {}
        publishable: list[tuple[KnowledgeItem, KnowledgeBase]] = []
        for item_id in item_ids:
            item = current.get(item_id)
            if item is None or item.knowledge_base_id != base.knowledge_base_id:
                actions[item_id] = IndexAction.SKIPPED
            elif _is_publishable(item):
                publishable.append((item, base))
            else:
                actions[item_id] = self._remove(item)
        for (item, _), action in zip(publishable, self._sync_publishable(publishable), strict=True):
            actions[item.knowledge_item_id] = action
        return [actions[item_id] for item_id in item_ids]

    def _sync_publishable(self, pairs: list[tuple[KnowledgeItem, KnowledgeBase]]) -> list[IndexAction]:
        """Queue the parts of each item (with a work queue), or index them here: revisions of one
        part together (``upsert_many``), larger ones part by part."""
        plans = [self._plan(item) for item, _ in pairs]
        if self._work is not None:
            self._work.send([work for plan in plans for work in plan[:FANOUT_WINDOW]])
            for item, _ in pairs:
                logger.info(
                    "item queued for indexing",
                    extra={"knowledge_item_id": item.knowledge_item_id, "version": item.version},
                )
            return [IndexAction.QUEUED] * len(pairs)
        whole = [pair for pair, plan in zip(pairs, plans, strict=True) if len(plan) == 1]
        actions = dict(zip((item.knowledge_item_id for item, _ in whole), self._upsert(whole), strict=True))
        for (item, _), plan in zip(pairs, plans, strict=True):
            if len(plan) > 1:
                actions[item.knowledge_item_id] = [self.index_part(work) for work in plan][-1]
        return [actions[item.knowledge_item_id] for item, _ in pairs]

    def _plan(self, item: KnowledgeItem) -> list[IndexWork]:
        revision = self._revision(item)
        parts = part_count(revision.total_chars)
        return [
            IndexWork(
                tenant_id=item.tenant_id,
                knowledge_item_id=item.knowledge_item_id,
                knowledge_revision_id=revision.knowledge_revision_id,
                version=item.version,
                part=part,
                parts=parts,
            )
            for part in range(parts)
        ]

    def _upsert(self, entries: Iterable[tuple[KnowledgeItem, KnowledgeBase]]) -> list[IndexAction]:
        pairs = list(entries)
        if not pairs:
            return []
        indexed = [self._indexed_item(item, base) for item, base in pairs]
        applied = self._index.upsert_many(indexed) if len(indexed) > 1 else [self._index.upsert(indexed[0])]
        actions = []
        for (item, _), entry, written in zip(pairs, indexed, applied, strict=True):
            if written:
                self._mark(item, entry.knowledge_revision_id)
            logger.info(
                "item indexed" if written else "index already newer",
                extra={
                    "tenant_id": item.tenant_id,
                    "knowledge_item_id": item.knowledge_item_id,
                    "knowledge_revision_id": entry.knowledge_revision_id,
                    "version": item.version,
                    "chunks": len(entry.chunks),
                },
            )
            actions.append(IndexAction.INDEXED if written else IndexAction.SUPERSEDED)
        return actions

    def _revision(self, item: KnowledgeItem) -> Revision:
        assert item.current_revision_id is not None  # _is_publishable
        revision = self._store.get_revision(item.tenant_id, item.knowledge_item_id, item.current_revision_id)
        if revision is None:
            # The store seals a revision before any item points at it: this is a broken store.
            logger.error(
                "current revision missing",
                extra={"tenant_id": item.tenant_id, "knowledge_item_id": item.knowledge_item_id},
            )
            raise DependencyUnavailableError("The knowledge store returned an inconsistent item.")
        return revision

    def _indexed_item(self, item: KnowledgeItem, base: KnowledgeBase) -> IndexedItem:
        return self._indexed_revision(item, base, self._revision(item))

    def _indexed_revision(self, item: KnowledgeItem, base: KnowledgeBase, revision: Revision) -> IndexedItem:
        """The revision as one index entry, chunked part by part as the work consumer chunks it
        (``index_part``), so its texts are the ones the embedding cache holds from its parts."""
        content = self._store.read_all_content(revision)
        parts = part_count(revision.total_chars)
        if parts == 1:
            return self._build(item, base, revision, content, offset=0, part=0)
        built = []
        for part in range(parts):
            start, end = part_span(content, 0, part=part, total_chars=revision.total_chars)
            built.append(self._build(item, base, revision, content[start:end], offset=start, part=part))
        return built[0].model_copy(
            update={
                "chunks": [chunk for entry in built for chunk in entry.chunks],
                "passages": [passage for entry in built for passage in entry.passages],
            }
        )

    def _build(
        self,
        item: KnowledgeItem,
        base: KnowledgeBase,
        revision: Revision,
        content: str,
        *,
        offset: int,
        part: int,
    ) -> IndexedItem:
        return build_indexed_item(
            chunker=self._chunker,
            embedder=self._embedder,
            tenant_id=item.tenant_id,
            knowledge_base_id=base.knowledge_base_id,
            knowledge_item_id=item.knowledge_item_id,
            knowledge_revision_id=revision.knowledge_revision_id,
            version=item.version,
            owner_id=base.owner_id,
            team_id=base.team_id,
            scope=base.scope.value,
            title=revision.title,
            content=content,
            offset=offset,
            first_ordinal=part * ORDINAL_STRIDE,
        )

    def _remove(self, item: KnowledgeItem) -> IndexAction:
        self._index.remove_item(item.tenant_id, item.knowledge_item_id, version=item.version)
        if item.indexed_revision_id is not None:
            self._mark(item, None)
        logger.info(
            "item removed from the index",
            extra={
                "tenant_id": item.tenant_id,
                "knowledge_item_id": item.knowledge_item_id,
                "status": item.status.value,
                "version": item.version,
            },
        )
        return IndexAction.REMOVED

    def _mark(self, item: KnowledgeItem, knowledge_revision_id: str | None) -> None:
        """Set ``indexed_revision_id`` while the item is still at the version just indexed; if it
        moved on, the newer version's own change sets the mark."""
        if item.indexed_revision_id == knowledge_revision_id:
            return
        try:
            self._store.set_indexed_revision(
                item.tenant_id, item.knowledge_item_id, knowledge_revision_id, expected_version=item.version
            )
        except (ConflictError, ResourceUnavailableError):
            logger.info(
                "indexed mark superseded",
                extra={"knowledge_item_id": item.knowledge_item_id, "version": item.version},
            )


def _is_publishable(item: KnowledgeItem) -> bool:
    return item.status is ItemStatus.PUBLISHED and item.current_revision_id is not None
