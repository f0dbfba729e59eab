"""The document queue's work (DESIGN §6, data sources): sync jobs, and S3 event notifications.

**Sync jobs.** A ``SyncWork`` message names a job; the worker takes the job's lease (a conditional
write of the job record), then runs pages until ``deadline``: list up to ``page_size`` keys from the
stored continuation token, ingest the selected objects whose ETag differs from their
``SyncedObject`` record, archive the items of records between the previous page's last key and this
one's that the listing no longer holds, and store the counts and the next token with the job (one
conditional write). After the last page it sweeps the records past the listing's last key, then
marks the job ``succeeded``. Out of time, it releases the lease with the progress stored and sends
the job's next message.

- *Resumable*: a worker that dies leaves its message unacknowledged; SQS delivers it again after
  the visibility timeout, longer than the lease, and the next worker resumes from the stored page.
- *Idempotent*: a message for a finished job, or one another worker holds, does nothing. A page run
  twice writes nothing twice: an object recorded with its current ETag is not read again, and one
  recorded by this very job counts as what it was the first time.
- *Never stuck*: an object that cannot be ingested (too large: ``ContentLength`` over
  ``max_document_bytes``, checked before any download; an unsupported type; a conversion failure;
  content over the base's limit) is a per-object failure in the job, never an error. An error of
  the job itself (the base deleted) fails the job at once; a dependency that stays unavailable
  fails it on the message's last delivery (``give_up``).

**S3 events.** Each record names a bucket and a key: for every data source of that bucket selecting
the key, the key is reconciled with the bucket (its object ingested when its ETag changed, its item
archived when it is gone). The event's own claim is not trusted, so order and repetition do not
matter. An object that cannot be ingested raises ``ConversionError`` (``DocumentTooLargeError``
when it is too large), and the event goes to the dead-letter queue after its retries.
"""

from __future__ import annotations

import posixpath
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from enum import StrEnum
from typing import TYPE_CHECKING

from pydantic import ValidationError

from knowledge.contract.bundles import BundleWork
from knowledge.contract.data_sources import DOCUMENT_MESSAGE, S3Notification, S3TestEvent, SyncWork
from knowledge.domain.data_sources import (
    DataSource,
    FailureReason,
    FetchedObject,
    ListedObject,
    ObjectFailure,
    SyncCounts,
    SyncCursor,
    SyncedObject,
    SyncJob,
    SyncOutcome,
    SyncPhase,
    SyncStatus,
    key_problem,
    source_uri,
    title_from_key,
)
from knowledge.domain.models import TITLE_MAX_CHARS, Source
from knowledge.domain.segments import ConvertedDocument, segments_problem
from knowledge.errors import (
    ConflictError,
    ConversionError,
    DependencyUnavailableError,
    DocumentTooLargeError,
    KnowledgeError,
    RequestValidationError,
    ResourceUnavailableError,
)
from knowledge.observability import logger
from knowledge.ports import (
    CatalogStore,
    Clock,
    DataSourceStore,
    DocumentBucket,
    DocumentConverter,
    SyncWorkQueue,
)
from knowledge.services.bundles import BundleService
from knowledge.services.data_sources import lease_expired
from knowledge.services.upsert import MAX_ATTEMPTS, Document, UpsertOutcome, upsert_by_external_id

if TYPE_CHECKING:  # the erasure service loads the curation and note services: only its work needs them
    from knowledge.services.erasure import ErasureService

SWEEP_BATCH = 100
"""Records archived per sweep step."""
LEASE_MARGIN_SECONDS = 30


class DocumentAction(StrEnum):
    """What one document queue message did."""

    SYNC_STEPPED = "sync_stepped"
    SYNC_FINISHED = "sync_finished"
    SYNC_SKIPPED = "sync_skipped"
    """Finished, held by another worker, or gone: nothing to do."""
    EVENT_APPLIED = "event_applied"
    EVENT_IGNORED = "event_ignored"
    BUNDLE_EXPORTED = "bundle_exported"
    BUNDLE_IMPORTED = "bundle_imported"
    BUNDLE_PAUSED = "bundle_paused"
    BUNDLE_SKIPPED = "bundle_skipped"
    BUNDLE_FAILED = "bundle_failed"
    ERASURE_ERASED = "erasure_erased"
    ERASURE_PAUSED = "erasure_paused"
    ERASURE_SKIPPED = "erasure_skipped"
    ERASURE_FAILED = "erasure_failed"


class DocumentMessageRejectedError(RequestValidationError):
    """The body is neither sync work nor an S3 notification: a poison message."""


@dataclass
class _Progress:
    """The job as last stored."""

    job: SyncJob


@dataclass(frozen=True)
class _Result:
    outcome: SyncOutcome | None
    failure: ObjectFailure | None = None


class DocumentSync:
    """Runs the document queue's messages. ``lease_seconds`` must exceed a worker's run (the
    function's timeout); the queue's visibility timeout must exceed the lease. Export and import
    work goes to ``bundles`` (``knowledge.services.bundles``), erasure work to ``erasures``
    (``knowledge.services.erasure``)."""

    def __init__(
        self,
        catalog: CatalogStore,
        sources: DataSourceStore,
        bucket: DocumentBucket,
        converter: DocumentConverter,
        queue: SyncWorkQueue | None,
        clock: Clock,
        *,
        max_document_bytes: int,
        max_content_chars: int,
        page_size: int,
        lease_seconds: int,
        bundles: BundleService | None = None,
        erasures: ErasureService | None = None,
    ) -> None:
        self._bundles = bundles
        self._erasures = erasures
        self._catalog = catalog
        self._sources = sources
        self._bucket = bucket
        self._converter = converter
        self._queue = queue
        self._clock = clock
        self._max_bytes = max_document_bytes
        self._max_chars = max_content_chars
        self._page_size = page_size
        self._lease = timedelta(seconds=lease_seconds + LEASE_MARGIN_SECONDS)

    def handle(
        self,
        body: str,
        *,
        message_id: str,
        seconds_left: Callable[[], float],
        give_up: bool = False,
    ) -> DocumentAction:
        """Apply one message; ``seconds_left()`` is the time a sync may still use, ``give_up`` is
        true on the message's last delivery. Raises ``DocumentMessageRejectedError`` for a body of
        neither kind, ``ConversionError`` for an event's object that cannot be ingested, and
        the store's and bucket's errors for a retry."""
        try:
            message = DOCUMENT_MESSAGE.validate_json(body)
        except ValidationError as error:
            problems = [
                {
                    "field": ".".join(str(part) for part in problem["loc"]) or "body",
                    "problem": problem["type"],
                }
                for problem in error.errors(include_input=False, include_url=False)
            ][:10]
            logger.warning(
                "document message rejected", extra={"message_id": message_id, "problems": problems}
            )
            raise DocumentMessageRejectedError(
                "The message is neither sync work nor an S3 notification.", {"fields": problems}
            ) from None
        if isinstance(message, SyncWork):
            return self.run(message, seconds_left=seconds_left, give_up=give_up)
        if isinstance(message, BundleWork) and message.op == "erase":
            if self._erasures is None:
                raise DependencyUnavailableError("Erasures are not served by this worker.")
            erased = self._erasures.run(message, give_up=give_up, seconds_left=seconds_left)
            return DocumentAction(f"erasure_{erased.value}")
        if isinstance(message, BundleWork):
            if self._bundles is None:
                raise DependencyUnavailableError("Exports and imports need BUNDLE_BUCKET.")
            action = self._bundles.run(message, give_up=give_up, seconds_left=seconds_left)
            return DocumentAction(f"bundle_{action.value}")
        if isinstance(message, S3TestEvent):
            return DocumentAction.EVENT_IGNORED
        return self.apply_events(message, message_id=message_id)

    # -- sync jobs ---------------------------------------------------------------------------------

    def run(
        self, work: SyncWork, *, seconds_left: Callable[[], float], give_up: bool = False
    ) -> DocumentAction:
        """Take the job's lease and run its pages while ``seconds_left() > 0`` (see the module doc)."""
        log = {
            "tenant_id": work.tenant_id,
            "data_source_id": work.data_source_id,
            "sync_job_id": work.sync_job_id,
        }
        job = self._sources.get_job(work.tenant_id, work.data_source_id, work.sync_job_id)
        now = self._clock()
        if job is None or job.finished or not lease_expired(job, now):
            logger.info(
                "sync message skipped", extra={**log, "reason": "finished or held" if job else "absent"}
            )
            return DocumentAction.SYNC_SKIPPED
        source = self._sources.get_data_source(work.tenant_id, work.data_source_id)
        try:
            job = self._sources.put_job(
                job.model_copy(
                    update={
                        "status": SyncStatus.RUNNING,
                        "started_at": job.started_at or now,
                        "lease_until": now + self._lease,
                    }
                ),
                expected_version=job.version,
            )
        except ConflictError:
            logger.info("sync message skipped", extra={**log, "reason": "taken by another worker"})
            return DocumentAction.SYNC_SKIPPED
        if source is None:
            self._finish(job, SyncStatus.FAILED, "The data source was deleted.")
            return DocumentAction.SYNC_FINISHED
        progress = _Progress(job)
        try:
            return self._run_pages(source, progress, work, seconds_left, log)
        except ResourceUnavailableError:
            self._finish(progress.job, SyncStatus.FAILED, "The knowledge base is no longer available.")
            return DocumentAction.SYNC_FINISHED
        except KnowledgeError as error:
            stored = self._sources.get_job(work.tenant_id, work.data_source_id, work.sync_job_id)
            if stored is None or stored.version != progress.job.version:
                logger.warning("sync lease lost", extra=log)  # another worker took the job over
                return DocumentAction.SYNC_SKIPPED
            if give_up:
                self._finish(
                    progress.job, SyncStatus.FAILED, f"Stopped after repeated failures ({error.code})."
                )
                return DocumentAction.SYNC_FINISHED
            self._sources.put_job(
                progress.job.model_copy(update={"lease_until": None}), expected_version=progress.job.version
            )
            logger.warning("sync step failed; retried", extra={**log, "error_code": error.code})
            raise

    def _run_pages(
        self,
        source: DataSource,
        progress: _Progress,
        work: SyncWork,
        seconds_left: Callable[[], float],
        log: dict[str, str],
    ) -> DocumentAction:
        stepped = False  # every delivery moves the job by a page at least, however late it comes
        while progress.job.cursor.phase is not SyncPhase.DONE:
            job = progress.job
            if stepped and seconds_left() <= 0:
                self._sources.put_job(
                    job.model_copy(update={"lease_until": None}), expected_version=job.version
                )
                if self._queue is not None:
                    self._queue.send(work)
                logger.info("sync paused", extra={**log, "pages": job.cursor.pages})
                return DocumentAction.SYNC_STEPPED
            started = time.monotonic()
            progress.job = job = self._step(source, job)
            stepped = True
            logger.info(
                "sync page stored",
                extra={
                    **log,
                    "phase": job.cursor.phase.value,
                    "pages": job.cursor.pages,
                    "seconds": round(time.monotonic() - started, 3),
                    **job.counts.model_dump(),
                },
            )
        self._finish(progress.job, SyncStatus.SUCCEEDED, None)
        logger.info("sync finished", extra={**log, **progress.job.counts.model_dump()})
        return DocumentAction.SYNC_FINISHED

    def _finish(self, job: SyncJob, status: SyncStatus, error: str | None) -> None:
        self._sources.put_job(
            job.model_copy(
                update={
                    "status": status,
                    "error": error,
                    "finished_at": self._clock(),
                    "lease_until": None,
                    "cursor": job.cursor.model_copy(update={"phase": SyncPhase.DONE}),
                }
            ),
            expected_version=job.version,
        )

    def _step(self, source: DataSource, job: SyncJob) -> SyncJob:
        cursor = job.cursor
        if cursor.phase is SyncPhase.SWEEPING:
            gone = self._sources.synced_between(
                source.tenant_id,
                source.data_source_id,
                after=cursor.last_key,
                through=None,
                limit=SWEEP_BATCH,
            )
            for record in gone:
                self._remove(source, record)
            done = len(gone) < SWEEP_BATCH
            moved = SyncCursor(
                phase=SyncPhase.DONE if done else SyncPhase.SWEEPING,
                last_key=gone[-1].key if gone else cursor.last_key,
                pages=cursor.pages,
            )
            updated = job.recorded(SyncCounts(deleted=len(gone)), []).model_copy(update={"cursor": moved})
            return self._sources.put_job(updated, expected_version=job.version)
        page = self._bucket.list_page(
            source.bucket, source.prefix, continuation_token=cursor.continuation_token, limit=self._page_size
        )
        counts = SyncCounts()
        failures: list[ObjectFailure] = []
        selected = [listed for listed in page.objects if source.holds(listed.key)]
        for listed in selected:
            result = self._sync_object(source, listed, job.sync_job_id)
            counts = counts.plus(_count(result))
            if result.failure is not None:
                failures.append(result.failure)
        last_key = page.objects[-1].key if page.objects else cursor.last_key
        if last_key is not None:
            kept = {listed.key for listed in selected}
            after = cursor.last_key
            while True:
                between = self._sources.synced_between(
                    source.tenant_id, source.data_source_id, after=after, through=last_key, limit=SWEEP_BATCH
                )
                for record in between:
                    if record.key not in kept:
                        self._remove(source, record)
                        counts = counts.plus(SyncCounts(deleted=1))
                if len(between) < SWEEP_BATCH:
                    break
                after = between[-1].key
        moved = SyncCursor(
            phase=SyncPhase.LISTING if page.next_token is not None else SyncPhase.SWEEPING,
            continuation_token=page.next_token,
            last_key=last_key,
            pages=cursor.pages + 1,
        )
        updated = job.recorded(counts, failures).model_copy(update={"cursor": moved})
        return self._sources.put_job(updated, expected_version=job.version)

    # -- one object --------------------------------------------------------------------------------

    def _sync_object(self, source: DataSource, listed: ListedObject, sync_job_id: str | None) -> _Result:
        """Ingest ``listed`` unless its record has its ETag; a failure is a result, never an error
        (but the store's and bucket's own errors, which the job retries)."""
        problem = key_problem(listed.key)
        if problem is not None:
            return _failed(listed.key, problem, "The key is longer than a data source can record.")
        record = self._sources.get_synced(source.tenant_id, source.data_source_id, listed.key)
        if record is not None and record.etag == listed.etag:
            if sync_job_id is not None and record.sync_job_id == sync_job_id:
                return _Result(record.outcome)
            return _Result(SyncOutcome.UNCHANGED)
        read = self._read(source, listed)
        if isinstance(read, _Result):
            return read
        fetched, converted = read
        title = (converted.title or "").strip()[:TITLE_MAX_CHARS] or title_from_key(listed.key)
        upserted = upsert_by_external_id(
            self._catalog,
            source.tenant_id,
            source.knowledge_base_id,
            Document(
                external_id=source.external_id(listed.key),
                title=title,
                content=converted.content,
                source=Source(uri=source_uri(source.bucket, listed.key), title=title),
                publish=True,
                segments=converted.segments,
            ),
        )
        if record is None:
            outcome = SyncOutcome.ADDED
        elif upserted.outcome is UpsertOutcome.UNCHANGED:
            outcome = SyncOutcome.UNCHANGED
        else:
            outcome = SyncOutcome.UPDATED
        self._sources.put_synced(
            source.tenant_id,
            source.data_source_id,
            SyncedObject(
                key=listed.key,
                etag=fetched.etag,
                version_id=fetched.version_id,
                knowledge_item_id=upserted.item.knowledge_item_id,
                knowledge_revision_id=upserted.revision_id,
                sync_job_id=sync_job_id,
                outcome=outcome,
                synced_at=self._clock(),
            ),
        )
        return _Result(outcome)

    def _read(
        self, source: DataSource, listed: ListedObject
    ) -> tuple[FetchedObject, ConvertedDocument] | _Result:
        """The object's bytes and text, or the failure that stops it (see ``_sync_object``)."""
        refused = self._refusal(listed)
        if refused is not None:
            return refused
        fetched = self._bucket.fetch(source.bucket, listed.key)
        if fetched is None:
            return _failed(listed.key, FailureReason.UNREADABLE, "The object was deleted while it was read.")
        if len(fetched.data) > self._max_bytes:
            return _failed(
                listed.key,
                FailureReason.TOO_LARGE,
                f"{len(fetched.data):,} bytes; the limit is {self._max_bytes:,} bytes.",
            )
        try:
            converted = self._converter.convert(listed.key, fetched.data)
        except DocumentTooLargeError as error:
            return _failed(listed.key, FailureReason.TOO_LARGE, error.message)
        except ConversionError as error:
            return _failed(listed.key, FailureReason.CONVERSION_FAILED, error.message)
        except Exception as error:  # a converter's bug must not stop the job: the object fails alone
            logger.warning(
                "conversion failed unexpectedly",
                extra={"data_source_id": source.data_source_id, "error_type": type(error).__name__},
            )
            return _failed(listed.key, FailureReason.CONVERSION_FAILED, "The document could not be read.")
        if len(converted.content) > self._max_chars:
            return _failed(
                listed.key,
                FailureReason.REJECTED,
                f"{len(converted.content):,} characters of text; the limit is {self._max_chars:,}.",
            )
        problem = segments_problem(converted.segments, len(converted.content))
        if problem is not None:
            return _failed(
                listed.key,
                FailureReason.REJECTED,
                f"The converted document's locators are invalid: {problem}.",
            )
        return fetched, converted

    def _refusal(self, listed: ListedObject) -> _Result | None:
        """The failure of an object refused before it is read (its type, its listed size)."""
        suffix = posixpath.splitext(listed.key)[1].lower()
        if suffix not in self._converter.suffixes():
            return _failed(
                listed.key,
                FailureReason.UNSUPPORTED_TYPE,
                f"{suffix or 'No suffix'}: not a supported format.",
            )
        if listed.size > self._max_bytes:
            return _failed(
                listed.key,
                FailureReason.TOO_LARGE,
                f"{listed.size:,} bytes; the limit is {self._max_bytes:,} bytes.",
            )
        return None

    def _remove(self, source: DataSource, record: SyncedObject) -> None:
        """Archive the item of an object gone from the bucket, then forget the record."""
        external_id = source.external_id(record.key)
        for _ in range(MAX_ATTEMPTS):
            item = self._catalog.find_item_by_external_id(
                source.tenant_id, source.knowledge_base_id, external_id
            )
            if item is None:
                break
            try:
                self._catalog.archive_item(
                    item.tenant_id, item.knowledge_item_id, expected_version=item.version
                )
                break
            except ConflictError:
                continue
            except ResourceUnavailableError:
                break  # archived meanwhile
        self._sources.delete_synced(source.tenant_id, source.data_source_id, record.key)

    # -- events ------------------------------------------------------------------------------------

    def apply_events(self, notification: S3Notification, *, message_id: str) -> DocumentAction:
        """Reconcile every key the notification names (see the module doc)."""
        rejected: list[ObjectFailure] = []
        applied = False
        for record in notification.Records:
            bucket, key = record.s3.bucket.name, record.s3.object.decoded_key
            for source in self._sources.data_sources_of_bucket(bucket):
                if not source.holds(key):
                    continue
                applied = True
                head = self._bucket.head(bucket, key)
                log = {
                    "message_id": message_id,
                    "tenant_id": source.tenant_id,
                    "data_source_id": source.data_source_id,
                    "event": record.eventName,
                }
                if head is None:
                    synced = self._sources.get_synced(source.tenant_id, source.data_source_id, key)
                    if synced is not None:
                        self._remove(source, synced)
                    logger.info("document removed", extra={**log, "recorded": synced is not None})
                    continue
                result = self._sync_object(source, head, None)
                if result.failure is not None:
                    rejected.append(result.failure)
                logger.info(
                    "document reconciled",
                    extra={**log, "outcome": result.outcome.value if result.outcome else "failed"},
                )
        if rejected:
            logger.warning(
                "document rejected",
                extra={"message_id": message_id, "reasons": [failure.reason.value for failure in rejected]},
            )
            first = rejected[0]
            failure = DocumentTooLargeError if first.reason is FailureReason.TOO_LARGE else ConversionError
            raise failure(f"{first.key}: {first.message}")
        return DocumentAction.EVENT_APPLIED if applied else DocumentAction.EVENT_IGNORED


def _failed(key: str, reason: FailureReason, message: str) -> _Result:
    return _Result(None, ObjectFailure(key=key, reason=reason, message=message))


def _count(result: _Result) -> SyncCounts:
    if result.failure is not None:
        return SyncCounts(scanned=1, failed=1)
    assert result.outcome is not None
    return SyncCounts(scanned=1, **{result.outcome.value: 1})
