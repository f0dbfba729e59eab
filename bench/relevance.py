"""Relevance on BEIR SciFact through the product's own path: chunk → embed → index → fuse.

    python -m bench.relevance --data-dir ../shared/data/scifact            # report on test queries
    python -m bench.relevance --data-dir ../shared/data/scifact --tune     # choose alpha on train

Every document becomes one item (title + abstract) in an ``EmbeddedIndex``; chunk embeddings are
cached in a SQLite file (``--cache``), so only the first run pays for the model (~10 minutes on two
cores). Each query runs both legs with the service's fixed candidate depth
(``retrieval.CANDIDATE_DEPTH`` per leg: passages for BM25, chunks for kNN), then the mode's fusion;
the top 100 items are scored.
Prints one line per mode: ``MODE nDCG@10=0.xxx Recall@10=0.xxx Recall@100=0.xxx``.
"""

from __future__ import annotations

import argparse
import heapq
import json
import sys
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from tqdm import tqdm

from bench.metrics import mean, ndcg_at_k, recall_at_k
from knowledge.adapters.embedded_index import EmbeddedIndex
from knowledge.adapters.embedding_cache import CachedEmbedder, SqliteEmbeddingCache
from knowledge.adapters.local_embedder import LocalEmbedder
from knowledge.domain.chunking import Chunker
from knowledge.domain.fusion import FusedHit, Normalizer, fuse
from knowledge.domain.retrieval import (
    CANDIDATE_DEPTH,
    TIE_BREAKER,
    TITLE_BOOST,
    IndexQuery,
    LegHits,
    SearchMode,
)
from knowledge.domain.visibility import VisibilityFilter
from knowledge.ports import Embedder
from knowledge.services.documents import build_indexed_item

TENANT, BASE, OWNER = "bench", "kb_bench", "bench"
RANKED = 100
BATCH = 64
DEFAULT_ALPHA = 0.5
ALPHA_GRID = [step / 20 for step in range(21)]


@dataclass(frozen=True)
class Split:
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]


def _read_jsonl(path: Path) -> Iterator[dict[str, str]]:
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                yield json.loads(line)


def load_split(data_dir: Path, split: str) -> Split:
    """Queries with at least one relevant document, and their judgments."""
    qrels: dict[str, dict[str, int]] = defaultdict(dict)
    with (data_dir / "qrels" / f"{split}.tsv").open(encoding="utf-8") as handle:
        next(handle)
        for line in handle:
            query_id, doc_id, score = line.rstrip("\n").split("\t")
            qrels[query_id][doc_id] = int(score)
    file = data_dir / ("queries.jsonl" if split == "test" else f"queries_{split}.jsonl")
    queries = {row["_id"]: row["text"] for row in _read_jsonl(file) if row["_id"] in qrels}
    return Split(queries=queries, qrels={qid: qrels[qid] for qid in queries})


def build_index(
    data_dir: Path, embedder: Embedder, chunker: Chunker, *, title_boost: float, tie_breaker: float
) -> EmbeddedIndex:
    """Index the whole corpus; shows progress (documents) on stderr."""
    corpus = list(_read_jsonl(data_dir / "corpus.jsonl"))
    index = EmbeddedIndex(title_boost=title_boost, tie_breaker=tie_breaker)
    index.ensure_ready(model_id=embedder.model_id, dimension=embedder.dimension)
    with tqdm(total=len(corpus), desc="indexing SciFact", unit="doc", file=sys.stderr) as progress:
        for start in range(0, len(corpus), BATCH):
            batch = corpus[start : start + BATCH]
            index.upsert_many(
                [
                    build_indexed_item(
                        chunker=chunker,
                        embedder=embedder,
                        tenant_id=TENANT,
                        knowledge_base_id=BASE,
                        knowledge_item_id=doc["_id"],
                        knowledge_revision_id=f"{doc['_id']}-r1",
                        version=1,
                        owner_id=OWNER,
                        team_id=None,
                        scope="tenant",
                        title=doc.get("title", ""),
                        content=doc.get("text", ""),
                    )
                    for doc in batch
                ]
            )
            progress.update(len(batch))
    return index


def retrieve(index: EmbeddedIndex, embedder: Embedder, split: Split) -> dict[str, LegHits]:
    """Both legs for every query (the expensive part, done once per split)."""
    visibility = VisibilityFilter(tenant_id=TENANT, subject_id=OWNER)
    ids = list(split.queries)
    vectors = embedder.embed([split.queries[qid] for qid in ids])
    hits = {}
    for qid, vector in tqdm(zip(ids, vectors, strict=True), total=len(ids), desc="querying", file=sys.stderr):
        hits[qid] = index.search(
            IndexQuery(text=split.queries[qid], vector=vector, visibility=visibility, k=CANDIDATE_DEPTH)
        )
    return hits


def evaluate(
    hits: Mapping[str, LegHits],
    split: Split,
    mode: SearchMode,
    alpha: float,
    normalizer: Normalizer | None = None,
) -> dict[str, float]:
    """Mean nDCG@10, Recall@10 and Recall@100 of ``mode`` over the split's queries."""
    ndcg, r10, r100 = [], [], []
    for qid, legs in hits.items():
        ranking = [hit.knowledge_item_id for hit in fuse(legs, mode, alpha, normalizer)[:RANKED]]
        judgments = split.qrels[qid]
        ndcg.append(ndcg_at_k(ranking, judgments, 10))
        r10.append(recall_at_k(ranking, judgments, 10))
        r100.append(recall_at_k(ranking, judgments, 100))
    return {"nDCG@10": mean(ndcg), "Recall@10": mean(r10), "Recall@100": mean(r100)}


def hybrid_curve(
    hits: Mapping[str, LegHits], split: Split, grid: Sequence[float], normalizer: Normalizer | None = None
) -> list[tuple[float, float]]:
    """``(alpha, hybrid nDCG@10)`` for every alpha of ``grid``.

    One fusion per query gives every item's normalized leg scores (0 for a leg that did not return
    it); each alpha then re-weights them as ``fuse`` does, ``alpha·lexical + (1 − alpha)·semantic``
    with ties by item id, so the grid costs one fusion per query instead of one per alpha."""
    legs_by_query = []
    for qid, legs in hits.items():
        fused = fuse(legs, SearchMode.HYBRID, DEFAULT_ALPHA, normalizer)
        legs_by_query.append((qid, [_normalized_legs(hit) for hit in fused]))
    curve = []
    for alpha in grid:
        ndcg = []
        for qid, items in legs_by_query:
            top = heapq.nsmallest(
                10, items, key=lambda row: (-(alpha * row[1] + (1.0 - alpha) * row[2]), row[0])
            )
            ndcg.append(ndcg_at_k([row[0] for row in top], split.qrels[qid], 10))
        curve.append((alpha, mean(ndcg)))
    return curve


def _normalized_legs(hit: FusedHit) -> tuple[str, float, float]:
    lexical = hit.lexical.normalized if hit.lexical else 0.0
    semantic = hit.semantic.normalized if hit.semantic else 0.0
    return hit.knowledge_item_id, lexical, semantic


def best_alpha(curve: Sequence[tuple[float, float]]) -> tuple[float, float]:
    """``(alpha, nDCG@10)`` of the best point of ``curve`` (ties: the alpha closest to 0.5)."""
    return max(curve, key=lambda point: (round(point[1], 6), -abs(point[0] - 0.5)))


def tune_alpha(hits: Mapping[str, LegHits], split: Split, grid: Sequence[float]) -> tuple[float, float]:
    """The alpha of ``grid`` with the best hybrid nDCG@10 (ties: the one closest to 0.5)."""
    return best_alpha(hybrid_curve(hits, split, grid))


def open_embedder(cache: Path) -> Embedder:
    """The offline MiniLM embedder behind the SQLite embedding cache at ``cache``."""
    cache.parent.mkdir(parents=True, exist_ok=True)
    return CachedEmbedder(LocalEmbedder(), SqliteEmbeddingCache(cache))


def _format(mode: str, figures: Mapping[str, float]) -> str:
    return " ".join([mode, *(f"{name}={value:.3f}" for name, value in figures.items())])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data-dir", type=Path, required=True, help="folder of BEIR SciFact")
    parser.add_argument("--split", default="test", choices=["test", "train"])
    parser.add_argument("--alpha", type=float, default=None, help="hybrid lexical weight (default: tuned)")
    parser.add_argument("--tune", action="store_true", help="choose alpha on the train queries first")
    parser.add_argument("--cache", type=Path, default=Path("bench/.cache/embeddings.sqlite"))
    parser.add_argument("--chunk-tokens", type=int, default=200)
    parser.add_argument("--overlap-tokens", type=int, default=32)
    parser.add_argument("--title-boost", type=float, default=TITLE_BOOST)
    parser.add_argument("--tie-breaker", type=float, default=TIE_BREAKER)
    args = parser.parse_args(argv)

    if not (args.data_dir / "corpus.jsonl").exists():
        parser.error(f"{args.data_dir} has no corpus.jsonl (set DATA_DIR to the folder holding scifact/)")
    embedder = open_embedder(args.cache)
    chunker = Chunker(max_tokens=args.chunk_tokens, overlap_tokens=args.overlap_tokens)
    index = build_index(
        args.data_dir, embedder, chunker, title_boost=args.title_boost, tie_breaker=args.tie_breaker
    )

    alpha = DEFAULT_ALPHA if args.alpha is None else args.alpha
    if args.tune or args.alpha is None:
        train = load_split(args.data_dir, "train")
        alpha, train_ndcg = tune_alpha(retrieve(index, embedder, train), train, ALPHA_GRID)
        chosen = f"alpha={alpha:.2f} chosen on {len(train.queries)} train queries"
        print(f"{chosen} (hybrid nDCG@10={train_ndcg:.3f})")

    split = load_split(args.data_dir, args.split)
    hits = retrieve(index, embedder, split)
    print(f"SciFact {args.split}: {len(split.queries)} queries, alpha={alpha:.2f}")
    for mode in (SearchMode.LEXICAL, SearchMode.SEMANTIC, SearchMode.HYBRID, SearchMode.RRF):
        print(_format(mode.value, evaluate(hits, split, mode, alpha)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
