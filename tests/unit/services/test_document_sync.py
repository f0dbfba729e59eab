"""``DocumentSync`` and ``DataSourceService`` on in-memory fakes: paging, sweeping, leases, retries
and giving up, per-object failures."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

import pytest

from knowledge.adapters.in_process.store import InProcessKnowledgeStore
from knowledge.contract.data_sources import CreateDataSourceRequest, SyncWork
from knowledge.domain.data_sources import FailureReason, SyncStatus
from knowledge.domain.models import ItemStatus, Scope
from knowledge.errors import DependencyUnavailableError
from knowledge.services.data_sources import DataSourceService
from knowledge.services.document_sync import SWEEP_BATCH, DocumentAction, DocumentSync
from tests.support.data_sources import MemoryBucket, MemoryDataSources, MemoryQueue, TextConverter
from tests.support.store import TickingClock
from tests.unit.services.conftest import READ, TENANT, WRITE, caller

BUCKET = "docs"
WRITER = caller("ana", READ, WRITE)


@dataclass
class World:
    store: InProcessKnowledgeStore
    sources: MemoryDataSources
    bucket: MemoryBucket
    queue: MemoryQueue
    clock: TickingClock
    service: DataSourceService
    base_id: str

    def worker(self, converter: TextConverter | None = None, page_size: int = 10) -> DocumentSync:
        return DocumentSync(
            self.store,
            self.sources,
            self.bucket,
            converter or TextConverter(),
            self.queue,
            self.clock,
            max_document_bytes=1_000,
            max_content_chars=1_000,
            page_size=page_size,
            lease_seconds=60,
        )

    def source(self) -> str:
        request = CreateDataSourceRequest(type="s3", bucket=BUCKET)
        return self.service.create(WRITER, self.base_id, request).data_source_id

    def start(self, source_id: str) -> SyncWork:
        self.service.start_sync(WRITER, self.base_id, source_id)
        return self.queue.sent.pop()

    def run(self, work: SyncWork, worker: DocumentSync | None = None, **options: bool) -> DocumentAction:
        return (worker or self.worker()).run(work, seconds_left=lambda: 60.0, **options)

    def job(self, work: SyncWork) -> object:
        return self.sources.get_job(TENANT, work.data_source_id, work.sync_job_id)


@pytest.fixture
def world() -> World:
    clock = TickingClock()
    store = InProcessKnowledgeStore(clock=clock)
    base = store.create_base(TENANT, name="Docs", owner_id="ana", scope=Scope.TENANT, team_id=None)
    sources, queue = MemoryDataSources(), MemoryQueue()
    service = DataSourceService(store, sources, queue, clock, allowed_buckets=frozenset({BUCKET}))
    return World(store, sources, MemoryBucket(), queue, clock, service, base.knowledge_base_id)


def test_sync_deleting_more_objects_than_a_sweep_batch_archives_them_all(world: World) -> None:
    for number in range(SWEEP_BATCH + 30):
        world.bucket.put(BUCKET, f"k{number:04d}.md", b"text")
    source = world.source()
    world.run(world.start(source), world.worker(page_size=50))
    world.bucket.objects.clear()

    work = world.start(source)
    world.run(work)

    job = world.job(work)
    assert job.counts.deleted == SWEEP_BATCH + 30  # type: ignore[attr-defined]
    assert all(item.status is ItemStatus.ARCHIVED for item in world.store._items.values())


def test_sync_converter_bug_is_one_object_failure(world: World) -> None:
    world.bucket.put(BUCKET, "bad.md", b"x")
    world.bucket.put(BUCKET, "good.md", b"y")
    work = world.start(world.source())

    world.run(work, world.worker(TextConverter(explode=frozenset({"bad.md"}))))

    job = world.job(work)
    assert job.status is SyncStatus.SUCCEEDED  # type: ignore[attr-defined]
    assert [(failure.key, failure.reason) for failure in job.failures] == [  # type: ignore[attr-defined]
        ("bad.md", FailureReason.CONVERSION_FAILED)
    ]


def test_sync_with_the_bucket_unavailable_releases_the_job_and_raises_for_a_retry(world: World) -> None:
    world.bucket.put(BUCKET, "a.md", b"x")
    work = world.start(world.source())
    world.bucket.fail_listing = True

    with pytest.raises(DependencyUnavailableError):
        world.run(work)

    job = world.job(work)
    assert (job.status, job.lease_until) == (SyncStatus.RUNNING, None)  # type: ignore[attr-defined]
    world.bucket.fail_listing = False
    assert world.run(work) is DocumentAction.SYNC_FINISHED


def test_sync_on_its_last_delivery_fails_the_job_instead_of_raising(world: World) -> None:
    work = world.start(world.source())
    world.bucket.fail_listing = True

    action = world.run(work, give_up=True)

    job = world.job(work)
    assert action is DocumentAction.SYNC_FINISHED
    assert job.status is SyncStatus.FAILED  # type: ignore[attr-defined]
    assert job.error == "Stopped after repeated failures (dependency_unavailable)."  # type: ignore[attr-defined]


def test_sync_of_a_deleted_data_source_fails_the_job(world: World) -> None:
    source = world.source()
    work = world.start(source)
    world.sources.sources.clear()

    assert world.run(work) is DocumentAction.SYNC_FINISHED
    assert world.job(work).error == "The data source was deleted."  # type: ignore[attr-defined]


def test_sync_held_by_a_live_lease_is_skipped_until_the_lease_ends(world: World) -> None:
    world.bucket.put(BUCKET, "a.md", b"x")
    work = world.start(world.source())
    job = world.sources.get_job(TENANT, work.data_source_id, work.sync_job_id)
    assert job is not None
    held = job.model_copy(update={"lease_until": world.clock() + timedelta(minutes=2)})
    world.sources.put_job(held, expected_version=job.version)

    assert world.run(work) is DocumentAction.SYNC_SKIPPED
    world.clock._now += timedelta(minutes=3)
    assert world.run(work) is DocumentAction.SYNC_FINISHED


def test_start_sync_without_a_document_queue_is_dependency_unavailable(world: World) -> None:
    source = world.source()
    service = DataSourceService(
        world.store, world.sources, None, world.clock, allowed_buckets=frozenset({BUCKET})
    )

    with pytest.raises(DependencyUnavailableError):
        service.start_sync(WRITER, world.base_id, source)
