"""Export and import jobs on moto's DynamoDB, S3 and SQS: the document queue's worker takes the
bundle work, the bundle lands in S3 (multipart past 8 MiB) and streams back into another tenant, and
the presigned URLs point at the bundle's key."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import parse_qs, urlsplit

import boto3
import pytest
from botocore.config import Config

from knowledge.adapters.document_conversion import ConvertedDocuments
from knowledge.adapters.dynamodb.data_source_records import DynamoDBDataSourceStore
from knowledge.adapters.dynamodb.knowledge_store import DynamoDBKnowledgeStore
from knowledge.adapters.dynamodb.table import DynamoDBTable
from knowledge.adapters.s3_bundles import S3BundleBucket
from knowledge.adapters.s3_documents import S3DocumentBucket
from knowledge.adapters.sqs_sync_queue import SqsSyncQueue
from knowledge.contract.bundles import ExportRequest
from knowledge.domain.bundles import BundleJobKind, BundleJobStatus
from knowledge.domain.models import Principal, Scope, Source
from knowledge.errors import DependencyUnavailableError
from knowledge.services.bundles import BundleService
from knowledge.services.document_sync import DocumentAction, DocumentSync
from tests.conftest import TABLE_NAME
from tests.support.store import REGION

SOURCE, TARGET = "acme", "globex"
BUCKET = "knowledge-bundles"
SCOPES = frozenset({"knowledge:admin", "memory:admin"})


def operator(tenant_id: str) -> Principal:
    return Principal(tenant_id=tenant_id, subject_id="ops", scopes=SCOPES)


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 3, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(milliseconds=1)
        return self.now


class World:
    def __init__(self) -> None:
        # SigV4, as ``s3_bundles.build`` configures it: presigned URLs that work in every region.
        self.s3 = boto3.client("s3", region_name=REGION, config=Config(signature_version="s3v4"))
        self.sqs = boto3.client("sqs", region_name=REGION)
        self.s3.create_bucket(Bucket=BUCKET)
        self.queue_url = self.sqs.create_queue(QueueName="documents")["QueueUrl"]
        self.clock = Clock()
        dynamodb = boto3.client("dynamodb", region_name=REGION)
        self.store = DynamoDBKnowledgeStore(TABLE_NAME, dynamodb_client=dynamodb, clock=self.clock)
        self.bucket = S3BundleBucket(self.s3, BUCKET)
        queue = SqsSyncQueue(self.queue_url, sqs_client=self.sqs)
        self.bundles = BundleService(
            self.store,
            self.bucket,
            queue,
            self.clock,
            vectors=lambda: None,
            chunker=lambda: None,  # type: ignore[arg-type,return-value]
        )
        self.worker = DocumentSync(
            self.store,
            DynamoDBDataSourceStore(DynamoDBTable(TABLE_NAME, dynamodb), dynamodb),
            S3DocumentBucket(self.s3),
            ConvertedDocuments(),
            queue,
            self.clock,
            max_document_bytes=1_000,
            max_content_chars=100_000,
            page_size=10,
            lease_seconds=60,
            bundles=self.bundles,
        )

    def drain(self) -> list[DocumentAction]:
        actions = []
        while True:
            answer = self.sqs.receive_message(QueueUrl=self.queue_url, MaxNumberOfMessages=10)
            messages = answer.get("Messages", [])
            if not messages:
                return actions
            for message in messages:
                actions.append(self.worker.handle(message["Body"], message_id="m", seconds_left=lambda: 60.0))
                self.sqs.delete_message(QueueUrl=self.queue_url, ReceiptHandle=message["ReceiptHandle"])


@pytest.fixture
def world(table: Any) -> World:
    return World()


def _seed(world: World, *, items: int, text: str = "Grease the rotor bearings every 500 hours.") -> str:
    base = world.store.create_base(SOURCE, name="handbook", owner_id="ops", scope=Scope.TENANT, team_id=None)
    for number in range(items):
        world.store.create_item(
            SOURCE,
            base.knowledge_base_id,
            title=f"Guide {number}",
            content=f"{text} Guide {number}.",
            source=Source(uri=f"guides/{number}.md"),
            external_id=f"guides/{number}.md",
            publish=True,
        )
    return base.knowledge_base_id


def test_an_export_then_an_import_move_a_tenant_through_s3_and_the_queue(world: World) -> None:
    _seed(world, items=12)
    export = world.bundles.start_export(operator(SOURCE), ExportRequest())

    assert world.drain() == [DocumentAction.BUNDLE_EXPORTED]

    done = world.bundles.get_job(operator(SOURCE), export.job_id, BundleJobKind.EXPORT)
    assert done.status is BundleJobStatus.SUCCEEDED
    assert done.counts == {"base": 1, "item": 12}
    key = f"bundles/{SOURCE}/{export.job_id}.jsonl"
    stored = world.s3.get_object(Bucket=BUCKET, Key=key)
    body = stored["Body"].read()
    assert len(body) == done.bytes
    assert stored["ContentType"] == "application/x-ndjson"
    url = urlsplit(done.download_url or "")
    assert url.path.endswith(key)
    assert "X-Amz-Signature" in parse_qs(url.query)

    created = world.bundles.create_import(operator(TARGET))
    assert urlsplit(created.upload_url or "").path.endswith(f"bundles/{TARGET}/{created.job_id}.jsonl")
    world.s3.put_object(Bucket=BUCKET, Key=f"bundles/{TARGET}/{created.job_id}.jsonl", Body=body)
    world.bundles.start_import(operator(TARGET), created.job_id)

    assert world.drain() == [DocumentAction.BUNDLE_IMPORTED]

    imported = world.bundles.get_job(operator(TARGET), created.job_id, BundleJobKind.IMPORT)
    assert imported.status is BundleJobStatus.SUCCEEDED
    assert imported.counts == {"base.imported": 1, "item.imported": 12}
    again = [json.loads(line) for line in world.bundles.bundle_lines(TARGET, done.selection)]  # type: ignore[arg-type]
    original = [json.loads(line) for line in body.decode().splitlines()]
    assert again[1:] == original[1:]


def test_a_bundle_past_8_mib_is_written_in_parts_and_read_back_line_by_line(world: World) -> None:
    lines = [json.dumps({"n": number, "text": "x" * 1_000}).encode() + b"\n" for number in range(9_000)]

    size = world.bucket.upload("bundles/acme/big.jsonl", iter(lines))

    assert size == sum(len(line) for line in lines) > 8 * 1024 * 1024
    read = world.bucket.lines("bundles/acme/big.jsonl")
    assert read is not None
    assert [json.loads(line)["n"] for line in read] == list(range(9_000))
    assert world.bucket.lines("bundles/acme/absent.jsonl") is None


def test_a_missing_bucket_is_a_retryable_error(world: World) -> None:
    gone = S3BundleBucket(world.s3, "no-such-bucket")
    with pytest.raises(DependencyUnavailableError):
        gone.upload("bundles/acme/x.jsonl", iter([b"{}\n"]))
    with pytest.raises(DependencyUnavailableError):
        gone.lines("bundles/acme/x.jsonl")
