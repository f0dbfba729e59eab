"""Value types of retrieval shared by the chunker, the index adapters, fusion and the search service."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from knowledge.domain.visibility import VisibilityFilter


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


TITLE_BOOST = 1.0
"""Weight of ``title`` against ``text`` (1.0) in the BM25 leg."""
TIE_BREAKER = 0.5
"""``multi_match`` ``best_fields`` tie breaker: score = best field + 0.5 × the other field.

Both are BEIR's BM25 settings (Thakur et al. 2021) and the best of the grid tried on SciFact's train
queries (docs/benchmarks.md); both index adapters use them by default."""


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

    ``version`` is the item's version in the store; an index never lets a lower version replace a
    higher one (external versioning), so late or replayed events cannot regress it.
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


class IndexQuery(_Frozen):
    """One search over both legs. ``k`` is the number of chunk candidates each leg returns.

    ``vector`` is the query embedding (required for the semantic leg); ``legs`` names the legs to run.
    """

    text: str
    vector: list[float] | None = None
    visibility: VisibilityFilter
    k: int = Field(ge=1)
    legs: frozenset[Leg] = frozenset({Leg.LEXICAL, Leg.SEMANTIC})


class ChunkHit(_Frozen):
    """A chunk returned by one leg. ``score`` is the leg's raw score: BM25 for lexical, cosine
    similarity in [-1, 1] for semantic (OpenSearch's ``cosinesimil`` space scores are converted back)."""

    knowledge_base_id: str
    knowledge_item_id: str
    knowledge_revision_id: str
    ordinal: int
    start: int
    end: int
    text: str
    score: float


class LegHits(_Frozen):
    """Each leg's hits, best first; a leg that was not run is an empty list."""

    lexical: list[ChunkHit] = []
    semantic: list[ChunkHit] = []
