"""Fusion of the lexical (BM25) and semantic (kNN) legs into one ranking of items (DESIGN §4).

Every mode first collapses each leg to one hit per item, its best chunk, and ranks the collapsed leg
from 1. Then:

- ``lexical`` / ``semantic``: that leg alone; ``final`` is its raw score.
- ``hybrid``: each collapsed leg is normalized over its candidates by ``NORMALIZATION``, min–max
  with a lower bound of 0 for both legs: ``norm(s) = clip((s − 0) / (max − 0), 0, 1)``, i.e. the
  score over the leg's best score (a BM25 score is never negative, and a cosine of 0 or below means
  unrelated). So a real keyword match keeps credit in proportion to its BM25 score, where plain
  min–max gave the leg's weakest match 0, the score of an item the leg did not return; and the
  normalized scores do not depend on how deep the leg's candidates reach. Then
  ``final = alpha·lexical + (1 − alpha)·semantic`` with ``alpha`` (the lexical weight) clamped to
  [0, 1]. Edge cases (DESIGN §4): an item missing from a leg scores 0 there; an empty leg
  contributes 0; a single hit, or a leg whose maximum equals its minimum, normalizes to 1.0; a leg
  whose best score is not above the bound (every cosine ≤ 0) falls back to min–max over its own
  scores. Chosen on SciFact's train queries among min–max, min–max with other lower bounds,
  max-only scaling and z-score (docs/benchmarks.md).
- ``rrf``: reciprocal rank fusion, ``Σ 1/(k + rank)`` over the legs that returned the item, with
  k = 60 (Cormack, Clarke & Büttcher, SIGIR 2009).

Results are sorted by ``final`` descending, ties by item id, so equal inputs give equal order. A
score that is NaN or infinite (an engine fault) is replaced by its leg's minimum finite score (0.0 if
there is none), so it can never jump to the top or poison the sort.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple, Protocol

from knowledge.domain.retrieval import ChunkHit, Leg, LegHits, SearchMode

RRF_K = 60
"""The rank constant of reciprocal rank fusion (Cormack et al. 2009)."""


class Normalizer(Protocol):
    """Maps one collapsed leg's raw scores (best first, all finite, at least one) to normalized scores,
    position by position."""

    def __call__(self, leg: Leg, scores: Sequence[float]) -> list[float]: ...


@dataclass(frozen=True)
class MinMaxWithLowerBounds:
    """Min–max normalization with a lower bound per leg (as OpenSearch ≥ 2.19's ``lower_bounds``,
    mode ``clip``): ``clip((s − low) / (max − low), 0, 1)`` with ``low`` the leg's bound, or the leg's
    minimum when the bound is ``None`` or not below the leg's maximum. ``max = low`` gives 1.0, so a
    single hit and a leg of equal scores normalize to 1.0."""

    lexical: float | None
    semantic: float | None

    def __call__(self, leg: Leg, scores: Sequence[float]) -> list[float]:
        high = scores[0]
        bound = self.lexical if leg is Leg.LEXICAL else self.semantic
        low = bound if bound is not None and bound < high else scores[-1]
        if high <= low:
            return [1.0] * len(scores)
        if not math.isfinite(high - low):  # scores near the float limits: halve them, the span is finite
            return [_min_max(score / 2, low / 2, high / 2) for score in scores]
        span = high - low
        normalized = [(score - low) / span for score in scores]  # at most 1: ``high`` is the best score
        if normalized[-1] < 0.0:  # a bound above the leg's weakest score: clip from below
            normalized = [value if value > 0.0 else 0.0 for value in normalized]
        return normalized


NORMALIZATION = MinMaxWithLowerBounds(lexical=0.0, semantic=0.0)
"""The normalization of hybrid search: each leg's score over its best score, clipped to [0, 1]."""


class LegScore(NamedTuple):
    """One leg's view of an item: its best chunk's raw score, its normalized score over the collapsed
    leg (in [0, 1] for ``NORMALIZATION``), and its rank (from 1) in the collapsed leg.

    ``LegScore`` and ``FusedHit`` are named tuples, not pydantic models or frozen dataclasses: fusion
    builds one of each per candidate item (hundreds per query) from values the index already typed,
    a named tuple is the cheapest immutable value to build, and only the few that reach the answer
    become pydantic models (``domain.contract.Scores``)."""

    raw: float
    normalized: float
    rank: int


class FusedHit(NamedTuple):
    """One item after fusion. ``lexical`` / ``semantic`` are set for each leg that returned the item,
    whatever the mode. ``chunk`` is the chunk to excerpt: the best chunk of the leg contributing more
    to ``final`` (lexical on a tie); the revision id is that chunk's."""

    knowledge_base_id: str
    knowledge_item_id: str
    knowledge_revision_id: str
    final: float
    chunk: ChunkHit
    lexical: LegScore | None = None
    semantic: LegScore | None = None


_Ranked = tuple[LegScore, ChunkHit]
"""An item's leg score and its best chunk in that leg (a plain pair: fusion builds one per leg
candidate)."""


def collapse(hits: Sequence[ChunkHit]) -> list[ChunkHit]:
    """One hit per item, its best chunk, best first; ties by item id, then chunk ordinal.

    Non-finite scores are first replaced by the minimum finite score of ``hits``.
    """
    ordered = sorted(_finite(hits), key=lambda hit: (-hit.score, hit.knowledge_item_id, hit.ordinal))
    seen: set[str] = set()
    best: list[ChunkHit] = []
    for hit in ordered:
        if hit.knowledge_item_id not in seen:
            seen.add(hit.knowledge_item_id)
            best.append(hit)
    return best


def clamp_alpha(alpha: float) -> float:
    """``alpha`` clamped to [0, 1]. Raises ``ValueError`` for NaN (callers validate it first)."""
    if math.isnan(alpha):
        raise ValueError("alpha must be a number")
    return min(1.0, max(0.0, alpha))


def fuse(
    legs: LegHits, mode: SearchMode, alpha: float, normalizer: Normalizer | None = None
) -> list[FusedHit]:
    """Items ranked by ``mode`` (see the module doc); ``alpha`` matters only for ``hybrid``, and
    ``normalizer`` (default ``NORMALIZATION``) only for ``hybrid`` and the reported normalized scores.

    Returns every item of the legs the mode uses (both for ``hybrid`` and ``rrf``), best first.
    Raises ``ValueError`` when ``alpha`` is NaN.
    """
    weight = clamp_alpha(alpha)
    normalize = normalizer or NORMALIZATION
    lexical = _rank(Leg.LEXICAL, collapse(legs.lexical), normalize)
    semantic = _rank(Leg.SEMANTIC, collapse(legs.semantic), normalize)
    if mode is SearchMode.LEXICAL:
        members = list(lexical)
    elif mode is SearchMode.SEMANTIC:
        members = list(semantic)
    else:
        members = list(dict.fromkeys([*lexical, *semantic]))
    lexical_parts = _contributions(lexical, mode, SearchMode.LEXICAL, weight)
    semantic_parts = _contributions(semantic, mode, SearchMode.SEMANTIC, 1.0 - weight)
    fused = []
    for item in members:
        lexical_part, semantic_part = lexical_parts.get(item), semantic_parts.get(item)
        use_lexical = lexical_part is not None and (semantic_part is None or lexical_part >= semantic_part)
        _, chunk = lexical[item] if use_lexical else semantic[item]  # a leg the mode uses returned it
        lexical_rank, semantic_rank = lexical.get(item), semantic.get(item)
        fused.append(  # positional, in field order: a keyword call costs twice as much here
            FusedHit(
                chunk.knowledge_base_id,
                item,
                chunk.knowledge_revision_id,
                (lexical_part or 0.0) + (semantic_part or 0.0),
                chunk,
                lexical_rank[0] if lexical_rank else None,
                semantic_rank[0] if semantic_rank else None,
            )
        )
    fused.sort(key=lambda hit: (-hit.final, hit.knowledge_item_id))
    return fused


def _contributions(
    ranked: Mapping[str, _Ranked], mode: SearchMode, leg_mode: SearchMode, weight: float
) -> dict[str, float]:
    """Item id → what one leg adds to ``final`` in ``mode``; empty when the leg does not count in
    ``mode``: its raw score alone, ``weight`` × its normalized score in ``hybrid``, ``1 / (k + rank)``
    in ``rrf``."""
    if mode is leg_mode:
        return {item: entry[0].raw for item, entry in ranked.items()}
    if mode is SearchMode.HYBRID:
        return {item: weight * entry[0].normalized for item, entry in ranked.items()}
    if mode is SearchMode.RRF:
        return {item: 1.0 / (RRF_K + entry[0].rank) for item, entry in ranked.items()}
    return {}


def _rank(leg: Leg, collapsed: Sequence[ChunkHit], normalize: Normalizer) -> Mapping[str, _Ranked]:
    """Item id → its leg score (raw, normalized, rank from 1) and best chunk."""
    if not collapsed:
        return {}
    normalized = normalize(leg, [hit.score for hit in collapsed])
    return {
        hit.knowledge_item_id: (LegScore(hit.score, value, rank), hit)
        for rank, (hit, value) in enumerate(zip(collapsed, normalized, strict=True), start=1)
    }


def _min_max(score: float, low: float, high: float) -> float:
    return min(1.0, max(0.0, (score - low) / (high - low)))


def _finite(hits: Sequence[ChunkHit]) -> list[ChunkHit]:
    finite = [hit.score for hit in hits if math.isfinite(hit.score)]
    if len(finite) == len(hits):
        return list(hits)
    floor = min(finite, default=0.0)
    return [hit if math.isfinite(hit.score) else hit._replace(score=floor) for hit in hits]
