"""Ingest at scale: BEIR SciFact and the FastAPI pages through the write API into a local runtime,
as ``knowledge ingest`` sends them, with documents/s and the runtime's memory along the way.

    make bench-ingest                                  # DATA_DIR=../shared/data by default
    python -m bench.ingest --data-dir ../shared/data --embedding-cache bench/.cache/embeddings.sqlite

The benchmark starts its own runtime (``python -m knowledge_local.runtime``, what ``make run``
runs, without a seed) on free ports, with ``--state-dir`` as its state folder, and runs:

0. a warm-up, not measured: 20 SciFact abstracts into a base of their own, so that every function
   involved has started (cold starts belong to neither phase below);
1. ``fresh``: the FastAPI pages (``DATA_DIR/fastapi-docs/pages``) into a new base, one
   ``POST /v1/knowledge-bases/{kb}/items`` per page, then waits until the index holds them;
2. ``scifact``: the 5,183 SciFact abstracts (``DATA_DIR/scifact/corpus.jsonl``) into a new base,
   printing documents/s and the runtime's memory after every 1,000 (and for the last 1,000), then
   waits for the index;
3. ``used``: the FastAPI pages again, into another new base: the work of ``fresh``, in a runtime
   that now holds every document above;
4. ``stop``: Ctrl-C (SIGINT); seconds until the runtime and every process it started are gone.

Memory and CPU time are the runtime's whole process tree (the runtime, the fork server, the
functions' execution environments): RSS counts shared pages in every process (an upper bound), PSS
splits them; CPU ms per document (the runtime's, not the benchmark client's) does not depend on
what else keeps the machine busy, as documents/s does. Embeddings are cached in the state folder's
``embeddings.sqlite3``, which outlives the run: the first run embeds every chunk (about 15
chunks/s on two cores), later runs embed nothing.
``--embedding-cache`` seeds an empty state folder from another cache of the same model (e.g.
``make bench-relevance``'s). Progress bars on stderr; results on stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from knowledge_local.cli.client import KnowledgeClient
from knowledge_local.cli.documents import SourceDocument, collect_documents
from knowledge_local.cli.ingestion import ensure_base, ingest_into, wait_until_indexed
from knowledge_local.emulator.lambda_runtime.processes import (
    Memory,
    cpu_seconds,
    descendants,
    memory,
    tree_memory,
)
from knowledge_local.state import EMBEDDING_CACHE_FILE, PROJECT_ROOT

CHECKPOINT_DOCUMENTS = 1000
WARM_UP_DOCUMENTS = 20
READY_MARKER = "Ready in "
BOOT_TIMEOUT_SECONDS = 300.0
STOP_TIMEOUT_SECONDS = 60.0
INDEX_TIMEOUT_SECONDS = 3600.0


def scifact_documents(corpus: Path) -> list[SourceDocument]:
    """One document per abstract: its title, its text (the title when it has none), its id as
    ``external_id``."""
    documents = []
    with corpus.open(encoding="utf-8") as lines:
        for line in lines:
            if line.strip():
                record = json.loads(line)
                title = str(record.get("title") or record["_id"])
                documents.append(
                    SourceDocument(
                        path=corpus.parent / "corpus" / f"{record['_id']}.txt",
                        external_id=str(record["_id"]),
                        title=title,
                        content=str(record.get("text") or title),
                    )
                )
    return documents


def cached_embeddings(state_dir: Path) -> int:
    """Vectors in the runtime's embedding cache (0 when it does not exist yet)."""
    path = state_dir / EMBEDDING_CACHE_FILE
    if not path.exists():
        return 0
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as cache:
        try:
            return int(cache.execute("SELECT COUNT(*) FROM embedding").fetchone()[0])
        except sqlite3.OperationalError:
            return 0


def seed_embedding_cache(state_dir: Path, source: Path) -> None:
    """Copy the SQLite cache ``source`` into an empty state folder (a consistent copy, even while
    ``source`` is being written)."""
    target = state_dir / EMBEDDING_CACHE_FILE
    if target.exists():
        return
    state_dir.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(f"file:{source}?mode=ro", uri=True) as original, sqlite3.connect(target) as copy:
        original.backup(copy)


@dataclass
class Runtime:
    """The runtime under test: its process, log and state folder."""

    process: subprocess.Popen[bytes]
    log_path: Path
    state_dir: Path

    @property
    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def api_url(self) -> str:
        endpoints = json.loads((self.state_dir / "endpoints.json").read_text(encoding="utf-8"))
        return str(endpoints["api_url"])

    def token(self) -> str:
        return (self.state_dir / "dev-token").read_text(encoding="utf-8").strip()

    def memory(self) -> Memory:
        return tree_memory(self.process.pid)

    def cpu_seconds(self) -> float:
        """CPU time the runtime and its processes have used so far."""
        return cpu_seconds({self.process.pid, *descendants(self.process.pid)})

    def stop(self) -> tuple[float, int]:
        """Ctrl-C; ``(seconds until the runtime and its processes were gone, its exit status)``."""
        processes = descendants(self.process.pid)
        started = time.monotonic()
        self.process.send_signal(signal.SIGINT)
        status = self.process.wait(timeout=STOP_TIMEOUT_SECONDS)
        while any(Path(f"/proc/{pid}").exists() for pid in processes):
            if time.monotonic() - started > STOP_TIMEOUT_SECONDS:
                raise RuntimeError(f"processes left running: {sorted(processes)}")
            time.sleep(0.05)
        return time.monotonic() - started, status


def start_runtime(
    state_dir: Path, port: int, aws_port: int, settings: Mapping[str, str] | None = None
) -> Runtime:
    """Start ``python -m knowledge_local.runtime`` without a seed and wait until it is ready;
    ``settings`` are more environment variables of the runtime (e.g. quotas off)."""
    state_dir.mkdir(parents=True, exist_ok=True)
    log_path = state_dir / "runtime.log"
    environment = {
        **os.environ,
        "PORT": str(port),
        "AWS_PORT": str(aws_port),
        "KNOWLEDGE_STATE_DIR": str(state_dir),
        "KNOWLEDGE_SEED_DIR": "",
        "PYTHONUNBUFFERED": "1",
        **(settings or {}),
    }
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "knowledge_local.runtime"],
            cwd=PROJECT_ROOT,
            env=environment,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    runtime = Runtime(process, log_path, state_dir)
    deadline = time.monotonic() + BOOT_TIMEOUT_SECONDS
    while READY_MARKER not in runtime.log:
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise RuntimeError(f"the runtime did not start:\n{runtime.log[-2000:]}")
        time.sleep(0.2)
    return runtime


def _blocks(documents: Sequence[SourceDocument], size: int) -> Iterator[Sequence[SourceDocument]]:
    """Blocks of ``size`` documents from the start, but the last block is the last ``size``
    documents (5,183: 1,000, 2,000, 3,000, 4,000, 4,183, 5,183), so the first and the last
    ``size`` are both measured."""
    ends = sorted(
        {*range(size, len(documents) - size + 1, size), max(len(documents) - size, 0), len(documents)}
    )
    start = 0
    for end in ends:
        if end > start:
            yield documents[start:end]
            start = end


def ingest_timed(
    client: KnowledgeClient, runtime: Runtime, documents: Sequence[SourceDocument], base_name: str, label: str
) -> tuple[float, float]:
    """Ingest ``documents`` into a new base, a line per ``CHECKPOINT_DOCUMENTS``; then wait until
    the index holds them. ``(seconds writing, seconds until indexed)``."""
    base, created = ensure_base(client, base_name)
    if not created:
        raise RuntimeError(f"the base {base_name!r} exists already: use a fresh --state-dir")
    started = time.monotonic()
    written: list[str] = []
    done = 0
    for block in _blocks(documents, CHECKPOINT_DOCUMENTS):
        block_started, cpu_started = time.monotonic(), runtime.cpu_seconds()
        summary = ingest_into(client, block, base, created=True, progress=True)
        written += [str(item["knowledge_item_id"]) for item in summary.items.values()]
        done += len(block)
        rate = len(block) / (time.monotonic() - block_started)
        cpu = (runtime.cpu_seconds() - cpu_started) / len(block) * 1000
        memory = runtime.memory().describe()
        print(
            f"{label:>8} {done:>6} documents  {rate:6.1f} documents/s  {cpu:5.0f} CPU ms/document  {memory}",
            flush=True,
        )
    writing = time.monotonic() - started
    wait_until_indexed(client, written, timeout=INDEX_TIMEOUT_SECONDS, progress=True)
    return writing, time.monotonic() - started


def run(args: argparse.Namespace) -> int:
    data_dir: Path = args.data_dir
    scifact = scifact_documents(data_dir / "scifact" / "corpus.jsonl")[: args.limit]
    pages = collect_documents(data_dir / "fastapi-docs" / "pages").documents
    if args.embedding_cache is not None:
        seed_embedding_cache(args.state_dir, args.embedding_cache)
    print(f"embedding cache: {cached_embeddings(args.state_dir)} vectors before the run", flush=True)
    runtime = start_runtime(args.state_dir, args.port, args.aws_port)
    print(f"runtime ready: {runtime.memory().describe()}", flush=True)
    try:
        with KnowledgeClient(runtime.api_url(), runtime.token(), timeout=120) as client:
            suffix = time.strftime("%Y%m%d-%H%M%S")
            ingest_timed(client, runtime, scifact[:WARM_UP_DOCUMENTS], f"warm-up-{suffix}", "warm-up")
            fresh = ingest_timed(client, runtime, pages, f"fastapi-fresh-{suffix}", "fresh")
            documents = ingest_timed(client, runtime, scifact, f"scifact-{suffix}", "scifact")
            used = ingest_timed(client, runtime, pages, f"fastapi-used-{suffix}", "used")
            after = runtime.memory()
            for pid in sorted({runtime.process.pid, *descendants(runtime.process.pid)}):
                print(f"  process {pid}: {memory([pid]).describe()}")
    finally:
        seconds_to_stop, status = runtime.stop()
    print(f"embedding cache: {cached_embeddings(args.state_dir)} vectors after the run")
    print()
    print(
        f"SciFact: {len(scifact)} documents written in {documents[0]:.0f} s "
        f"({len(scifact) / documents[0]:.1f}/s), indexed after {documents[1]:.0f} s"
    )
    print(
        f"FastAPI pages ({len(pages)}), until indexed: fresh runtime {fresh[1]:.1f} s, "
        f"used runtime {used[1]:.1f} s (ratio {used[1] / fresh[1]:.2f})"
    )
    print(f"runtime after all: {after.describe()}")
    print(f"stop: {seconds_to_stop:.1f} s from SIGINT until every process was gone (exit status {status})")
    return 0 if status == 0 else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.ingest", description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, default=PROJECT_ROOT.parent / "shared" / "data")
    parser.add_argument("--state-dir", type=Path, default=PROJECT_ROOT / "bench" / ".cache" / "ingest-state")
    parser.add_argument(
        "--embedding-cache", type=Path, default=None, help="seed an empty state folder's cache"
    )
    parser.add_argument(
        "--limit", type=int, default=None, help="ingest only the first LIMIT SciFact documents"
    )
    parser.add_argument("--port", type=int, default=0, help="the runtime's PORT (0: any free port)")
    parser.add_argument("--aws-port", type=int, default=0, help="the runtime's AWS_PORT (0: any free port)")
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
