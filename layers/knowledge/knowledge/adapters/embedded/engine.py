"""What both embedded indexes share (``passages``: knowledge; ``notes``: memory).

- Analysis: ``knowledge.domain.retrieval.analysis`` (words, CJK bigrams, folding, stop words), then
  tantivy's Snowball English stemmer (``stemmer``, registered as ``ANALYZER``), as the OpenSearch
  mapping does. Documents are indexed as ``analyzed`` text; a query becomes term queries over
  ``index_terms``, so query syntax in user input is never parsed.
- BM25: tantivy's (k1 = 1.2, b = 0.75, as Lucene) over fields indexed with term frequencies
  (``FREQ``); ``terms_query`` is one field's disjunction of a query's terms.
- kNN: exact cosine similarity of unit vectors (``VectorSpace.unit``) in a float32 matrix;
  ``nearest`` keeps the best ``k`` rows and every row tied with the k-th, so the id tie-break
  decides among them.
- Versions: ``Version`` is the version (or tombstone version) held for a document; a lower one never
  replaces it.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import tantivy

from knowledge.domain.retrieval.analysis import analyze
from knowledge.errors import IndexConfigurationError

ANALYZER = "analyzed_english_stem"
"""The name the stemming analyzer is registered under in each tantivy index."""
FREQ = "freq"
"""Index option of the BM25 fields: term frequencies, not positions."""
BM25_K1 = 1.2
BM25_B = 0.75
"""Tantivy's BM25 parameters (fixed in tantivy; Lucene's defaults too)."""


def stemmer() -> tantivy.TextAnalyzer:
    """Tantivy's half of the analysis: the terms of ``analysis.analyze``, joined by spaces, stemmed."""
    return (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.whitespace())
        .filter(tantivy.Filter.stemmer("english"))
        .build()
    )


_STEMMER = stemmer()


def analyzed(text: str, *, query: bool = False) -> str:
    """``text`` as a field value for ``ANALYZER``: the terms of ``analysis.analyze``, space-joined."""
    return " ".join(analyze(text, query=query))


def index_terms(text: str, *, query: bool = False) -> list[str]:
    """The terms the lexical leg indexes for ``text`` (or searches for, with ``query``), in order:
    ``analysis.analyze`` then Snowball English stems."""
    terms: list[str] = _STEMMER.analyze(analyzed(text, query=query))
    return terms


def terms_query(schema: tantivy.Schema, field: str, terms: Sequence[str]) -> tantivy.Query:
    """BM25 of ``terms`` in ``field``: a disjunction of one term query per term."""
    return tantivy.Query.boolean_query(
        [
            (tantivy.Occur.Should, tantivy.Query.term_query(schema, field, term, index_option=FREQ))
            for term in terms
        ]
    )


class Added:
    """The statistics that documents of ``documents`` (each a list of terms) add to an index's."""

    def __init__(self, documents: Sequence[Sequence[str]]) -> None:
        self.documents = len(documents)
        self.length = sum(len(document) for document in documents)
        self.frequencies: Counter[str] = Counter(term for document in documents for term in set(document))


def bm25(
    query_terms: Sequence[str],
    document: Sequence[str],
    *,
    documents: int,
    total_length: int,
    frequency: Callable[[str], int],
) -> float | None:
    """Tantivy's BM25 (``BM25_K1``, ``BM25_B``; idf ``ln(1 + (N - df + 0.5) / (df + 0.5))``) of a
    field holding the terms ``document``, summed over ``query_terms`` as a disjunction of term
    queries sums its clauses, with the statistics of a field of ``documents`` documents of
    ``total_length`` terms in all and ``frequency(term)`` documents holding each term. Lengths are
    exact where tantivy quantizes them (``fieldnorm``), so a score may differ from the one the
    same field gets once indexed by a few percent past 40 terms. ``None`` when the field shares
    no term with the query."""
    frequencies = Counter(document)
    if not any(term in frequencies for term in query_terms):
        return None
    average = max(total_length / max(documents, 1), 1.0)
    norm = BM25_K1 * (1 - BM25_B + BM25_B * len(document) / average)
    score = 0.0
    for term in query_terms:
        tf = frequencies.get(term, 0)
        if tf == 0:
            continue
        df = frequency(term)
        idf = math.log(1 + (documents - df + 0.5) / (df + 0.5))
        score += idf * (1 + BM25_K1) * tf / (tf + norm)
    return score


@dataclass(frozen=True, slots=True)
class Version:
    """The version held for a document: live, or a tombstone (``removed``) at that version."""

    version: int
    removed: bool

    def refuses_upsert(self, version: int) -> bool:
        """A write at ``version`` would regress the document (a newer version, or a tombstone at or
        above it, is held)."""
        return self.version > version or (self.removed and self.version >= version)

    def refuses_removal(self, version: int) -> bool:
        """A removal at ``version`` changes nothing (a newer version, or this tombstone, is held)."""
        return self.version > version or (self.removed and self.version == version)


class VectorSpace:
    """The embedding model and dimension of an index's vectors, recorded on first use (``ensure``);
    ``name`` says which index in errors ("embedded index", "note index"). Not thread-safe: its index
    holds the lock."""

    def __init__(self, name: str) -> None:
        self._name = name
        self.model_id: str | None = None
        self.dimension: int | None = None

    def ensure(self, model_id: str, dimension: int) -> bool:
        """Record ``model_id`` and ``dimension`` on first use (``True``: the caller allocates its
        matrix); ``False`` when they are the recorded ones; ``IndexConfigurationError`` when a later
        call names another model or dimension."""
        if self.model_id is None:
            self.model_id, self.dimension = model_id, dimension
            return True
        if (self.model_id, self.dimension) != (model_id, dimension):
            raise IndexConfigurationError(
                f"The {self._name} holds vectors of embedding model {self.model_id!r} with dimension "
                f"{self.dimension}, but {model_id!r} with dimension {dimension} is configured.",
                {"index_model": self.model_id, "index_dimension": self.dimension},
            )
        return False

    def unit(self, vector: Sequence[float]) -> npt.NDArray[np.float32]:
        """``vector`` as a float32 unit vector. ``IndexConfigurationError`` before ``ensure``;
        ``ValueError`` for a wrong dimension, a zero or a non-finite vector (no cosine)."""
        if self.dimension is None:
            raise IndexConfigurationError(f"The {self._name} is not configured; call ensure_ready first.")
        with np.errstate(over="ignore", invalid="ignore"):  # overflow is refused just below
            array = np.asarray(vector, dtype=np.float32)
            norm = float(np.linalg.norm(array))
        if array.shape != (self.dimension,):
            raise ValueError(f"vector has {array.size} dimensions; the index expects {self.dimension}")
        if norm == 0.0 or not np.isfinite(norm):
            raise ValueError("a zero or non-finite vector has no cosine similarity")
        return array / np.float32(norm)


def nearest(
    rows: npt.NDArray[np.int64], scores: npt.NDArray[np.float32], k: int
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
    """The rows among ``rows`` (with their ``scores``, position by position) scoring at least the
    k-th best, unordered: every row tied with the k-th is kept, so a tie-break by id decides."""
    if rows.size <= k:
        return rows, scores
    kth = scores[np.argpartition(-scores, k - 1)[:k]].min()
    keep = np.flatnonzero(scores >= kth)
    return rows[keep], scores[keep]
