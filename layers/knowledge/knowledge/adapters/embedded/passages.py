"""``EmbeddedIndex``: the ``SearchIndex`` port in process, for local runs and tests (DESIGN §4).

- Lexical leg: BM25 (tantivy, k1 = 1.2, b = 0.75, as Lucene) over the ``title`` and ``text`` of each
  passage of an item (``IndexedItem.passages``), scored like
  OpenSearch's ``multi_match`` ``best_fields`` with a tie breaker: the better of
  ``title_boost · BM25(title)`` and ``text_boost · BM25(text)`` per chunk plus ``tie_breaker`` times
  the other. Both fields are analyzed by ``knowledge.domain.retrieval.analysis`` (words, CJK bigrams, folding,
  stop words) and then stemmed by tantivy's Snowball English stemmer, as the OpenSearch mapping does.
  The query goes through the same analysis and becomes term queries, so query syntax in user input is
  never parsed and a query of stop words only matches nothing.
- Semantic leg: exact cosine similarity over a contiguous float32 matrix of the chunks' unit vectors
  (a matrix-vector product), top k by ``np.argpartition``. When the caller may see at least
  ``VIEW_SHARE`` of the rows, the product runs over a view of the whole matrix (no copy) and the
  hidden rows' scores are dropped; otherwise the admitted rows are gathered first, a copy of that
  small share only.
- Visibility: chunks are grouped by ``(tenant, base, scope, team, owner)``; a query evaluates
  ``VisibilityFilter.admits`` once per group of its tenant and both legs keep only admitted groups
  *before* ranking (a union of term queries on the group in tantivy, a row mask in numpy), so
  hidden chunks never take a top-k slot.
- History (DESIGN §11): entries with a validity interval (``IndexedItem.valid_from``/``valid_to``)
  group by it too, so ``IndexQuery.as_of`` admits the groups valid at that moment in the same
  place as visibility, before ranking. A history index thus holds about one group per item state;
  the live index's entries have no interval and group by base as before.
- Versions: the item version (or tombstone version) of every item ever written is kept in memory,
  and, for an item written in parts (``upsert_part``), which parts of its version are held.

Analysis, versions, the model check and the kNN cut are ``engine``'s, shared with the note index
(``notes``). Equal scores are ordered by item id, then ordinal. All methods hold one lock; writes are
visible to search when they return. Sized for ~10k items / ~20k chunks: indexing in seconds, queries in ms.

Commits are batched: a tantivy commit (and searcher reload) costs 10-20 ms whatever it holds, so
writes only mark the index dirty, and the next ``search`` or ``refresh`` commits them first, as does
a write once ``MAX_UNCOMMITTED_CHUNKS`` chunks wait. An ingest that writes one item at a time thus
pays for one commit per search, not one per item.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterable, Sequence
from datetime import datetime
from operator import itemgetter, lt
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
import numpy.typing as npt
import tantivy

from knowledge.adapters.embedded.engine import (
    ANALYZER,
    FREQ,
    Added,
    VectorSpace,
    Version,
    analyzed,
    bm25,
    index_terms,
    nearest,
    stemmer,
    terms_query,
)
from knowledge.domain.access.visibility import VisibilityFilter
from knowledge.domain.retrieval.hits import (
    TIE_BREAKER,
    TITLE_BOOST,
    Chunk,
    ChunkHit,
    IndexedChunk,
    IndexedItem,
    IndexQuery,
    Leg,
    LegHits,
)
from knowledge.domain.retrieval.index_work import PartWrite
from knowledge.errors import IndexConfigurationError
from knowledge.observability import logger

if TYPE_CHECKING:
    from knowledge.settings import Settings

MAX_UNCOMMITTED_CHUNKS = 2000
"""Chunk writes (additions and deletions) that may wait for a commit."""
VIEW_SHARE = 0.25
"""Share of the rows a caller must be admitted to for the semantic leg to multiply the whole matrix
(a view) rather than a gathered copy of the admitted rows: copying a row costs a few times more
than multiplying it, so below this share the copy is cheaper."""


class _Chunk(NamedTuple):
    """A held span: a ``ChunkHit``'s fields but its score, in the same order."""

    knowledge_base_id: str
    knowledge_item_id: str
    knowledge_revision_id: str
    ordinal: int
    start: int
    end: int
    text: str

    @classmethod
    def of(cls, item: IndexedItem, span: Chunk | IndexedChunk) -> _Chunk:
        return cls(
            knowledge_base_id=item.knowledge_base_id,
            knowledge_item_id=item.knowledge_item_id,
            knowledge_revision_id=item.knowledge_revision_id,
            ordinal=span.ordinal,
            start=span.start,
            end=span.end,
            text=span.text,
        )

    def hit(self, score: float) -> ChunkHit:
        """This span as a hit with ``score`` (one tuple built in C: a search builds hundreds)."""
        return _new_tuple(ChunkHit, (*self, score))


_new_tuple = tuple.__new__
_ITEM_ORDER = itemgetter(1, 3)  # ChunkHit: (knowledge_item_id, ordinal)
_SCORE = itemgetter(7)  # ChunkHit.score


_Group = tuple[str, str, str, str | None, str, float, float]
"""tenant, base, scope, team, owner, and the validity interval in POSIX seconds (history entries;
the live index's entries are valid from -inf to +inf, so they all share their base's group)."""
_Key = tuple[str, str]  # tenant, item or base


def _best(hits: list[ChunkHit], k: int) -> list[ChunkHit]:
    """The ``k`` best of ``hits``, ordered in place: score descending, ties by item id, then ordinal.

    Both legs hand their hits over by score already (tantivy's collector, the semantic leg's
    argsort), so only a list out of score order is sorted whole; then each run of equal scores is
    sorted by item id and ordinal, which touches the ids of tied hits only.
    """
    scores = list(map(_SCORE, hits))
    if any(map(lt, scores, scores[1:])):  # a hit scores above the one before it
        hits.sort(key=_SCORE, reverse=True)
        scores = list(map(_SCORE, hits))
    start = end = -1  # the run of equal scores being extended: hits[start : end + 1]
    for position in [at for at in range(1, len(scores)) if scores[at] == scores[at - 1]]:
        if position != end + 1:  # a new run, from the hit before this one
            _order_run(hits, start, end)
            start = position - 1
        end = position
    _order_run(hits, start, end)
    del hits[k:]
    return hits


def _order_run(hits: list[ChunkHit], start: int, end: int) -> None:
    if end > start:
        hits[start : end + 1] = sorted(hits[start : end + 1], key=_ITEM_ORDER)


def _joined(tenant_id: str, other_id: str) -> str:
    return f"{tenant_id}\x1f{other_id}"


class EmbeddedIndex:
    """In-process ``SearchIndex``. ``title_boost``/``text_boost`` weigh the BM25 fields and
    ``tie_breaker`` adds the weaker field's share (defaults as the OpenSearch adapter:
    ``retrieval.TITLE_BOOST``, 1.0 and ``retrieval.TIE_BREAKER``)."""

    def __init__(
        self,
        *,
        title_boost: float = TITLE_BOOST,
        text_boost: float = 1.0,
        tie_breaker: float = TIE_BREAKER,
    ) -> None:
        self._title_boost = title_boost
        self._text_boost = text_boost
        self._tie_breaker = tie_breaker
        self._lock = threading.RLock()
        self._space = VectorSpace("embedded index")

        builder = tantivy.SchemaBuilder()
        builder.add_text_field("title", tokenizer_name=ANALYZER, index_option=FREQ)
        builder.add_text_field("text", tokenizer_name=ANALYZER, index_option=FREQ)
        builder.add_text_field("item_key", tokenizer_name="raw")
        builder.add_text_field("base_key", tokenizer_name="raw")
        builder.add_unsigned_field("group", indexed=True)
        builder.add_unsigned_field("row", fast=True)
        self._schema = builder.build()
        self._index = tantivy.Index(self._schema)
        self._index.register_tokenizer(ANALYZER, stemmer())
        self._writer = self._index.writer(heap_size=64_000_000, num_threads=1)
        self._searcher = self._index.searcher()
        self._uncommitted = 0

        self._versions: dict[_Key, Version] = {}
        self._parts: dict[_Key, set[int] | None] = {}  # None: written whole, by upsert
        self._item_rows: dict[_Key, list[int]] = {}
        self._item_base: dict[_Key, str] = {}
        self._base_items: dict[_Key, set[str]] = {}
        self._groups: dict[_Group, int] = {}
        self._tenant_groups: dict[str, list[tuple[_Group, int]]] = {}

        self._chunks: list[_Chunk | None] = []
        self._free_rows: list[int] = []
        self._passages: dict[int, _Chunk] = {}
        self._item_passages: dict[_Key, list[int]] = {}
        self._next_passage = 0
        self._passage_lengths: dict[int, tuple[int, int]] = {}  # terms in title, in text
        self._title_length = 0
        self._text_length = 0
        self._vectors: npt.NDArray[np.float32] = np.zeros((0, 0), dtype=np.float32)
        self._row_group: npt.NDArray[np.int64] = np.zeros(0, dtype=np.int64)
        self._alive: npt.NDArray[np.bool_] = np.zeros(0, dtype=np.bool_)

    # Configuration

    def ensure_ready(self, *, model_id: str, dimension: int) -> None:
        """Record the embedding model and dimension on first use; raise ``IndexConfigurationError``
        when a later call names another model or dimension."""
        with self._lock:
            if self._space.ensure(model_id, dimension):
                self._vectors = np.zeros((0, dimension), dtype=np.float32)

    # Writes

    def upsert(self, item: IndexedItem) -> bool:
        """Replace the item's chunks; False (nothing changes) when a newer version or a tombstone at or
        above ``item.version`` is held."""
        return self.upsert_many([item])[0]

    def upsert_many(self, items: Sequence[IndexedItem]) -> list[bool]:
        """``upsert`` for many items, committed together. Raises ``ValueError`` (before any change)
        for a vector of the wrong dimension or a zero vector; ``IndexConfigurationError`` before
        ``ensure_ready``."""
        with self._lock:
            matrices = [self._unit_rows(item) for item in items]
            results: list[bool] = []
            for item, matrix in zip(items, matrices, strict=True):
                key = (item.tenant_id, item.knowledge_item_id)
                held = self._versions.get(key)
                if held is not None and held.refuses_upsert(item.version):
                    logger.info(
                        "stale index write ignored",
                        extra={"knowledge_item_id": item.knowledge_item_id, "version": item.version},
                    )
                    results.append(False)
                    continue
                self._drop(key)
                self._add(item, matrix)
                self._versions[key] = Version(item.version, removed=False)
                self._parts[key] = None
                results.append(True)
            if any(results):
                self._commit(sum(len(item.chunks) for item, ok in zip(items, results, strict=True) if ok))
            return results

    def upsert_part(self, item: IndexedItem, *, part: int, parts: int) -> PartWrite:
        """Add one part of the item's version (see ``SearchIndex.upsert_part``). Raises
        ``ValueError`` (before any change) for a bad vector; ``IndexConfigurationError`` before
        ``ensure_ready``."""
        if not 0 <= part < parts:
            raise ValueError("part must be in [0, parts)")
        with self._lock:
            matrix = self._unit_rows(item)
            key = (item.tenant_id, item.knowledge_item_id)
            held = self._versions.get(key)
            if held is not None and held.refuses_upsert(item.version):
                logger.info(
                    "stale index write ignored",
                    extra={"knowledge_item_id": item.knowledge_item_id, "version": item.version},
                )
                return PartWrite(written=False)
            if held is None or held.version != item.version or held.removed:
                self._drop(key)
                self._parts[key] = set()
            elif key not in self._parts:  # the base was removed: its chunks are gone, parts too
                self._parts[key] = set()
            have = self._parts[key]
            if have is None:  # the whole version is already held
                return PartWrite(written=True, held=frozenset(range(parts)), complete=True)
            if part not in have:
                self._add(item, matrix)
                have.add(part)
                self._commit(len(item.chunks))
            self._versions[key] = Version(item.version, removed=False)
            return PartWrite(written=True, held=frozenset(have), complete=len(have) >= parts)

    def remove_item(self, tenant_id: str, knowledge_item_id: str, *, version: int) -> None:
        """Remove the item's chunks and keep a tombstone at ``version``; a no-op when a newer version is
        held."""
        with self._lock:
            key = (tenant_id, knowledge_item_id)
            held = self._versions.get(key)
            if held is not None and held.refuses_removal(version):
                logger.info("stale index removal ignored", extra={"knowledge_item_id": knowledge_item_id})
                return
            self._versions[key] = Version(version, removed=True)
            if self._drop(key):
                self._commit()

    def held_version(self, tenant_id: str, knowledge_item_id: str) -> int | None:
        """The version held for the item, live or a tombstone; ``None`` when none is."""
        with self._lock:
            held = self._versions.get((tenant_id, knowledge_item_id))
            return None if held is None else held.version

    def remove_base(self, tenant_id: str, knowledge_base_id: str) -> None:
        """Remove every chunk of the base. Versions stay, so stale writes are still refused and a
        re-upsert at the same version restores an item."""
        with self._lock:
            items = self._base_items.pop((tenant_id, knowledge_base_id), set())
            dropped = [self._drop((tenant_id, item_id)) for item_id in sorted(items)]
            if any(dropped):
                self._commit()

    def document_ids(self, tenant_id: str) -> set[str]:
        """The items (history entries ``{item}@{version}`` in a history index) whose chunks the
        index holds for ``tenant_id``: the names a deletion receipt gives them."""
        with self._lock:
            return {item_id for tenant, item_id in self._item_rows if tenant == tenant_id}

    def refresh(self) -> None:
        """Commit the writes that wait (``search`` does it too)."""
        with self._lock:
            self._commit_now()

    # Reads

    def search(self, query: IndexQuery) -> LegHits:
        """Up to ``query.k`` visible chunk hits per requested leg, best first.

        Lexical scores are BM25; semantic scores are cosine similarity in [-1, 1]. Both legs run in
        process, so no leg fails on its own (``LegHits.failed`` stays ``None``). Raises
        ``ValueError`` when the semantic leg is requested without a vector or with one of the wrong
        dimension.
        """
        with self._lock:
            self._commit_now()
            groups = self._admitted_groups(query.visibility, query.as_of)
            lexical: list[ChunkHit] = []
            semantic: list[ChunkHit] = []
            if Leg.SEMANTIC in query.legs:
                semantic = self._semantic(query.vector, groups, query.k)
            if Leg.LEXICAL in query.legs:
                lexical = self._lexical(query.text, groups, query.k)
            return LegHits(lexical=lexical, semantic=semantic)

    def score_items(self, query: IndexQuery, items: Sequence[IndexedItem]) -> LegHits:
        """The hits ``items`` would give beside what the index holds (``SearchIndex.score_items``):
        each passage's ``title`` and ``text`` scored by tantivy's BM25 (``engine.bm25``) with the
        statistics per field (document count, document frequencies, total length) of the index
        with the ``items``' passages beside what it holds, so a passage scores as it will once
        indexed (tantivy keeps replaced documents in its statistics until their segments merge,
        where these count the live ones), and combined as ``_lexical``'s
        disjunction max (``title_boost``, ``text_boost``, ``tie_breaker``); each chunk by the
        cosine of its vector, as ``search``. ``ValueError`` for a semantic leg without a vector."""
        with self._lock:
            self._commit_now()
            lexical: list[ChunkHit] = []
            semantic: list[ChunkHit] = []
            if Leg.LEXICAL in query.legs:
                lexical = self._scored_passages(index_terms(query.text, query=True), items)
            if Leg.SEMANTIC in query.legs and any(item.chunks for item in items):
                if query.vector is None:
                    raise ValueError("the semantic leg needs a query vector")
                target = self._space.unit(query.vector)
                for item in items:
                    for chunk in item.chunks:
                        cosine = float(self._space.unit(chunk.vector) @ target)
                        semantic.append(_Chunk.of(item, chunk).hit(max(-1.0, min(1.0, cosine))))
            return LegHits(lexical=_best(lexical, query.k), semantic=_best(semantic, query.k))

    def _scored_passages(self, terms: Sequence[str], items: Sequence[IndexedItem]) -> list[ChunkHit]:
        if not terms:
            return []
        spans = [
            (item, passage, index_terms(item.title), index_terms(passage.text))
            for item in items
            for passage in item.passages
        ]
        held = self._searcher.num_docs
        titles = Added([title for _, _, title, _ in spans])
        texts = Added([text for _, _, _, text in spans])

        def statistics(field: str, added: Added, total: int) -> dict[str, Any]:
            """The field's statistics with the added passages beside the held ones."""
            return {
                "documents": held + added.documents,
                "total_length": total + added.length,
                "frequency": lambda term: int(self._searcher.doc_freq(field, term)) + added.frequencies[term],
            }

        title_statistics = statistics("title", titles, self._title_length)
        text_statistics = statistics("text", texts, self._text_length)
        hits = []
        for item, passage, title, text in spans:
            title_score = bm25(terms, title, **title_statistics)
            text_score = bm25(terms, text, **text_statistics)
            if title_score is None and text_score is None:
                continue
            fields = sorted(
                (self._title_boost * (title_score or 0.0), self._text_boost * (text_score or 0.0))
            )
            hits.append(_Chunk.of(item, passage).hit(fields[1] + self._tie_breaker * fields[0]))
        return hits

    def _admitted_groups(self, visibility: VisibilityFilter, as_of: datetime | None) -> list[int]:
        moment = as_of.timestamp() if as_of is not None else None
        return [
            group_id
            for (tenant_id, base_id, scope, team_id, owner_id, valid_from, valid_to), group_id in (
                self._tenant_groups.get(visibility.tenant_id, [])
            )
            if (moment is None or valid_from <= moment < valid_to)
            and visibility.admits(
                tenant_id=tenant_id,
                knowledge_base_id=base_id,
                scope=scope,
                team_id=team_id,
                owner_id=owner_id,
            )
        ]

    def _lexical(self, text: str, groups: list[int], k: int) -> list[ChunkHit]:
        terms = index_terms(text, query=True)
        if not terms or not groups:
            return []
        fields = []
        for field, boost in (("title", self._title_boost), ("text", self._text_boost)):
            fields.append(tantivy.Query.boost_query(terms_query(self._schema, field, terms), boost))
        # One term query per admitted group: tantivy's term-set query over this integer field scores
        # every document of the field (about 0.2 ms per 1,000 chunks); a union of term queries walks
        # only the admitted groups' postings.
        visible = tantivy.Query.boolean_query(
            [
                (tantivy.Occur.Should, tantivy.Query.term_query(self._schema, "group", group))
                for group in groups
            ]
        )
        query = tantivy.Query.boolean_query(
            [
                (
                    tantivy.Occur.Must,
                    tantivy.Query.disjunction_max_query(fields, tie_breaker=self._tie_breaker),
                ),
                (tantivy.Occur.Must, tantivy.Query.const_score_query(visible, 0.0)),
            ]
        )
        # Every hit tied with the k-th is fetched, so ties resolve by id. BM25 ties are common (field
        # norms are quantized), so the first search asks for 2k: a search costs the same whatever
        # its limit, and a tie past 2k (then the search is repeated with twice the limit) is rare.
        limit = 2 * k
        while True:
            found = self._searcher.search(query, limit, count=False).hits
            if len(found) < limit or found[-1][0] < found[k - 1][0]:
                break
            limit *= 2
        if len(found) > k:
            kth, end = found[k - 1][0], k
            while end < len(found) and found[end][0] >= kth:
                end += 1
            del found[end:]
        rows = self._searcher.fast_field_values("row", [address for _, address in found])
        passages = self._passages
        candidates = []
        for (score, _), row in zip(found, rows, strict=True):
            passage = passages.get(row) if isinstance(row, int) else None
            if passage is not None:
                candidates.append(passage.hit(float(score)))
        return _best(candidates, k)

    def _semantic(self, vector: Sequence[float] | None, groups: list[int], k: int) -> list[ChunkHit]:
        if vector is None:
            raise ValueError("the semantic leg needs a query vector")
        if self._space.dimension is None:
            return []
        query = self._space.unit(vector)
        size = len(self._chunks)
        if not groups or size == 0:
            return []
        admitted = np.zeros(len(self._groups), dtype=np.bool_)
        admitted[groups] = True
        rows = np.flatnonzero(self._alive[:size] & admitted[self._row_group[:size]])
        if rows.size == 0:
            return []
        if rows.size >= VIEW_SHARE * size:
            scores = (self._vectors[:size] @ query)[rows]
        else:
            scores = self._vectors[rows] @ query
        rows, scores = nearest(rows, scores, k)  # ties with the k-th kept: ``_best`` orders them by id
        np.clip(scores, -1.0, 1.0, out=scores)
        order = np.argsort(-scores, kind="stable")
        rows, scores = rows[order], scores[order]
        chunks = self._chunks
        candidates = []
        for row, score in zip(rows.tolist(), scores.tolist(), strict=True):
            chunk = chunks[row]
            if chunk is not None:
                candidates.append(chunk.hit(score))
        return _best(candidates, k)

    # Storage

    def _unit_rows(self, item: IndexedItem) -> npt.NDArray[np.float32]:
        if self._space.dimension is None:
            raise IndexConfigurationError("The search index is not configured; call ensure_ready first.")
        if not item.chunks:
            return np.zeros((0, self._space.dimension), dtype=np.float32)
        return np.stack([self._space.unit(chunk.vector) for chunk in item.chunks])

    def _group(self, item: IndexedItem) -> int:
        group: _Group = (
            item.tenant_id,
            item.knowledge_base_id,
            item.scope,
            item.team_id,
            item.owner_id,
            item.valid_from.timestamp() if item.valid_from is not None else -math.inf,
            item.valid_to.timestamp() if item.valid_to is not None else math.inf,
        )
        group_id = self._groups.get(group)
        if group_id is None:
            group_id = self._groups[group] = len(self._groups)
            self._tenant_groups.setdefault(item.tenant_id, []).append((group, group_id))
        return group_id

    def _claim_rows(self, count: int) -> list[int]:
        reused = [self._free_rows.pop() for _ in range(min(count, len(self._free_rows)))]
        start = len(self._chunks)
        fresh = list(range(start, start + count - len(reused)))
        if fresh:
            self._chunks.extend([None] * len(fresh))
            self._grow(len(self._chunks))
        return reused + fresh

    def _grow(self, size: int) -> None:
        capacity = self._alive.shape[0]
        if size <= capacity:
            return
        capacity = max(size, 2 * capacity, 1024)
        vectors = np.zeros((capacity, self._vectors.shape[1]), dtype=np.float32)
        vectors[: self._vectors.shape[0]] = self._vectors
        row_group = np.zeros(capacity, dtype=np.int64)
        row_group[: self._row_group.shape[0]] = self._row_group
        alive = np.zeros(capacity, dtype=np.bool_)
        alive[: self._alive.shape[0]] = self._alive
        self._vectors, self._row_group, self._alive = vectors, row_group, alive

    def _add(self, item: IndexedItem, matrix: npt.NDArray[np.float32]) -> None:
        key = (item.tenant_id, item.knowledge_item_id)
        group = self._group(item)
        rows = self._claim_rows(len(item.chunks))
        item_key = _joined(*key)
        base_key = _joined(item.tenant_id, item.knowledge_base_id)
        title = analyzed(item.title)
        title_length = len(title.split())
        for row, chunk, vector in zip(rows, item.chunks, matrix, strict=True):
            self._chunks[row] = _Chunk.of(item, chunk)
            self._vectors[row] = vector
            self._row_group[row] = group
            self._alive[row] = True
        passage_ids = []
        for passage in item.passages:
            passage_id = self._next_passage
            self._next_passage += 1
            self._passages[passage_id] = _Chunk.of(item, passage)
            passage_ids.append(passage_id)
            text = analyzed(passage.text)
            text_length = len(text.split())  # the stemmer keeps every token: one term per word
            self._passage_lengths[passage_id] = (title_length, text_length)
            self._title_length += title_length
            self._text_length += text_length
            document = tantivy.Document()
            document.add_text("title", title)
            document.add_text("text", text)
            document.add_text("item_key", item_key)
            document.add_text("base_key", base_key)
            document.add_unsigned("group", group)
            document.add_unsigned("row", passage_id)
            self._writer.add_document(document)
        self._item_rows.setdefault(key, []).extend(rows)
        self._item_passages.setdefault(key, []).extend(passage_ids)
        self._item_base[key] = item.knowledge_base_id
        self._base_items.setdefault((item.tenant_id, item.knowledge_base_id), set()).add(
            item.knowledge_item_id
        )

    def _drop(self, key: _Key) -> bool:
        """Forget the item's chunks and parts (not its version); True when there was something to
        drop."""
        self._parts.pop(key, None)
        base_id = self._item_base.pop(key, None)
        if base_id is not None:
            self._base_items.get((key[0], base_id), set()).discard(key[1])
        rows = self._item_rows.pop(key, None)
        if rows is None:
            return False
        self._release(rows)
        for passage_id in self._item_passages.pop(key, []):
            del self._passages[passage_id]
            title_length, text_length = self._passage_lengths.pop(passage_id, (0, 0))
            self._title_length -= title_length
            self._text_length -= text_length
        self._writer.delete_documents_by_term("item_key", _joined(*key))
        return True

    def _release(self, rows: Iterable[int]) -> None:
        for row in rows:
            self._chunks[row] = None
            self._alive[row] = False
            self._free_rows.append(row)

    def _commit(self, chunks: int = 1) -> None:
        """Count ``chunks`` written for the next commit; commit now once too many wait."""
        self._uncommitted += max(1, chunks)
        if self._uncommitted >= MAX_UNCOMMITTED_CHUNKS:
            self._commit_now()

    def _commit_now(self) -> None:
        if self._uncommitted == 0:
            return
        self._writer.commit()
        self._index.reload()
        self._searcher = self._index.searcher()
        self._uncommitted = 0

    def __len__(self) -> int:
        """Number of indexed chunks."""
        with self._lock:
            return len(self._chunks) - len(self._free_rows)


def build(settings: Settings) -> EmbeddedIndex:
    """A new, empty in-process index (it needs no setting)."""
    return EmbeddedIndex()


def build_history(settings: Settings) -> EmbeddedIndex:
    """A new, empty in-process knowledge history index (DESIGN §11: one entry per item state with its
    validity interval, searched with ``IndexQuery.as_of``)."""
    return EmbeddedIndex()
