"""Fusion of the lexical (BM25) and semantic (kNN) legs into one ranking of documents (DESIGN §4).

The core (``fuse_hits``) works on plain ``Hit``s, ``(id, ordinal, score)`` per leg, for every
corpus: knowledge items (a hit per chunk or passage, ``fuse``) and notes (one hit per note). Every
mode first collapses each leg to one hit per document, its best one, and ranks the collapsed leg
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

Results are sorted by ``final`` descending, ties by document id, so equal inputs give equal order. A
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

from knowledge.domain.retrieval.hits import ChunkHit, Hit, Leg, LegHits, SearchMode

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
    """One leg's view of a document: its best hit's raw score, its normalized score over the
    collapsed leg (in [0, 1] for ``NORMALIZATION``), and its rank (from 1) in the collapsed leg.

    ``LegScore``, ``Fused`` and ``FusedHit`` are named tuples, not pydantic models or frozen
    dataclasses: fusion builds one of each per candidate (hundreds per query) from values the index
    already typed, a named tuple is the cheapest immutable value to build, and only the few that
    reach the answer become pydantic models (``contract.search.Scores``)."""

    raw: float
    normalized: float
    rank: int


class Fused(NamedTuple):
    """One document after fusion. ``lexical`` / ``semantic`` are set for each leg that returned the
    document, whatever the mode. ``leg`` and ``at`` name the hit to show: the document's best hit in
    the leg contributing more to ``final`` (lexical on a tie), at position ``at`` of that leg's input
    to ``fuse_hits``."""

    id: str
    final: float
    leg: Leg
    at: int
    lexical: LegScore | None = None
    semantic: LegScore | None = None


class FusedHit(NamedTuple):
    """One item after fusion (``Fused`` of a knowledge search). ``chunk`` is the chunk to excerpt: the
    best chunk of the leg contributing more to ``final`` (lexical on a tie); the revision id is that
    chunk's."""

    knowledge_base_id: str
    knowledge_item_id: str
    knowledge_revision_id: str
    final: float
    chunk: ChunkHit
    lexical: LegScore | None = None
    semantic: LegScore | None = None


_Ranked = tuple[LegScore, int]
"""A document's leg score and the position of its best hit in the leg's input (a plain pair: fusion
builds one per leg candidate)."""

_ORDER = itemgetter(0, 1)  # Hit: (id, ordinal)
_HIT_ID = itemgetter(0)  # Hit.id, Fused.id
_SCORE = itemgetter(2)  # Hit.score
_FINAL = itemgetter(1)  # Fused.final
_CHUNK_FIELDS = itemgetter(1, 3, 7)  # ChunkHit: (knowledge_item_id, ordinal, score)
_new = tuple.__new__
"""Builds a named tuple from a tuple of its fields in order, without the Python-level ``__new__``
frame of ``Fused(...)``: fusion builds one per candidate document."""
_legscore = partial(_new, LegScore)  # LegScore from a (raw, normalized, rank) tuple
_hit = partial(_new, Hit)  # Hit from an (id, ordinal, score) tuple


class Best(NamedTuple):
    """A leg collapsed to each document's best hit, best first, as parallel lists: the documents' ids,
    their best hits' scores (finite) and those hits' positions in the leg's input."""

    ids: list[str]
    scores: list[float]
    positions: list[int]


def plain(hits: Sequence[ChunkHit]) -> list[Hit]:
    """``hits`` as fusion's plain hits: ``(knowledge_item_id, ordinal, score)``, position by position."""
    return list(map(_hit, map(_CHUNK_FIELDS, hits)))


def best_hits(hits: Sequence[Hit]) -> Best:
    """Each document's best hit, best first; ties by id, then ordinal.

    Non-finite scores are first replaced by the minimum finite score of ``hits`` (0.0 if none). Both
    engines return each leg in this order already, so only a leg out of order (or with a non-finite
    score) is sorted.
    """
    if _in_order(hits):
        ordered: Sequence[Hit] = hits
        order: Sequence[int] = range(len(hits))
    else:
        ordered, order = _sorted(hits)
    ids = list(map(_HIT_ID, ordered))
    # Each id's first place in ``ordered``: a dict built from the end keeps the first place of each.
    firsts = sorted(dict(zip(reversed(ids), range(len(ids) - 1, -1, -1), strict=True)).values())
    return Best(
        ids=list(map(ids.__getitem__, firsts)),
        scores=[ordered[place][2] for place in firsts],
        positions=list(map(order.__getitem__, firsts)),
    )


def collapse(hits: Sequence[ChunkHit]) -> list[ChunkHit]:
    """One hit per item, its best chunk, best first; ties by item id, then chunk ordinal
    (``best_hits``; a non-finite score comes back replaced)."""
    best = best_hits(plain(hits))
    return [
        hits[position] if hits[position][7] == score else hits[position]._replace(score=score)
        for score, position in zip(best.scores, best.positions, strict=True)
    ]


def _in_order(hits: Sequence[Hit]) -> bool:
    """Every score finite, and ``hits`` by score descending, ties by (id, ordinal)."""
    if not math.isfinite(sum(map(_SCORE, hits))):  # a NaN or an infinity (or an overflow)
        return False
    return all(
        earlier[2] > later[2] or (earlier[2] == later[2] and _ORDER(earlier) <= _ORDER(later))
        for earlier, later in pairwise(hits)
    )


def _sorted(hits: Sequence[Hit]) -> tuple[list[Hit], list[int]]:
    """``hits`` with finite scores (``_finite``) by score descending, ties by (id, ordinal), and the
    position in ``hits`` of each: two stable sorts."""
    finite = _finite(hits)
    order = sorted(range(len(finite)), key=lambda position: _ORDER(finite[position]))
    order.sort(key=lambda position: finite[position][2], reverse=True)
    return [finite[position] for position in order], order


def clamp_alpha(alpha: float) -> float:
    """``alpha`` clamped to [0, 1]. Raises ``ValueError`` for NaN (callers validate it first)."""
    if math.isnan(alpha):
        raise ValueError("alpha must be a number")
    return min(1.0, max(0.0, alpha))


def fuse_hits(
    lexical: Sequence[Hit],
    semantic: Sequence[Hit],
    mode: SearchMode,
    alpha: float,
    normalizer: Normalizer | None = None,
) -> list[Fused]:
    """Documents ranked by ``mode`` (see the module doc); ``alpha`` matters only for ``hybrid``, and
    ``normalizer`` (default ``NORMALIZATION``) only for ``hybrid`` and the reported normalized scores.

    Returns every document of the legs the mode uses (both for ``hybrid`` and ``rrf``), best first.
    Raises ``ValueError`` when ``alpha`` is NaN.
    """
    weight = clamp_alpha(alpha)
    normalize = normalizer or NORMALIZATION
    lexical_ranked = _rank(Leg.LEXICAL, best_hits(lexical), normalize)
    semantic_ranked = _rank(Leg.SEMANTIC, best_hits(semantic), normalize)
    lexical_parts = _contributions(lexical_ranked, mode, SearchMode.LEXICAL, weight)
    semantic_parts = _contributions(semantic_ranked, mode, SearchMode.SEMANTIC, 1.0 - weight)
    fused: list[Fused] = []
    if lexical_parts:
        for doc, (score, at) in lexical_ranked.items():
            part = final = lexical_parts[doc]
            leg = Leg.LEXICAL
            semantic_score = None
            other = semantic_ranked.get(doc)
            if other is not None:
                semantic_score = other[0]
                other_part = semantic_parts.get(doc)
                if other_part is not None:  # both legs count: the hit of the larger contribution
                    if other_part > part:
                        leg, at = Leg.SEMANTIC, other[1]
                    final = part + other_part
            fused.append(_new(Fused, (doc, final, leg, at, score, semantic_score)))
    if semantic_parts:
        for doc, (score, at) in semantic_ranked.items():
            if lexical_parts and doc in lexical_ranked:
                continue  # fused above, with both legs
            lexical_entry = lexical_ranked.get(doc)
            lexical_score = lexical_entry[0] if lexical_entry else None
            fused.append(_new(Fused, (doc, semantic_parts[doc], Leg.SEMANTIC, at, lexical_score, score)))
    # Best first, ties by id (unique here): two stable sorts with C-level keys.
    fused.sort(key=_HIT_ID)
    fused.sort(key=_FINAL, reverse=True)
    return fused


def fuse(
    legs: LegHits, mode: SearchMode, alpha: float, normalizer: Normalizer | None = None
) -> list[FusedHit]:
    """Items ranked by ``mode`` (``fuse_hits`` over each leg's chunk hits, an item a document), each
    with the chunk to excerpt. Raises ``ValueError`` when ``alpha`` is NaN."""
    lexical, semantic = legs.lexical, legs.semantic
    items: list[FusedHit] = []
    for item, final, leg, at, lexical_score, semantic_score in fuse_hits(
        plain(lexical), plain(semantic), mode, alpha, normalizer
    ):
        chunk = (lexical if leg is Leg.LEXICAL else semantic)[at]
        shown = lexical_score if leg is Leg.LEXICAL else semantic_score
        if shown is not None and chunk[7] != shown[0]:  # a non-finite score, replaced
            chunk = chunk._replace(score=shown[0])
        items.append(_new(FusedHit, (chunk[0], item, chunk[2], final, chunk, lexical_score, semantic_score)))
    return items


def _contributions(
    ranked: Mapping[str, _Ranked], mode: SearchMode, leg_mode: SearchMode, weight: float
) -> dict[str, float]:
    """Document id → what one leg adds to ``final`` in ``mode``; empty when the leg does not count in
    ``mode``: its raw score alone, ``weight`` × its normalized score in ``hybrid``, ``1 / (k + rank)``
    in ``rrf``."""
    if mode is leg_mode:
        return {doc: entry[0].raw for doc, entry in ranked.items()}
    if mode is SearchMode.HYBRID:
        return {doc: weight * entry[0].normalized for doc, entry in ranked.items()}
    if mode is SearchMode.RRF:
        return {doc: 1.0 / (RRF_K + entry[0].rank) for doc, entry in ranked.items()}
    return {}


def _rank(leg: Leg, best: Best, normalize: Normalizer) -> dict[str, _Ranked]:
    """Document id → its leg score (raw, normalized, rank from 1) and the position of its best hit."""
    if not best.ids:
        return {}
    raw = best.scores
    scores = map(_legscore, zip(raw, normalize(leg, raw), range(1, len(raw) + 1), strict=True))
    return dict(zip(best.ids, zip(scores, best.positions, strict=True), strict=True))


def _min_max(score: float, low: float, high: float) -> float:
    return min(1.0, max(0.0, (score - low) / (high - low)))


def _finite(hits: Sequence[Hit]) -> list[Hit]:
    """A copy of ``hits`` with each non-finite score replaced by the minimum finite one (0.0 if
    none)."""
    finite = [hit.score for hit in hits if math.isfinite(hit.score)]
    floor = min(finite, default=0.0)
    return [hit if math.isfinite(hit.score) else hit._replace(score=floor) for hit in hits]
