"""Memory latency beside knowledge search, in one process on the same machine and the same run.

    python -m bench.memory --data-dir ../shared/data/scifact [--notes 10000] [--profile]

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

``--corpus-vectors hashing`` gives the loaded corpus (not the queries, nor the fresh facts) vectors
from a feature-hashing bag of words instead of the model: search time does not depend on the
vectors' values (an exact matrix–vector product over the same shapes), and on a busy two-core
machine the model embeds only a few sentences per second. ``--profile`` prints cProfile's top
functions of the memory searches (where the time goes). Progress is shown on stderr.
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

from knowledge.adapters.embedded_index import EmbeddedIndex
from knowledge.adapters.embedded_note_index import EmbeddedNoteIndex
from knowledge.adapters.embedding_cache import CachedEmbedder, SqliteEmbeddingCache
from knowledge.adapters.local_embedder import LocalEmbedder
from knowledge.adapters.memory_store import InMemoryKnowledgeStore
from knowledge.adapters.runtime_switch import StaticRuntimeSwitch
from knowledge.bootstrap import utc_now
from knowledge.domain.chunking import Chunker
from knowledge.domain.contract import SearchKnowledgeArguments
from knowledge.domain.memory_contract import RememberArguments, SearchMemoryArguments
from knowledge.domain.models import Permission, Principal, Scope, Source
from knowledge.domain.retrieval import IndexedItem
from knowledge.ports import Embedder
from knowledge.services.documents import build_indexed_item
from knowledge.services.memory_search import MemorySearchService
from knowledge.services.note_indexing import NoteIndexingService, indexed_note
from knowledge.services.notes import NoteService
from knowledge.services.search import SearchService

TENANT = "bench"
CALLER = Principal(
    tenant_id=TENANT,
    subject_id="bench-agent",
    scopes=frozenset({Permission.READ.value, Permission.MEMORY_READ.value, Permission.MEMORY_WRITE.value}),
)
BATCH = 256
FRESH_FACTS = 30
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
        self.store = InMemoryKnowledgeStore()
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
    arguments = parser.parse_args(argv)

    bench = Bench(arguments.cache, hashed_corpus=arguments.corpus_vectors == "hashing")
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
