"""``EmbeddedNoteIndex``: the ``NoteIndex`` port in process, for local runs and tests (DESIGN §9).

The same engines and analyzer as ``EmbeddedIndex`` (the knowledge index), in an index of its own,
so knowledge and memory never share a ranking:

- lexical leg: BM25 (tantivy, k1 = 1.2, b = 0.75) over the note's ``content``, through
  ``english_analyzer``; the query is analyzed the same way and becomes term queries;
- semantic leg: exact cosine similarity over a float32 matrix of unit vectors.

Filters: a query evaluates ``NoteFilter.admits`` on each note of its tenant and both legs keep only
the admitted rows *before* ranking (a term-set filter in tantivy, a row subset in numpy). Versions:
the version (or tombstone version) of every note ever written is kept, so a late or replayed write
never regresses a note. Equal scores are ordered by note id. One lock guards every method; writes
are searchable when they return.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import tantivy

from knowledge.adapters.embedded_index import english_analyzer
from knowledge.domain.note_retrieval import IndexedNote, NoteFilter, NoteHit, NoteLegHits, NoteQuery
from knowledge.domain.retrieval import Leg
from knowledge.errors import IndexConfigurationError
from knowledge.observability import logger

_ANALYZER = "english_stop_stem"
_FREQ = "freq"

_Key = tuple[str, str]  # tenant, note


@dataclass(frozen=True, slots=True)
class _Version:
    version: int
    removed: bool

    def refuses_upsert(self, version: int) -> bool:
        return self.version > version or (self.removed and self.version >= version)

    def refuses_removal(self, version: int) -> bool:
        return self.version > version or (self.removed and self.version == version)


def _joined(tenant_id: str, note_id: str) -> str:
    return f"{tenant_id}\x1f{note_id}"


def _sort_key(hit: NoteHit) -> tuple[float, str]:
    return -hit.score, hit.note_id


class EmbeddedNoteIndex:
    """In-process ``NoteIndex``."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._model_id: str | None = None
        self._dimension: int | None = None
        self._analyzer = english_analyzer()
        builder = tantivy.SchemaBuilder()
        builder.add_text_field("content", tokenizer_name=_ANALYZER, index_option=_FREQ)
        builder.add_text_field("note_key", tokenizer_name="raw")
        builder.add_unsigned_field("row", indexed=True, fast=True)
        self._schema = builder.build()
        self._index = tantivy.Index(self._schema)
        self._index.register_tokenizer(_ANALYZER, self._analyzer)
        self._writer = self._index.writer(heap_size=32_000_000, num_threads=1)
        self._searcher = self._index.searcher()
        self._versions: dict[_Key, _Version] = {}
        self._rows: dict[_Key, int] = {}
        self._tenant_rows: dict[str, set[int]] = {}
        self._notes: list[IndexedNote | None] = []
        self._free_rows: list[int] = []
        self._vectors: npt.NDArray[np.float32] = np.zeros((0, 0), dtype=np.float32)

    def ensure_ready(self, *, model_id: str, dimension: int) -> None:
        """Record the embedding model and dimension on first use; ``IndexConfigurationError`` when a
        later call names another."""
        with self._lock:
            if self._model_id is None:
                self._model_id, self._dimension = model_id, dimension
                self._vectors = np.zeros((0, dimension), dtype=np.float32)
                return
            if (self._model_id, self._dimension) != (model_id, dimension):
                raise IndexConfigurationError(
                    f"The note index holds vectors of embedding model {self._model_id!r} with dimension "
                    f"{self._dimension}, but {model_id!r} with dimension {dimension} is configured.",
                    {"index_model": self._model_id, "index_dimension": self._dimension},
                )

    def upsert_notes(self, notes: Sequence[IndexedNote]) -> list[bool]:
        """Index each note at its version, one tantivy commit for all; ``False`` for a note whose held
        version is newer (or a tombstone at or above it). ``ValueError`` (before any change) for a
        vector of the wrong dimension or a zero vector."""
        with self._lock:
            vectors = [self._unit(note.vector) for note in notes]
            results: list[bool] = []
            for note, vector in zip(notes, vectors, strict=True):
                key = (note.tenant_id, note.note_id)
                held = self._versions.get(key)
                if held is not None and held.refuses_upsert(note.version):
                    logger.info("stale note index write ignored", extra={"note_id": note.note_id})
                    results.append(False)
                    continue
                self._drop(key)
                self._add(note, vector)
                self._versions[key] = _Version(note.version, removed=False)
                results.append(True)
            if any(results):
                self._commit()
            return results

    def remove_note(self, tenant_id: str, note_id: str, *, version: int) -> None:
        """Remove the note and keep a tombstone at ``version``; a no-op when a newer version is held."""
        with self._lock:
            key = (tenant_id, note_id)
            held = self._versions.get(key)
            if held is not None and held.refuses_removal(version):
                return
            self._versions[key] = _Version(version, removed=True)
            if self._drop(key):
                self._commit()

    def refresh(self) -> None:
        """Writes are searchable when they return; nothing to do."""

    def search(self, query: NoteQuery) -> NoteLegHits:
        """Up to ``query.k`` admitted notes per requested leg, best first (BM25; cosine in [-1, 1]).
        ``ValueError`` when the semantic leg is asked for without a vector."""
        with self._lock:
            rows = self._admitted(query.filter)
            semantic = self._semantic(query.vector, rows, query.k) if Leg.SEMANTIC in query.legs else []
            lexical = self._lexical(query.text, rows, query.k) if Leg.LEXICAL in query.legs else []
            return NoteLegHits(lexical=lexical, semantic=semantic)

    def __len__(self) -> int:
        with self._lock:
            return len(self._rows)

    def _admitted(self, note_filter: NoteFilter) -> list[int]:
        rows = self._tenant_rows.get(note_filter.tenant_id, set())
        return sorted(row for row in rows if note_filter.admits(self._note(row)))

    def _note(self, row: int) -> IndexedNote:
        note = self._notes[row]
        assert note is not None  # a tenant's rows are live rows
        return note

    def _lexical(self, text: str, rows: list[int], k: int) -> list[NoteHit]:
        terms = self._analyzer.analyze(text)
        if not terms or not rows:
            return []
        clauses = [
            (
                tantivy.Occur.Should,
                tantivy.Query.term_query(self._schema, "content", term, index_option=_FREQ),
            )
            for term in terms
        ]
        admitted = tantivy.Query.term_set_query(self._schema, "row", rows)
        query = tantivy.Query.boolean_query(
            [
                (tantivy.Occur.Must, tantivy.Query.boolean_query(clauses)),
                (tantivy.Occur.Must, tantivy.Query.const_score_query(admitted, 0.0)),
            ]
        )
        limit = k
        while True:  # widen until the k-th score is not tied past the window, so ties resolve by id
            found = self._searcher.search(query, limit, count=False).hits
            if len(found) < limit or found[-1][0] < found[k - 1][0]:
                break
            limit *= 2
        values = self._searcher.fast_field_values("row", [address for _, address in found])
        hits = [
            self._hit(row, float(score))
            for (score, _), row in zip(found, values, strict=True)
            if isinstance(row, int)
        ]
        return sorted(hits, key=_sort_key)[:k]

    def _semantic(self, vector: Sequence[float] | None, rows: list[int], k: int) -> list[NoteHit]:
        if vector is None:
            raise ValueError("the semantic leg needs a query vector")
        if self._dimension is None or not rows:
            return []
        admitted = np.asarray(rows, dtype=np.int64)
        scores = self._vectors[admitted] @ self._unit(vector)
        if admitted.size > k:
            kth = scores[np.argpartition(-scores, k - 1)[:k]].min()
            keep = np.flatnonzero(scores >= kth)
            admitted, scores = admitted[keep], scores[keep]
        hits = [
            self._hit(row, max(-1.0, min(1.0, score)))
            for row, score in zip(admitted.tolist(), scores.tolist(), strict=True)
        ]
        return sorted(hits, key=_sort_key)[:k]

    def _hit(self, row: int, score: float) -> NoteHit:
        note = self._note(row)
        return NoteHit(note_id=note.note_id, version=note.version, score=score)

    def _unit(self, vector: Sequence[float]) -> npt.NDArray[np.float32]:
        if self._dimension is None:
            raise IndexConfigurationError("The note index is not configured; call ensure_ready first.")
        array = np.asarray(vector, dtype=np.float32)
        if array.shape != (self._dimension,):
            raise ValueError(f"vector has {array.size} dimensions; the index expects {self._dimension}")
        norm = float(np.linalg.norm(array))
        if norm == 0.0 or not np.isfinite(norm):
            raise ValueError("a zero or non-finite vector has no cosine similarity")
        return array / np.float32(norm)

    def _add(self, note: IndexedNote, vector: npt.NDArray[np.float32]) -> None:
        if self._free_rows:
            row = self._free_rows.pop()
        else:
            row = len(self._notes)
            self._notes.append(None)
            if row >= self._vectors.shape[0]:
                grown = np.zeros((max(1024, 2 * self._vectors.shape[0]), self._vectors.shape[1]), np.float32)
                grown[: self._vectors.shape[0]] = self._vectors
                self._vectors = grown
        self._notes[row] = note.model_copy(update={"vector": []})
        self._vectors[row] = vector
        self._rows[note.tenant_id, note.note_id] = row
        self._tenant_rows.setdefault(note.tenant_id, set()).add(row)
        document = tantivy.Document()
        document.add_text("content", note.content)
        document.add_text("note_key", _joined(note.tenant_id, note.note_id))
        document.add_unsigned("row", row)
        self._writer.add_document(document)

    def _drop(self, key: _Key) -> bool:
        row = self._rows.pop(key, None)
        if row is None:
            return False
        self._notes[row] = None
        self._tenant_rows[key[0]].discard(row)
        self._free_rows.append(row)
        self._writer.delete_documents_by_term("note_key", _joined(*key))
        return True

    def _commit(self) -> None:
        self._writer.commit()
        self._index.reload()
        self._searcher = self._index.searcher()
