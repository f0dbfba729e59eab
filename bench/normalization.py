"""Score normalization of hybrid search, compared on BEIR SciFact's train queries.

    python -m bench.normalization --data-dir ../shared/data/scifact

Indexes the corpus as ``bench.relevance`` does, runs both legs once for the 809 train queries, then
scores hybrid fusion for every candidate normalization and every alpha of 0.00, 0.05, …, 1.00:

- ``min-max``: ``(s − min) / (max − min)`` over each leg's candidates (the earlier default);
- ``lower-bounds(l, c)``: min–max with a lower bound per leg, ``clip((s − bound) / (max − bound))``,
  with ``l`` for BM25 and ``c`` for cosine similarity (``min`` = no bound);
  ``lower-bounds(0, 0)`` is max-only scaling, ``s / max``;
- ``z-score``: ``(s − mean) / std`` over each leg's candidates, an item missing from a leg scoring 0
  there (the leg's mean), and ``z-score-floor``: the same shifted so the leg's lowest candidate
  scores 0, like a missing item;
- ``distribution-based``: min–max between ``mean − 3·std`` and ``mean + 3·std`` of each leg,
  clipped to [0, 1] (Qdrant's distribution-based score fusion).

Prints one line per candidate with its best alpha and train nDCG@10; the test queries are left to
``bench.relevance``, so the choice never sees them.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from tqdm import tqdm

from bench.relevance import (
    ALPHA_GRID,
    DEFAULT_ALPHA,
    Split,
    best_alpha,
    build_index,
    hybrid_curve,
    load_split,
    open_embedder,
    retrieve,
)
from knowledge.domain.retrieval.chunking import Chunker
from knowledge.domain.retrieval.fusion import MinMaxWithLowerBounds, Normalizer
from knowledge.domain.retrieval.hits import TIE_BREAKER, TITLE_BOOST, Leg, LegHits

SEMANTIC_BOUNDS = (None, -1.0, 0.0, 0.1, 0.2, 0.3)


@dataclass(frozen=True)
class ZScore:
    """``(s − mean) / std`` per leg (population std); ``floor`` shifts the leg's lowest score to 0.
    A leg of equal scores (a single hit included) normalizes to 1.0."""

    floor: bool

    def __call__(self, leg: Leg, scores: Sequence[float]) -> list[float]:
        spread = statistics.pstdev(scores)
        if spread == 0.0:
            return [1.0] * len(scores)
        centre = min(scores) if self.floor else statistics.fmean(scores)
        return [(score - centre) / spread for score in scores]


@dataclass(frozen=True)
class DistributionBased:
    """Distribution-based score fusion (Qdrant's DBSF): min–max between ``mean ± 3·std`` of the leg,
    clipped to [0, 1]. A leg of equal scores (a single hit included) normalizes to 1.0."""

    def __call__(self, leg: Leg, scores: Sequence[float]) -> list[float]:
        spread = statistics.pstdev(scores)
        if spread == 0.0:
            return [1.0] * len(scores)
        low = statistics.fmean(scores) - 3 * spread
        return [min(1.0, max(0.0, (score - low) / (6 * spread))) for score in scores]


def candidates() -> dict[str, Normalizer]:
    """Every normalization compared, by the name printed."""
    named: dict[str, Normalizer] = {"min-max": MinMaxWithLowerBounds(lexical=None, semantic=None)}
    for semantic in SEMANTIC_BOUNDS:
        label = "min" if semantic is None else f"{semantic:g}"
        named[f"lower-bounds(0, {label})"] = MinMaxWithLowerBounds(lexical=0.0, semantic=semantic)
    named["z-score"] = ZScore(floor=False)
    named["z-score-floor"] = ZScore(floor=True)
    named["distribution-based"] = DistributionBased()
    return named


def compare(hits: Mapping[str, LegHits], split: Split) -> list[tuple[str, float, float, float]]:
    """``(name, best alpha, nDCG@10 at that alpha, nDCG@10 at alpha 0.5)`` per candidate, best first."""
    rows = []
    for name, normalizer in tqdm(candidates().items(), desc="normalizations", file=sys.stderr):
        curve = hybrid_curve(hits, split, ALPHA_GRID, normalizer)
        alpha, ndcg = best_alpha(curve)
        rows.append((name, alpha, ndcg, dict(curve)[DEFAULT_ALPHA]))
    return sorted(rows, key=lambda row: -row[2])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data-dir", type=Path, required=True, help="folder of BEIR SciFact")
    parser.add_argument("--cache", type=Path, default=Path("bench/.cache/embeddings.sqlite"))
    args = parser.parse_args(argv)

    embedder = open_embedder(args.cache)
    index = build_index(args.data_dir, embedder, Chunker(), title_boost=TITLE_BOOST, tie_breaker=TIE_BREAKER)
    train = load_split(args.data_dir, "train")
    hits = retrieve(index, embedder, train)
    print(f"SciFact train: {len(train.queries)} queries, hybrid nDCG@10 at the best alpha")
    for name, alpha, ndcg, at_default in compare(hits, train):
        print(f"{name:<24} alpha={alpha:.2f} nDCG@10={ndcg:.4f} (alpha=0.50: {at_default:.4f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
