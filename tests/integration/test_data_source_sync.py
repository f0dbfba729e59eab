"""S3 data sources on moto S3, SQS and DynamoDB: sync jobs (incremental, resumable, idempotent) and
S3 event notifications, through ``DocumentSync`` and ``DataSourceService`` with their real adapters."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest

from knowledge.adapters.document_conversion import ConvertedDocuments
from knowledge.adapters.dynamodb.data_source_records import DynamoDBDataSourceStore
from knowledge.adapters.dynamodb.knowledge_store import DynamoDBKnowledgeStore
from knowledge.adapters.dynamodb.table import DynamoDBTable
from knowledge.adapters.s3_documents import S3DocumentBucket
from knowledge.adapters.sqs_sync_queue import SqsSyncQueue
from knowledge.api.error_envelopes import error_envelope
from knowledge.contract.data_sources import CreateDataSourceRequest
from knowledge.domain.data_sources import FailureReason, ListingPage, SyncStatus
from knowledge.domain.models import ItemStatus, Principal, Scope
from knowledge.errors import (
    BucketNotAllowedError,
    ConversionError,
    InsufficientScopeError,
    ResourceUnavailableError,
)
from knowledge.services.data_sources import DataSourceService
from knowledge.services.document_sync import DocumentAction, DocumentMessageRejectedError, DocumentSync
from tests.conftest import TABLE_NAME
from tests.support.store import REGION

TENANT = "acme"
BUCKET = "team-docs"
WRITER = Principal(
    tenant_id=TENANT, subject_id="ana", scopes=frozenset({"knowledge:read", "knowledge:write"})
)
WRITE_OPERATIONS = {"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems"}


class Clock:
    """UTC time that moves only when told to (and by a millisecond per reading)."""

    def __init__(self) -> None:
        self.now = datetime(2026, 3, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(milliseconds=1)
        return self.now


class FlakyBucket(S3DocumentBucket):
    """Dies (as a worker process would) on the listing page numbered ``die_on_page`` (from 0), once."""

    def __init__(self, client: Any, die_on_page: int) -> None:
        super().__init__(client)
        self.pages = 0
        self.die_on_page = die_on_page

    def list_page(
        self, bucket: str, prefix: str, *, continuation_token: str | None, limit: int
    ) -> ListingPage:
        number, self.pages = self.pages, self.pages + 1
        if number == self.die_on_page:
            raise SystemExit("worker killed")
        return super().list_page(bucket, prefix, continuation_token=continuation_token, limit=limit)


@dataclass
class World:
    store: DynamoDBKnowledgeStore
    sources: DynamoDBDataSourceStore
    s3: Any
    sqs: Any
    queue_url: str
    clock: Clock
    base_id: str
    service: DataSourceService
    catalog_writes: list[str] = field(default_factory=list)
    record_writes: list[str] = field(default_factory=list)
    downloads: list[str] = field(default_factory=list)

    def worker(
        self, *, page_size: int = 100, max_bytes: int = 10_000, bucket: S3DocumentBucket | None = None
    ) -> DocumentSync:
        return DocumentSync(
            self.store,
            self.sources,
            bucket or S3DocumentBucket(self.s3),
            ConvertedDocuments(),
            SqsSyncQueue(self.queue_url, sqs_client=self.sqs),
            self.clock,
            max_document_bytes=max_bytes,
            max_content_chars=100_000,
            page_size=page_size,
            lease_seconds=60,
        )

    def put(self, key: str, body: str | bytes) -> None:
        self.s3.put_object(Bucket=BUCKET, Key=key, Body=body.encode() if isinstance(body, str) else body)

    def messages(self) -> list[str]:
        answer = self.sqs.receive_message(QueueUrl=self.queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=0)
        found = answer.get("Messages", [])
        for message in found:
            self.sqs.delete_message(QueueUrl=self.queue_url, ReceiptHandle=message["ReceiptHandle"])
        return [message["Body"] for message in found]

    def sync(self, data_source_id: str, worker: DocumentSync | None = None) -> dict[str, Any]:
        """Start a sync and run every queued message until the queue is empty; the job's answer."""
        job = self.service.start_sync(WRITER, self.base_id, data_source_id)
        self.drain(worker or self.worker())
        return self.service.get_job(WRITER, self.base_id, job.sync_job_id).model_dump(mode="json")

    def drain(self, worker: DocumentSync) -> list[DocumentAction]:
        actions = []
        while bodies := self.messages():
            for body in bodies:
                actions.append(worker.handle(body, message_id="m", seconds_left=lambda: 60.0))
        return actions

    def item(self, data_source_id: str, key: str) -> Any:
        return self.store.find_item_by_external_id(TENANT, self.base_id, f"{data_source_id}:{key}")


@pytest.fixture
def world(table: Any) -> World:
    dynamodb = boto3.client("dynamodb", region_name=REGION)
    records = boto3.client("dynamodb", region_name=REGION)
    s3 = boto3.client("s3", region_name=REGION)
    sqs = boto3.client("sqs", region_name=REGION)
    s3.create_bucket(Bucket=BUCKET)
    queue_url = sqs.create_queue(QueueName="documents")["QueueUrl"]
    clock = Clock()
    store = DynamoDBKnowledgeStore(TABLE_NAME, dynamodb_client=dynamodb, clock=clock)
    sources = DynamoDBDataSourceStore(DynamoDBTable(TABLE_NAME, records), records)
    base = store.create_base(TENANT, name="Docs", owner_id="ana", scope=Scope.TENANT, team_id=None)
    service = DataSourceService(
        store, sources, SqsSyncQueue(queue_url, sqs_client=sqs), clock, allowed_buckets=frozenset({BUCKET})
    )
    built = World(store, sources, s3, sqs, queue_url, clock, base.knowledge_base_id, service)

    def count(into: list[str], only: Any = None) -> Any:
        def before(params: dict[str, Any], model: Any, **_: Any) -> None:
            if model.name in WRITE_OPERATIONS and (only is None or only(params)):
                into.append(model.name)

        return before

    dynamodb.meta.events.register("before-parameter-build.dynamodb", count(built.catalog_writes))
    records.meta.events.register(
        "before-parameter-build.dynamodb",
        count(
            built.record_writes,
            lambda params: "#JOB#" not in json.dumps(params) and "JOB#" not in str(params),
        ),
    )
    s3.meta.events.register(
        "before-parameter-build.s3.GetObject", lambda params, **_: built.downloads.append(params["Key"])
    )
    return built


def _source(world: World, prefix: str = "guides/", include: list[str] | None = None) -> str:
    request = CreateDataSourceRequest(type="s3", bucket=BUCKET, prefix=prefix, include=include or ["**"])
    return world.service.create(WRITER, world.base_id, request).data_source_id


def test_sync_new_objects_adds_each_selected_object_as_an_item(world: World) -> None:
    world.put("guides/deploy.md", "# Deploy\n\nRoll out with blue-green switches.")
    world.put("guides/ops/oncall.txt", "Page the on-call engineer.")
    world.put("guides/notes.md", "Draft")
    world.put("other/ignored.md", "Outside the prefix")
    source = _source(world, include=["*.md", "ops/**"])

    job = world.sync(source)

    assert job["status"] == "succeeded"
    assert job["counts"] == {
        "scanned": 3,
        "added": 3,
        "updated": 0,
        "deleted": 0,
        "unchanged": 0,
        "failed": 0,
    }
    item = world.item(source, "guides/deploy.md")
    revision = world.store.get_revision(TENANT, item.knowledge_item_id, item.current_revision_id)
    assert revision.source.uri == f"s3://{BUCKET}/guides/deploy.md"
    assert item.title == "Deploy"  # the document's own heading
    assert world.store.read_all_content(revision).startswith("# Deploy")
    assert world.item(source, "other/ignored.md") is None


def test_second_sync_with_nothing_changed_reports_unchanged_and_writes_nothing(world: World) -> None:
    for number in range(5):
        world.put(f"guides/page-{number}.md", f"Page {number}")
    source = _source(world)
    world.sync(source, world.worker(page_size=2))
    world.catalog_writes.clear()
    world.record_writes.clear()
    world.downloads.clear()

    job = world.sync(source, world.worker(page_size=2))

    assert job["counts"] == {
        "scanned": 5,
        "added": 0,
        "updated": 0,
        "deleted": 0,
        "unchanged": 5,
        "failed": 0,
    }
    assert world.catalog_writes == []
    assert world.record_writes == []
    assert world.downloads == []


def test_sync_after_changes_revises_changed_and_archives_deleted_objects(world: World) -> None:
    world.put("guides/a.md", "Alpha")
    world.put("guides/b.md", "Bravo")
    world.put("guides/c.md", "Charlie")
    source = _source(world)
    world.sync(source)
    archived = world.item(source, "guides/b.md")
    world.put("guides/a.md", "Alpha, second edition")
    world.s3.delete_object(Bucket=BUCKET, Key="guides/b.md")
    world.put("guides/d.md", "Delta")

    job = world.sync(source, world.worker(page_size=1))

    assert job["counts"] == {
        "scanned": 3,
        "added": 1,
        "updated": 1,
        "deleted": 1,
        "unchanged": 1,
        "failed": 0,
    }
    assert world.store.get_item(TENANT, archived.knowledge_item_id).status is ItemStatus.ARCHIVED
    revised = world.item(source, "guides/a.md")
    page = world.store.list_revisions(TENANT, revised.knowledge_item_id, limit=10, next_token=None)
    assert len(page.entries) == 2


def test_sync_with_every_object_deleted_archives_every_item(world: World) -> None:
    world.put("guides/a.md", "Alpha")
    world.put("guides/b.md", "Bravo")
    source = _source(world)
    world.sync(source)
    items = [world.item(source, "guides/a.md"), world.item(source, "guides/b.md")]
    world.s3.delete_object(Bucket=BUCKET, Key="guides/a.md")
    world.s3.delete_object(Bucket=BUCKET, Key="guides/b.md")

    job = world.sync(source)

    assert job["counts"]["deleted"] == 2
    assert [world.store.get_item(TENANT, item.knowledge_item_id).status for item in items] == [
        ItemStatus.ARCHIVED,
        ItemStatus.ARCHIVED,
    ]


def test_sync_killed_mid_listing_resumes_from_its_stored_page_and_counts_once(world: World) -> None:
    for number in range(6):
        world.put(f"guides/page-{number}.md", f"Page {number}")
    source = _source(world)
    started = world.service.start_sync(WRITER, world.base_id, source)
    (body,) = world.messages()
    flaky = FlakyBucket(world.s3, die_on_page=2)
    with pytest.raises(SystemExit):
        world.worker(page_size=2, bucket=flaky).handle(body, message_id="m", seconds_left=lambda: 60.0)
    held = world.service.get_job(WRITER, world.base_id, started.sync_job_id)
    assert (held.status, held.pages, held.counts.added) == (SyncStatus.RUNNING, 2, 4)
    # The same message, redelivered while the lease still holds, does nothing.
    assert (
        world.worker().handle(body, message_id="m", seconds_left=lambda: 60.0) is DocumentAction.SYNC_SKIPPED
    )
    world.clock.now += timedelta(minutes=5)  # SQS redelivers after the visibility timeout
    world.downloads.clear()

    action = world.worker(page_size=2, bucket=flaky).handle(body, message_id="m", seconds_left=lambda: 60.0)

    job = world.service.get_job(WRITER, world.base_id, started.sync_job_id)
    assert action is DocumentAction.SYNC_FINISHED
    assert job.status is SyncStatus.SUCCEEDED
    assert job.counts.model_dump() == {
        "scanned": 6,
        "added": 6,
        "updated": 0,
        "deleted": 0,
        "unchanged": 0,
        "failed": 0,
    }
    assert world.downloads == ["guides/page-4.md", "guides/page-5.md"]


def test_sync_page_repeated_after_a_crash_counts_what_it_did_the_first_time(world: World) -> None:
    for number in range(3):
        world.put(f"guides/page-{number}.md", f"Page {number}")
    source = _source(world)
    started = world.service.start_sync(WRITER, world.base_id, source)
    (body,) = world.messages()
    job = world.sources.get_job(TENANT, source, started.sync_job_id)
    # Every object ingested, then the worker died before storing the page.
    worker = world.worker()
    for number in range(3):
        listed = S3DocumentBucket(world.s3).head(BUCKET, f"guides/page-{number}.md")
        worker._sync_object(world.sources.get_data_source(TENANT, source), listed, job.sync_job_id)
    world.catalog_writes.clear()

    worker.handle(body, message_id="m", seconds_left=lambda: 60.0)

    finished = world.service.get_job(WRITER, world.base_id, started.sync_job_id)
    assert finished.counts.added == 3
    assert world.catalog_writes == []


def test_sync_message_redelivered_after_the_job_finished_changes_nothing(world: World) -> None:
    world.put("guides/a.md", "Alpha")
    source = _source(world)
    started = world.service.start_sync(WRITER, world.base_id, source)
    (body,) = world.messages()
    world.worker().handle(body, message_id="m", seconds_left=lambda: 60.0)
    before = world.service.get_job(WRITER, world.base_id, started.sync_job_id)
    world.catalog_writes.clear()

    action = world.worker().handle(body, message_id="m", seconds_left=lambda: 60.0)

    assert action is DocumentAction.SYNC_SKIPPED
    assert world.service.get_job(WRITER, world.base_id, started.sync_job_id) == before
    assert world.catalog_writes == []


def test_sync_out_of_time_stores_progress_and_queues_its_next_step(world: World) -> None:
    for number in range(4):
        world.put(f"guides/page-{number}.md", f"Page {number}")
    source = _source(world)
    started = world.service.start_sync(WRITER, world.base_id, source)
    (body,) = world.messages()
    budget = iter([0.0])

    action = world.worker(page_size=2).handle(body, message_id="m", seconds_left=lambda: next(budget))

    paused = world.service.get_job(WRITER, world.base_id, started.sync_job_id)
    assert action is DocumentAction.SYNC_STEPPED
    assert (paused.status, paused.pages, paused.counts.added) == (SyncStatus.RUNNING, 1, 2)
    world.drain(world.worker(page_size=2))
    assert world.service.get_job(WRITER, world.base_id, started.sync_job_id).counts.added == 4


def test_sync_bad_objects_are_per_object_failures_and_the_job_succeeds(world: World) -> None:
    world.put("guides/good.md", "Fine")
    world.put("guides/binary.pdf", b"%PDF-1.7 not really")
    world.put("guides/tool.exe", b"MZ")
    world.put("guides/latin1.txt", "caf\xe9".encode("latin-1"))
    world.put("guides/empty.md", "   ")
    world.put("guides/huge.md", "x" * 20_000)
    source = _source(world)

    job = world.sync(source, world.worker(max_bytes=10_000))

    assert job["status"] == "succeeded"
    assert job["counts"]["added"] == 1
    assert job["counts"]["failed"] == 5
    reasons = {failure["key"]: failure["reason"] for failure in job["failures"]}
    assert reasons == {
        "guides/binary.pdf": FailureReason.CONVERSION_FAILED,
        "guides/tool.exe": FailureReason.UNSUPPORTED_TYPE,
        "guides/latin1.txt": FailureReason.CONVERSION_FAILED,
        "guides/empty.md": FailureReason.CONVERSION_FAILED,
        "guides/huge.md": FailureReason.TOO_LARGE,
    }
    assert "guides/huge.md" not in world.downloads  # ContentLength is checked before any download


def test_sync_of_a_deleted_base_fails_the_job_without_raising(world: World) -> None:
    world.put("guides/a.md", "Alpha")
    source = _source(world)
    started = world.service.start_sync(WRITER, world.base_id, source)
    (body,) = world.messages()
    base_key = {"PK": {"S": f"T#{TENANT}#KB#{world.base_id}"}, "SK": {"S": "META"}}
    boto3.client("dynamodb", region_name=REGION).delete_item(TableName=TABLE_NAME, Key=base_key)

    action = world.worker().handle(body, message_id="m", seconds_left=lambda: 60.0)

    job = world.sources.get_job(TENANT, source, started.sync_job_id)
    assert action is DocumentAction.SYNC_FINISHED
    assert job.status is SyncStatus.FAILED
    assert job.error == "The knowledge base is no longer available."


# -- S3 event notifications -------------------------------------------------------------------------


def _notify(world: World) -> None:
    arn = world.sqs.get_queue_attributes(QueueUrl=world.queue_url, AttributeNames=["QueueArn"])
    world.s3.put_bucket_notification_configuration(
        Bucket=BUCKET,
        NotificationConfiguration={
            "QueueConfigurations": [
                {
                    "QueueArn": arn["Attributes"]["QueueArn"],
                    "Events": ["s3:ObjectCreated:*", "s3:ObjectRemoved:*"],
                }
            ]
        },
    )


def test_event_of_an_uploaded_object_adds_it_without_a_sync(world: World) -> None:
    source = _source(world)
    _notify(world)
    world.messages()  # s3:TestEvent

    world.put("guides/new guide.md", "# Fresh\n\nJust uploaded.")
    actions = world.drain(world.worker())

    assert actions == [DocumentAction.EVENT_APPLIED]
    item = world.item(source, "guides/new guide.md")
    revision = world.store.get_revision(TENANT, item.knowledge_item_id, item.current_revision_id)
    assert revision.source.uri == f"s3://{BUCKET}/guides/new%20guide.md"


def test_event_of_a_removed_object_archives_its_item(world: World) -> None:
    source = _source(world)
    _notify(world)
    world.put("guides/a.md", "Alpha")
    world.drain(world.worker())
    item = world.item(source, "guides/a.md")

    world.s3.delete_object(Bucket=BUCKET, Key="guides/a.md")
    world.drain(world.worker())

    assert world.store.get_item(TENANT, item.knowledge_item_id).status is ItemStatus.ARCHIVED
    assert world.sources.get_synced(TENANT, source, "guides/a.md") is None


def test_event_redelivered_writes_nothing_twice(world: World) -> None:
    _source(world)
    _notify(world)
    world.put("guides/a.md", "Alpha")
    (created,) = [body for body in world.messages() if "ObjectCreated" in body]
    worker = world.worker()
    worker.handle(created, message_id="m", seconds_left=lambda: 60.0)
    world.catalog_writes.clear()
    world.record_writes.clear()

    worker.handle(created, message_id="m", seconds_left=lambda: 60.0)

    assert world.catalog_writes == []
    assert world.record_writes == []


def test_event_of_an_object_that_cannot_be_read_raises_document_unreadable(world: World) -> None:
    _source(world)
    _notify(world)
    world.messages()
    world.put("guides/scan.txt", b"\xff\xfe\x00broken")
    (body,) = world.messages()

    with pytest.raises(ConversionError) as raised:
        world.worker().handle(body, message_id="m", seconds_left=lambda: 60.0)

    assert raised.value.code == "document_unreadable"
    assert raised.value.reason.startswith("guides/scan.txt: ")
    assert error_envelope(raised.value)[0] == 422


def test_event_of_a_bucket_without_data_source_is_ignored(world: World) -> None:
    body = json.dumps(
        {
            "Records": [
                {
                    "eventSource": "aws:s3",
                    "eventName": "ObjectCreated:Put",
                    "s3": {"bucket": {"name": "elsewhere"}, "object": {"key": "a.md"}},
                }
            ]
        }
    )

    assert (
        world.worker().handle(body, message_id="m", seconds_left=lambda: 60.0) is DocumentAction.EVENT_IGNORED
    )


@pytest.mark.parametrize("body", ["not json", '{"Records": []}', '{"op": "sync", "tenant_id": "acme"}'])
def test_document_message_malformed_is_rejected_as_poison(world: World, body: str) -> None:
    with pytest.raises(DocumentMessageRejectedError) as raised:
        world.worker().handle(body, message_id="m", seconds_left=lambda: 60.0)

    assert raised.value.code == "validation_error"


# -- data sources: rights and errors ----------------------------------------------------------------


def test_create_data_source_on_a_bucket_not_granted_is_bucket_not_allowed(world: World) -> None:
    request = CreateDataSourceRequest(type="s3", bucket="someone-elses", prefix="")

    with pytest.raises(BucketNotAllowedError) as raised:
        world.service.create(WRITER, world.base_id, request)

    assert raised.value.code == "data_source_bucket_not_allowed"
    assert error_envelope(raised.value)[0] == 400
    assert raised.value.details == {"bucket": "someone-elses"}


def test_data_source_of_another_tenant_is_unavailable(world: World) -> None:
    source = _source(world)
    stranger = WRITER.model_copy(update={"tenant_id": "globex"})

    with pytest.raises(ResourceUnavailableError):
        world.service.get(stranger, world.base_id, source)
    with pytest.raises(ResourceUnavailableError):
        world.service.start_sync(stranger, world.base_id, source)


def test_sync_start_without_write_scope_is_insufficient_scope(world: World) -> None:
    source = _source(world)
    reader = WRITER.model_copy(update={"scopes": frozenset({"knowledge:read"})})

    with pytest.raises(InsufficientScopeError):
        world.service.start_sync(reader, world.base_id, source)
    assert [each.data_source_id for each in world.service.list(reader, world.base_id).data_sources] == [
        source
    ]


def test_delete_data_source_removes_its_records_and_stops_events(world: World) -> None:
    source = _source(world)
    world.put("guides/a.md", "Alpha")
    world.sync(source)

    world.service.delete(WRITER, world.base_id, source)

    assert world.sources.get_data_source(TENANT, source) is None
    assert world.sources.data_sources_of_bucket(BUCKET) == []
    assert world.sources.synced_between(TENANT, source, after=None, through=None, limit=10) == []
    assert world.item(source, "guides/a.md") is not None  # the items stay
