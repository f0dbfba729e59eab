"""Memory latency beside knowledge search, in one process on the same machine and the same run.

    python -m bench.memory --data-dir ../shared/data/scifact [--notes 10000] [--profile]
        [--part all|search|recall] [--recall-notes 1000,10000] [--recall-samples 40]

Through the product's own services and engines: ``NoteService`` / ``MemorySearchService`` on the
``EmbeddedNoteIndex``, ``SearchService`` on the ``EmbeddedIndex``, the offline all-MiniLM-L6-v2
embedder behind its content-hash cache (``--cache``), and the in-memory store (the DynamoDB round
trips of the read-time truth check are not part of these figures). The corpus is the first
``--notes`` sentences of SciFact's abstracts, kept once as notes of one tenant and once as
knowledge items of one base, so both surfaces search the same texts; the queries are SciFact's test
claims, run in hybrid mode (limit / max_results 10), alternating between the surfaces.

1. **remember → searchable**: a fresh fact is remembered, its change applied by the indexer's
   service (``NoteIndexingService.sync_note``, what the stream consumer calls), and the time until
   ``search_memory`` returns it is measured; the model embeds each fresh fact once.
2. **search p50/p95** of ``search_memory`` and ``search_knowledge``, and their ratio.
3. **recall_context pack build p50/p95** through ``RecallService`` (its own tenant world: notes
   only, with 3 pins, varied importance and a few paths), at each ``--recall-notes`` count of
   visible notes (the world grows from one count to the next), with a SciFact test claim as the
   query and with no query, for the default call (``max_tokens`` 1,200, ``max_items`` 8) and the
   largest pack (8,000 and 50). The candidates' vectors are read through a content-hash cache as
   the service reads them (with ``--corpus-vectors hashing``, an in-memory cache of the hashed
   vectors the index was built from); queries are embedded by the model behind its cache.

``--corpus-vectors hashing`` gives the loaded corpus (not the queries, nor the fresh facts) vectors
from a feature-hashing bag of words instead of the model: search time does not depend on the
vectors' values (an exact matrix–vector product over the same shapes), and on a busy two-core
machine the model embeds only a few sentences per second. ``--profile`` prints cProfile's top
functions of the memory searches and of one pack build at the largest ``--recall-notes`` (where
the time goes). Progress is shown on stderr.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import math
import pstats
import re
import statistics
import sys
import time
import zlib
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from tqdm import tqdm

from knowledge.adapters.embedded.notes import EmbeddedNoteIndex
from knowledge.adapters.embedded.passages import EmbeddedIndex
from knowledge.adapters.embedding_cache import CachedEmbedder, InProcessEmbeddingCache, SqliteEmbeddingCache
from knowledge.adapters.in_process.store import InProcessKnowledgeStore
from knowledge.adapters.local_embedder import LocalEmbedder
from knowledge.adapters.runtime_switch import StaticRuntimeSwitch
from knowledge.bootstrap import utc_now
from knowledge.contract.memory import (
    PinMemoryArguments,
    RecallContextArguments,
    RememberArguments,
    SearchMemoryArguments,
)
from knowledge.contract.search import SearchKnowledgeArguments
from knowledge.domain.memory.context_pack import count_cl100k
from knowledge.domain.models import Permission, Principal, Scope, Source
from knowledge.domain.retrieval.chunking import Chunker
from knowledge.domain.retrieval.hits import IndexedItem
from knowledge.ports import Embedder
from knowledge.services.documents import build_indexed_item
from knowledge.services.memory_search import MemorySearchService
from knowledge.services.note_indexing import NoteIndexingService, indexed_note
from knowledge.services.notes import NoteService
from knowledge.services.pins import PinService
from knowledge.services.recall import RecallService
from knowledge.services.search import SearchService

TENANT = "bench"
CALLER = Principal(
    tenant_id=TENANT,
    subject_id="bench-agent",
    scopes=frozenset({Permission.READ.value, Permission.MEMORY_READ.value, Permission.MEMORY_WRITE.value}),
)
BATCH = 256
FRESH_FACTS = 30
RECALL_PINS = 3
RECALL_PATHS = ("/", "/projects/alpha", "/projects/beta", "/ops", "/people")
RECALL_SHAPES = ((1_200, 8), (8_000, 50))
"""(max_tokens, max_items): the default call, and the largest pack."""
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def sentences(data_dir: Path, count: int) -> list[str]:
    """The first ``count`` distinct sentences (20 characters or more) of SciFact's abstracts."""
    seen: dict[str, None] = {}
    with (data_dir / "corpus.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            for sentence in _SENTENCE.split(json.loads(line)["text"]):
                if len(sentence) >= 20:
                    seen.setdefault(sentence.strip(), None)
                if len(seen) >= count:
                    return list(seen)
    return list(seen)


def queries(data_dir: Path) -> list[str]:
    test_ids = {
        line.split("\t")[0] for line in (data_dir / "qrels" / "test.tsv").read_text().splitlines()[1:]
    }
    with (data_dir / "queries.jsonl").open(encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle if line.strip()]
    return [row["text"] for row in rows if row["_id"] in test_ids]


def _batches(items: Sequence[str], size: int) -> Iterator[Sequence[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


class HashingVectors:
    """Unit vectors of hashed words, ``dimension`` floats (the corpus stand-in of the module docs)."""

    def __init__(self, dimension: int) -> None:
        self._dimension = dimension

    @property
    def model_id(self) -> str:
        return f"bench/hashing-{self._dimension}"

    @property
    def dimension(self) -> int:
        return self._dimension

    def forget(self, texts: Sequence[str]) -> None:
        """No cache: nothing to drop."""

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        vectors = []
        for text in texts:
            vector = [0.0] * self._dimension
            for word in re.findall(r"\w+", text.lower()):
                vector[zlib.crc32(word.encode()) % self._dimension] += 1.0
            norm = math.sqrt(sum(value * value for value in vector)) or 1.0
            vectors.append([value / norm for value in vector])
        return vectors


class Bench:
    def __init__(self, cache_path: Path, *, hashed_corpus: bool) -> None:
        self.store = InProcessKnowledgeStore()
        self.embedder = CachedEmbedder(LocalEmbedder(), SqliteEmbeddingCache(cache_path))
        self.note_index = EmbeddedNoteIndex()
        self.chunk_index = EmbeddedIndex()
        for index in (self.note_index, self.chunk_index):
            index.ensure_ready(model_id=self.embedder.model_id, dimension=self.embedder.dimension)
        switch = StaticRuntimeSwitch(True)
        self.notes = NoteService(self.store, self.embedder.forget, switch, utc_now)
        self.note_indexing = NoteIndexingService(self.store, self.note_index, self.embedder)
        self.memory = MemorySearchService(self.store, self.note_index, self.embedder, switch, utc_now)
        self.knowledge = SearchService(self.store, self.chunk_index, self.embedder, switch)
        self.base = self.store.create_base(
            TENANT, name="bench", owner_id="bench", scope=Scope.TENANT, team_id=None
        )
        self.chunker = Chunker(max_tokens=200, overlap_tokens=32)
        self.corpus_vectors: Embedder = (
            HashingVectors(self.embedder.dimension) if hashed_corpus else self.embedder
        )

    def load(self, texts: Sequence[str]) -> None:
        """Every text as a note (remembered, then indexed) and as a published knowledge item."""
        with tqdm(total=len(texts), desc="notes + items", unit="text", file=sys.stderr) as progress:
            for batch in _batches(texts, BATCH):
                notes = [
                    self.notes.remember(CALLER, RememberArguments(content=text)).response.note
                    for text in batch
                ]
                stored = self.store.get_notes(TENANT, [note.note_id for note in notes])
                vectors = self.corpus_vectors.embed(list(batch))
                # One index commit per batch, as the stream consumer's batches do.
                self.note_index.upsert_notes(
                    [
                        indexed_note(stored[note.note_id], vector)
                        for note, vector in zip(notes, vectors, strict=True)
                    ]
                )
                self.chunk_index.upsert_many([self._item(text) for text in batch])
                progress.update(len(batch))

    def _item(self, text: str) -> IndexedItem:
        item, revision = self.store.create_item(
            TENANT,
            self.base.knowledge_base_id,
            title=text[:60],
            content=text,
            source=Source(),
            external_id=None,
            publish=True,
        )
        return build_indexed_item(
            chunker=self.chunker,
            embedder=self.corpus_vectors,
            tenant_id=TENANT,
            knowledge_base_id=self.base.knowledge_base_id,
            knowledge_item_id=item.knowledge_item_id,
            knowledge_revision_id=revision.knowledge_revision_id,
            version=item.version,
            owner_id="bench",
            team_id=None,
            scope=Scope.TENANT.value,
            title=revision.title,
            content=text,
        )

    def remember_to_searchable(self, fact: str) -> float:
        """Seconds from ``remember`` to the first ``search_memory`` answer holding the fact."""
        started = time.perf_counter()
        note = self.notes.remember(CALLER, RememberArguments(content=fact)).response.note
        self.note_indexing.sync_note(TENANT, note.note_id, last_known_version=note.version)
        answer = self.memory.search_memory(CALLER, SearchMemoryArguments(query=fact, mode="lexical", limit=1))
        elapsed = time.perf_counter() - started
        if not answer.results or answer.results[0].note_id != note.note_id:
            raise AssertionError("a remembered fact was not found at rank 1")
        return elapsed

    def search_memory(self, query: str) -> None:
        self.memory.search_memory(CALLER, SearchMemoryArguments(query=query, limit=10))

    def search_knowledge(self, query: str) -> None:
        self.knowledge.search_knowledge(CALLER, SearchKnowledgeArguments(query=query, max_results=10))


class RecallBench:
    """A tenant's notes and pins behind ``RecallService``, built from the adapters as the runtime's
    container builds them (in-memory store, embedded note index). ``query_embedder`` embeds the
    queries; the notes' vectors come from ``corpus_vectors`` behind a content-hash cache, which is
    also where the service reads the candidates' vectors from."""

    def __init__(self, query_embedder: CachedEmbedder, *, hashed_corpus: bool) -> None:
        self.store = InProcessKnowledgeStore()
        self.index = EmbeddedNoteIndex()
        self.index.ensure_ready(model_id=query_embedder.model_id, dimension=query_embedder.dimension)
        self.vectors: Embedder = (
            CachedEmbedder(
                HashingVectors(query_embedder.dimension), InProcessEmbeddingCache(max_entries=200_000)
            )
            if hashed_corpus
            else query_embedder
        )
        switch = StaticRuntimeSwitch(True)
        self.notes = NoteService(self.store, query_embedder.forget, switch, utc_now)
        self.pins = PinService(self.store, self.notes, utc_now)
        search = MemorySearchService(self.store, self.index, query_embedder, switch, utc_now)
        self.recall_service = RecallService(
            self.store, self.index, self.vectors, self.notes, self.pins, search, count_cl100k, utc_now
        )
        self.size = 0

    def load(self, texts: Sequence[str]) -> None:
        """Remember and index ``texts`` (importance and path spread by a hash of the text); the first
        ``RECALL_PINS`` notes the world ever holds are pinned, in that order."""
        with tqdm(
            total=len(texts), desc=f"recall world → {self.size + len(texts):,}", file=sys.stderr
        ) as bar:
            for batch in _batches(texts, BATCH):
                notes = []
                for text in batch:
                    spread = zlib.crc32(text.encode())
                    arguments = RememberArguments(
                        content=text,
                        importance=round((spread % 10) / 10 + 0.05, 2),
                        path=RECALL_PATHS[spread % len(RECALL_PATHS)],
                    )
                    notes.append(self.notes.remember(CALLER, arguments).response.note)
                stored = self.store.get_notes(TENANT, [note.note_id for note in notes])
                vectors = self.vectors.embed(list(batch))
                self.index.upsert_notes(
                    [
                        indexed_note(stored[note.note_id], vector)
                        for note, vector in zip(notes, vectors, strict=True)
                    ]
                )
                for order, note in enumerate(notes[: max(0, RECALL_PINS - self.size)], start=self.size):
                    self.pins.pin(CALLER, PinMemoryArguments(note_id=note.note_id, order=order))
                self.size += len(batch)
                bar.update(len(batch))

    def recall(self, query: str | None, max_tokens: int, max_items: int) -> int:
        """One pack build; the pack's item count."""
        arguments = RecallContextArguments(query=query, max_tokens=max_tokens, max_items=max_items)
        return len(self.recall_service.recall_context(CALLER, arguments).items)


def recall_figures(
    world: RecallBench, claims: Sequence[str], samples: int
) -> list[tuple[str, int, int, float, float, float]]:
    """``(query kind, max_tokens, max_items, p50 ms, p95 ms, mean items)`` at the world's size; each
    with-query sample recalls for the next claim, each without-query sample the same pack."""
    rows = []
    for kind in ("query", "no query"):
        for max_tokens, max_items in RECALL_SHAPES:
            times: list[float] = []
            items: list[int] = []
            for sample in tqdm(
                range(samples),
                desc=f"recall {world.size:,} {kind} {max_tokens}",
                file=sys.stderr,
                leave=False,
            ):
                query = claims[sample % len(claims)] if kind == "query" else None
                started = time.perf_counter()
                items.append(world.recall(query, max_tokens, max_items))
                times.append(time.perf_counter() - started)
            p50, p95 = _percentiles(times)
            rows.append((kind, max_tokens, max_items, p50, p95, statistics.fmean(items)))
    return rows


def run_recall(
    embedder: CachedEmbedder,
    data_dir: Path,
    sizes: Sequence[int],
    samples: int,
    *,
    hashed_corpus: bool,
    profile: bool,
) -> None:
    """Grow one recall world through ``sizes`` and print a table of pack builds at each."""
    world = RecallBench(embedder, hashed_corpus=hashed_corpus)
    texts = sentences(data_dir, max(sizes))
    claims = queries(data_dir)
    for claim in claims[:samples]:  # queries embedded once, as the search part warms its own
        embedder.embed([claim])
    table: list[tuple[int, str, int, int, float, float, float]] = []
    for size in sorted(sizes):
        world.load(texts[world.size : size])
        world.recall(claims[0], *RECALL_SHAPES[0])  # warm (tokenizer, searcher)
        table.extend((world.size, *row) for row in recall_figures(world, claims, samples))
    print(f"\nrecall_context pack build ({samples} builds per row; {RECALL_PINS} pins; in process):")
    header = ("notes", "query", "max_tokens", "max_items", "p50 ms", "p95 ms")
    print("{:>7}  {:<8}  {:>10}  {:>9}  {:>7}  {:>7}  items".format(*header))
    for size, kind, max_tokens, max_items, p50, p95, items in table:
        print(
            f"{size:>7,}  {kind:<8}  {max_tokens:>10,}  {max_items:>9}  {p50:>7.1f}  {p95:>7.1f}  {items:.1f}"
        )
    if profile:
        for query in (claims[1], None):
            profiler = cProfile.Profile()
            profiler.enable()
            world.recall(query, *RECALL_SHAPES[0])
            profiler.disable()
            out = io.StringIO()
            stats = pstats.Stats(profiler, stream=out)
            kind = "a query" if query else "no query"
            print(f"\none pack build at {world.size:,} notes, {kind}, budget 1,200:")
            stats.sort_stats("tottime").print_stats(8)
            stats.sort_stats("cumulative").print_stats(22)
            print(out.getvalue())


def _timed(call: Callable[[str], None], query: str) -> float:
    started = time.perf_counter()
    call(query)
    return time.perf_counter() - started


def _percentiles(samples: Sequence[float]) -> tuple[float, float]:
    cuts = statistics.quantiles(samples, n=100, method="inclusive")
    return cuts[49] * 1000, cuts[94] * 1000


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--data-dir", type=Path, required=True, help="the SciFact folder")
    parser.add_argument("--notes", type=int, default=10_000, help="notes (and items) in the tenant (10000)")
    parser.add_argument("--cache", type=Path, default=Path("bench/.cache/embeddings.sqlite"))
    parser.add_argument(
        "--profile", action="store_true", help="print cProfile's top functions of search_memory"
    )
    parser.add_argument(
        "--corpus-vectors", choices=("model", "hashing"), default="model", help="see the module docs (model)"
    )
    parser.add_argument(
        "--part", choices=("all", "search", "recall"), default="all", help="what to run (all: 1, 2 and 3)"
    )
    parser.add_argument(
        "--recall-notes",
        type=_counts,
        default=(1_000, 10_000),
        help="visible notes of the recall rows (1000,10000)",
    )
    parser.add_argument("--recall-samples", type=int, default=40, help="pack builds per recall row (40)")
    arguments = parser.parse_args(argv)

    hashed = arguments.corpus_vectors == "hashing"
    if arguments.part == "recall":
        embedder = CachedEmbedder(LocalEmbedder(), SqliteEmbeddingCache(arguments.cache))
        run_recall(
            embedder,
            arguments.data_dir,
            arguments.recall_notes,
            arguments.recall_samples,
            hashed_corpus=hashed,
            profile=arguments.profile,
        )
        return 0
    bench = Bench(arguments.cache, hashed_corpus=hashed)
    texts = sentences(arguments.data_dir, arguments.notes + FRESH_FACTS)
    corpus, fresh = texts[: arguments.notes], texts[arguments.notes :]
    bench.load(corpus)
    claims = queries(arguments.data_dir)
    for query in claims[:10]:  # warm both paths (query embeddings, searchers)
        bench.search_memory(query)
        bench.search_knowledge(query)

    latencies = [
        bench.remember_to_searchable(fact)
        for fact in tqdm(fresh, desc="remember → searchable", file=sys.stderr)
    ]
    memory: list[float] = []
    knowledge: list[float] = []
    for query in tqdm(claims, desc="searching", unit="query", file=sys.stderr):
        memory.append(_timed(bench.search_memory, query))
        knowledge.append(_timed(bench.search_knowledge, query))

    print(f"notes and items in the tenant: {len(corpus):,}; queries: {len(claims)} (SciFact test, hybrid)")
    p50, p95 = _percentiles(latencies)
    print(f"remember → searchable ({len(latencies)} fresh facts): p50 {p50:.1f} ms, p95 {p95:.1f} ms")
    m50, m95 = _percentiles(memory)
    k50, k95 = _percentiles(knowledge)
    print(f"search_memory    p50 {m50:.1f} ms, p95 {m95:.1f} ms")
    print(f"search_knowledge p50 {k50:.1f} ms, p95 {k95:.1f} ms")
    print(f"ratio memory/knowledge: p50 {m50 / k50:.2f}, p95 {m95 / k95:.2f}")
    if arguments.profile:
        profiler = cProfile.Profile()
        profiler.enable()
        for query in claims[:100]:
            bench.search_memory(query)
        profiler.disable()
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(18)
        print(out.getvalue())
    if arguments.part == "all":
        run_recall(
            bench.embedder,
            arguments.data_dir,
            arguments.recall_notes,
            arguments.recall_samples,
            hashed_corpus=hashed,
            profile=arguments.profile,
        )
    return 0


def _counts(value: str) -> tuple[int, ...]:
    """``1000,10000`` as counts of notes (argparse ``type``)."""
    try:
        counts = tuple(int(part) for part in value.split(",") if part.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a comma-separated list of counts: {value!r}") from None
    if not counts or min(counts) < RECALL_PINS:
        raise argparse.ArgumentTypeError(f"give counts of at least {RECALL_PINS} notes: {value!r}")
    return counts


if __name__ == "__main__":
    sys.exit(main())
