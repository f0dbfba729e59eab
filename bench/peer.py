"""Ours against LanceDB, side by side in one process on the same chunks, vectors and queries.

    python -m bench.peer --data-dir ../shared/data/scifact [--out bench/results] [--part all]
        [--sizes 1000,10000,50000,200000] [--scaling-queries 100]

**Relevance and latency** (``--part relevance``): every SciFact document goes through the product's
path (``build_indexed_item``: the chunker, all-MiniLM-L6-v2 behind the embedding cache ``--cache``,
title prepended) into our ``EmbeddedIndex`` and, chunk for chunk with the same vectors, into a
LanceDB table (columns ``doc``, ``text`` = the embedded text, ``vector``) with LanceDB's native
full-text index (English stemming, stop words removed) and exact (flat) cosine search, as ours.
Each test claim is embedded once; then every mode runs on both engines, alternating which goes
first: ours through ``EmbeddedIndex.search`` with the mode's legs (``legs_for``) and the service's
fusion (``fuse``, ``CANDIDATE_DEPTH`` candidates per leg, as ``bench.relevance``), LanceDB through
its query builder with ``CANDIDATE_DEPTH`` chunks (hybrid: its ``LinearCombinationReranker`` and
its ``RRFReranker``), chunks collapsed to their best per document. Timed: the search call and the
ranking of documents, not the query embedding. nDCG@10 over the top 100 documents.

**Scaling** (``--part scaling``): for each size, a fresh child process builds both engines over
synthetic chunks (``synthetic_chunks``) and times vector and hybrid search with the SciFact test
claims. Memory comes from two more children per size, each building one engine alone: RSS
(``/proc/self/status``) before and after its build, the engines' libraries imported before the
first reading. Built in one process, the second engine reuses the first build's freed memory, and
its reading moved by hundreds of MB between runs. LanceDB keeps its table on disk (a temporary
folder): RSS counts what it holds in memory, and the table's size on disk is reported beside it.

Writes ``results.json`` and, when matplotlib is installed, PNG plots into ``--out``, and prints
the Markdown tables of docs/benchmarks.md. Progress is shown on stderr.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from tqdm import tqdm

from bench.metrics import mean, ndcg_at_k
from bench.relevance import TENANT, Split, _read_jsonl, load_split, open_embedder
from knowledge.adapters.embedded.passages import EmbeddedIndex
from knowledge.domain.access.visibility import VisibilityFilter
from knowledge.domain.retrieval.chunking import Chunker, embedding_text
from knowledge.domain.retrieval.fusion import fuse
from knowledge.domain.retrieval.hits import (
    CANDIDATE_DEPTH,
    Chunk,
    IndexedChunk,
    IndexedItem,
    IndexQuery,
    SearchMode,
)
from knowledge.ports import Embedder
from knowledge.services.documents import build_indexed_item
from knowledge.services.retrieval import legs_for

BASE, OWNER = "kb_bench", "bench"
RANKED = 100
ALPHA = 0.30
"""Ours: the lexical weight chosen on SciFact's train queries (docs/benchmarks.md)."""
LANCE_VECTOR_WEIGHT = 0.7
"""LanceDB: ``LinearCombinationReranker``'s default vector weight, i.e. the same 0.3 lexical share."""
WARMUP = 20
SEED = 15
VISIBILITY = VisibilityFilter(tenant_id=TENANT, subject_id=OWNER)

OUR_MODES = ("hybrid", "rrf", "lexical", "semantic")
PAIRS = (
    ("hybrid", "hybrid (linear combination)"),
    ("rrf", "hybrid (RRF)"),
    ("lexical", "full-text search"),
    ("semantic", "vector search"),
)
"""Our mode beside the LanceDB query it is compared with."""


# Data


@dataclass
class Corpus:
    """Chunks of the same data in the shape each engine takes."""

    items: list[IndexedItem]
    docs: list[str] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    vectors: npt.NDArray[np.float32] = field(default_factory=lambda: np.zeros((0, 0), np.float32))


def scifact_corpus(data_dir: Path, embedder: Embedder, chunker: Chunker) -> Corpus:
    """Every SciFact document as one item through ``build_indexed_item``; the same chunks flattened."""
    rows = list(_read_jsonl(data_dir / "corpus.jsonl"))
    items = [
        build_indexed_item(
            chunker=chunker,
            embedder=embedder,
            tenant_id=TENANT,
            knowledge_base_id=BASE,
            knowledge_item_id=row["_id"],
            knowledge_revision_id=f"{row['_id']}-r1",
            version=1,
            owner_id=OWNER,
            team_id=None,
            scope="tenant",
            title=row.get("title", ""),
            content=row.get("text", ""),
        )
        for row in tqdm(rows, desc="chunking SciFact", unit="doc", file=sys.stderr)
    ]
    corpus = Corpus(items=items)
    for item in items:
        for chunk in item.chunks:
            corpus.docs.append(item.knowledge_item_id)
            corpus.texts.append(embedding_text(item.title, chunk.text))
    corpus.vectors = np.asarray([c.vector for item in items for c in item.chunks], dtype=np.float32)
    return corpus


def synthetic_chunks(base: Corpus, size: int, seed: int = SEED) -> Corpus:
    """``size`` chunks, each its own one-chunk item: the SciFact chunks, then copies of them.

    Copy ``c`` (c ≥ 1) of a chunk gets the vector plus Gaussian noise of 0.02 per dimension,
    renormalized (cosine ≈ 0.9 to the original), and the text with a tenth of its words dropped at
    random and the tag ``copy{c}`` appended, so copies neither tie with their original on either leg
    nor drift away from SciFact's vocabulary and vector distribution."""
    rng = np.random.default_rng(seed)
    words = random.Random(seed)
    originals = len(base.texts)
    docs, texts = [], []
    vectors = np.empty((size, base.vectors.shape[1]), dtype=np.float32)
    for start in range(0, size, originals):
        count = min(originals, size - start)
        copy = start // originals
        block = base.vectors[:count]
        if copy:
            block = block + rng.normal(0.0, 0.02, block.shape).astype(np.float32)
            block /= np.linalg.norm(block, axis=1, keepdims=True)
        vectors[start : start + count] = block
        for row in range(count):
            text = base.texts[row]
            if copy:
                kept = [word for word in text.split() if words.random() >= 0.1]
                text = " ".join([*kept, f"copy{copy}"])
            docs.append(f"{base.docs[row]}-c{copy}-{row}")
            texts.append(text)
    items = [
        IndexedItem(
            tenant_id=TENANT,
            knowledge_base_id=BASE,
            knowledge_item_id=doc,
            knowledge_revision_id=f"{doc}-r1",
            version=1,
            owner_id=OWNER,
            team_id=None,
            scope="tenant",
            title="",
            chunks=[IndexedChunk(ordinal=0, start=0, end=len(text), text=text, vector=vector.tolist())],
            passages=[Chunk(ordinal=0, start=0, end=len(text), text=text)],
        )
        for doc, text, vector in tqdm(
            zip(docs, texts, vectors, strict=True),
            total=size,
            desc="  synthetic chunks",
            unit="chunk",
            file=sys.stderr,
        )
    ]
    return Corpus(items=items, docs=docs, texts=texts, vectors=vectors)


def test_claims(data_dir: Path, embedder: Embedder) -> tuple[Split, list[str], npt.NDArray[np.float32]]:
    split = load_split(data_dir, "test")
    ids = list(split.queries)
    vectors = np.asarray(embedder.embed([split.queries[qid] for qid in ids]), dtype=np.float32)
    return split, ids, vectors


# Engines


class Ours:
    """``EmbeddedIndex`` plus the service's fusion: the path of ``bench.relevance``."""

    def __init__(self, corpus: Corpus, dimension: int) -> None:
        self.index = EmbeddedIndex()
        self.index.ensure_ready(model_id="bench", dimension=dimension)
        batch = 256
        for start in tqdm(
            range(0, len(corpus.items), batch), desc="  ours: indexing", unit="batch", file=sys.stderr
        ):
            self.index.upsert_many(corpus.items[start : start + batch])
        self.index.refresh()

    def search(self, mode: str, text: str, vector: npt.NDArray[np.float32]) -> list[str]:
        search_mode = SearchMode(mode)
        legs = self.index.search(
            IndexQuery(
                text=text,
                vector=vector.tolist(),
                visibility=VISIBILITY,
                k=CANDIDATE_DEPTH,
                legs=legs_for(search_mode),
            )
        )
        return [hit.knowledge_item_id for hit in fuse(legs, search_mode, ALPHA)[:RANKED]]


class Lance:
    """A LanceDB table of the same chunks: native FTS, flat cosine vector search, its rerankers."""

    def __init__(self, corpus: Corpus, folder: Path) -> None:
        import lancedb
        import pyarrow as pa
        from lancedb.rerankers import LinearCombinationReranker, RRFReranker

        self.folder = folder
        dimension = corpus.vectors.shape[1]
        table = pa.table(
            {
                "doc": pa.array(corpus.docs, pa.string()),
                "text": pa.array(corpus.texts, pa.string()),
                "vector": pa.FixedSizeListArray.from_arrays(
                    pa.array(corpus.vectors.reshape(-1), pa.float32()), dimension
                ),
            }
        )
        with tqdm(total=2, desc="  LanceDB: table, FTS index", file=sys.stderr) as progress:
            self.table = lancedb.connect(str(folder)).create_table("chunks", data=table, mode="overwrite")
            progress.update(1)
            self.table.create_fts_index(
                "text", language="English", stem=True, remove_stop_words=True, with_position=False
            )
            progress.update(1)
        self.rerankers = {
            "hybrid": LinearCombinationReranker(weight=LANCE_VECTOR_WEIGHT),
            "rrf": RRFReranker(K=60),
        }

    def search(self, mode: str, text: str, vector: npt.NDArray[np.float32]) -> list[str]:
        if mode == "semantic":
            query = self.table.search(vector, query_type="vector").distance_type("cosine")
            query = query.select(["doc", "_distance"])
        elif mode == "lexical":
            query = self.table.search(text, query_type="fts").select(["doc", "_score"])
        else:
            query = (
                self.table.search(query_type="hybrid")
                .vector(vector)
                .text(text)
                .distance_type("cosine")
                .rerank(self.rerankers[mode])
                .select(["doc"])
            )
        docs: list[str] = query.limit(CANDIDATE_DEPTH).to_arrow()["doc"].to_pylist()
        return list(dict.fromkeys(docs))[:RANKED]

    def disk_mb(self) -> float:
        return sum(path.stat().st_size for path in self.folder.rglob("*") if path.is_file()) / 1e6


Engine = Ours | Lance


# Measurement


def rss_mb() -> float:
    """Resident set size of this process (``VmRSS``) in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def percentiles(samples: Sequence[float]) -> dict[str, float]:
    """p50/p95/p99 of ``samples`` (seconds) in milliseconds (inclusive quantiles)."""
    cuts = statistics.quantiles(samples, n=100, method="inclusive")
    return {"p50": cuts[49] * 1e3, "p95": cuts[94] * 1e3, "p99": cuts[98] * 1e3}


def timed(engine: Engine, mode: str, text: str, vector: npt.NDArray[np.float32]) -> tuple[float, list[str]]:
    """Seconds of one search, and its ranking of documents."""
    started = time.perf_counter()
    ranking = engine.search(mode, text, vector)
    return time.perf_counter() - started, ranking


def side_by_side(
    engines: dict[str, Engine],
    modes: Sequence[str],
    texts: Sequence[str],
    vectors: npt.NDArray[np.float32],
    desc: str,
) -> tuple[dict[str, list[float]], dict[str, list[list[str]]]]:
    """Latencies (seconds) and rankings per ``engine:mode``; engines alternate who goes first."""
    names = list(engines)
    for text, vector in zip(texts[:WARMUP], vectors[:WARMUP], strict=True):
        for name in names:
            for mode in modes:
                engines[name].search(mode, text, vector)
    seconds: dict[str, list[float]] = {}
    rankings: dict[str, list[list[str]]] = {}
    pairs = list(zip(texts, vectors, strict=True))
    for number, (text, vector) in enumerate(tqdm(pairs, desc=desc, unit="query", file=sys.stderr)):
        order = names if number % 2 == 0 else names[::-1]
        for mode in modes:
            for name in order:
                elapsed, ranking = timed(engines[name], mode, text, vector)
                seconds.setdefault(f"{name}:{mode}", []).append(elapsed)
                rankings.setdefault(f"{name}:{mode}", []).append(ranking)
    return seconds, rankings


@dataclass
class SciFact:
    """The SciFact chunks and the embedded test claims, prepared once for both parts."""

    corpus: Corpus
    split: Split
    ids: list[str]
    vectors: npt.NDArray[np.float32]


def prepare(args: argparse.Namespace) -> SciFact:
    embedder = open_embedder(args.cache)
    corpus = scifact_corpus(args.data_dir, embedder, Chunker(max_tokens=200, overlap_tokens=32))
    return SciFact(corpus, *test_claims(args.data_dir, embedder))


def relevance_part(data: SciFact) -> dict[str, Any]:
    corpus, split, ids, vectors = data.corpus, data.split, data.ids, data.vectors
    texts = [split.queries[qid] for qid in ids]
    folder = Path(tempfile.mkdtemp(prefix="bench-lancedb-"))
    try:
        engines: dict[str, Engine] = {
            "ours": Ours(corpus, corpus.vectors.shape[1]),
            "lancedb": Lance(corpus, folder),
        }
        seconds, rankings = side_by_side(
            engines, OUR_MODES, texts, vectors, "SciFact test claims, 8 searches each"
        )
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    rows = {}
    for key, ranked in rankings.items():
        ndcg = mean([ndcg_at_k(r, split.qrels[qid], 10) for r, qid in zip(ranked, ids, strict=True)])
        rows[key] = {"nDCG@10": ndcg, **percentiles(seconds[key])}
    return {
        "documents": len(corpus.items),
        "chunks": len(corpus.texts),
        "passages": sum(len(item.passages) for item in corpus.items),
        "queries": len(ids),
        "rows": rows,
        "seconds": seconds,
    }


def save_base(folder: Path, base: Corpus, texts: Sequence[str], vectors: npt.NDArray[np.float32]) -> None:
    """The SciFact chunks and the test claims, for the scaling children (no re-chunking there)."""
    np.save(folder / "chunk_vectors.npy", base.vectors)
    np.save(folder / "query_vectors.npy", vectors)
    (folder / "texts.json").write_text(json.dumps({"docs": base.docs, "texts": base.texts, "queries": texts}))


def load_base(folder: Path) -> tuple[Corpus, list[str], npt.NDArray[np.float32]]:
    saved = json.loads((folder / "texts.json").read_text())
    base = Corpus(
        items=[], docs=saved["docs"], texts=saved["texts"], vectors=np.load(folder / "chunk_vectors.npy")
    )
    return base, saved["queries"], np.load(folder / "query_vectors.npy")


def _child_corpus(args: argparse.Namespace) -> tuple[Corpus, list[str], npt.NDArray[np.float32]]:
    """The child's synthetic chunks and its test claims; the libraries of both engines imported, so
    an RSS reading after this counts the index alone."""
    base, texts, vectors = load_base(args.child_base)
    texts, vectors = texts[: args.scaling_queries], vectors[: args.scaling_queries]
    corpus = synthetic_chunks(base, args.child_size)
    del base
    gc.collect()
    import lancedb
    import lancedb.rerankers  # noqa: F401

    return corpus, texts, vectors


def scaling_child(args: argparse.Namespace) -> dict[str, Any]:
    """One size, in its own process: build both engines, time vector and hybrid search."""
    corpus, texts, vectors = _child_corpus(args)
    folder = Path(tempfile.mkdtemp(prefix="bench-lancedb-"))
    try:
        ours = Ours(corpus, corpus.vectors.shape[1])
        lance = Lance(corpus, folder)
        engines: dict[str, Engine] = {"ours": ours, "lancedb": lance}
        modes = ("semantic", "hybrid")
        seconds, _ = side_by_side(engines, modes, texts, vectors, f"  {args.child_size:,} chunks")
        disk = lance.disk_mb()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return {
        "size": args.child_size,
        "lancedb_disk_mb": disk,
        "rows": {key: percentiles(values) for key, values in seconds.items()},
    }


def memory_child(args: argparse.Namespace) -> dict[str, float]:
    """One size and one engine (``args.child_engine``), in its own process: its RSS growth in MB
    while it builds, with nothing else built in the process."""
    corpus, _, _ = _child_corpus(args)
    folder = Path(tempfile.mkdtemp(prefix="bench-lancedb-"))
    try:
        before = rss_mb()
        engine: Engine = (
            Ours(corpus, corpus.vectors.shape[1]) if args.child_engine == "ours" else Lance(corpus, folder)
        )
        gc.collect()
        grown = rss_mb() - before
        del engine  # alive until the reading above
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return {args.child_engine: grown}


def scaling_part(args: argparse.Namespace, data: SciFact) -> list[dict[str, Any]]:
    folder = Path(tempfile.mkdtemp(prefix="bench-base-"))
    save_base(folder, data.corpus, [data.split.queries[qid] for qid in data.ids], data.vectors)
    try:
        return [scaling_run(args, folder, size) for size in args.sizes]
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def scaling_run(args: argparse.Namespace, folder: Path, size: int) -> dict[str, Any]:
    """One size: the timings from a child process of its own, then each engine's RSS growth from a
    child that builds it alone; the JSON result."""
    command = [
        sys.executable,
        "-m",
        "bench.peer",
        "--data-dir",
        str(args.data_dir),
        "--child-base",
        str(folder),
        "--scaling-queries",
        str(args.scaling_queries),
        "--child-size",
        str(size),
    ]
    print(f"scaling: {size:,} chunks (child process)", file=sys.stderr)
    result = _child_json(command)
    result["rss_mb"] = {}
    for engine in ("ours", "lancedb"):
        print(f"scaling: {size:,} chunks, {engine} alone for its memory (child process)", file=sys.stderr)
        result["rss_mb"].update(_child_json([*command, "--child-engine", engine]))
    return result


def _child_json(command: list[str]) -> dict[str, Any]:
    output = subprocess.run(command, check=True, stdout=subprocess.PIPE, text=True).stdout
    result: dict[str, Any] = json.loads(output.strip().splitlines()[-1])
    return result


# Report


def ratio(ours: float, theirs: float) -> str:
    return f"{ours / theirs:.2f}" if theirs else "n/a"


def relevance_table(result: dict[str, Any]) -> Iterator[str]:
    rows = result["rows"]
    yield (
        "| ours | LanceDB | nDCG@10 ours / LanceDB (ratio) | p50 ms ours / LanceDB (ratio) "
        "| p95 ms (ratio) | p99 ms (ratio) |"
    )
    yield "|---|---|---|---|---|---|"
    for mode, peer in PAIRS:
        a, b = rows[f"ours:{mode}"], rows[f"lancedb:{mode}"]
        cells = [f"{a['nDCG@10']:.3f} / {b['nDCG@10']:.3f} ({ratio(a['nDCG@10'], b['nDCG@10'])})"]
        cells += [f"{a[p]:.1f} / {b[p]:.1f} ({ratio(a[p], b[p])})" for p in ("p50", "p95", "p99")]
        yield f"| {mode} | {peer} | " + " | ".join(cells) + " |"


def scaling_table(results: Sequence[dict[str, Any]]) -> Iterator[str]:
    yield (
        "| chunks | mode | p50 ms ours / LanceDB (ratio) | p99 ms ours / LanceDB (ratio) "
        "| RSS growth MB ours / LanceDB (ratio) | LanceDB on disk MB |"
    )
    yield "|---|---|---|---|---|---|"
    for result in results:
        rss = result["rss_mb"]
        for mode in ("semantic", "hybrid"):
            a, b = result["rows"][f"ours:{mode}"], result["rows"][f"lancedb:{mode}"]
            cells = [f"{a[p]:.1f} / {b[p]:.1f} ({ratio(a[p], b[p])})" for p in ("p50", "p99")]
            memory = f"{rss['ours']:.0f} / {rss['lancedb']:.0f} ({ratio(rss['ours'], rss['lancedb'])})"
            yield (
                f"| {result['size']:,} | {mode} | "
                + " | ".join([*cells, memory, f"{result['lancedb_disk_mb']:.0f}"])
                + " |"
            )


def plot(out: Path, relevance: dict[str, Any] | None, scaling: list[dict[str, Any]] | None) -> list[Path]:
    """PNG plots, or none when matplotlib is not installed."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plots", file=sys.stderr)
        return []
    written = []
    if relevance:
        figure, axes = plt.subplots(figsize=(9, 4.5))
        labels, data = [], []
        for mode, _ in PAIRS:
            for name in ("ours", "lancedb"):
                labels.append(f"{mode}\n{name}")
                data.append([s * 1e3 for s in relevance["seconds"][f"{name}:{mode}"]])
        axes.boxplot(data, showfliers=True, whis=(1, 99))
        axes.set_xticks(range(1, len(labels) + 1), labels, fontsize=8)
        axes.set_yscale("log")
        axes.set_ylabel("search latency, ms (log)")
        axes.set_title(f"SciFact, {relevance['chunks']:,} chunks, {relevance['queries']} test claims")
        figure.tight_layout()
        written.append(out / "latency-by-mode.png")
        figure.savefig(written[-1], dpi=110)
        plt.close(figure)
    if scaling:
        figure, axes = plt.subplots(figsize=(7, 4.5))
        sizes = [r["size"] for r in scaling]
        for mode in ("semantic", "hybrid"):
            for name, style in (("ours", "-o"), ("lancedb", "--s")):
                p50 = [r["rows"][f"{name}:{mode}"]["p50"] for r in scaling]
                axes.plot(sizes, p50, style, label=f"{name} {mode}")
        axes.set_xscale("log")
        axes.set_yscale("log")
        axes.set_xlabel("chunks")
        axes.set_ylabel("p50 search latency, ms")
        axes.legend()
        axes.grid(True, which="both", alpha=0.3)
        figure.tight_layout()
        written.append(out / "p50-by-size.png")
        figure.savefig(written[-1], dpi=110)
        plt.close(figure)
    return written


def machine() -> dict[str, str]:
    versions = {}
    for package in ("lancedb", "pyarrow", "tantivy", "numpy"):
        try:
            from importlib.metadata import version

            versions[package] = version(package)
        except Exception:
            versions[package] = "not installed"
    load = os.getloadavg()
    return {
        "date": time.strftime("%Y-%m-%d %H:%M %Z"),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": str(os.cpu_count()),
        "load_average_at_start": f"{load[0]:.1f} {load[1]:.1f} {load[2]:.1f}",
        **versions,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data-dir", type=Path, required=True, help="folder of BEIR SciFact")
    parser.add_argument("--cache", type=Path, default=Path("bench/.cache/embeddings.sqlite"))
    parser.add_argument("--out", type=Path, default=Path("docs/benchmarks"))
    parser.add_argument("--part", choices=["all", "relevance", "scaling"], default="all")
    parser.add_argument(
        "--sizes",
        type=lambda value: [int(size) for size in value.split(",")],
        default=[1_000, 10_000, 50_000, 200_000],
    )
    parser.add_argument("--scaling-queries", type=int, default=100)
    parser.add_argument("--from-json", type=Path, default=None, help="tables and plots of a saved run")
    parser.add_argument("--child-size", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--child-base", type=Path, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--child-engine", choices=["ours", "lancedb"], default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if not (args.data_dir / "corpus.jsonl").exists():
        parser.error(f"{args.data_dir} has no corpus.jsonl (set DATA_DIR to the folder holding scifact/)")
    # LanceDB's hybrid query logs a deprecation note per search, which would bury the progress bars.
    os.environ.setdefault("LANCEDB_LOG", "error")
    if args.child_size is not None:
        print(json.dumps(scaling_child(args) if args.child_engine is None else memory_child(args)))
        return 0

    if args.from_json is not None:
        report: dict[str, Any] = json.loads(args.from_json.read_text())
    else:
        report = {"machine": machine(), "command": " ".join(sys.argv)}
        args.out.mkdir(parents=True, exist_ok=True)
        data = prepare(args)
        # Saved after each part, so a long scaling run stopped early keeps the relevance figures.
        if args.part in ("all", "relevance"):
            report["relevance"] = relevance_part(data)
            (args.out / "results.json").write_text(json.dumps(report, indent=1))
        if args.part in ("all", "scaling"):
            report["scaling"] = scaling_part(args, data)
            (args.out / "results.json").write_text(json.dumps(report, indent=1))
    args.out.mkdir(parents=True, exist_ok=True)
    plots = plot(args.out, report.get("relevance"), report.get("scaling"))
    print(json.dumps(report["machine"]))
    if "relevance" in report:
        result = report["relevance"]
        print(
            f"\nSciFact: {result['documents']:,} documents, {result['chunks']:,} chunks "
            f"({result['passages']:,} BM25 passages in ours), {result['queries']} test claims\n"
        )
        print("\n".join(relevance_table(result)))
    if "scaling" in report:
        print()
        print("\n".join(scaling_table(report["scaling"])))
    for path in plots:
        print(f"plot: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
