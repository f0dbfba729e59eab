"""The pipeline's efficiency: texts made searchable per second by a local runtime, beside the
embedding model's own rate on the same texts, in one run.

    make bench-efficiency                               # DATA_DIR=../shared/data by default
    python -m bench.efficiency --data-dir ../shared/data [--notes 500] [--abstracts 100]
        [--pages 10] [--clients 8] [--sets notes,scifact,pages]

Three sets of texts:

- ``notes``: short dialogue-like turns, generated (seeded, all distinct), one note each;
- ``scifact``: the first ``--abstracts`` SciFact abstracts (``DATA_DIR/scifact/corpus.jsonl``),
  one document each (title + abstract);
- ``pages``: the first ``--pages`` FastAPI pages (``DATA_DIR/fastapi-docs/pages``), long documents.

For each set:

1. **model**: the offline all-MiniLM-L6-v2 (``LocalEmbedder``, as the runtime builds it, no cache)
   embeds exactly what the pipeline embeds, in this process, right before and right after the
   set's pipeline run (the runtime idle meanwhile): each note's content; each document's chunks
   with its title prepended (the runtime's default chunker). The model's rate is the set's size
   over the mean of the two times, so a load that changes during the run weighs on both halves;
2. **pipeline**: the same texts through a local runtime (``python -m knowledge_local.runtime``, what
   ``make run`` runs, started by ``bench.ingest.start_runtime`` in a fresh state folder, so its
   embedding cache is empty, with the tenant quotas off): notes with ``remember`` from ``--clients``
   concurrent clients; documents as ``knowledge ingest`` sends them (``ingest_into``), the set split
   between ``--clients`` clients; the clock runs from the first write until every note's
   ``indexed_version`` (read from the runtime's table) or every item's ``indexed_revision_id`` is
   current: the indexer sets that mark after the index write, when the text is searchable. A sample
   of the notes is then searched for (``search_memory``, lexical) and must come first.

The figure of each set is texts/s (notes or documents per second) for the model and for the
pipeline, and their ratio (pipeline / model). Cold starts are not measured: a warm-up note and
document go through every function first. Progress lines on stderr give the phase, the count, the
rate and an estimate of the time left; results (a Markdown table) on stdout.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.ingest import Runtime, scifact_documents, start_runtime
from knowledge_local.account import aws_client
from knowledge_local.cli.client import KnowledgeClient
from knowledge_local.cli.documents import SourceDocument, collect_documents
from knowledge_local.cli.ingestion import ensure_base, ingest_into
from knowledge_local.state import PROJECT_ROOT, read_endpoints

SETS = ("notes", "scifact", "pages")
QUOTAS_OFF = {"TENANT_REQUESTS_PER_SECOND": "0", "TENANT_WRITES_PER_SECOND": "0"}
PROGRESS_SECONDS = 5.0
POLL_SECONDS = 1.0
SEARCH_SAMPLE = 10
DEV_TENANT = "dev"
"""The tenant of the runtime's dev token (``knowledge_local.cli.dev_token``)."""
BATCH_GET_KEYS = 100
"""DynamoDB BatchGetItem's limit."""

_SPEAKERS = ("I", "My sister", "My manager", "Our team", "My landlord", "The doctor", "My friend Sam")
_VERBS = (
    "mentioned that",
    "told me that",
    "decided that",
    "is worried that",
    "was happy that",
    "reminded me that",
)
_FACTS = (
    "the {thing} in {place} needs fixing before {when}",
    "we should book the {thing} for {when}",
    "the trip to {place} moves to {when}",
    "the {thing} costs more than expected in {place}",
    "{when} works better for the {thing} review",
    "the {thing} from {place} finally arrived",
    "nobody has checked the {thing} since {when}",
)
_THINGS = (
    "boiler",
    "budget",
    "bicycle",
    "garden",
    "quarterly report",
    "dentist appointment",
    "car insurance",
    "kitchen sink",
    "conference talk",
    "guitar lessons",
    "passport renewal",
    "laptop",
    "birthday dinner",
    "gym membership",
    "database migration",
)
_PLACES = (
    "Lisbon",
    "the office",
    "Berlin",
    "the cabin",
    "Osaka",
    "the warehouse",
    "Toronto",
    "the school",
    "Nairobi",
    "the old flat",
)
_WHENS = ("Monday", "next week", "the end of May", "Friday evening", "the holidays", "March", "tomorrow")
_TAILS = (
    "",
    " Let's not forget.",
    " I said I would follow up.",
    " That changes the plan a bit.",
    " We agreed to talk again soon.",
)


def dialogue_turns(count: int, seed: int = 27) -> list[str]:
    """``count`` distinct short turns of a conversation (one or two sentences, 40–140 characters);
    at most about 300,000 exist."""
    generator = random.Random(seed)
    turns: dict[str, None] = {}
    while len(turns) < count:
        fact = generator.choice(_FACTS).format(
            thing=generator.choice(_THINGS), place=generator.choice(_PLACES), when=generator.choice(_WHENS)
        )
        turn = f"{generator.choice(_SPEAKERS)} {generator.choice(_VERBS)} {fact}.{generator.choice(_TAILS)}"
        turns.setdefault(turn, None)
    return list(turns)


@dataclass(frozen=True)
class TextSet:
    """One set: what is sent (``notes`` or ``documents``)."""

    name: str
    notes: Sequence[str] = ()
    documents: Sequence[SourceDocument] = ()

    @property
    def size(self) -> int:
        return len(self.notes) or len(self.documents)

    @property
    def unit(self) -> str:
        return "notes" if self.notes else "documents"


def embedded_texts(text_set: TextSet) -> list[str]:
    """What the pipeline embeds for ``text_set``: each note's content, or each document's chunks with
    its title prepended (``build_indexed_item``, with the runtime's default chunker)."""
    if text_set.notes:
        return list(text_set.notes)
    from knowledge.domain.retrieval.chunking import Chunker, embedding_text
    from knowledge.settings import Settings

    fields = Settings.model_fields  # the runtime runs on the defaults
    chunker = Chunker(
        max_tokens=fields["chunk_tokens"].default, overlap_tokens=fields["chunk_overlap_tokens"].default
    )
    texts: list[str] = []
    for document in text_set.documents:
        chunks = chunker.split(document.content)
        texts += [embedding_text(document.title, chunk.text) for chunk in chunks] or [
            embedding_text(document.title, "")
        ]
    return texts


class Progress:
    """A line on stderr at most every ``PROGRESS_SECONDS``: phase, done of total, rate, ETA; the
    clock runs from ``started`` (``time.monotonic()``; now by default), e.g. the passage's first
    write for the count of texts searchable."""

    def __init__(self, phase: str, total: int, unit: str, started: float | None = None) -> None:
        self._phase, self._total, self._unit = phase, total, unit
        self._started = time.monotonic() if started is None else started
        self._next = self._started + PROGRESS_SECONDS
        self._lock = threading.Lock()
        self._done = 0

    def add(self, count: int = 1) -> None:
        with self._lock:
            self._done += count
        self.show()

    def set(self, done: int) -> None:
        with self._lock:
            self._done = done
        self.show()

    def show(self, *, force: bool = False) -> None:
        now = time.monotonic()
        with self._lock:
            if not force and now < self._next:
                return
            self._next = now + PROGRESS_SECONDS
            done = self._done
        elapsed = now - self._started
        rate = done / elapsed if elapsed > 0 else 0.0
        eta = f"{(self._total - done) / rate:.0f} s" if rate > 0 else "unknown"
        print(
            f"  {self._phase}: {done:,} of {self._total:,} {self._unit} after {elapsed:.0f} s, "
            f"{rate:.1f}/s, ETA {eta}",
            file=sys.stderr,
            flush=True,
        )


def model_seconds(texts: Sequence[str]) -> float:
    """Seconds the runtime's offline model (no cache) takes to embed ``texts`` in this process,
    loaded and warmed up before the clock starts."""
    from knowledge.adapters.local_embedder import LocalEmbedder

    embedder = LocalEmbedder()
    embedder.embed(["warm up the model", "and its tokenizer"])
    started = time.perf_counter()
    embedder.embed(list(texts))
    return time.perf_counter() - started


class NoteTracker:
    """Reads the runtime's table for notes' ``version`` and ``indexed_version``."""

    def __init__(self, runtime: Runtime) -> None:
        endpoints = read_endpoints(runtime.state_dir)
        self._table = endpoints.table_name
        self._dynamodb = aws_client("dynamodb", endpoints.aws_endpoint_url)

    def indexed(self, note_ids: Sequence[str]) -> set[str]:
        """The notes of ``note_ids`` whose index entry is at their current version."""
        from knowledge.adapters.dynamodb.keys import note_key

        done: set[str] = set()
        for start in range(0, len(note_ids), BATCH_GET_KEYS):
            keys = [
                {"PK": {"S": key.pk}, "SK": {"S": key.sk}}
                for key in (
                    note_key(DEV_TENANT, note_id) for note_id in note_ids[start : start + BATCH_GET_KEYS]
                )
            ]
            request: dict[str, Any] = {
                self._table: {
                    "Keys": keys,
                    "ProjectionExpression": "note_id, version, indexed_version",
                    "ConsistentRead": True,
                }
            }
            while request:
                answer = self._dynamodb.batch_get_item(RequestItems=request)
                for row in answer["Responses"].get(self._table, []):
                    indexed = row.get("indexed_version", {}).get("N")
                    if indexed is not None and indexed == row["version"]["N"]:
                        done.add(row["note_id"]["S"])
                request = answer.get("UnprocessedKeys") or {}
        return done


def wait_until(
    pending: Sequence[str], indexed: Callable[[Sequence[str]], set[str]], progress: Progress, timeout: float
) -> None:
    """Poll ``indexed`` every ``POLL_SECONDS`` until every id of ``pending`` is indexed;
    ``TimeoutError`` after ``timeout`` seconds."""
    waiting = list(pending)
    deadline = time.monotonic() + timeout
    while waiting:
        done = indexed(waiting)
        waiting = [identifier for identifier in waiting if identifier not in done]
        progress.set(len(pending) - len(waiting))
        if not waiting:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"{len(waiting)} of {len(pending)} still not indexed after {timeout:.0f} s")
        time.sleep(POLL_SECONDS)


def _shares(items: Sequence[Any], clients: int) -> list[Sequence[Any]]:
    return [items[index::clients] for index in range(clients) if items[index::clients]]


@dataclass(frozen=True)
class Passage:
    """One set through the pipeline: seconds writing, seconds until every text was indexed."""

    writing: float
    searchable: float


def notes_through(runtime: Runtime, turns: Sequence[str], clients: int, timeout: float) -> Passage:
    """``remember`` every turn from ``clients`` concurrent clients; wait until each is indexed; then
    search a sample (``SEARCH_SAMPLE``) and fail unless each is found first."""
    tracker = NoteTracker(runtime)
    note_ids: list[str] = []
    lock = threading.Lock()
    progress = Progress("notes written", len(turns), "notes")

    def send(share: Sequence[str]) -> None:
        with KnowledgeClient(runtime.api_url(), runtime.token(), timeout=120) as client:
            for turn in share:
                answer = client.call_tool("remember", content=turn)
                with lock:
                    note_ids.append(str(answer["note"]["note_id"]))
                progress.add()

    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=clients) as pool:
        list(pool.map(send, _shares(turns, clients)))
    writing = time.monotonic() - started
    progress.show(force=True)
    waiting = Progress("notes searchable", len(note_ids), "notes", started)
    wait_until(note_ids, tracker.indexed, waiting, timeout)
    searchable = time.monotonic() - started
    waiting.show(force=True)
    with KnowledgeClient(runtime.api_url(), runtime.token(), timeout=120) as client:
        for turn in random.Random(1).sample(list(turns), min(SEARCH_SAMPLE, len(turns))):
            results = client.call_tool("search_memory", query=turn, mode="lexical", limit=1)["results"]
            if not results or results[0]["content"] != turn:
                raise AssertionError(f"a remembered note was not found first: {turn!r}")
    return Passage(writing, searchable)


def documents_through(
    runtime: Runtime, documents: Sequence[SourceDocument], base_name: str, clients: int, timeout: float
) -> Passage:
    """Send ``documents`` as ``knowledge ingest`` does (``ingest_into``), split between ``clients``
    clients, into a new base; wait until each item is indexed at its current revision."""
    with KnowledgeClient(runtime.api_url(), runtime.token(), timeout=120) as client:
        base, _ = ensure_base(client, base_name)
    item_ids: list[str] = []
    lock = threading.Lock()
    progress = Progress(f"{base_name} written", len(documents), "documents")

    def send(share: Sequence[SourceDocument]) -> None:
        with KnowledgeClient(runtime.api_url(), runtime.token(), timeout=120) as client:
            for document in share:
                summary = ingest_into(client, [document], base, created=True, progress=False)
                with lock:
                    item_ids.extend(str(item["knowledge_item_id"]) for item in summary.items.values())
                progress.add()

    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=clients) as pool:
        list(pool.map(send, _shares(documents, clients)))
    writing = time.monotonic() - started
    progress.show(force=True)
    waiting = Progress(f"{base_name} searchable", len(item_ids), "documents", started)
    with KnowledgeClient(runtime.api_url(), runtime.token(), timeout=120) as client:

        def indexed(pending: Sequence[str]) -> set[str]:
            done = set()
            for item_id in pending:  # indexed roughly in write order: stop at the first one not yet
                item = client.item(item_id)
                current = item.get("current_revision_id")
                if current is None or item.get("indexed_revision_id") != current:
                    break
                done.add(item_id)
            return done

        wait_until(item_ids, indexed, waiting, timeout)
    waiting.show(force=True)
    return Passage(writing, time.monotonic() - started)


def load_sets(data_dir: Path, names: Sequence[str], notes: int, abstracts: int, pages: int) -> list[TextSet]:
    """The sets ``names`` (of ``SETS``), with ``notes`` turns, ``abstracts`` and ``pages`` documents."""
    sets = []
    for name in names:
        if name == "notes":
            sets.append(TextSet("notes", notes=dialogue_turns(notes)))
        elif name == "scifact":
            documents = scifact_documents(data_dir / "scifact" / "corpus.jsonl")[:abstracts]
            sets.append(TextSet("scifact", documents=documents))
        else:
            collected = collect_documents(data_dir / "fastapi-docs" / "pages").documents[:pages]
            sets.append(TextSet("pages", documents=collected))
    return sets


def _model_seconds(name: str, texts: Sequence[str], when: str) -> float:
    print(f"  model: embedding the {len(texts):,} texts of {name} ({when})", file=sys.stderr, flush=True)
    return model_seconds(texts)


def run(args: argparse.Namespace) -> int:
    names = [name.strip() for name in args.sets.split(",") if name.strip()]
    unknown = sorted(set(names) - set(SETS))
    if unknown:
        raise SystemExit(f"unknown sets {unknown}; choose from {', '.join(SETS)}")
    sets = load_sets(args.data_dir, names, args.notes, args.abstracts, args.pages)
    model: dict[str, tuple[int, float, float]] = {}
    state_dir = Path(tempfile.mkdtemp(prefix="efficiency-", dir=args.state_root))
    print(f"  runtime: starting in {state_dir}", file=sys.stderr, flush=True)
    runtime = start_runtime(state_dir, 0, 0, QUOTAS_OFF)
    passages: dict[str, Passage] = {}
    try:
        print("  runtime: warming up every function", file=sys.stderr, flush=True)
        with KnowledgeClient(runtime.api_url(), runtime.token(), timeout=120) as client:
            base, _ = ensure_base(client, "warm-up")
            warm = [SourceDocument(Path("warm-up.md"), "warm-up", "Warm up", "Every function starts.")]
            ingest_into(client, warm, base, created=True, progress=False)
        notes_through(runtime, ["The warm-up note starts every function."], 1, args.timeout)
        for text_set in sets:
            texts = embedded_texts(text_set)
            before = _model_seconds(text_set.name, texts, "before")
            if text_set.notes:
                passages[text_set.name] = notes_through(runtime, text_set.notes, args.clients, args.timeout)
            else:
                passages[text_set.name] = documents_through(
                    runtime, text_set.documents, text_set.name, args.clients, args.timeout
                )
            model[text_set.name] = (len(texts), before, _model_seconds(text_set.name, texts, "after"))
    finally:
        runtime.stop()
    print(f"\nclients: {args.clients}; runtime state: {state_dir}\n")
    print(
        "| set | texts | embedded texts | model s (before / after) | model texts/s "
        "| written s | searchable s | pipeline texts/s | ratio |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for text_set in sets:
        embedded, before, after = model[text_set.name]
        passage = passages[text_set.name]
        raw_rate = text_set.size / ((before + after) / 2)
        rate = text_set.size / passage.searchable
        print(
            f"| {text_set.name} | {text_set.size:,} {text_set.unit} | {embedded:,} | "
            f"{before:.1f} / {after:.1f} | {raw_rate:.1f} | {passage.writing:.1f} | "
            f"{passage.searchable:.1f} | {rate:.1f} | {rate / raw_rate:.2f} |"
        )
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.efficiency", description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, default=PROJECT_ROOT.parent / "shared" / "data")
    parser.add_argument("--sets", default=",".join(SETS), help="which sets, comma-separated (all)")
    parser.add_argument("--notes", type=int, default=500, help="short notes (500)")
    parser.add_argument("--abstracts", type=int, default=100, help="SciFact abstracts (100)")
    parser.add_argument("--pages", type=int, default=10, help="FastAPI pages (10)")
    parser.add_argument("--clients", type=int, default=8, help="concurrent clients (8)")
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds to wait for the index (3600)")
    parser.add_argument(
        "--state-root",
        type=Path,
        default=None,
        help="where the runtime's fresh state folder goes (a temp dir)",
    )
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
