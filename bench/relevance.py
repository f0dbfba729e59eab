"""Relevance on BEIR SciFact through the product's own path: chunk → embed → index → fuse, on the
embedded index, on a real OpenSearch node, or on both side by side in one run.

    python -m bench.relevance --data-dir ../shared/data/scifact                        # embedded index
    python -m bench.relevance --data-dir ../shared/data/scifact --backend both         # beside OpenSearch
    python -m bench.relevance --data-dir ../shared/data/scifact --backend opensearch \\
        --opensearch-url http://127.0.0.1:9200                                         # an existing node
    python -m bench.relevance --data-dir ../shared/data/scifact --alpha 0.5            # no tuning

Every document becomes one item (title + abstract) through ``build_indexed_item`` (the chunker for
the kNN leg, passages for the BM25 leg, chunk embeddings cached in a SQLite file, ``--cache``, so
only the first run pays for the model: 11,345 chunks, up to an hour on two busy cores). The same
items go into each backend's ``SearchIndex`` with ``upsert_many`` in batches of ``BATCH``, then a
refresh:
``EmbeddedIndex`` (tantivy BM25 + exact cosine kNN in numpy) and ``OpenSearchIndex`` (a fresh index
on the node at ``--opensearch-url``, or on a node started for the run with
``knowledge_local.opensearch_node.start_node`` and stopped at its end; Lucene BM25 + HNSW kNN).

Each query runs, on every backend, one search per leg set the modes need (lexical alone, semantic
alone, both legs for hybrid and RRF) with the service's fixed candidate depth
(``retrieval.CANDIDATE_DEPTH`` per leg: passages for BM25, chunks for kNN); each mode's hits go
through the service's fusion (``knowledge.domain.retrieval.fusion.fuse``) and its top 100 items are scored.
Unless ``--alpha`` is given, the hybrid alpha is chosen on the 809 train queries with the first
backend of the run (the embedded index for ``both``) and used for every backend.

Prints, per mode and backend, nDCG@10, Recall@10 and Recall@100, the difference of each backend
from the first, and the search latency p50/p95 in milliseconds; with two backends, how much of the
first backend's top-``CANDIDATE_DEPTH`` spans per leg the other returns (for the kNN leg against
the embedded index's exact search, the HNSW recall). Progress (phase, documents/s, ETA) goes to
stderr.
"""

from __future__ import annotations

import argparse
import heapq
import json
import statistics
import sys
import time
import uuid
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm import tqdm

from bench.metrics import mean, ndcg_at_k, recall_at_k
from knowledge.adapters.embedded.passages import EmbeddedIndex
from knowledge.adapters.embedding_cache import CachedEmbedder, SqliteEmbeddingCache
from knowledge.adapters.local_embedder import LocalEmbedder
from knowledge.adapters.opensearch.engine import build_opensearch_client
from knowledge.adapters.opensearch.passages import OpenSearchIndex
from knowledge.domain.access.visibility import VisibilityFilter
from knowledge.domain.retrieval.chunking import Chunker
from knowledge.domain.retrieval.fusion import FusedHit, Normalizer, fuse
from knowledge.domain.retrieval.hits import (
    CANDIDATE_DEPTH,
    TIE_BREAKER,
    TITLE_BOOST,
    ChunkHit,
    IndexedItem,
    IndexQuery,
    Leg,
    LegHits,
    SearchMode,
)
from knowledge.ports import Embedder, SearchIndex
from knowledge.services.documents import build_indexed_item
from knowledge.services.retrieval import legs_for

TENANT, BASE, OWNER = "bench", "kb_bench", "bench"
RANKED = 100
BATCH = 64
DEFAULT_ALPHA = 0.5
ALPHA_GRID = [step / 20 for step in range(21)]
BACKENDS = ("embedded", "opensearch")
MODES = (SearchMode.LEXICAL, SearchMode.SEMANTIC, SearchMode.HYBRID, SearchMode.RRF)
BOTH_LEGS = frozenset({Leg.LEXICAL, Leg.SEMANTIC})
WARMUP = 10
"""Queries searched once on every backend, untimed, before the timed pass (JIT, caches, connections)."""
VISIBILITY = VisibilityFilter(tenant_id=TENANT, subject_id=OWNER)


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


# Indexing


def scifact_items(data_dir: Path, embedder: Embedder, chunker: Chunker) -> list[IndexedItem]:
    """Every SciFact document as one ``IndexedItem`` (title + abstract, version 1, tenant scope),
    built by the product's ``build_indexed_item``; progress (documents) on stderr."""
    corpus = list(_read_jsonl(data_dir / "corpus.jsonl"))
    items = []
    for doc in tqdm(corpus, desc="chunking and embedding SciFact", unit="doc", file=sys.stderr):
        items.append(
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
        )
    return items


def fill_index(index: SearchIndex, items: Sequence[IndexedItem], backend: str) -> float:
    """``upsert_many`` of ``items`` in batches of ``BATCH``, then ``refresh``; the seconds it took.
    Shows the phase, documents/s and the ETA on stderr."""
    started = time.perf_counter()
    with tqdm(total=len(items), desc=f"indexing into {backend}", unit="doc", file=sys.stderr) as progress:
        for start in range(0, len(items), BATCH):
            batch = items[start : start + BATCH]
            written = index.upsert_many(batch)
            if not all(written):
                raise RuntimeError(f"{backend} refused {written.count(False)} of {len(batch)} items")
            progress.update(len(batch))
        progress.set_postfix_str("refreshing")
        index.refresh()
        progress.set_postfix_str("")
    return time.perf_counter() - started


def build_index(
    data_dir: Path, embedder: Embedder, chunker: Chunker, *, title_boost: float, tie_breaker: float
) -> EmbeddedIndex:
    """An ``EmbeddedIndex`` holding the whole corpus; shows progress on stderr."""
    index = EmbeddedIndex(title_boost=title_boost, tie_breaker=tie_breaker)
    index.ensure_ready(model_id=embedder.model_id, dimension=embedder.dimension)
    fill_index(index, scifact_items(data_dir, embedder, chunker), "embedded")
    return index


def open_opensearch(
    stack: ExitStack, url: str | None, embedder: Embedder, *, title_boost: float, tie_breaker: float
) -> OpenSearchIndex:
    """A fresh, ready ``OpenSearchIndex`` (one shard, the product's mapping) on the node at ``url``,
    or on a node started now when ``url`` is None. ``stack`` deletes the index, and stops a node it
    started, when it closes."""
    if url is None:
        from knowledge_local.opensearch_node import start_node

        node = start_node(name="bench-relevance")
        stack.callback(node.stop)
        url = node.url
    client = build_opensearch_client(url, auth="none", region="us-east-1", timeout_seconds=60.0)
    name = f"bench-scifact-{uuid.uuid4().hex[:12]}"
    index = OpenSearchIndex(client, name, title_boost=title_boost, tie_breaker=tie_breaker, shards=1)
    index.ensure_ready(model_id=embedder.model_id, dimension=embedder.dimension)
    stack.callback(client.indices.delete, index=name, ignore_unavailable=True)
    return index


# Searching


@dataclass
class Searches:
    """What one pass of queries found and how long it took, per backend and leg set:
    ``hits[backend][legs][query id]`` and ``seconds[backend][legs]`` (one per query, in order)."""

    hits: dict[str, dict[frozenset[Leg], dict[str, LegHits]]]
    seconds: dict[str, dict[frozenset[Leg], list[float]]]


def search_all(
    indexes: Mapping[str, SearchIndex],
    queries: Mapping[str, str],
    vectors: Mapping[str, list[float]],
    leg_sets: Sequence[frozenset[Leg]],
    *,
    warmup: int = 0,
    desc: str = "querying",
) -> Searches:
    """Every query on every index, one ``SearchIndex.search`` per leg set (``CANDIDATE_DEPTH``
    candidates per leg).

    The seconds are ``time.perf_counter`` around ``search`` alone: for OpenSearch the request
    bodies, one ``_msearch`` over HTTP (and any wider kNN fetch for ties), the answer's parsing; for
    the embedded index tantivy and the numpy product. The query embedding (done before) and fusion
    are not timed. Backends take turns going first from one query to the next; the first ``warmup``
    queries are searched once on every backend before the timed pass."""
    names = list(indexes)
    ids = list(queries)

    def query(qid: str, legs: frozenset[Leg]) -> IndexQuery:
        return IndexQuery(
            text=queries[qid], vector=vectors[qid], visibility=VISIBILITY, k=CANDIDATE_DEPTH, legs=legs
        )

    for qid in ids[:warmup]:
        for name in names:
            for legs in leg_sets:
                indexes[name].search(query(qid, legs))
    found = Searches(
        hits={name: {legs: {} for legs in leg_sets} for name in names},
        seconds={name: {legs: [] for legs in leg_sets} for name in names},
    )
    for number, qid in enumerate(tqdm(ids, desc=desc, unit="query", file=sys.stderr)):
        for legs in leg_sets:
            for name in names if number % 2 == 0 else names[::-1]:
                request = query(qid, legs)
                started = time.perf_counter()
                hits = indexes[name].search(request)
                found.seconds[name][legs].append(time.perf_counter() - started)
                found.hits[name][legs][qid] = hits
    return found


def retrieve(index: SearchIndex, embedder: Embedder, split: Split) -> dict[str, LegHits]:
    """Both legs for every query of ``split`` (the expensive part, done once per split)."""
    vectors = _query_vectors(split.queries, embedder)
    return search_all({"index": index}, split.queries, vectors, [BOTH_LEGS]).hits["index"][BOTH_LEGS]


# Scoring


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


def latency_ms(seconds: Sequence[float]) -> tuple[float, float]:
    """``(p50, p95)`` in milliseconds of ``seconds`` (inclusive quantiles, as ``bench.peer``); a
    single sample is both."""
    if len(seconds) == 1:
        return seconds[0] * 1e3, seconds[0] * 1e3
    cuts = statistics.quantiles(seconds, n=100, method="inclusive")
    return cuts[49] * 1e3, cuts[94] * 1e3


def leg_overlap(reference: Sequence[ChunkHit], other: Sequence[ChunkHit]) -> float:
    """Share in [0, 1] of the spans (item id, ordinal) of ``reference`` that ``other`` also returns;
    1.0 when ``reference`` is empty. With the embedded index's exact kNN leg as ``reference``, the
    recall of an approximate (HNSW) leg of the same depth."""
    if not reference:
        return 1.0
    held = {(hit.knowledge_item_id, hit.ordinal) for hit in other}
    return sum((hit.knowledge_item_id, hit.ordinal) in held for hit in reference) / len(reference)


@dataclass(frozen=True)
class ModeResult:
    """One mode on one backend: its ranking figures (``nDCG@10``, ``Recall@10``, ``Recall@100``,
    means over the split's queries) and its search latency (p50, p95 in ms)."""

    figures: dict[str, float]
    p50_ms: float
    p95_ms: float


def mode_results(
    searches: Searches, backend: str, split: Split, alpha: float
) -> dict[SearchMode, ModeResult]:
    """Every mode of ``MODES`` scored on the hits of the leg set it needs (``legs_for``)."""
    results = {}
    for mode in MODES:
        legs = legs_for(mode)
        p50, p95 = latency_ms(searches.seconds[backend][legs])
        figures = evaluate(searches.hits[backend][legs], split, mode, alpha)
        results[mode] = ModeResult(figures=figures, p50_ms=p50, p95_ms=p95)
    return results


def comparison_lines(results: Mapping[str, Mapping[SearchMode, ModeResult]]) -> list[str]:
    """A fixed-width table: per mode, one row per backend (figures and search p50/p95 ms), then for
    each backend after the first a row of its difference from the first (``other − first``)."""
    names = list(results)
    first = names[0]
    header = f"{'mode':<9} {'backend':<24} {'nDCG@10':>8} {'Recall@10':>10} {'Recall@100':>11}"
    lines = [f"{header} {'search p50 ms':>14} {'p95 ms':>8}"]
    for mode in MODES:
        for name in names:
            result = results[name][mode]
            cells = " ".join(f"{result.figures[key]:>{width}.3f}" for key, width in _COLUMNS)
            lines.append(f"{mode.value:<9} {name:<24} {cells} {result.p50_ms:>14.1f} {result.p95_ms:>8.1f}")
        for name in names[1:]:
            cells = " ".join(
                f"{results[name][mode].figures[key] - results[first][mode].figures[key]:>+{width}.3f}"
                for key, width in _COLUMNS
            )
            lines.append(f"{mode.value:<9} {f'{name} - {first}':<24} {cells}")
    return lines


_COLUMNS = (("nDCG@10", 8), ("Recall@10", 10), ("Recall@100", 11))


def agreement_lines(searches: Searches, reference: str) -> list[str]:
    """Per other backend and leg: the mean and the lowest ``leg_overlap`` over queries of its
    top-``CANDIDATE_DEPTH`` spans against ``reference``'s (from the both-legs searches)."""
    lines = []
    for name, by_legs in searches.hits.items():
        if name == reference:
            continue
        for leg in (Leg.LEXICAL, Leg.SEMANTIC):
            shares = [
                leg_overlap(_leg(legs, leg), _leg(by_legs[BOTH_LEGS][qid], leg))
                for qid, legs in searches.hits[reference][BOTH_LEGS].items()
            ]
            unit = "passages" if leg is Leg.LEXICAL else "chunks"
            lines.append(
                f"{leg.value} leg: {name} returns {mean(shares):.4f} of {reference}'s top-{CANDIDATE_DEPTH} "
                f"{unit} (mean over queries; lowest {min(shares):.3f}, "
                f"{sum(share == 1.0 for share in shares)}/{len(shares)} queries all)"
            )
    return lines


def _leg(hits: LegHits, leg: Leg) -> list[ChunkHit]:
    return hits.lexical if leg is Leg.LEXICAL else hits.semantic


def open_embedder(cache: Path) -> Embedder:
    """The offline MiniLM embedder behind the SQLite embedding cache at ``cache``."""
    cache.parent.mkdir(parents=True, exist_ok=True)
    return CachedEmbedder(LocalEmbedder(), SqliteEmbeddingCache(cache))


def _query_vectors(queries: Mapping[str, str], embedder: Embedder) -> dict[str, list[float]]:
    ids = list(queries)
    return dict(zip(ids, embedder.embed([queries[qid] for qid in ids]), strict=True))


def _backends(choice: str) -> list[str]:
    return list(BACKENDS) if choice == "both" else [choice]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data-dir", type=Path, required=True, help="folder of BEIR SciFact")
    parser.add_argument("--split", default="test", choices=["test", "train"])
    parser.add_argument("--backend", default="embedded", choices=[*BACKENDS, "both"])
    parser.add_argument(
        "--opensearch-url", default=None, help="an existing node (default: start one for the run)"
    )
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
    items = scifact_items(args.data_dir, embedder, chunker)
    chunks = sum(len(item.chunks) for item in items)
    passages = sum(len(item.passages) for item in items)
    boosts: dict[str, Any] = {"title_boost": args.title_boost, "tie_breaker": args.tie_breaker}
    with ExitStack() as stack:
        indexes: dict[str, SearchIndex] = {}
        for name in _backends(args.backend):
            if name == "embedded":
                indexes[name] = EmbeddedIndex(**boosts)
                indexes[name].ensure_ready(model_id=embedder.model_id, dimension=embedder.dimension)
            else:
                indexes[name] = open_opensearch(stack, args.opensearch_url, embedder, **boosts)
            seconds = fill_index(indexes[name], items, name)
            print(
                f"{name}: {len(items)} documents ({chunks} chunks, {passages} passages) indexed in "
                f"{seconds:.1f} s ({len(items) / seconds:.1f} documents/s)",
                flush=True,
            )
        _report(args, indexes, embedder)
    return 0


def _report(args: argparse.Namespace, indexes: Mapping[str, SearchIndex], embedder: Embedder) -> None:
    first = next(iter(indexes))
    alpha = DEFAULT_ALPHA if args.alpha is None else args.alpha
    if args.tune or args.alpha is None:
        train = load_split(args.data_dir, "train")
        tuned = search_all(
            indexes, train.queries, _query_vectors(train.queries, embedder), [BOTH_LEGS], desc="train queries"
        )
        choices = {name: tune_alpha(tuned.hits[name][BOTH_LEGS], train, ALPHA_GRID) for name in indexes}
        alpha, train_ndcg = choices[first]
        others = "".join(
            f"; {name} alone would choose {other:.2f} ({ndcg:.3f})"
            for name, (other, ndcg) in choices.items()
            if name != first
        )
        print(
            f"alpha={alpha:.2f} chosen on {len(train.queries)} train queries with {first} "
            f"(hybrid nDCG@10={train_ndcg:.3f}){others}"
        )

    split = load_split(args.data_dir, args.split)
    leg_sets = list(dict.fromkeys(legs_for(mode) for mode in MODES))
    searches = search_all(
        indexes,
        split.queries,
        _query_vectors(split.queries, embedder),
        leg_sets,
        warmup=WARMUP,
        desc=f"{args.split} queries",
    )
    print(f"SciFact {args.split}: {len(split.queries)} queries, alpha={alpha:.2f}")
    results = {name: mode_results(searches, name, split, alpha) for name in indexes}
    for line in comparison_lines(results):
        print(line)
    print(
        "search p50/p95: SearchIndex.search alone, per query, with the legs the mode needs "
        f"({CANDIDATE_DEPTH} candidates per leg; hybrid and rrf send the same search); "
        "query embedding and fusion not timed"
    )
    for line in agreement_lines(searches, first):
        print(line)


if __name__ == "__main__":
    raise SystemExit(main())
