"""Data sources and sync jobs on the write API (DESIGN §6, data sources), and the messages of the
document queue: sync work and S3 event notifications.

- ``POST /v1/knowledge-bases/{kb}/data-sources`` takes ``CreateDataSourceRequest`` and answers
  ``DataSourceResponse`` (201);
- ``POST /v1/knowledge-bases/{kb}/data-sources/{ds}/sync`` answers ``SyncJobResponse`` (202,
  ``status: queued``);
- ``GET /v1/knowledge-bases/{kb}/sync-jobs/{job}`` answers ``SyncJobResponse``.

The document queue carries two kinds of body: ``SyncWork`` (``{"op": "sync", ...}``, sent by the
write API and by the worker itself to go on with a job) and the S3 event notification documents
(``{"Records": [{"eventName": "ObjectCreated:Put", "s3": {"bucket": {"name"}, "object": {"key"}}}]}``
with URL-encoded keys, and the ``s3:TestEvent`` S3 sends when notifications are set up).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal
from urllib.parse import unquote_plus

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, field_validator

from knowledge.contract.bundles import BundleWork
from knowledge.domain import ids
from knowledge.domain.data_sources import (
    BUCKET_PATTERN,
    DEFAULT_INCLUDE,
    INCLUDE_MAX_GLOBS,
    PREFIX_MAX_BYTES,
    DataSource,
    Glob,
    ObjectFailure,
    SyncCounts,
    SyncJob,
    SyncPhase,
    SyncStatus,
)
from knowledge.domain.text import StrictText


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CreateDataSourceRequest(_Request):
    """An S3 data source: ``bucket`` (one the deployment grants, ``DOCUMENT_BUCKETS``), ``prefix``
    (keys starting with it; empty: the whole bucket) and ``include`` globs relative to the prefix
    (default ``["**"]``, every object)."""

    type: Literal["s3"]
    bucket: Annotated[StrictText, Field(pattern=BUCKET_PATTERN)]
    prefix: Annotated[StrictText, Field(max_length=PREFIX_MAX_BYTES)] = ""
    include: Annotated[list[Glob], Field(min_length=1, max_length=INCLUDE_MAX_GLOBS)] = list(DEFAULT_INCLUDE)

    @field_validator("prefix")
    @classmethod
    def _prefix_fits(cls, value: str) -> str:
        if len(value.encode("utf-8")) > PREFIX_MAX_BYTES:
            raise ValueError(f"prefix must be at most {PREFIX_MAX_BYTES} bytes in UTF-8")
        if any(ord(character) < 0x20 for character in value):
            raise ValueError("prefix must not contain control characters")
        return value


class DataSourceResponse(BaseModel):
    data_source_id: str
    knowledge_base_id: str
    type: Literal["s3"]
    bucket: str
    prefix: str
    include: list[str]
    created_at: datetime
    version: int

    @classmethod
    def of(cls, source: DataSource) -> DataSourceResponse:
        return cls(
            data_source_id=source.data_source_id,
            knowledge_base_id=source.knowledge_base_id,
            type=source.type,
            bucket=source.bucket,
            prefix=source.prefix,
            include=list(source.include),
            created_at=source.created_at,
            version=source.version,
        )


class DataSourceList(BaseModel):
    data_sources: list[DataSourceResponse]


class SyncJobResponse(BaseModel):
    """A sync job: ``status`` (``queued``, ``running``, ``succeeded``, ``failed``), ``phase``
    (``listing``, ``sweeping``, ``done``), the counts so far and the first 50 per-object failures
    (``counts.failed`` counts them all); ``error`` says why a ``failed`` job stopped."""

    sync_job_id: str
    data_source_id: str
    knowledge_base_id: str
    status: SyncStatus
    phase: SyncPhase
    pages: int
    counts: SyncCounts
    failures: list[ObjectFailure]
    error: str | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None

    @classmethod
    def of(cls, job: SyncJob) -> SyncJobResponse:
        return cls(
            sync_job_id=job.sync_job_id,
            data_source_id=job.data_source_id,
            knowledge_base_id=job.knowledge_base_id,
            status=job.status,
            phase=job.cursor.phase,
            pages=job.cursor.pages,
            counts=job.counts,
            failures=list(job.failures),
            error=job.error,
            created_at=job.created_at,
            started_at=job.started_at,
            finished_at=job.finished_at,
        )


# -- the document queue ---------------------------------------------------------------------------


class SyncWork(BaseModel):
    """Go on with one sync job (the job's own record says where)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    op: Literal["sync"]
    tenant_id: Annotated[str, Field(min_length=1, max_length=128, pattern=r"^[^#\s]+$")]
    data_source_id: str
    sync_job_id: str

    @field_validator("data_source_id")
    @classmethod
    def _data_source_id(cls, value: str) -> str:
        if not ids.is_well_formed(value, ids.DATA_SOURCE_PREFIX):
            raise ValueError("must be a data source id")
        return value

    @field_validator("sync_job_id")
    @classmethod
    def _sync_job_id(cls, value: str) -> str:
        if not ids.is_well_formed(value, ids.SYNC_JOB_PREFIX):
            raise ValueError("must be a sync job id")
        return value


class _Lenient(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class S3Bucket(_Lenient):
    name: str


class S3Object(_Lenient):
    key: str

    @property
    def decoded_key(self) -> str:
        """S3 URL-encodes keys in notifications (a space is ``+``)."""
        return unquote_plus(self.key)


class S3Entity(_Lenient):
    bucket: S3Bucket
    object: S3Object


class S3EventRecord(_Lenient):
    eventSource: Literal["aws:s3"]  # noqa: N815  # S3's own field name
    eventName: str  # noqa: N815
    s3: S3Entity


class S3Notification(_Lenient):
    """``Records`` of ``ObjectCreated:*`` and ``ObjectRemoved:*`` events; any event only names a key
    to reconcile with the bucket, so their order and repetition do not matter."""

    Records: Annotated[list[S3EventRecord], Field(min_length=1)]


class S3TestEvent(_Lenient):
    """What S3 sends once when notifications are configured."""

    Event: Literal["s3:TestEvent"]


DOCUMENT_MESSAGE: TypeAdapter[SyncWork | BundleWork | S3Notification | S3TestEvent] = TypeAdapter(
    SyncWork | BundleWork | S3Notification | S3TestEvent
)
"""Validates a document queue body: ``DOCUMENT_MESSAGE.validate_json(body)``."""
