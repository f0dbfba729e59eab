"""The embedding model's own speed, variant by variant, and what each variant does to relevance, in
one run.

    make bench-model                                    # DATA_DIR=../shared/data by default
    python -m bench.model_path --data-dir ../shared/data/scifact [--notes 2000] [--abstracts 60]
        [--repeats 3] [--corpus-docs 1500] [--alpha 0.30]

Variants (``VARIANTS``): ``LocalEmbedder`` as the runtime builds it today (the shipped weight-only
int8 file, texts sorted by token length, batches of 32, ONNX Runtime's own intra-op thread count,
its CPU arena off), then one change at a time: the model file (``bench.model_files``: the original
fp32 weights; a dynamically quantized int8 file), input order instead of sorting, batch sizes 16 and
64, one intra-op thread, intra-op threads that sleep instead of spinning while they wait for work.

1. **Speed**: texts/s on ``--notes`` short notes (``bench.efficiency.dialogue_turns``, 40–140
   characters) and on the chunks of the first ``--abstracts`` SciFact abstracts as the pipeline
   embeds them (title + chunk, the runtime's default chunker; ``bench.efficiency.embedded_texts``).
   Every variant is loaded and warmed up first; then ``--repeats`` rounds, each timing every
   variant once on each set (``time.perf_counter`` around one ``embed`` call of the whole set), the
   variants in a rotated order from one round to the next so that a load on the shared machine
   falls on all of them alike. The figure is the median over rounds.
2. **Same vectors?** Each variant's vectors (first round) against those of today's settings on the
   same model file, and against today's: the lowest cosine over both sets.
3. **Relevance**: SciFact test nDCG@10 for every search mode (``bench.relevance``'s machinery, the
   embedded index, hybrid at ``--alpha``) for each model file: today's, fp32 and dynamic int8, with
   today's batching. A variant of batching or session options whose vectors stay at cosine ≥
   ``SAME_VECTORS`` from its model file's is reported with that file's figures instead of a run of
   its own. The corpus is every document judged for a test query plus distractors drawn at random
   (seeded) up to ``--corpus-docs`` documents (0: the whole corpus, 5,183 documents, 11,345 chunks);
   chunk vectors are cached per model file under ``--cache`` so a run that stops can be resumed.
4. **Profile**: one ``embed`` call of today's embedder on the SciFact chunks under cProfile: the
   share of tokenization, ``InferenceSession.run`` and the rest (batching, padding, pooling).

Progress lines (phase, count, rate, ETA) go to stderr; the results (Markdown tables) to stdout.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import random
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from bench.efficiency import Progress, TextSet, dialogue_turns, embedded_texts
from bench.ingest import scifact_documents
from bench.model_files import build_dynamic_int8, build_fp32
from bench.relevance import (
    MODES,
    ModeResult,
    Split,
    fill_index,
    load_split,
    mode_results,
    search_all,
)
from knowledge.adapters.embedded.passages import EmbeddedIndex
from knowledge.adapters.embedding_cache import CachedEmbedder, SqliteEmbeddingCache
from knowledge.adapters.local_embedder import LocalEmbedder
from knowledge.domain.retrieval.chunking import Chunker, embedding_text
from knowledge.domain.retrieval.hits import IndexedItem, SearchMode
from knowledge.ports import Embedder
from knowledge.services.documents import build_indexed_item
from knowledge.services.retrieval import legs_for

SAME_VECTORS = 0.9999
"""Lowest cosine to the model file's own vectors at which a variant counts as the same vectors."""
NDCG_TOLERANCE = 0.005
EMBED_SLICE = 256
"""Corpus chunks per ``embed`` call while filling the cache (a progress line after each)."""
TENANT, BASE, OWNER = "bench", "kb_bench", "bench"


@dataclass(frozen=True)
class Variant:
    """One way of running the model: ``model`` names the file (``shipped``, ``fp32``,
    ``dynamic-int8``); ``options`` are ``LocalEmbedder`` keyword arguments."""

    name: str
    model: str
    options: dict[str, Any] = field(default_factory=dict)


TODAY = "today"
VARIANTS = (
    Variant(TODAY, "shipped"),
    Variant("fp32", "fp32"),
    Variant("dynamic int8", "dynamic-int8"),
    Variant("input order", "shipped", {"sort_by_length": False}),
    Variant("batch 16", "shipped", {"batch_size": 16}),
    Variant("batch 64", "shipped", {"batch_size": 64}),
    Variant("threads 1", "shipped", {"threads": 1}),
    Variant("no spinning", "shipped", {"spinning": False}),
)
MODEL_REFERENCE = {"shipped": TODAY, "fp32": "fp32", "dynamic-int8": "dynamic int8"}
"""The variant whose vectors stand for each model file (today's settings on that file)."""


def model_files(models_dir: Path) -> dict[str, Path | None]:
    """Each model name to its file (``None``: the shipped package's), built when missing."""
    fp32 = build_fp32(models_dir / "minilm-fp32.onnx")
    return {
        "shipped": None,
        "fp32": fp32,
        "dynamic-int8": build_dynamic_int8(fp32, models_dir / "minilm-dynamic-int8.onnx"),
    }


def make_embedder(variant: Variant, files: dict[str, Path | None]) -> LocalEmbedder:
    """``LocalEmbedder`` for ``variant``, loaded and warmed up."""
    embedder = LocalEmbedder(model_file=files[variant.model], **variant.options)
    embedder.embed(["warm up the model", "and its tokenizer, " * 20])
    return embedder


@dataclass
class Speed:
    """Seconds per round and the first round's vectors, per set, for one variant."""

    seconds: dict[str, list[float]] = field(default_factory=dict)
    vectors: dict[str, np.ndarray[Any, Any]] = field(default_factory=dict)

    def rate(self, name: str, count: int) -> float:
        return count / statistics.median(self.seconds[name])


def measure(
    embedders: dict[str, LocalEmbedder], sets: dict[str, list[str]], repeats: int
) -> dict[str, Speed]:
    """``repeats`` rounds of every variant on every set, the order rotated by one each round."""
    names = list(embedders)
    speeds = {name: Speed() for name in names}
    per_round = sum(len(texts) for texts in sets.values()) * len(names)
    progress = Progress("speed", per_round * repeats, "texts")
    for round_number in range(repeats):
        shift = round_number % len(names)
        for name in names[shift:] + names[:shift]:
            for set_name, texts in sets.items():
                started = time.perf_counter()
                vectors = embedders[name].embed(texts)
                speeds[name].seconds.setdefault(set_name, []).append(time.perf_counter() - started)
                if round_number == 0:
                    speeds[name].vectors[set_name] = np.asarray(vectors, dtype=np.float32)
                progress.add(len(texts))
    progress.show(force=True)
    return speeds


def lowest_cosine(left: Speed, right: Speed) -> float:
    """The lowest cosine between two variants' vectors of the same texts (unit vectors)."""
    return min(
        float(np.min(np.sum(left.vectors[name] * right.vectors[name], axis=1))) for name in left.vectors
    )


def corpus_subset(data_dir: Path, split: Split, size: int, seed: int = 27) -> list[dict[str, str]]:
    """Every document judged for a query of ``split``, then distractors drawn at random up to
    ``size`` documents (0: every document), in corpus order."""
    with (data_dir / "corpus.jsonl").open(encoding="utf-8") as lines:
        corpus = [json.loads(line) for line in lines if line.strip()]
    if size <= 0 or size >= len(corpus):
        return corpus
    judged = {doc_id for judgments in split.qrels.values() for doc_id in judgments}
    others = [doc["_id"] for doc in corpus if doc["_id"] not in judged]
    chosen = judged | set(random.Random(seed).sample(others, max(0, size - len(judged))))
    return [doc for doc in corpus if doc["_id"] in chosen]


def relevance(
    data_dir: Path,
    documents: Sequence[dict[str, str]],
    split: Split,
    embedder: Embedder,
    label: str,
    alpha: float,
) -> dict[SearchMode, ModeResult]:
    """Every mode's figures on an embedded index of ``documents`` embedded by ``embedder``."""
    chunker = Chunker(max_tokens=200, overlap_tokens=32)
    texts: list[str] = []
    for doc in documents:
        chunks = chunker.split(doc.get("text", "")) or []
        texts += [embedding_text(doc.get("title", ""), chunk.text) for chunk in chunks] or [
            embedding_text(doc.get("title", ""), "")
        ]
    progress = Progress(f"{label}: embedding corpus chunks", len(texts), "chunks")
    for start in range(0, len(texts), EMBED_SLICE):
        embedder.embed(texts[start : start + EMBED_SLICE])
        progress.add(len(texts[start : start + EMBED_SLICE]))
    progress.show(force=True)
    items: list[IndexedItem] = [
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
        for doc in documents
    ]
    index = EmbeddedIndex()
    index.ensure_ready(model_id=embedder.model_id, dimension=embedder.dimension)
    fill_index(index, items, f"embedded ({label})")
    ids = list(split.queries)
    vectors = dict(zip(ids, embedder.embed([split.queries[qid] for qid in ids]), strict=True))
    leg_sets = list(dict.fromkeys(legs_for(mode) for mode in MODES))
    searches = search_all({label: index}, split.queries, vectors, leg_sets, desc=f"{label}: test queries")
    return mode_results(searches, label, split, alpha)


def profile_lines(embedder: LocalEmbedder, texts: Sequence[str]) -> list[str]:
    """Where one ``embed`` call of ``texts`` spends its time, from cProfile."""
    profiler = cProfile.Profile()
    started = time.perf_counter()
    profiler.runcall(embedder.embed, list(texts))
    wall = time.perf_counter() - started
    stats = pstats.Stats(profiler)
    tokenize = run = 0.0
    for (_, _, function), row in stats.stats.items():  # type: ignore[attr-defined]
        cumulative = row[3]
        if "encode_batch" in function:
            tokenize += cumulative
        elif (function == "run" or "InferenceSession" in function) and cumulative > run:
            run = cumulative
    total = max(wall, 1e-9)
    rest = max(0.0, total - tokenize - run)
    return [
        f"one embed call of {len(texts)} SciFact chunks, today's settings, under cProfile: "
        f"{total:.2f} s wall",
        f"- tokenize (Tokenizer.encode_batch): {tokenize:.3f} s ({tokenize / total:.1%})",
        f"- InferenceSession.run: {run:.3f} s ({run / total:.1%})",
        f"- the rest (ordering, padding, pooling, normalizing, tolist): {rest:.3f} s ({rest / total:.1%})",
    ]


def run(args: argparse.Namespace) -> int:
    print(f"load at start: {_uptime()}", file=sys.stderr, flush=True)
    files = model_files(args.models_dir)
    documents = scifact_documents(args.data_dir / "corpus.jsonl")[: args.abstracts]
    sets = {
        "notes": dialogue_turns(args.notes),
        "scifact": embedded_texts(TextSet("scifact", documents=documents)),
    }
    print(
        f"  loading {len(VARIANTS)} variants; sets: {len(sets['notes'])} notes, "
        f"{len(sets['scifact'])} SciFact chunks",
        file=sys.stderr,
        flush=True,
    )
    embedders = {variant.name: make_embedder(variant, files) for variant in VARIANTS}
    loads = [_uptime()]
    speeds = measure(embedders, sets, args.repeats)
    loads.append(_uptime())
    cosines = {
        variant.name: (
            lowest_cosine(speeds[variant.name], speeds[MODEL_REFERENCE[variant.model]]),
            lowest_cosine(speeds[variant.name], speeds[TODAY]),
        )
        for variant in VARIANTS
    }
    profile = profile_lines(embedders[TODAY], sets["scifact"])
    del embedders

    split = load_split(args.data_dir, "test")
    corpus = corpus_subset(args.data_dir, split, args.corpus_docs)
    results: dict[str, dict[SearchMode, ModeResult]] = {}
    for variant in VARIANTS:
        if variant.name not in MODEL_REFERENCE.values():
            continue
        args.cache.mkdir(parents=True, exist_ok=True)
        cache = SqliteEmbeddingCache(args.cache / f"{variant.model}.sqlite")
        embedder = CachedEmbedder(LocalEmbedder(model_file=files[variant.model]), cache)
        results[variant.name] = relevance(args.data_dir, corpus, split, embedder, variant.name, args.alpha)
    loads.append(_uptime())

    chunks_in_corpus = len(corpus)
    print(
        f"\nSciFact test: {len(split.queries)} queries over {chunks_in_corpus:,} documents "
        f"(--corpus-docs {args.corpus_docs}); hybrid alpha {args.alpha:.2f}; "
        f"speed: median of {args.repeats} rounds, {len(sets['notes'])} notes, "
        f"{len(sets['scifact'])} chunks of {len(documents)} abstracts"
    )
    print("load (uptime) before speed, after speed, after relevance: " + " | ".join(loads))
    print(f"cpu count {os.cpu_count()}\n")
    header = " | ".join(f"nDCG@10 {mode.value}" for mode in MODES)
    print(
        f"| variant | notes texts/s | SciFact chunks texts/s | speed-up notes / chunks | "
        f"lowest cosine to its model / to today | {header} | largest Δ vs today |"
    )
    print("|---|---:|---:|---:|---:|" + "---:|" * len(MODES) + "---:|")
    today = speeds[TODAY]
    for variant in VARIANTS:
        speed = speeds[variant.name]
        notes = speed.rate("notes", len(sets["notes"]))
        chunks = speed.rate("scifact", len(sets["scifact"]))
        ups = (
            f"{notes / today.rate('notes', len(sets['notes'])):.2f}× / "
            f"{chunks / today.rate('scifact', len(sets['scifact'])):.2f}×"
        )
        own, to_today = cosines[variant.name]
        source = variant.name if variant.name in results else MODEL_REFERENCE[variant.model]
        same = variant.name in results or own >= SAME_VECTORS
        if same:
            figures = results[source]
            cells = " | ".join(f"{figures[mode].figures['nDCG@10']:.4f}" for mode in MODES)
            delta = max(
                (
                    figures[mode].figures["nDCG@10"] - results[TODAY][mode].figures["nDCG@10"]
                    for mode in MODES
                ),
                key=abs,
            )
            verdict = f"{delta:+.4f}" + ("" if abs(delta) <= NDCG_TOLERANCE else " (over 0.005)")
            if source != variant.name:
                cells = " | ".join(f"= {source}" for _ in MODES)
        else:
            cells = " | ".join("not run" for _ in MODES)
            verdict = "vectors differ: not checked"
        print(
            f"| {variant.name} | {notes:.1f} | {chunks:.2f} | {ups} | {own:.6f} / {to_today:.6f} | "
            f"{cells} | {verdict} |"
        )
    print()
    for line in profile:
        print(line)
    return 0


def _uptime() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{time.strftime('%H:%M:%S')} load average {one:.2f}, {five:.2f}, {fifteen:.2f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.model_path", description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, required=True, help="folder of BEIR SciFact")
    parser.add_argument("--notes", type=int, default=2000, help="short notes (2000)")
    parser.add_argument("--abstracts", type=int, default=60, help="SciFact abstracts for speed (60)")
    parser.add_argument("--repeats", type=int, default=3, help="rounds of speed (3)")
    parser.add_argument(
        "--corpus-docs", type=int, default=1500, help="SciFact documents for relevance (1500; 0: all)"
    )
    parser.add_argument("--alpha", type=float, default=0.30, help="hybrid lexical weight (0.30)")
    parser.add_argument("--models-dir", type=Path, default=Path("bench/.cache/models"))
    parser.add_argument("--cache", type=Path, default=Path("bench/.cache/model-path"))
    args = parser.parse_args(argv)
    if not (args.data_dir / "corpus.jsonl").exists():
        parser.error(f"{args.data_dir} has no corpus.jsonl (set DATA_DIR to the folder holding scifact/)")
    return run(args)


if __name__ == "__main__":
    raise SystemExit(main())
