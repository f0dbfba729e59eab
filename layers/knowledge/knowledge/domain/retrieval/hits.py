"""Value types of retrieval shared by the chunker, the index adapters, fusion and the search service."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import NamedTuple

from pydantic import BaseModel, ConfigDict, Field

from knowledge.domain.access.visibility import VisibilityFilter


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


TITLE_BOOST = 1.0
"""Weight of ``title`` against ``text`` (1.0) in the BM25 leg."""
TIE_BREAKER = 0.3
"""``multi_match`` ``best_fields`` tie breaker: score = best field + 0.3 × the other field.

The title weight is BEIR's (Thakur et al. 2021); both are the best of the grid tried for the
lexical leg over passages on SciFact's train queries (docs/benchmarks.md), and both index adapters
use them by default."""


PASSAGE_TOKENS = 512
"""Token budget of a lexical passage: the chunker's strongest boundaries within it (sections first)."""
CANDIDATE_DEPTH = 200
"""Chunk candidates each leg returns for every query, whatever ``max_results`` asks (as OpenSearch's
hybrid ``pagination_depth``): 4 × the largest page of 50 (DESIGN §4), so normalization statistics,
and with them the order, never depend on the page size, and stale hits dropped by the read-time
truth check are refilled from the same candidates."""


class SearchMode(StrEnum):
    """Scoring modes of the tool (DESIGN §4)."""

    HYBRID = "hybrid"
    LEXICAL = "lexical"
    SEMANTIC = "semantic"
    RRF = "rrf"


class Leg(StrEnum):
    LEXICAL = "lexical"
    SEMANTIC = "semantic"


class Chunk(_Frozen):
    """A span of a revision: ``text == content[start:end]`` (code points), ``ordinal`` counts from 0."""

    ordinal: int = Field(ge=0)
    start: int = Field(ge=0)
    end: int = Field(ge=0)
    text: str


class IndexedChunk(_Frozen):
    """A chunk with its embedding (L2-normalized, ``dimension`` floats)."""

    ordinal: int = Field(ge=0)
    start: int = Field(ge=0)
    end: int = Field(ge=0)
    text: str
    vector: list[float]


class IndexedItem(_Frozen):
    """Everything a search index stores for the current revision of one published item.

    ``chunks`` are the semantic leg's units, sized for the embedder, each with its vector;
    ``passages`` are the lexical leg's units, whole sections of up to ``PASSAGE_TOKENS`` tokens,
    because BM25 scores a section better than the slices of it an embedder needs. Both cover the
    revision, with offsets in its code points.

    ``version`` is the item's version in the store; an index never lets a lower version replace a
    higher one (external versioning), so late or replayed events cannot regress it.

    In the knowledge history index (DESIGN §11) an entry is one state of an item
    (``knowledge_item_id`` is ``{item}@{state version}``, ``history_key``) holding the revision
    current over ``[valid_from, valid_to)`` (``valid_to`` ``None``: still current); entries of the
    live index have neither.
    """

    tenant_id: str
    knowledge_base_id: str
    knowledge_item_id: str
    knowledge_revision_id: str
    version: int = Field(ge=1)
    owner_id: str
    team_id: str | None = None
    scope: str
    title: str
    chunks: list[IndexedChunk]
    passages: list[Chunk]
    valid_from: datetime | None = None
    valid_to: datetime | None = None


HISTORY_SEPARATOR = "@"
"""Joins an item id and one of its state versions into a key of the knowledge history index."""


def history_key(knowledge_item_id: str, state_version: int) -> str:
    """The history index key of the item's state ``state_version`` (``{item}@{version}``)."""
    return f"{knowledge_item_id}{HISTORY_SEPARATOR}{state_version}"


def item_of_history_key(key: str) -> str:
    """The item id of a history index key (the key itself when it names no state)."""
    return key.split(HISTORY_SEPARATOR, 1)[0]


class IndexQuery(_Frozen):
    """One search over both legs. ``k`` is the number of candidates each leg returns (passages for
    the lexical leg, chunks for the semantic leg).

    ``vector`` is the query embedding (required for the semantic leg); ``legs`` names the legs to run.
    ``tolerate`` names the legs whose failure by the engine is reported in the answer
    (``LegHits.failed``, with the other leg's hits) rather than raised as
    ``DependencyUnavailableError``; by default every failure is raised.

    ``as_of`` (history index only) keeps the entries valid at that moment
    (``valid_from <= as_of < valid_to``) inside both legs, before ranking.
    """

    text: str
    vector: list[float] | None = None
    visibility: VisibilityFilter
    k: int = Field(ge=1)
    legs: frozenset[Leg] = frozenset({Leg.LEXICAL, Leg.SEMANTIC})
    tolerate: frozenset[Leg] = frozenset()
    as_of: datetime | None = None


class ChunkHit(NamedTuple):
    """A span returned by one leg (a passage of the lexical leg, a chunk of the semantic leg).
    ``score`` is the leg's raw score: BM25 for lexical, cosine similarity in [-1, 1] for semantic
    (OpenSearch's ``cosinesimil`` space scores are converted back).

    A named tuple, not a pydantic model: a search builds one per leg candidate (up to 2 × 200 per
    round) from values its adapter already typed, and a tuple costs a sixth of a validated model
    to build. Adapters convert what they read (``str``, ``int``, ``float``) before building one."""

    knowledge_base_id: str
    knowledge_item_id: str
    knowledge_revision_id: str
    ordinal: int
    start: int
    end: int
    text: str
    score: float


class Hit(NamedTuple):
    """A leg's hit as fusion sees it, for any corpus: the document's id (a knowledge item, a note), the
    hit's ordinal within the document (its chunk or passage; 0 for a note) and the leg's raw score."""

    id: str
    ordinal: int
    score: float


@dataclass(frozen=True, slots=True)
class LegHits:
    """Each leg's hits, best first; a leg that was not run is an empty list. ``failed`` is the leg the
    engine failed (its list empty), when the query tolerated it (``IndexQuery.tolerate``)."""

    lexical: list[ChunkHit] = field(default_factory=list)
    semantic: list[ChunkHit] = field(default_factory=list)
    failed: Leg | None = None


def with_pending(hits: LegHits, scored: LegHits, pending: set[str], k: int) -> LegHits:
    """One round's ``hits`` with ``scored`` (the hits of published revisions the index has not
    taken yet, ``SearchIndex.score_items``) merged into each leg: every hit of an item among
    ``pending`` (an older revision the index still holds) gives way, the leg is ordered by score,
    then item id, then ordinal, and cut at ``k``."""

    def merged(held: list[ChunkHit], added: list[ChunkHit]) -> list[ChunkHit]:
        kept = [hit for hit in held if hit.knowledge_item_id not in pending] + added
        return sorted(kept, key=lambda hit: (-hit.score, hit.knowledge_item_id, hit.ordinal))[:k]

    return LegHits(
        lexical=merged(hits.lexical, scored.lexical),
        semantic=merged(hits.semantic, scored.semantic),
        failed=hits.failed,
    )
