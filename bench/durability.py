"""What durable local state costs: the write path with ``KNOWLEDGE_PERSIST`` on against off, and the
restart time of a runtime holding thousands of documents.

    make bench-durability                     # DATA_DIR=../shared/data by default
    python -m bench.durability --data-dir ../shared/data --documents 5000 --writes 200

Three measurements, the last two on runtimes it starts itself (``python -m knowledge_local.runtime``,
no seed, tenant quotas off, free ports):

0. ``journal cost``: one moto server in this process, one ``TransactWriteItems`` (a 1.5 kB item,
   as an item create sends) at a time, ``--writes`` × 3 each with the journal attached and not,
   interleaved: what the journal adds to one DynamoDB write (its record and its ``fdatasync``);
1. ``write cost``: two runtimes side by side, one with ``KNOWLEDGE_PERSIST=true`` (every write
   journaled and synced to disk before its answer) and one with ``KNOWLEDGE_PERSIST=false`` (in
   memory). ``--writes`` rounds; each round sends one ``remember`` and one item create (published)
   to each runtime, in a random order, so both see the same machine load. Prints p50 and p90 per
   kind and mode, and the ratio of the p50s (persist on / off).
2. ``restart``: ``--documents`` SciFact abstracts (``DATA_DIR/scifact/corpus.jsonl``) ingested
   through the write API into a runtime with ``--state-dir`` as its state folder (skipped when the
   folder already holds them), then ``kill -9`` of its process group. Then two starts, each timed
   from the process start until it serves, its index rebuilt from the table, each ended by a clean
   stop: the first after the kill (the journal holds the writes since the last snapshot), the
   second after that clean stop (the snapshot alone). The sizes of the snapshot and the journal
   are printed before each. The embedding cache's vector count before and after each start shows
   that nothing is embedded again (a miss is the only way a text reaches the embedder, and every
   miss is stored).

Results on stdout, progress on stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from bench.ingest import Runtime, cached_embeddings, scifact_documents
from knowledge_local.account import aws_client
from knowledge_local.cli.client import KnowledgeClient
from knowledge_local.cli.ingestion import ensure_base, ingest_into, wait_until_indexed
from knowledge_local.emulator.aws_server import AwsServer
from knowledge_local.emulator.durable_state import DurableState
from knowledge_local.emulator.journal import segments
from knowledge_local.emulator.lambda_runtime.processes import descendants
from knowledge_local.emulator.snapshot import SNAPSHOT_FILE
from knowledge_local.emulator.template.resources import load_stack
from knowledge_local.state import PROJECT_ROOT

READY_MARKER = "Ready in "
BOOT_TIMEOUT_SECONDS = 1800.0
INDEX_TIMEOUT_SECONDS = 7200.0
WARM_UP_WRITES = 10


def start(state_dir: Path, *, persist: bool) -> tuple[Runtime, float]:
    """A runtime on ``state_dir`` in its own process group, and the seconds until it served."""
    state_dir.mkdir(parents=True, exist_ok=True)
    log_path = state_dir / "runtime.log"
    environment = {
        **os.environ,
        "PORT": "0",
        "AWS_PORT": "0",
        "KNOWLEDGE_STATE_DIR": str(state_dir),
        "KNOWLEDGE_SEED_DIR": "",
        "KNOWLEDGE_PERSIST": "true" if persist else "false",
        "TENANT_REQUESTS_PER_SECOND": "0",
        "TENANT_WRITES_PER_SECOND": "0",
        "PYTHONUNBUFFERED": "1",
    }
    started = time.monotonic()
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "knowledge_local.runtime"],
            cwd=PROJECT_ROOT,
            env=environment,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    runtime = Runtime(process, log_path, state_dir)
    while READY_MARKER not in runtime.log:
        if process.poll() is not None or time.monotonic() - started > BOOT_TIMEOUT_SECONDS:
            kill(runtime)
            raise RuntimeError(f"the runtime did not start:\n{runtime.log[-2000:]}")
        time.sleep(0.1)
    return runtime, time.monotonic() - started


def kill(runtime: Runtime) -> None:
    """SIGKILL to the runtime's whole process group."""
    children = descendants(runtime.process.pid)
    os.killpg(runtime.process.pid, signal.SIGKILL)
    runtime.process.wait(timeout=60)
    for pid in children:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


# -- journal cost ---------------------------------------------------------------------------------


def journal_cost(writes: int) -> None:
    arguments = load_stack(PROJECT_ROOT / "template.yaml").table("KnowledgeTable").create_table_arguments
    samples: dict[str, list[float]] = {"journaled": [], "in memory": []}
    with AwsServer(port=0) as aws, tempfile.TemporaryDirectory(prefix="journal-") as scratch:
        dynamodb = aws_client("dynamodb", aws.url)
        tables = {"journaled": "bench-journaled", "in memory": "bench-in-memory"}
        for name in tables.values():
            dynamodb.create_table(**{**arguments, "TableName": name})
        state = DurableState(Path(scratch))
        state.restore(aws, tables=[tables["journaled"]], kept_queues=[])
        for number in range(writes):
            for label in random.sample(list(tables), len(tables)):
                aws.attach_journal(state if label == "journaled" else None)
                item = {"PK": {"S": f"T#bench#ITEM#{number}"}, "SK": {"S": "META"}, "text": {"S": "x" * 1500}}
                started = time.perf_counter()
                dynamodb.transact_write_items(
                    TransactItems=[{"Put": {"TableName": tables[label], "Item": item}}]
                )
                samples[label].append(time.perf_counter() - started)
        aws.attach_journal(state)
        state.close()
    print(f"journal cost: {writes} TransactWriteItems each way, interleaved")
    for label, values in samples.items():
        values.sort()
        p50, p90 = statistics.median(values), values[int(0.9 * (len(values) - 1))]
        print(f"  {label:<10} p50 {p50 * 1000:6.2f} ms  p90 {p90 * 1000:6.2f} ms")


# -- write cost -----------------------------------------------------------------------------------


@dataclass
class Target:
    label: str
    runtime: Runtime
    client: KnowledgeClient
    base_id: str


def _timed_writes(target: Target, marker: str) -> dict[str, float]:
    """Seconds of one ``remember`` and one item create on ``target``."""
    started = time.perf_counter()
    target.client.request("POST", "/v1/tools/remember", json={"content": f"Durability note {marker}."})
    remembered = time.perf_counter()
    target.client.request(
        "POST",
        f"/v1/knowledge-bases/{target.base_id}/items",
        json={"title": f"Item {marker}", "content": f"Durability item {marker}.", "publish": True},
    )
    return {"remember": remembered - started, "create": time.perf_counter() - remembered}


def write_cost(writes: int) -> None:
    with tempfile.TemporaryDirectory(prefix="durability-") as scratch:
        targets: list[Target] = []
        try:
            for label, persist in (("persist on", True), ("persist off", False)):
                runtime, _ = start(Path(scratch) / label.replace(" ", "-"), persist=persist)
                client = KnowledgeClient(runtime.api_url(), runtime.token(), timeout=120)
                base, _ = ensure_base(client, "durability")
                targets.append(Target(label, runtime, client, str(base["knowledge_base_id"])))
            for number in range(WARM_UP_WRITES):
                for target in targets:
                    _timed_writes(target, f"warm{number}")
            samples: dict[tuple[str, str], list[float]] = {}
            for number in range(writes):
                for target in random.sample(targets, len(targets)):
                    for kind, seconds in _timed_writes(target, f"w{number}").items():
                        samples.setdefault((target.label, kind), []).append(seconds)
        finally:
            for target in targets:
                target.client.close()
                target.runtime.stop()
    print(f"write cost: {writes} rounds, each one remember and one create per runtime, interleaved")
    for kind in ("remember", "create"):
        p50 = {}
        for label in ("persist on", "persist off"):
            values = sorted(samples[(label, kind)])
            p50[label] = statistics.median(values)
            p90 = values[int(0.9 * (len(values) - 1))]
            print(f"  {kind:<9} {label:<12} p50 {p50[label] * 1000:6.1f} ms  p90 {p90 * 1000:6.1f} ms")
        print(f"  {kind:<9} ratio of p50s (on / off): {p50['persist on'] / p50['persist off']:.2f}")


# -- restart --------------------------------------------------------------------------------------


def _state_files(state_dir: Path) -> str:
    snapshot = state_dir / SNAPSHOT_FILE
    journal = sum(path.stat().st_size for _, path in segments(state_dir))
    size = snapshot.stat().st_size if snapshot.exists() else 0
    return f"snapshot {size / 1e6:.1f} MB, journal {journal / 1e6:.1f} MB"


def _restored_line(runtime: Runtime) -> str:
    lines = [line.strip() for line in runtime.log.splitlines() if line.strip().startswith("restored")]
    return lines[0] if lines else "restored nothing"


def restart(data_dir: Path, state_dir: Path, documents: int) -> None:
    marker = state_dir / "populated"
    if not marker.exists():
        corpus = scifact_documents(data_dir / "scifact" / "corpus.jsonl")[:documents]
        runtime, _ = start(state_dir, persist=True)
        try:
            with KnowledgeClient(runtime.api_url(), runtime.token(), timeout=120) as client:
                base, created = ensure_base(client, "scifact-durability")
                summary = ingest_into(client, corpus, base, created=created, progress=True)
                items = [str(item["knowledge_item_id"]) for item in summary.items.values()]
                wait_until_indexed(client, items, timeout=INDEX_TIMEOUT_SECONDS, progress=True)
        finally:
            kill(runtime)
        marker.write_text(f"{len(corpus)}\n", encoding="utf-8")
        print(f"populated: {len(corpus)} SciFact documents, then kill -9", flush=True)
    count = marker.read_text(encoding="utf-8").strip()
    print(f"restart with {count} documents in {state_dir}")
    for start_number in (1, 2):
        before = cached_embeddings(state_dir)
        files = _state_files(state_dir)
        runtime, seconds = start(state_dir, persist=True)
        restored = _restored_line(runtime)
        after = cached_embeddings(state_dir)
        runtime.stop()  # a clean stop: it compacts, so the next start reads the snapshot alone
        print(f"  start {start_number} ({files}): serving after {seconds:.1f} s; {restored}")
        print(f"  {'':<7} embedding cache: {before} vectors before, {after} after")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.durability", description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, default=PROJECT_ROOT.parent / "shared" / "data")
    parser.add_argument(
        "--state-dir", type=Path, default=PROJECT_ROOT / "bench" / ".cache" / "durability-state"
    )
    parser.add_argument(
        "--documents", type=int, default=5000, help="SciFact documents in the restarted runtime"
    )
    parser.add_argument("--writes", type=int, default=200, help="rounds of the write cost measurement")
    parser.add_argument("--skip-restart", action="store_true", help="measure the write cost only")
    parser.add_argument("--skip-write-cost", action="store_true", help="measure the restart only")
    args = parser.parse_args(argv)
    if not args.skip_write_cost:
        journal_cost(args.writes * 3)
        write_cost(args.writes)
    if not args.skip_restart:
        restart(args.data_dir, args.state_dir, args.documents)
    return 0


if __name__ == "__main__":
    sys.exit(main())
