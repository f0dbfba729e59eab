"""Where the first start of ``make run`` goes, beside the model's own time for the same seed.

    TIKTOKEN_CACHE_DIR=.cache/tiktoken HF_HUB_OFFLINE=1 .venv/bin/python -m bench.startup

State folders go under ``bench/.cache/startup`` (emptied first).

In this order, one at a time:

1. **model**: the offline all-MiniLM-L6-v2 (``LocalEmbedder``, no cache) loads, then embeds the
   seed's chunks (``README.md`` and ``docs/``, chunked by the default chunker, title prepended, as
   the indexer embeds them) in this process: the floor of the seeding's time;
2. **first start**: ``python -m knowledge_local.runtime`` on free ports in an empty state folder
   (empty embedding cache), as ``make run`` runs it; its ``Ready in`` and ``start-up`` lines, then
   Ctrl-C;
3. **restart**: the same in the same state folder, whose embedding cache and saved table the first
   start left.

Each line ends with the load average (1 minute) when it was taken: on this shared two-core machine
the figures follow it. Results on stdout.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from knowledge.adapters.local_embedder import LocalEmbedder
from knowledge.domain.retrieval.chunking import Chunker, embedding_text
from knowledge.settings import Settings
from knowledge_local.cli.documents import collect_documents
from knowledge_local.state import PROJECT_ROOT

READY_MARKER = "Ready in "
START_UP_MARKER = "  start-up "
BOOT_TIMEOUT_SECONDS = 1800.0
STOP_TIMEOUT_SECONDS = 60.0


def _load() -> str:
    return f"load average {os.getloadavg()[0]:.1f}"


def seed_texts() -> tuple[int, list[str]]:
    """``(documents, texts)``: what the runtime's seed embeds (``LocalStack.seed_plan``)."""
    fields = Settings.model_fields  # the defaults, as the runtime runs them
    chunker = Chunker(
        max_tokens=fields["chunk_tokens"].default, overlap_tokens=fields["chunk_overlap_tokens"].default
    )
    documents = collect_documents(PROJECT_ROOT / "README.md", relative_to=PROJECT_ROOT).documents
    if (PROJECT_ROOT / "docs").is_dir():
        documents += collect_documents(PROJECT_ROOT / "docs", relative_to=PROJECT_ROOT).documents
    texts = [
        embedding_text(document.title, chunk.text)
        for document in documents
        for chunk in chunker.split(document.content)
    ]
    return len(documents), texts


def model_line() -> str:
    documents, texts = seed_texts()
    embedder = LocalEmbedder()
    started = time.perf_counter()
    embedder.load()
    loaded = time.perf_counter() - started
    started = time.perf_counter()
    embedder.embed(texts)
    embedded = time.perf_counter() - started
    return (
        f"model        {documents} documents, {len(texts)} chunks: load {loaded:.1f} s, embedded in "
        f"{embedded:.1f} s ({len(texts) / embedded:.1f} chunks/s); {_load()}"
    )


def start_line(label: str, state_dir: Path) -> str:
    """Start the runtime on ``state_dir``, wait until ready, stop it; its two lines of timings."""
    environment = {
        **os.environ,
        "PORT": "0",
        "AWS_PORT": "0",
        "KNOWLEDGE_STATE_DIR": str(state_dir),
        "PYTHONUNBUFFERED": "1",
    }
    state_dir.mkdir(parents=True, exist_ok=True)
    log_path = state_dir.parent / f"{state_dir.name}-{label.replace(' ', '-')}.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "knowledge_local.runtime"],
            cwd=PROJECT_ROOT,
            env=environment,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    deadline = time.monotonic() + BOOT_TIMEOUT_SECONDS
    try:
        while READY_MARKER not in (text := log_path.read_text(encoding="utf-8", errors="replace")):
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the runtime did not start:\n{text[-2000:]}")
            time.sleep(0.5)
        while START_UP_MARKER not in (text := log_path.read_text(encoding="utf-8", errors="replace")):
            time.sleep(0.1)
        load = _load()
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=STOP_TIMEOUT_SECONDS)
    ready = next(line for line in text.splitlines() if line.startswith(READY_MARKER))
    phases = next(line for line in text.splitlines() if line.startswith(START_UP_MARKER))
    return f"{label:<12} {ready.split(':')[0]}; {load}\n{'':<12} {phases.strip()}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--state-dir", type=Path, default=PROJECT_ROOT / "bench" / ".cache" / "startup")
    arguments = parser.parse_args(argv)
    shutil.rmtree(arguments.state_dir, ignore_errors=True)
    state_dir = arguments.state_dir / "state"
    print(model_line(), flush=True)
    print(start_line("first start", state_dir), flush=True)
    print(start_line("restart", state_dir), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
