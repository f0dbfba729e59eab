"""bench.relevance's alpha curve agrees with fusing once per alpha, the slow way it replaces."""

from __future__ import annotations

import random

import pytest

from bench.normalization import candidates
from bench.relevance import ALPHA_GRID, Split, best_alpha, evaluate, hybrid_curve
from knowledge.domain.retrieval import ChunkHit, LegHits, SearchMode


def _leg(rng: random.Random, items: list[str], low: float, high: float) -> list[ChunkHit]:
    return [
        ChunkHit(
            knowledge_base_id="kb_1",
            knowledge_item_id=item,
            knowledge_revision_id=f"{item}-r1",
            ordinal=ordinal,
            start=0,
            end=1,
            text="x",
            score=round(rng.uniform(low, high), 2),
        )
        for item in rng.sample(items, k=len(items) // 2)
        for ordinal in range(rng.randint(1, 2))
    ]


def _corpus(seed: int) -> tuple[dict[str, LegHits], Split]:
    rng = random.Random(seed)
    items = [f"d{n:02d}" for n in range(30)]
    hits, qrels = {}, {}
    for query in range(12):
        qid = f"q{query}"
        hits[qid] = LegHits(lexical=_leg(rng, items, 0.0, 12.0), semantic=_leg(rng, items, -0.2, 0.9))
        qrels[qid] = {item: 1 for item in rng.sample(items, k=3)}
    return hits, Split(queries={qid: qid for qid in hits}, qrels=qrels)


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("name", ["lower-bounds(0, 0)", "min-max", "z-score-floor"])
def test_hybrid_curve_equals_fusing_once_per_alpha(seed: int, name: str) -> None:
    hits, split = _corpus(seed)
    normalizer = candidates()[name]

    curve = hybrid_curve(hits, split, ALPHA_GRID, normalizer)

    expected = [
        evaluate(hits, split, SearchMode.HYBRID, alpha, normalizer)["nDCG@10"] for alpha in ALPHA_GRID
    ]
    assert [alpha for alpha, _ in curve] == ALPHA_GRID
    assert [ndcg for _, ndcg in curve] == pytest.approx(expected, abs=1e-12)


def test_best_alpha_prefers_the_alpha_closest_to_one_half_on_ties() -> None:
    assert best_alpha([(0.2, 0.7), (0.45, 0.71), (0.6, 0.71), (0.9, 0.5)]) == (0.45, 0.71)
