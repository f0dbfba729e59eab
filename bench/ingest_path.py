"""Ingest end to end in one process: queue → store → stream → index, through the real Lambda handlers.

    python -m bench.ingest_path --data-dir ../shared/data/scifact [--documents 300] [--round 50]
        [--embedders hashing,model] [--seconds 300] [--cache bench/.cache/embeddings.sqlite]

moto (``mock_aws``) holds the knowledge table (created from ``template.yaml``, with its stream) and
the index work queue; the search index is the ``EmbeddedIndex``. The first ``--documents`` SciFact
abstracts become ``upsert`` messages (title + abstract, published) signed with a bearer token of
``knowledge:write`` in the ``Authorization`` message attribute, as producers send them. They go
through the pipeline ``--round`` documents at a time, each phase invoking one handler with Lambda
events in the batch sizes of the template's event source mappings:

1. **ingest**: ``IngestQueueFunction`` on SQS events of upsert messages (10 per event) → the store;
2. **indexer**: ``IndexerFunction`` on the table's stream records (read with ``dynamodbstreams``,
   kept when the mapping's ``FilterCriteria`` admit them, 100 per event) → index work messages;
3. **worker**: ``IndexWorkerFunction`` on the work queue's messages (1 per event): reads, chunks,
   embeds and writes the index, and sets the item's indexed mark; the index is committed at the end
   of each round (``EmbeddedIndex.refresh``) so that everything indexed is searchable.

A phase's figure is the wall time spent inside its handler; **total** is the wall time of the whole
run, with reading the stream and receiving and deleting the work messages (moto in process, so these
are not AWS's latencies). moto runs with the local runtime's fixes, as ``make run`` does:
transactions roll back by journal (``knowledge_local.emulator.moto_patches.transactions``) instead
of moto's copy of the whole table before each one, which made every write slower as the table grew,
and moto's instance tracking is off. The stream is drained at the end (the worker's indexed marks
are records too). Embedders: ``model``, the product's offline all-MiniLM-L6-v2 (behind the embedding
cache at ``--cache`` when that file exists; loaded before the clock starts), and ``hashing``, a
feature-hashing bag of words of the same dimension (``bench.memory.HashingVectors``), so the
difference is the cost of embedding. A variant stops after the round that passes ``--seconds``.

Prints a Markdown table per run: for each embedder and phase, documents/s and chunks/s (documents
and index chunks divided by the phase's seconds) and milliseconds per document. Progress is shown
on stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from knowledge.adapters.embedded.passages import EmbeddedIndex
    from knowledge.ports import Embedder

ROOT = Path(__file__).resolve().parents[1]
TENANT = "bench"
WRITER = "bench-ingest"
REGION = "us-east-1"
PHASES = ("ingest", "indexer", "worker", "total")
INGEST_FUNCTION, INDEXER_FUNCTION, WORKER_FUNCTION = (
    "IngestQueueFunction",
    "IndexerFunction",
    "IndexWorkerFunction",
)
PHASE_FUNCTION = {"ingest": INGEST_FUNCTION, "indexer": INDEXER_FUNCTION, "worker": WORKER_FUNCTION}
"""The function whose handler each measured phase invokes."""


@dataclass(frozen=True)
class Document:
    external_id: str
    title: str
    content: str


@dataclass(frozen=True)
class IngestRun:
    """One pass of documents through the pipeline.

    ``seconds``: wall seconds per phase of ``PHASES``; ``chunks``: chunks the index holds at the end;
    ``item_ids``: external id → knowledge item id of every document ingested; ``marked``: how many of
    them the store marks indexed at their current revision; ``index``: the index written.
    """

    documents: int
    chunks: int
    seconds: dict[str, float]
    item_ids: dict[str, str]
    marked: int
    index: EmbeddedIndex


class _Context:
    """The attributes of a Lambda context that Powertools reads."""

    function_name = "bench-ingest-path"
    function_version = "$LATEST"
    memory_limit_in_mb = 1024
    invoked_function_arn = f"arn:aws:lambda:{REGION}:123456789012:function:bench-ingest-path"
    aws_request_id = "00000000-0000-0000-0000-000000000000"

    def get_remaining_time_in_millis(self) -> int:
        return 29_000


def scifact_documents(data_dir: Path, count: int) -> list[Document]:
    """The first ``count`` abstracts of ``data_dir/corpus.jsonl`` that have text."""
    documents: list[Document] = []
    with (data_dir / "corpus.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line) if line.strip() else {}
            if row.get("text"):
                title = row.get("title") or f"SciFact {row['_id']}"
                documents.append(Document(f"scifact-{row['_id']}", title, row["text"]))
            if len(documents) >= count:
                break
    return documents


def _environment() -> None:
    """Fake AWS credentials (moto only), Powertools quiet: set before ``knowledge`` is imported."""
    os.environ.update(
        AWS_ACCESS_KEY_ID="testing",
        AWS_SECRET_ACCESS_KEY="testing",
        AWS_SESSION_TOKEN="testing",
        AWS_DEFAULT_REGION=REGION,
        AWS_REGION=REGION,
        AWS_ACCOUNT_ID_ENDPOINT_MODE="disabled",
        POWERTOOLS_TRACE_DISABLED="true",
        POWERTOOLS_METRICS_DISABLED="true",
    )
    for name in ("AWS_ENDPOINT_URL", "AWS_PROFILE"):
        os.environ.pop(name, None)
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
    os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "KnowledgeBench")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(ROOT / ".cache" / "tiktoken"))


def _sqs_record(body: str, arn: str, attributes: Mapping[str, str] | None = None) -> dict[str, Any]:
    """A Lambda SQS record; ``attributes`` are string message attributes."""
    return {
        "messageId": str(uuid.uuid4()),
        "receiptHandle": uuid.uuid4().hex,
        "body": body,
        "attributes": {"ApproximateReceiveCount": "1"},
        "messageAttributes": {
            name: {"stringValue": value, "stringListValues": [], "binaryListValues": [], "dataType": "String"}
            for name, value in (attributes or {}).items()
        },
        "md5OfBody": "",
        "eventSource": "aws:sqs",
        "eventSourceARN": arn,
        "awsRegion": REGION,
    }


class _Stream:
    """New records of a table's stream since the last ``read``, every shard, oldest first."""

    def __init__(self, streams: Any, arn: str) -> None:
        self._streams = streams
        self._arn = arn
        self._iterators: dict[str, str] = {}

    def read(self) -> list[dict[str, Any]]:
        from knowledge_local.emulator.pollers.stream_poller import as_event_json

        records: list[dict[str, Any]] = []
        for shard in self._streams.describe_stream(StreamArn=self._arn)["StreamDescription"]["Shards"]:
            shard_id = shard["ShardId"]
            iterator = (
                self._iterators.get(shard_id)
                or self._streams.get_shard_iterator(
                    StreamArn=self._arn, ShardId=shard_id, ShardIteratorType="TRIM_HORIZON"
                )["ShardIterator"]
            )
            while True:
                answer = self._streams.get_records(ShardIterator=iterator, Limit=1000)
                iterator = answer["NextShardIterator"]
                records.extend(
                    {**as_event_json(record), "eventSourceARN": self._arn} for record in answer["Records"]
                )
                if not answer["Records"]:
                    break
            self._iterators[shard_id] = iterator
        return records


def _batches(items: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


class _Pipeline:
    """The three handlers on a fresh moto table (with its stream) and work queue, an ``EmbeddedIndex``
    embedded with ``embedder``, one base and one writer's token; ``spent``: seconds per phase.
    Build it inside ``mock_aws``."""

    def __init__(self, embedder: Embedder) -> None:
        import boto3

        from knowledge.adapters.dynamodb.knowledge_store import DynamoDBKnowledgeStore
        from knowledge.adapters.embedded.passages import EmbeddedIndex
        from knowledge.adapters.runtime_switch import StaticRuntimeSwitch
        from knowledge.adapters.sqs_work_queue import SqsWorkQueue
        from knowledge.bootstrap import build_container, use_container
        from knowledge.domain.models import Permission, Scope
        from knowledge.services.ingest import AUTHORIZATION_ATTRIBUTE
        from knowledge.settings import Settings
        from knowledge_local.emulator.lambda_runtime import execution_environment
        from knowledge_local.emulator.lambda_runtime.worker import import_handler
        from knowledge_local.emulator.pollers.event_filter import EventFilter
        from knowledge_local.emulator.template.resources import load_stack

        execution_environment.install()
        stack = load_stack(ROOT / "template.yaml")
        self._sources = {source.function.logical_id: source for source in stack.event_sources}
        self._handlers = {
            name: import_handler(self._sources[name].function) for name in PHASE_FUNCTION.values()
        }
        self._admits = EventFilter(self._sources[INDEXER_FUNCTION].filter_patterns).admits
        self._context = _Context()
        self.spent = dict.fromkeys(PHASES, 0.0)

        dynamodb = boto3.client("dynamodb", region_name=REGION)
        table = stack.table("KnowledgeTable")
        dynamodb.create_table(**table.create_table_arguments)
        self._sqs = boto3.client("sqs", region_name=REGION)
        self._work_url = self._sqs.create_queue(QueueName=stack.queues["IndexWorkQueue"].name)["QueueUrl"]
        self._work_arn = self._sqs.get_queue_attributes(QueueUrl=self._work_url, AttributeNames=["QueueArn"])[
            "Attributes"
        ]["QueueArn"]
        self._ingest_arn = f"arn:aws:sqs:{REGION}:123456789012:{stack.queues['IngestQueue'].name}"
        self._stream = _Stream(
            boto3.client("dynamodbstreams", region_name=REGION),
            dynamodb.describe_table(TableName=table.name)["Table"]["LatestStreamArn"],
        )
        self.store = DynamoDBKnowledgeStore(table.name, dynamodb_client=dynamodb)
        self.index = EmbeddedIndex()
        settings = Settings(
            table_name=table.name, aws_region=REGION, tenant_requests_per_second=0, tenant_writes_per_second=0
        )
        container = build_container(
            settings,
            store=self.store,
            index=self.index,
            embedder=embedder,
            runtime_switch=StaticRuntimeSwitch(True),
            work_queue=SqsWorkQueue(self._work_url, sqs_client=self._sqs),
        )
        use_container(container)
        base = self.store.create_base(
            TENANT, name="SciFact", owner_id="bench-owner", scope=Scope.TENANT, team_id=None
        )
        self.knowledge_base_id = base.knowledge_base_id
        token, _ = container.tokens.issue(
            tenant_id=TENANT, subject_id=WRITER, scopes=[Permission.WRITE.value]
        )
        self._signature = {AUTHORIZATION_ATTRIBUTE: f"Bearer {token}"}
        self._stream.read()  # the base and the token: set-up, not measured

    def _invoke(self, phase: str, records: Sequence[dict[str, Any]]) -> None:
        from knowledge_local.emulator.lambda_runtime import execution_environment

        started = time.perf_counter()
        with execution_environment.invocation():
            answer = self._handlers[PHASE_FUNCTION[phase]]({"Records": list(records)}, self._context)
        self.spent[phase] += time.perf_counter() - started
        if answer["batchItemFailures"]:
            raise RuntimeError(f"{phase}: failed records {answer['batchItemFailures']}")

    def ingest(self, documents: Sequence[Document]) -> None:
        """Phase 1: the documents' signed upsert messages to the ingest consumer."""
        messages = [
            _sqs_record(
                json.dumps(_upsert(self.knowledge_base_id, document)), self._ingest_arn, self._signature
            )
            for document in documents
        ]
        for batch in _batches(messages, self._sources[INGEST_FUNCTION].batch_size):
            self._invoke("ingest", batch)

    def index_stream(self) -> int:
        """Phase 2: the stream's new records that the mapping's filter admits to the indexer; their
        number."""
        records = [record for record in self._stream.read() if self._admits(record)]
        for batch in _batches(records, self._sources[INDEXER_FUNCTION].batch_size):
            self._invoke("indexer", batch)
        return len(records)

    def work(self) -> None:
        """Phase 3: every work message to the index worker until the queue is empty, then a commit."""
        while received := self._sqs.receive_message(QueueUrl=self._work_url, MaxNumberOfMessages=10).get(
            "Messages", []
        ):
            for batch in _batches(received, self._sources[WORKER_FUNCTION].batch_size):
                self._invoke("worker", [_sqs_record(message["Body"], self._work_arn) for message in batch])
            self._sqs.delete_message_batch(
                QueueUrl=self._work_url,
                Entries=[
                    {"Id": str(number), "ReceiptHandle": message["ReceiptHandle"]}
                    for number, message in enumerate(received)
                ],
            )
        started = time.perf_counter()
        self.index.refresh()
        self.spent["worker"] += time.perf_counter() - started

    def indexed(self, documents: Sequence[Document]) -> tuple[dict[str, str], int]:
        """External id → item id of the documents in the store, and how many are marked indexed at
        their current revision."""
        item_ids: dict[str, str] = {}
        marked = 0
        for document in documents:
            item = self.store.find_item_by_external_id(TENANT, self.knowledge_base_id, document.external_id)
            if item is not None:
                item_ids[document.external_id] = item.knowledge_item_id
                marked += item.indexed_revision_id is not None and (
                    item.indexed_revision_id == item.current_revision_id
                )
        return item_ids, marked


def ingest_path(
    documents: Sequence[Document],
    embedder: Embedder,
    *,
    round_size: int = 50,
    seconds: float | None = None,
    label: str | None = None,
) -> IngestRun:
    """Send ``documents`` through ingest → stream → index work → index (see the module docs), on a
    fresh moto table and queue and a fresh ``EmbeddedIndex`` embedded with ``embedder``, ``round_size``
    documents at a time; stop after the round that passes ``seconds`` of wall time. ``label`` shows a
    progress bar on stderr."""
    _environment()
    from moto import mock_aws
    from tqdm import tqdm

    from knowledge.bootstrap import use_container
    from knowledge_local.emulator.moto_patches import transactions
    from knowledge_local.emulator.moto_patches.instance_tracking import stop_tracking_instances

    stop_tracking_instances()
    transactions.install()
    with mock_aws():
        try:
            pipeline = _Pipeline(embedder)
            done = 0
            started = time.perf_counter()
            with tqdm(
                total=len(documents), desc=label, unit="doc", file=sys.stderr, disable=label is None
            ) as bar:
                for batch in _batches(documents, round_size):
                    pipeline.ingest(batch)
                    pipeline.index_stream()
                    pipeline.work()
                    done += len(batch)
                    bar.update(len(batch))
                    if seconds is not None and time.perf_counter() - started > seconds:
                        break
                while pipeline.index_stream():  # the indexed marks, until the stream is quiet
                    pass
            pipeline.spent["total"] = time.perf_counter() - started
            item_ids, marked = pipeline.indexed(documents[:done])
        finally:
            use_container(None)
    return IngestRun(
        documents=done,
        chunks=len(pipeline.index),
        seconds=pipeline.spent,
        item_ids=item_ids,
        marked=marked,
        index=pipeline.index,
    )


def _upsert(knowledge_base_id: str, document: Document) -> dict[str, Any]:
    """The ingest queue's ``upsert`` message body for ``document``, published at once."""
    return {
        "op": "upsert",
        "tenant_id": TENANT,
        "knowledge_base_id": knowledge_base_id,
        "external_id": document.external_id,
        "title": document.title,
        "content": document.content,
        "source": {"uri": f"https://bench.example.com/{document.external_id}", "title": "SciFact"},
        "publish": True,
    }


def table(runs: Mapping[str, IngestRun]) -> list[str]:
    """Markdown rows: one per embedder and phase, documents/s, chunks/s and ms per document."""
    rows = [
        "| embedder | phase | documents | chunks | seconds | documents/s | chunks/s | ms/document |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, run in runs.items():
        for phase in PHASES:
            spent = run.seconds[phase]
            per_second = 1 / spent if spent > 0 else float("inf")
            rows.append(
                f"| {name} | {phase} | {run.documents} | {run.chunks} | {spent:.2f} | "
                f"{run.documents * per_second:,.1f} | {run.chunks * per_second:,.1f} | "
                f"{1000 * spent / max(run.documents, 1):.1f} |"
            )
    return rows


def _embedder(name: str, cache: Path) -> tuple[str, Embedder]:
    """The embedder called ``name`` (``model`` or ``hashing``) and its label in the table."""
    from bench.memory import HashingVectors
    from knowledge.adapters.local_embedder import LocalEmbedder

    if name == "hashing":
        return "hashing (no model)", HashingVectors(LocalEmbedder().dimension)
    if cache.exists():
        from bench.relevance import open_embedder

        return "all-MiniLM-L6-v2, cached", open_embedder(cache)
    return "all-MiniLM-L6-v2", LocalEmbedder()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data-dir", type=Path, required=True, help="folder of BEIR SciFact")
    parser.add_argument("--documents", type=int, default=300, help="first N abstracts (300)")
    parser.add_argument("--round", type=int, default=50, help="documents per round through the phases (50)")
    parser.add_argument("--embedders", default="hashing,model", help="comma-separated: hashing, model")
    parser.add_argument(
        "--seconds", type=float, default=300.0, help="per embedder: stop after this round (300)"
    )
    parser.add_argument("--cache", type=Path, default=Path("bench/.cache/embeddings.sqlite"))
    arguments = parser.parse_args(argv)
    if not (arguments.data_dir / "corpus.jsonl").exists():
        parser.error(
            f"{arguments.data_dir} has no corpus.jsonl (set DATA_DIR to the folder holding scifact/)"
        )
    names = [name.strip() for name in arguments.embedders.split(",") if name.strip()]
    if not names or any(name not in ("hashing", "model") for name in names):
        parser.error("--embedders takes hashing and/or model")

    _environment()
    documents = scifact_documents(arguments.data_dir, arguments.documents)
    runs: dict[str, IngestRun] = {}
    for name in names:
        label, embedder = _embedder(name, arguments.cache)
        embedder.embed(["warm-up: the model loads before the clock starts"])
        run = ingest_path(
            documents, embedder, round_size=arguments.round, seconds=arguments.seconds, label=label
        )
        if run.marked != run.documents:
            print(f"{label}: only {run.marked} of {run.documents} documents indexed", file=sys.stderr)
            return 1
        runs[label] = run
    print(
        f"ingest path, SciFact abstracts, in process (moto, EmbeddedIndex), rounds of {arguments.round} "
        "documents; seconds inside each phase's handler, total = whole run"
    )
    print("\n".join(table(runs)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
