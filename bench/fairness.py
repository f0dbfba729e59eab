"""Indexing fairness: how long small documents wait to become searchable while a large one indexes.

    make bench-fairness                         # 500,000 characters, a small document every second
    python -m bench.fairness --large-chars 500000 --interval 1 --baseline 10

The benchmark starts its own runtime (``python -m knowledge_local.runtime``, what ``make run``
runs, without a seed) on free ports, in a new ``--state-dir`` (its embedding cache emptied first,
so every chunk is embedded), mints a token of a second tenant with the dev token, makes a base in
each tenant, and runs:

0. a warm-up, not measured: a small document in each tenant, until both are indexed (cold starts
   of every function involved, and the model's load);
1. ``baseline``: ``--baseline`` small documents alone, one every ``--interval`` seconds, the tenants
   in turn;
2. ``contended``: one ``--large-chars`` document in the first tenant; right after its 2xx, small
   documents one every ``--interval`` seconds, the tenants in turn, until the large one is indexed
   (at least ``--baseline`` of them).

Small documents go out on a fixed schedule (the next one ``--interval`` after the previous one's
planned time, at once when a slow write made it late), about 300 characters each.

A document's latency runs from its write's 2xx to the first ``GET /v1/knowledge-items/{item}``
(polled every ``POLL_SECONDS``) whose ``indexed_revision_id`` is its current revision: from then
on search answers it. The text of every document is new (random words), so no embedding is cached.
Prints, per phase and tenant (``same``: the large document's tenant; ``other``: the second one),
the count and p50/max latency in seconds, the large document's time from 2xx to indexed, and the
load average before and after (``/proc/loadavg``: the machine may be shared). The exit status is 1
when a small document beside the large one waited longer than ``--goal`` seconds (5: the goal on a
quiet machine).
"""

from __future__ import annotations

import argparse
import random
import re
import shutil
import statistics
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench.ingest import start_runtime
from knowledge_local.cli.client import KnowledgeClient
from knowledge_local.state import PROJECT_ROOT

POLL_SECONDS = 0.1
INDEX_TIMEOUT_SECONDS = 1800.0
SECOND_TENANT = "fairness-b"
VOCABULARY_SOURCES = ("README.md", "docs/design.md", "docs/reliability.md")
"""Where the random text's words come from: the project's own prose, so a character costs as many
tokens (and chunks) as in a real document."""


def vocabulary() -> list[str]:
    text = " ".join((PROJECT_ROOT / name).read_text(encoding="utf-8") for name in VOCABULARY_SOURCES)
    return re.findall(r"[A-Za-z][a-z]+", text)


@dataclass
class Watched:
    """One written document: its item, tenant, and the times of its 2xx and of its indexing."""

    knowledge_item_id: str
    revision_id: str
    tenant: str
    acknowledged: float
    indexed: float | None = None

    @property
    def latency(self) -> float:
        assert self.indexed is not None
        return self.indexed - self.acknowledged


@dataclass
class Watcher:
    """Polls the pending documents' items until each is indexed, in a thread of its own, with a
    client of each tenant (``clients`` by tenant)."""

    clients: dict[str, KnowledgeClient]
    pending: list[Watched] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    stopping: threading.Event = field(default_factory=threading.Event)

    def add(self, document: Watched) -> None:
        with self.lock:
            self.pending.append(document)

    def run(self) -> None:
        while not self.stopping.is_set():
            with self.lock:
                waiting = [document for document in self.pending if document.indexed is None]
            for document in waiting:
                item = self.clients[document.tenant].item(document.knowledge_item_id)
                if item.get("indexed_revision_id") == document.revision_id:
                    document.indexed = time.monotonic()
            time.sleep(POLL_SECONDS)

    def wait(self, documents: list[Watched], timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while any(document.indexed is None for document in documents):
            if time.monotonic() > deadline:
                raise TimeoutError("documents not indexed in time")
            time.sleep(POLL_SECONDS)


def prose(rng: random.Random, chars: int, words: list[str]) -> str:
    """``chars`` characters of random sentences of ``words`` in paragraphs: text no cache has seen."""
    pieces: list[str] = []
    size = 0
    while size < chars:
        sentence = " ".join(rng.choice(words) for _ in range(rng.randint(8, 18)))
        sentence = sentence.capitalize() + (".\n\n" if rng.random() < 0.2 else ". ")
        pieces.append(sentence)
        size += len(sentence)
    return "".join(pieces)[:chars]


def write(
    client: KnowledgeClient, base_id: str, tenant: str, title: str, content: str, watcher: Watcher
) -> Watched:
    status, item = client.put_item(base_id, title=title, content=content, publish=True)
    if status != 201:
        raise RuntimeError(f"write answered {status}: {item}")
    document = Watched(
        knowledge_item_id=str(item["knowledge_item_id"]),
        revision_id=str(item["knowledge_revision_id"]),
        tenant=tenant,
        acknowledged=time.monotonic(),
    )
    watcher.add(document)
    return document


def pause_until(moment: float) -> None:
    """Sleep until ``time.monotonic()`` reaches ``moment`` (not at all when it has): documents go
    out on a fixed schedule, however long each write took."""
    time.sleep(max(0.0, moment - time.monotonic()))


def load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text(encoding="utf-8").split()[:3])


def summary(label: str, documents: list[Watched]) -> str:
    latencies = [document.latency for document in documents]
    if not latencies:
        return f"| {label} | 0 | | |"
    return f"| {label} | {len(latencies)} | {statistics.median(latencies):.1f} | {max(latencies):.1f} |"


def run(args: argparse.Namespace) -> int:
    state_dir: Path = args.state_dir
    shutil.rmtree(state_dir, ignore_errors=True)
    rng = random.Random(args.seed)
    print(f"load average before: {load_average()}", flush=True)
    runtime = start_runtime(state_dir, args.port, args.aws_port)
    try:
        with KnowledgeClient(runtime.api_url(), runtime.token(), timeout=300) as admin:
            minted = admin.create_token(
                tenant_id=SECOND_TENANT,
                subject_id="fairness-bench",
                team_ids=[],
                scopes=["knowledge:read", "knowledge:write", "knowledge:admin"],
            )
            second = str(minted["token"])
            with (
                KnowledgeClient(runtime.api_url(), second, timeout=300) as other,
                KnowledgeClient(runtime.api_url(), runtime.token(), timeout=300) as same_watch,
                KnowledgeClient(runtime.api_url(), second, timeout=300) as other_watch,
            ):
                watcher = Watcher({"same": same_watch, "other": other_watch})
                return measure(args, rng, {"same": admin, "other": other}, watcher)
    finally:
        runtime.stop()


def measure(
    args: argparse.Namespace, rng: random.Random, clients: dict[str, KnowledgeClient], watcher: Watcher
) -> int:
    """Run the phases (see the module docs) and print the figures; 1 when a small document beside
    the large one waited longer than ``--goal`` seconds."""
    bases = {
        name: str(client.create_base(f"fairness-{name}")["knowledge_base_id"])
        for name, client in clients.items()
    }
    thread = threading.Thread(target=watcher.run, name="fairness-watcher", daemon=True)
    thread.start()
    counter = iter(range(1_000_000))
    words = vocabulary()

    def small(tenant: str) -> Watched:
        number = next(counter)
        return write(
            clients[tenant], bases[tenant], tenant, f"Shift note {number}", prose(rng, 300, words), watcher
        )

    try:
        warm_up = [small("same"), small("other")]
        watcher.wait(warm_up, INDEX_TIMEOUT_SECONDS)
        print(f"warm-up indexed; load average {load_average()}", flush=True)

        baseline: list[Watched] = []
        started = time.monotonic()
        for number in range(args.baseline):
            baseline.append(small("same" if number % 2 == 0 else "other"))
            pause_until(started + (number + 1) * args.interval)
        watcher.wait(baseline, INDEX_TIMEOUT_SECONDS)
        print(f"baseline done; load average {load_average()}", flush=True)

        content = prose(rng, args.large_chars, words)
        started = time.monotonic()
        large = write(clients["same"], bases["same"], "same", "Plant log", content, watcher)
        print(f"large document written in {large.acknowledged - started:.1f} s", flush=True)
        contended: list[Watched] = []
        number = 0
        while large.indexed is None or number < args.baseline:
            contended.append(small("same" if number % 2 == 0 else "other"))
            number += 1
            pause_until(large.acknowledged + number * args.interval)
        watcher.wait(contended, INDEX_TIMEOUT_SECONDS)
    finally:
        watcher.stopping.set()
        thread.join(timeout=5)

    print()
    print(f"large document: {args.large_chars:,} characters, indexed {large.latency:.1f} s after its 2xx")
    print(f"load average after: {load_average()}")
    print()
    print("| phase, tenant | small documents | p50 s | max s |")
    print("|---|---:|---:|---:|")
    for phase, documents in (("baseline", baseline), ("with the large one", contended)):
        for tenant in ("same", "other"):
            print(summary(f"{phase}, {tenant} tenant", [d for d in documents if d.tenant == tenant]))
    worst = max(document.latency for document in contended)
    return 0 if worst <= args.goal else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.fairness", description=__doc__.split("\n\n")[0])
    parser.add_argument("--large-chars", type=int, default=500_000)
    parser.add_argument("--interval", type=float, default=1.0, help="seconds between small documents")
    parser.add_argument(
        "--baseline",
        type=int,
        default=10,
        help="small documents alone (and at least as many beside the large one)",
    )
    parser.add_argument(
        "--goal", type=float, default=5.0, help="exit status 1 when a small document waits longer (seconds)"
    )
    parser.add_argument("--seed", type=int, default=25)
    parser.add_argument(
        "--state-dir", type=Path, default=PROJECT_ROOT / "bench" / ".cache" / "fairness-state"
    )
    parser.add_argument("--port", type=int, default=0, help="the runtime's PORT (0: any free port)")
    parser.add_argument("--aws-port", type=int, default=0, help="the runtime's AWS_PORT (0: any free port)")
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
