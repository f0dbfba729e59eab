"""Export → import → export round trip of a tenant with thousands of items and notes (DESIGN §9
"Export and import", docs/portability.md).

    make bench-portability                    # DATA_DIR=../shared/data, 5,000 items and 5,000 notes
    python -m bench.portability --data-dir ../shared/data --items 5000 --notes 5000 --queries 50

On moto's DynamoDB and S3 in this process (the knowledge table created from ``template.yaml``), the
real store, bundle bucket adapter and ``BundleService`` jobs (the queue's messages are run in turn,
as ``DocumentSyncFunction`` runs them):

1. ``seed``: ``--items`` SciFact abstracts (``DATA_DIR/scifact/corpus.jsonl``) as published items of
   three bases (every fifth with a second, published revision; every twentieth archived), and
   ``--notes`` notes written by ``remember`` (every fifth under a semantic key, written twice; every
   tenth superseding the one before; every twenty-fifth soft-forgotten; every hundredth pinned);
2. ``export``: the source tenant's export job (bundle written to S3, its size);
3. ``import``: the bundle uploaded and imported into a fresh tenant;
4. ``export again``: the copy's export, compared record by record with the first bundle (the
   header names the tenant and the moment: it is the one line allowed to differ);
5. ``searches``: both tenants indexed into in-process indexes (hashed-word vectors, so the model
   does not dominate the run), then ``--queries`` SciFact queries through ``search_knowledge`` and
   ``search_memory`` in each tenant, whose ranked ids must be equal.

Prints the counts, the bundle size and the seconds of each phase; exits 1 when the bundles or any
answer differ. Progress on stderr.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
import time
import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

PROJECT_ROOT = Path(__file__).resolve().parents[1]
REGION = "us-east-1"
BUCKET = "knowledge-bench-bundles"
SOURCE, COPY = "bench-source", "bench-copy"


class HashingVectors:
    """Unit vectors of hashed words (a stand-in model: the round trip, not relevance, is measured)."""

    model_id = "bench/hashing-64"
    dimension = 64

    def forget(self, texts: Sequence[str]) -> None:
        """No cache of its own."""

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        vectors = []
        for text in texts:
            vector = [0.0] * self.dimension
            for word in re.findall(r"\w+", text.lower()):
                vector[zlib.crc32(word.encode()) % self.dimension] += 1.0
            norm = math.sqrt(sum(value * value for value in vector)) or 1.0
            vectors.append([value / norm for value in vector])
        return vectors


class Queue:
    def __init__(self) -> None:
        self.sent: list[Any] = []

    def send(self, work: Any) -> None:
        self.sent.append(work)


def abstracts(data_dir: Path, count: int) -> Iterator[tuple[str, str]]:
    with (data_dir / "scifact" / "corpus.jsonl").open(encoding="utf-8") as corpus:
        for number, line in enumerate(corpus):
            if number >= count:
                return
            document = json.loads(line)
            yield document["title"][:200] or f"Abstract {number}", document["text"] or document["title"]


def queries(data_dir: Path, count: int) -> list[str]:
    with (data_dir / "scifact" / "queries.jsonl").open(encoding="utf-8") as found:
        return [json.loads(line)["text"] for line in found][:count]


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=Path(os.environ.get("DATA_DIR", PROJECT_ROOT.parent / "shared" / "data")),
    )
    parser.add_argument("--items", type=int, default=5_000)
    parser.add_argument("--notes", type=int, default=5_000)
    parser.add_argument("--queries", type=int, default=50)
    arguments = parser.parse_args(argv)
    os.environ.setdefault("AWS_DEFAULT_REGION", REGION)
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "bench")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "bench")
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
    from moto import mock_aws

    from knowledge_local.emulator.moto_patches import partition_queries, transactions
    from knowledge_local.emulator.moto_patches.instance_tracking import stop_tracking_instances

    # As the local runtime does: unpatched, moto copies the whole table for every transaction and
    # sorts every item of it for every Query.
    stop_tracking_instances()
    transactions.install()
    partition_queries.install()
    with mock_aws():
        return Run(arguments).go()


class Run:
    def __init__(self, arguments: argparse.Namespace) -> None:
        import boto3
        from botocore.config import Config

        from knowledge.adapters.dynamodb.knowledge_store import DynamoDBKnowledgeStore
        from knowledge.adapters.s3_bundles import S3BundleBucket
        from knowledge.bootstrap import utc_now
        from knowledge.domain.retrieval.chunking import Chunker
        from knowledge.services.bundles import BundleService
        from knowledge_local.emulator.template.resources import load_stack

        self.arguments = arguments
        table = load_stack(PROJECT_ROOT / "template.yaml").table("KnowledgeTable")
        dynamodb = boto3.client("dynamodb", region_name=REGION)
        dynamodb.create_table(**table.create_table_arguments)
        s3 = boto3.client("s3", region_name=REGION, config=Config(signature_version="s3v4"))
        s3.create_bucket(Bucket=BUCKET)
        self.s3 = s3
        self.store = DynamoDBKnowledgeStore(table.name, dynamodb_client=dynamodb)
        self.queue = Queue()
        self.bundles = BundleService(
            self.store,
            S3BundleBucket(s3, BUCKET),
            self.queue,
            utc_now,
            vectors=lambda: None,
            chunker=lambda: Chunker(max_tokens=512, overlap_tokens=64),
        )
        self.spent: dict[str, float] = {}

    def go(self) -> int:
        from knowledge.contract.bundles import ExportRequest

        operator = _principal(SOURCE)
        started = time.perf_counter()
        items, notes = self.seed()
        self.spent["seed"] = time.perf_counter() - started
        say(f"seeded {items:,} items and {notes:,} notes in {self.spent['seed']:.1f} s")

        first, first_job = self.timed("export", lambda: self.export(operator, ExportRequest()))
        say(f"exported {first_job.counts} ({first_job.bytes:,} bytes) in {self.spent['export']:.1f} s")
        imported = self.timed("import", lambda: self.import_(_principal(COPY), first))
        say(f"imported {imported.counts} in {self.spent['import']:.1f} s")
        second, _ = self.timed("export again", lambda: self.export(_principal(COPY), ExportRequest()))
        equal = first.splitlines()[1:] == second.splitlines()[1:]
        verdict = "equal" if equal else "DIFFERENT"
        say(f"exported the copy again in {self.spent['export again']:.1f} s: {verdict}")
        differing = self.timed("searches", self.compare_searches)
        print(
            json.dumps(
                {
                    "items": items,
                    "notes": notes,
                    "exported": first_job.counts,
                    "imported": imported.counts,
                    "bundle_bytes": first_job.bytes,
                    "bundles_equal": equal,
                    "queries": self.arguments.queries,
                    "differing_answers": differing,
                    "seconds": {phase: round(seconds, 1) for phase, seconds in self.spent.items()},
                },
                indent=2,
            )
        )
        return 0 if equal and not differing else 1

    def timed(self, phase: str, call: Any) -> Any:
        started = time.perf_counter()
        answer = call()
        self.spent[phase] = time.perf_counter() - started
        return answer

    def seed(self) -> tuple[int, int]:
        from knowledge.adapters.runtime_switch import StaticRuntimeSwitch
        from knowledge.bootstrap import utc_now
        from knowledge.contract.memory import ForgetMemoryArguments, PinMemoryArguments, RememberArguments
        from knowledge.domain.models import Scope, Source
        from knowledge.services.notes import NoteService
        from knowledge.services.pins import PinService

        bases = [
            self.store.create_base(SOURCE, name=f"base-{n}", owner_id="ops", scope=Scope.TENANT, team_id=None)
            for n in range(3)
        ]
        live = 0
        for number, (title, text) in enumerate(abstracts(self.arguments.data_dir, self.arguments.items)):
            base = bases[number % len(bases)]
            item, _ = self.store.create_item(
                SOURCE,
                base.knowledge_base_id,
                title=title,
                content=text,
                source=Source(uri=f"scifact/{number}"),
                external_id=f"scifact/{number}",
                publish=True,
            )
            if number % 5 == 0:
                item, revision = self.store.add_revision(
                    SOURCE,
                    item.knowledge_item_id,
                    content=text + "\n\nReviewed.",
                    title=None,
                    source=None,
                    publish=False,
                    expected_version=item.version,
                )
                item = self.store.publish_revision(
                    SOURCE,
                    item.knowledge_item_id,
                    revision.knowledge_revision_id,
                    expected_version=item.version,
                )
            if number % 20 == 19:
                self.store.archive_item(SOURCE, item.knowledge_item_id, expected_version=item.version)
            else:
                live += 1
            if number % 500 == 499:
                say(f"seed: {number + 1:,} items")
        notes = NoteService(self.store, lambda texts: None, StaticRuntimeSwitch(True), utc_now)
        pins = PinService(self.store, notes, utc_now)
        agent = _principal(SOURCE)
        sentences = [text for _, text in abstracts(self.arguments.data_dir, self.arguments.notes)]
        written, previous = 0, None
        for number, text in enumerate(sentences):
            content = f"Note {number}: {text[:300]}"
            key = f"key-{number}" if number % 5 == 0 else None
            supersedes: list[str] = [previous] if number % 10 == 9 and previous else []
            answer = notes.remember(
                agent,
                RememberArguments(
                    content=content, path=f"/bench/{number % 7}", semantic_key=key, supersedes=supersedes
                ),
            ).response
            if key is not None:
                notes.remember(
                    agent,
                    RememberArguments(
                        content=content + " (revised)", path=f"/bench/{number % 7}", semantic_key=key
                    ),
                )
            note_id = answer.note.note_id
            if number % 25 == 24:
                notes.forget(agent, ForgetMemoryArguments(note_id=note_id, mode="soft"))
            elif number % 100 == 0:
                pins.pin(agent, PinMemoryArguments(note_id=note_id, order=number // 100))
            previous = note_id
            written += 1
            if number % 500 == 499:
                say(f"seed: {number + 1:,} notes")
        return live, written

    def export(self, operator: Any, request: Any) -> tuple[str, Any]:
        from knowledge.domain.bundles import BundleJobKind

        job = self.bundles.start_export(operator, request)
        for work in self.queue.sent:
            self.bundles.run(work)
        self.queue.sent.clear()
        done = self.bundles.get_job(operator, job.job_id, BundleJobKind.EXPORT)
        key = f"bundles/{operator.tenant_id}/{job.job_id}.jsonl"
        body = self.s3.get_object(Bucket=BUCKET, Key=key)["Body"].read().decode("utf-8")
        return body, done

    def import_(self, operator: Any, bundle: str) -> Any:
        from knowledge.domain.bundles import BundleJobKind

        created = self.bundles.create_import(operator)
        self.s3.put_object(
            Bucket=BUCKET, Key=f"bundles/{operator.tenant_id}/{created.job_id}.jsonl", Body=bundle.encode()
        )
        self.bundles.start_import(operator, created.job_id)
        for work in self.queue.sent:
            self.bundles.run(work)
        self.queue.sent.clear()
        return self.bundles.get_job(operator, created.job_id, BundleJobKind.IMPORT)

    def compare_searches(self) -> int:
        """Index both tenants, then the number of queries whose ranked ids differ between them."""
        from knowledge.adapters.embedded.notes import EmbeddedNoteIndex
        from knowledge.adapters.embedded.passages import EmbeddedIndex
        from knowledge.adapters.embedding_cache import CachedEmbedder, InProcessEmbeddingCache
        from knowledge.bootstrap import build_container
        from knowledge.contract.memory import SearchMemoryArguments
        from knowledge.contract.search import SearchKnowledgeArguments
        from knowledge.settings import Settings

        embedder = CachedEmbedder(HashingVectors(), InProcessEmbeddingCache())
        container = build_container(
            Settings(
                table_name="KnowledgeTable",
                aws_region=REGION,
                tenant_requests_per_second=0,
                tenant_writes_per_second=0,
            ),
            store=self.store,
            index=EmbeddedIndex(),
            note_index=EmbeddedNoteIndex(),
            history_index=EmbeddedIndex(),
            note_history_index=EmbeddedNoteIndex(history=True),
            embedder=embedder,
        )
        for tenant_id in (SOURCE, COPY):
            for base in self.store.list_bases(tenant_id, limit=100, next_token=None).entries:
                container.indexing.sync_base(tenant_id, base.knowledge_base_id)
            notes_indexing = container.indexing.notes
            assert notes_indexing is not None
            token: str | None = None
            while True:
                page = self.store.list_notes(tenant_id, limit=100, next_token=token)
                for note in page.entries:
                    notes_indexing.sync_note(tenant_id, note.note_id, last_known_version=note.version)
                if page.next_token is None:
                    break
                token = page.next_token
            say(f"indexed {tenant_id}")
        differing = 0
        for query in queries(self.arguments.data_dir, self.arguments.queries):
            answers = []
            for tenant_id in (SOURCE, COPY):
                principal = _principal(tenant_id)
                knowledge = container.search.search_knowledge(
                    principal, SearchKnowledgeArguments(query=query, max_results=10)
                )
                memory = container.memory_search.search_memory(
                    principal, SearchMemoryArguments(query=query, limit=10)
                )
                answers.append(
                    (
                        [result.knowledge_item_id for result in knowledge.results],  # type: ignore[union-attr]
                        [result.note_id for result in memory.results],
                    )
                )
            differing += answers[0] != answers[1]
        return differing


def _principal(tenant_id: str) -> Any:
    from knowledge.domain.models import Principal

    scopes = {
        "knowledge:admin",
        "knowledge:read",
        "knowledge:write",
        "memory:admin",
        "memory:read",
        "memory:write",
        "memory:share",
    }
    return Principal(tenant_id=tenant_id, subject_id="ops", scopes=frozenset(scopes))


if __name__ == "__main__":
    sys.exit(main())
