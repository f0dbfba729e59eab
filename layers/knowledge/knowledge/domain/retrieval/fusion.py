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
from functools import partial
from itertools import pairwise
from operator import itemgetter
from typing import NamedTuple, Protocol

from knowledge.domain.retrieval.hits import ChunkHit, Leg, LegHits, SearchMode

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

_ITEM_ID = itemgetter(1)  # ChunkHit.knowledge_item_id, FusedHit.knowledge_item_id
_ITEM_ORDER = itemgetter(1, 3)  # ChunkHit: (knowledge_item_id, ordinal)
_SCORE = itemgetter(7)  # ChunkHit.score
_FINAL = itemgetter(3)  # FusedHit.final
_new = tuple.__new__
"""Builds a named tuple from a tuple of its fields in order, without the Python-level ``__new__``
frame of ``FusedHit(...)``: fusion builds one per candidate item."""
_legscore = partial(_new, LegScore)  # LegScore from a (raw, normalized, rank) tuple


def collapse(hits: Sequence[ChunkHit]) -> list[ChunkHit]:
    """One hit per item, its best chunk, best first; ties by item id, then chunk ordinal.

    Non-finite scores are first replaced by the minimum finite score of ``hits``. Both index
    adapters return each leg in this order already, so only a leg out of order (or with a
    non-finite score) is sorted.
    """
    ordered = hits if _in_order(hits) else _sorted(hits)
    seen: set[str] = set()
    best: list[ChunkHit] = []
    for hit in ordered:
        if hit.knowledge_item_id not in seen:
            seen.add(hit.knowledge_item_id)
            best.append(hit)
    return best


def _in_order(hits: Sequence[ChunkHit]) -> bool:
    """Every score finite, and ``hits`` by score descending, ties by (item id, ordinal)."""
    if not math.isfinite(sum(map(_SCORE, hits))):  # a NaN or an infinity (or an overflow)
        return False
    return all(
        earlier.score > later.score
        or (earlier.score == later.score and _ITEM_ORDER(earlier) <= _ITEM_ORDER(later))
        for earlier, later in pairwise(hits)
    )


def _sorted(hits: Sequence[ChunkHit]) -> list[ChunkHit]:
    """``hits`` with finite scores (``_finite``) by score descending, ties by (item id, ordinal):
    two stable sorts with C-level keys."""
    ordered = _finite(hits)
    ordered.sort(key=_ITEM_ORDER)
    ordered.sort(key=_SCORE, reverse=True)
    return ordered


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
    lexical_parts = _contributions(lexical, mode, SearchMode.LEXICAL, weight)
    semantic_parts = _contributions(semantic, mode, SearchMode.SEMANTIC, 1.0 - weight)
    fused: list[FusedHit] = []
    if lexical_parts:
        for item, (score, chunk) in lexical.items():
            part = final = lexical_parts[item]
            semantic_score = None
            other = semantic.get(item)
            if other is not None:
                semantic_score = other[0]
                other_part = semantic_parts.get(item)
                if other_part is not None:  # both legs count: the chunk of the larger contribution
                    chunk = other[1] if other_part > part else chunk
                    final = part + other_part
            fused.append(_new(FusedHit, (chunk[0], item, chunk[2], final, chunk, score, semantic_score)))
    if semantic_parts:
        for item, (score, chunk) in semantic.items():
            if lexical_parts and item in lexical:
                continue  # fused above, with both legs
            lexical_entry = lexical.get(item)
            lexical_score = lexical_entry[0] if lexical_entry else None
            final = semantic_parts[item]
            fused.append(_new(FusedHit, (chunk[0], item, chunk[2], final, chunk, lexical_score, score)))
    # Best first, ties by item id (unique here): two stable sorts with C-level keys.
    fused.sort(key=_ITEM_ID)
    fused.sort(key=_FINAL, reverse=True)
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


def _rank(leg: Leg, collapsed: Sequence[ChunkHit], normalize: Normalizer) -> dict[str, _Ranked]:
    """Item id → its leg score (raw, normalized, rank from 1) and best chunk."""
    if not collapsed:
        return {}
    raw = [hit.score for hit in collapsed]
    scores = map(_legscore, zip(raw, normalize(leg, raw), range(1, len(raw) + 1), strict=True))
    return dict(zip(map(_ITEM_ID, collapsed), zip(scores, collapsed, strict=True), strict=True))


def _min_max(score: float, low: float, high: float) -> float:
    return min(1.0, max(0.0, (score - low) / (high - low)))


def _finite(hits: Sequence[ChunkHit]) -> list[ChunkHit]:
    """A copy of ``hits`` with each non-finite score replaced by the minimum finite one (0.0 if
    none)."""
    finite = [hit.score for hit in hits if math.isfinite(hit.score)]
    floor = min(finite, default=0.0)
    return [hit if math.isfinite(hit.score) else hit._replace(score=floor) for hit in hits]
