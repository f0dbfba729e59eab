"""``EmbeddedNoteIndex``: the ``NoteIndex`` port in process, for local runs and tests (DESIGN §9).

The same engine as ``EmbeddedIndex`` (the knowledge index; what both share is ``engine``'s), in an
index of its own, so knowledge and memory never share a ranking:

- lexical leg: BM25 (tantivy, k1 = 1.2, b = 0.75) over the note's ``content``, through
  ``knowledge.domain.retrieval.analysis`` and Snowball English stems, as the knowledge index; the query is
  analyzed the same way and becomes term queries;
- semantic leg: exact cosine similarity over a float32 matrix of unit vectors.

Filters: every note's filter fields are kept as integer codes in numpy columns, and a query turns
``NoteFilter`` into one vectorized row mask (tenant, audience, narrowing fields, supersession,
expiry; ``path_prefix`` through a prefix → rows map), the rule ``NoteFilter`` states. The
semantic leg ranks admitted rows only; the lexical leg searches the tenant's notes in tantivy and
widens its window until it holds ``k`` admitted ones, so hidden notes never take a top-k slot. A
query costs a few array operations, not one Python call per note. Versions:
the version (or tombstone version) of every note ever written is kept, so a late or replayed write
never regresses a note. Equal scores are ordered by note id. One lock guards every method; writes
are searchable when they return.

History (``history=True``, the note history index of DESIGN §10 "Time"): one document per note
*version*, keyed by note and version, with its validity interval ``[valid_from, valid_to)`` in two
more columns; a ``NoteFilter`` with ``as_of`` admits the rows valid then. Rewriting a version (its
interval closed by the next one) replaces its document; ``remove_note`` drops every version of the
note and keeps a tombstone, so a late write of an older version never brings one back.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

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
from knowledge.domain.memory.notes import path_ancestors
from knowledge.domain.memory.retrieval import IndexedNote, NoteFilter, NoteHit, NoteLegHits, NoteQuery
from knowledge.domain.models import Scope
from knowledge.domain.retrieval.hits import Leg
from knowledge.observability import logger

if TYPE_CHECKING:
    from knowledge.settings import Settings

_Key = tuple[str, str]  # tenant, note
_COLUMNS = ("tenant", "owner", "scope", "team", "agent", "type")
_STEMMED = stemmer()


def _joined(tenant_id: str, note_id: str) -> str:
    return f"{tenant_id}\x1f{note_id}"


def _sort_key(hit: NoteHit) -> tuple[float, str]:
    return -hit.score, hit.note_id


class EmbeddedNoteIndex:
    """In-process ``NoteIndex``."""

    def __init__(self, *, history: bool = False) -> None:
        self._history = history
        self._tombstones: dict[_Key, int] = {}
        self._keys_of: dict[_Key, set[_Key]] = {}
        self._lock = threading.RLock()
        self._space = VectorSpace("note index")
        builder = tantivy.SchemaBuilder()
        builder.add_text_field("content", tokenizer_name=ANALYZER, index_option=FREQ)
        builder.add_text_field("note_key", tokenizer_name="raw")
        builder.add_text_field("tenant", tokenizer_name="raw")
        builder.add_unsigned_field("row", indexed=True, fast=True)
        self._schema = builder.build()
        self._index = tantivy.Index(self._schema)
        self._index.register_tokenizer(ANALYZER, stemmer())
        self._writer = self._index.writer(heap_size=32_000_000, num_threads=1)
        self._searcher = self._index.searcher()
        self._versions: dict[_Key, Version] = {}
        self._rows: dict[_Key, int] = {}
        self._notes: list[IndexedNote | None] = []
        self._free_rows: list[int] = []
        self._vectors: npt.NDArray[np.float32] = np.zeros((0, 0), dtype=np.float32)
        self._codes: dict[str, int] = {}
        self._columns: dict[str, npt.NDArray[np.int64]] = {name: np.zeros(0, np.int64) for name in _COLUMNS}
        self._alive: npt.NDArray[np.bool_] = np.zeros(0, np.bool_)
        self._superseded: npt.NDArray[np.bool_] = np.zeros(0, np.bool_)
        self._expires: npt.NDArray[np.float64] = np.zeros(0, np.float64)
        self._importance: npt.NDArray[np.float64] = np.zeros(0, np.float64)
        self._updated: npt.NDArray[np.float64] = np.zeros(0, np.float64)
        self._valid_from: npt.NDArray[np.float64] = np.zeros(0, np.float64)
        self._valid_to: npt.NDArray[np.float64] = np.zeros(0, np.float64)
        self._prefix_rows: dict[tuple[str, str], set[int]] = {}
        self._lengths: dict[int, int] = {}
        self._total_length = 0

    def ensure_ready(self, *, model_id: str, dimension: int) -> None:
        """Record the embedding model and dimension on first use; ``IndexConfigurationError`` when a
        later call names another."""
        with self._lock:
            if self._space.ensure(model_id, dimension):
                self._vectors = np.zeros((0, dimension), dtype=np.float32)

    def upsert_notes(self, notes: Sequence[IndexedNote]) -> list[bool]:
        """Index each note at its version, one tantivy commit for all; ``False`` for a note whose held
        version is newer (or a tombstone at or above it). ``ValueError`` (before any change) for a
        vector of the wrong dimension or a zero vector."""
        with self._lock:
            vectors = [self._space.unit(note.vector) for note in notes]
            results: list[bool] = []
            for note, vector in zip(notes, vectors, strict=True):
                if self._history:
                    results.append(self._upsert_version(note, vector))
                    continue
                key = (note.tenant_id, note.note_id)
                held = self._versions.get(key)
                if held is not None and held.refuses_upsert(note.version):
                    logger.info("stale note index write ignored", extra={"note_id": note.note_id})
                    results.append(False)
                    continue
                self._drop(key)
                self._add(note, vector)
                self._versions[key] = Version(note.version, removed=False)
                results.append(True)
            if any(results):
                self._commit()
            return results

    def remove_note(self, tenant_id: str, note_id: str, *, version: int) -> None:
        """Remove the note and keep a tombstone at ``version``; a no-op when a newer version is held."""
        with self._lock:
            key = (tenant_id, note_id)
            if self._history:
                self._tombstones[key] = max(version, self._tombstones.get(key, version))
                dropped = [self._drop(held) for held in sorted(self._keys_of.pop(key, set()))]
                if any(dropped):
                    self._commit()
                return
            held = self._versions.get(key)
            if held is not None and held.refuses_removal(version):
                return
            self._versions[key] = Version(version, removed=True)
            if self._drop(key):
                self._commit()

    def held_version(self, tenant_id: str, note_id: str) -> int | None:
        """The version held for the note, live or a tombstone (the tombstone alone in a history
        index, whose version documents never refuse a write); ``None`` when none is."""
        with self._lock:
            key = (tenant_id, note_id)
            if self._history:
                return self._tombstones.get(key)
            held = self._versions.get(key)
            return None if held is None else held.version

    def _upsert_version(self, note: IndexedNote, vector: npt.NDArray[np.float32]) -> bool:
        """Write one version's document (history mode), replacing the one held for that version;
        ``False`` at or below the note's tombstone."""
        key = (note.tenant_id, note.note_id)
        tombstone = self._tombstones.get(key)
        if tombstone is not None and note.version <= tombstone:
            return False
        version_key = (note.tenant_id, f"{note.note_id}@{note.version}")
        self._drop(version_key)
        self._add(note, vector, version_key)
        self._keys_of.setdefault(key, set()).add(version_key)
        return True

    def refresh(self) -> None:
        """Writes are searchable when they return; nothing to do."""

    def search(self, query: NoteQuery) -> NoteLegHits:
        """Up to ``query.k`` admitted notes per requested leg, best first (BM25; cosine in [-1, 1]).
        No leg fails on its own in process (``NoteLegHits.failed`` stays ``None``). ``ValueError``
        when the semantic leg is asked for without a vector."""
        with self._lock:
            admitted = self._admitted(query.filter)
            semantic = self._semantic(query.vector, admitted, query.k) if Leg.SEMANTIC in query.legs else []
            lexical = (
                self._lexical(query.text, query.filter.tenant_id, admitted, query.k)
                if Leg.LEXICAL in query.legs
                else []
            )
            return NoteLegHits(lexical=lexical, semantic=semantic)

    def score_notes(self, query: NoteQuery, notes: Sequence[IndexedNote]) -> NoteLegHits:
        """BM25 as tantivy computes it (k1 = 1.2, b = 0.75; idf from the document count and each
        term's document frequency in the whole index, as its searcher does), summed over the query's
        terms, with the index's average length: the statistics the index scores its own hits with
        in the same search, so both rank alike (an empty index: the statistics of ``notes``);
        lengths are exact term counts, where tantivy quantizes them (``fieldnorm``), so a score may
        differ from the one the indexed note gets once its length passes 40 terms, by a few percent
        at most; and tantivy keeps replaced documents in its statistics until their segments merge,
        where these count the live ones. Semantic: cosine, as ``search``."""
        with self._lock:
            lexical: list[NoteHit] = []
            semantic: list[NoteHit] = []
            if Leg.LEXICAL in query.legs:
                terms = index_terms(query.text, query=True)
                documents = [index_terms(note.content) for note in notes]
                added = Added(documents)
                for note, document in zip(notes, documents, strict=True):
                    score = self._bm25(terms, document, added)
                    if score is not None:
                        lexical.append(NoteHit(note_id=note.note_id, version=note.version, score=score))
            if Leg.SEMANTIC in query.legs and notes:
                if query.vector is None:
                    raise ValueError("the semantic leg needs a query vector")
                target = self._space.unit(query.vector)
                for note in notes:
                    cosine = float(self._space.unit(note.vector) @ target)
                    semantic.append(
                        NoteHit(note_id=note.note_id, version=note.version, score=max(-1.0, min(1.0, cosine)))
                    )
            return NoteLegHits(
                lexical=sorted(lexical, key=_sort_key)[: query.k],
                semantic=sorted(semantic, key=_sort_key)[: query.k],
            )

    def _bm25(self, query_terms: Sequence[str], document: Sequence[str], added: Added) -> float | None:
        """Tantivy's BM25 (``engine.bm25``) of a document of ``document`` terms with this index's
        statistics (those of the ``added`` documents while the index holds none)."""
        held = self._searcher.num_docs
        if not held:
            return bm25(
                query_terms,
                document,
                documents=added.documents,
                total_length=added.length,
                frequency=added.frequencies.__getitem__,
            )
        return bm25(
            query_terms,
            document,
            documents=held,
            total_length=self._total_length,
            frequency=lambda term: int(self._searcher.doc_freq("content", term)),
        )

    def browse(self, note_filter: NoteFilter, k: int) -> list[NoteHit]:
        """Up to ``k`` admitted notes by importance, then update time (newest first), then id."""
        with self._lock:
            rows = np.flatnonzero(self._admitted(note_filter))
            if rows.size == 0:
                return []
            importance, updated = self._importance[rows], self._updated[rows]
            if rows.size > k:  # keep every row tied with the k-th, then order exactly
                kth = np.partition(-importance, k - 1)[k - 1]
                keep = np.flatnonzero(-importance <= kth)
                rows, importance, updated = rows[keep], importance[keep], updated[keep]
            hits = [
                (-score, -moment, self._note(row).note_id, row)
                for row, score, moment in zip(
                    rows.tolist(), importance.tolist(), updated.tolist(), strict=True
                )
            ]
            hits.sort()
            return [self._hit(row, -negated) for negated, _, _, row in hits[:k]]

    def __len__(self) -> int:
        with self._lock:
            return len(self._rows)

    def document_ids(self, tenant_id: str) -> set[str]:
        """The documents held for ``tenant_id``: note ids, or ``<note_id>@<version>`` in a history
        index (the names a deletion receipt gives them)."""
        with self._lock:
            held = [note for note in self._notes if note is not None and note.tenant_id == tenant_id]
            if self._history:
                return {f"{note.note_id}@{note.version}" for note in held}
            return {note.note_id for note in held}

    def _admitted(self, note_filter: NoteFilter) -> npt.NDArray[np.bool_]:
        size = len(self._notes)
        column = {name: values[:size] for name, values in self._columns.items()}
        mask = self._alive[:size] & (column["tenant"] == self._lookup(note_filter.tenant_id))
        audience = (column["owner"] == self._lookup(note_filter.subject_id)) | (
            column["scope"] == self._lookup(Scope.TENANT.value)
        )
        teams = [self._lookup(team) for team in note_filter.team_ids]
        if teams:
            audience |= (column["scope"] == self._lookup(Scope.TEAM.value)) & np.isin(column["team"], teams)
        mask &= audience
        for name, value in (
            ("scope", note_filter.scope.value if note_filter.scope else None),
            ("team", note_filter.team_id),
            ("agent", note_filter.agent_id),
            ("type", note_filter.memory_type.value if note_filter.memory_type else None),
        ):
            if value is not None:
                mask &= column[name] == self._lookup(value)
        if not note_filter.include_superseded:
            mask &= ~self._superseded[:size]
        mask &= self._expires[:size] > note_filter.now.timestamp()
        if note_filter.as_of is not None:
            moment = note_filter.as_of.timestamp()
            mask &= (self._valid_from[:size] <= moment) & (self._valid_to[:size] > moment)
        if note_filter.path_prefix is not None:
            under = self._prefix_rows.get((note_filter.tenant_id, note_filter.path_prefix), set())
            prefixed = np.zeros(size, np.bool_)
            prefixed[list(under)] = True
            mask &= prefixed
        admitted: npt.NDArray[np.bool_] = np.asarray(mask, dtype=np.bool_)
        return admitted

    def _code(self, value: str | None) -> int:
        """The integer code of a stored filter value (-1 for none)."""
        if value is None:
            return -1
        return self._codes.setdefault(value, len(self._codes))

    def _lookup(self, value: str) -> int:
        """The code of a queried value; -2, which no row holds, for a value never stored."""
        return self._codes.get(value, -2)

    def _note(self, row: int) -> IndexedNote:
        note = self._notes[row]
        assert note is not None  # a tenant's rows are live rows
        return note

    def _lexical(self, text: str, tenant_id: str, admitted: npt.NDArray[np.bool_], k: int) -> list[NoteHit]:
        """BM25 within the tenant (a term filter in tantivy), keeping admitted rows only; the window
        widens until it holds ``k`` admitted notes and the k-th score is not tied past its end."""
        terms = index_terms(text, query=True)
        if not terms or not admitted.any():
            return []
        tenant = tantivy.Query.term_query(self._schema, "tenant", tenant_id)
        query = tantivy.Query.boolean_query(
            [
                (tantivy.Occur.Must, terms_query(self._schema, "content", terms)),
                (tantivy.Occur.Must, tantivy.Query.const_score_query(tenant, 0.0)),
            ]
        )
        limit = max(k, 64)
        while True:
            found = self._searcher.search(query, limit, count=False).hits
            rows = self._searcher.fast_field_values("row", [address for _, address in found])
            kept = [
                (float(score), row)
                for (score, _), row in zip(found, rows, strict=True)
                if isinstance(row, int) and admitted[row]
            ]
            if len(found) < limit or (len(kept) >= k and found[-1][0] < kept[k - 1][0]):
                break
            limit *= 4
        hits = [self._hit(row, score) for score, row in kept]
        return sorted(hits, key=_sort_key)[:k]

    def _semantic(
        self, vector: Sequence[float] | None, admitted: npt.NDArray[np.bool_], k: int
    ) -> list[NoteHit]:
        """Exact cosine over every row (one contiguous matrix–vector product), admitted rows kept."""
        if vector is None:
            raise ValueError("the semantic leg needs a query vector")
        if self._space.dimension is None or not admitted.any():
            return []
        scores = self._vectors[: admitted.shape[0]] @ self._space.unit(vector)
        rows = np.flatnonzero(admitted)
        scores = scores[rows]
        rows, scores = nearest(rows, scores, k)
        hits = [
            self._hit(row, max(-1.0, min(1.0, score)))
            for row, score in zip(rows.tolist(), scores.tolist(), strict=True)
        ]
        return sorted(hits, key=_sort_key)[:k]

    def _hit(self, row: int, score: float) -> NoteHit:
        note = self._note(row)
        return NoteHit(note_id=note.note_id, version=note.version, score=score)

    def _add(self, note: IndexedNote, vector: npt.NDArray[np.float32], key: _Key | None = None) -> None:
        key = key or (note.tenant_id, note.note_id)
        if self._free_rows:
            row = self._free_rows.pop()
        else:
            row = len(self._notes)
            self._notes.append(None)
            if row >= self._vectors.shape[0]:
                self._grow(max(1024, 2 * self._vectors.shape[0]))
        self._notes[row] = note.model_copy(update={"vector": []})
        self._vectors[row] = vector
        self._rows[key] = row
        values = {
            "tenant": note.tenant_id,
            "owner": note.owner_id,
            "scope": note.scope.value,
            "team": note.team_id,
            "agent": note.agent_id,
            "type": note.memory_type.value,
        }
        for name, value in values.items():
            self._columns[name][row] = self._code(value)
        self._alive[row] = True
        self._superseded[row] = note.superseded
        self._expires[row] = note.expires_at.timestamp() if note.expires_at else np.inf
        self._importance[row] = note.importance
        self._updated[row] = note.updated_at.timestamp() if note.updated_at else 0.0
        self._valid_from[row] = note.valid_from.timestamp() if note.valid_from else -np.inf
        self._valid_to[row] = note.valid_to.timestamp() if note.valid_to else np.inf
        for prefix in path_ancestors(note.path):
            self._prefix_rows.setdefault((note.tenant_id, prefix), set()).add(row)
        text = analyzed(note.content)
        length = len(_STEMMED.analyze(text))
        self._lengths[row] = length
        self._total_length += length
        document = tantivy.Document()
        document.add_text("content", text)
        document.add_text("note_key", _joined(*key))
        document.add_text("tenant", note.tenant_id)
        document.add_unsigned("row", row)
        self._writer.add_document(document)

    def _drop(self, key: _Key) -> bool:
        row = self._rows.pop(key, None)
        if row is None:
            return False
        note = self._note(row)
        for prefix in path_ancestors(note.path):
            self._prefix_rows[key[0], prefix].discard(row)
        self._notes[row] = None
        self._total_length -= self._lengths.pop(row, 0)
        self._alive[row] = False
        self._free_rows.append(row)
        self._writer.delete_documents_by_term("note_key", _joined(*key))
        return True

    def _grow(self, capacity: int) -> None:
        vectors = np.zeros((capacity, self._vectors.shape[1]), np.float32)
        vectors[: self._vectors.shape[0]] = self._vectors
        self._vectors = vectors
        for name, values in self._columns.items():
            self._columns[name] = np.concatenate([values, np.full(capacity - values.shape[0], -1, np.int64)])
        grow = capacity - self._alive.shape[0]
        self._alive = np.concatenate([self._alive, np.zeros(grow, np.bool_)])
        self._superseded = np.concatenate([self._superseded, np.zeros(grow, np.bool_)])
        self._expires = np.concatenate([self._expires, np.zeros(grow, np.float64)])
        self._importance = np.concatenate([self._importance, np.zeros(grow, np.float64)])
        self._updated = np.concatenate([self._updated, np.zeros(grow, np.float64)])
        self._valid_from = np.concatenate([self._valid_from, np.zeros(grow, np.float64)])
        self._valid_to = np.concatenate([self._valid_to, np.zeros(grow, np.float64)])

    def _commit(self) -> None:
        self._writer.commit()
        self._index.reload()
        self._searcher = self._index.searcher()


def build(settings: Settings) -> EmbeddedNoteIndex:
    """A new, empty in-process notes' index (it needs no setting)."""
    return EmbeddedNoteIndex()


def build_history(settings: Settings) -> EmbeddedNoteIndex:
    """A new, empty in-process note history index (every version with its validity interval)."""
    return EmbeddedNoteIndex(history=True)
