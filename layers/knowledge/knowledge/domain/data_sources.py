"""S3 data sources and their sync jobs (DESIGN §6, data sources).

A data source names a bucket, a key prefix and include globs, and belongs to one base of one
tenant. A sync job walks the bucket's listing under the prefix page by page; after each page its
progress (the listing's continuation token, the last key seen and the counts) is stored with the
job, so a job resumes where it stopped. Each object that made it into the base has a
``SyncedObject`` record (its ETag and the item holding it): an object whose ETag is the recorded one
is ``unchanged`` and costs no write. Keys come from S3's listing in UTF-8 byte order, which is also
the order of DynamoDB's string sort keys, so the records between two listed keys that the listing
did not return are the objects deleted from the bucket.

Sizes are bytes; times are aware UTC datetimes.
"""

from __future__ import annotations

import fnmatch
import posixpath
import re
from datetime import datetime
from enum import StrEnum
from typing import Annotated, Literal
from urllib.parse import quote

from pydantic import BaseModel, ConfigDict, Field

from knowledge.domain.models import EXTERNAL_ID_MAX_CHARS, TITLE_MAX_CHARS

BUCKET_PATTERN = r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$"
"""S3 bucket names: 3 to 63 lower-case letters, digits, dots and hyphens."""
PREFIX_MAX_BYTES = 512
INCLUDE_MAX_GLOBS = 20
GLOB_MAX_CHARS = 200
KEY_MAX_BYTES = 1_000
"""S3 allows 1,024-byte keys; a key's record sorts under ``OBJ#{key}`` in a 1,024-byte sort key."""
FAILURES_KEPT = 50
"""Per-object failures a job keeps (the first ones); ``counts.failed`` counts them all."""
DEFAULT_INCLUDE = ("**",)


class SyncStatus(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"


class SyncPhase(StrEnum):
    LISTING = "listing"
    """Reading the bucket's listing, page by page, and ingesting what changed."""
    SWEEPING = "sweeping"
    """Archiving the items of recorded objects past the listing's last key (deleted from the bucket)."""
    DONE = "done"


class FailureReason(StrEnum):
    """Why one object was not ingested (``ObjectFailure.reason``)."""

    TOO_LARGE = "too_large"
    UNSUPPORTED_TYPE = "unsupported_type"
    KEY_TOO_LONG = "key_too_long"
    CONVERSION_FAILED = "conversion_failed"
    UNREADABLE = "unreadable"
    REJECTED = "rejected"
    """The base refused the content (too long, say)."""


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


Glob = Annotated[str, Field(min_length=1, max_length=GLOB_MAX_CHARS)]


class DataSource(_Frozen):
    """An S3 bucket prefix feeding one base. ``include`` globs match the key relative to ``prefix``
    (``*`` stays within a folder, ``**`` crosses folders; ``**`` alone matches everything)."""

    data_source_id: str
    tenant_id: str
    knowledge_base_id: str
    type: Literal["s3"] = "s3"
    bucket: str
    prefix: str = ""
    include: tuple[Glob, ...] = DEFAULT_INCLUDE
    created_by: str
    created_at: datetime
    version: int = 1

    def holds(self, key: str) -> bool:
        """True when ``key`` is under the prefix and matches an include glob."""
        return key.startswith(self.prefix) and matches(key[len(self.prefix) :], self.include)

    def external_id(self, key: str) -> str:
        """The external id of the item holding ``key``: the data source and the key, so that two
        data sources of one base never write each other's items."""
        return f"{self.data_source_id}:{key}"


class SyncCounts(_Frozen):
    """What a job did so far: every object listed under the prefix that the globs select is
    ``scanned``, then exactly one of ``added``, ``updated``, ``unchanged`` or ``failed``;
    ``deleted`` counts recorded objects gone from the bucket (their items archived)."""

    scanned: int = 0
    added: int = 0
    updated: int = 0
    deleted: int = 0
    unchanged: int = 0
    failed: int = 0

    def plus(self, other: SyncCounts) -> SyncCounts:
        return SyncCounts(
            **{name: getattr(self, name) + getattr(other, name) for name in SyncCounts.model_fields}
        )


class ObjectFailure(_Frozen):
    """One object that was not ingested: its key, why (``reason``) and a sentence for people."""

    key: str
    reason: FailureReason
    message: str


class SyncCursor(_Frozen):
    """Where a job stands: the phase, the listing's continuation token (``None``: the first page,
    or the listing is done), the last key the listing gave (the sweep starts after it) and the
    pages done."""

    phase: SyncPhase = SyncPhase.LISTING
    continuation_token: str | None = None
    last_key: str | None = None
    pages: int = 0


class SyncJob(_Frozen):
    """One sync of a data source. ``version`` moves with every stored step; ``lease_until`` is when
    the worker holding the job gives it up if it has not stored a step by then."""

    sync_job_id: str
    data_source_id: str
    tenant_id: str
    knowledge_base_id: str
    status: SyncStatus = SyncStatus.QUEUED
    cursor: SyncCursor = SyncCursor()
    counts: SyncCounts = SyncCounts()
    failures: tuple[ObjectFailure, ...] = ()
    error: str | None = None
    created_at: datetime
    started_at: datetime | None = None
    finished_at: datetime | None = None
    lease_until: datetime | None = None
    version: int = 1

    @property
    def finished(self) -> bool:
        return self.status in (SyncStatus.SUCCEEDED, SyncStatus.FAILED)

    def recorded(self, counts: SyncCounts, failures: list[ObjectFailure]) -> SyncJob:
        """This job with ``counts`` added and the first ``FAILURES_KEPT`` failures kept."""
        kept = (*self.failures, *failures)[:FAILURES_KEPT]
        return self.model_copy(update={"counts": self.counts.plus(counts), "failures": kept})


class SyncOutcome(StrEnum):
    ADDED = "added"
    UPDATED = "updated"
    UNCHANGED = "unchanged"


class SyncedObject(_Frozen):
    """What was last ingested from one key: its ETag (and version id when the bucket versions), the
    item holding it, and which job wrote this record with what outcome (so that a job repeating a
    page after a crash counts what it did the first time)."""

    key: str
    etag: str
    version_id: str | None = None
    knowledge_item_id: str
    knowledge_revision_id: str
    sync_job_id: str | None = None
    outcome: SyncOutcome
    synced_at: datetime


class ListedObject(_Frozen):
    """One entry of a bucket listing: key, ETag (quotes removed) and size in bytes."""

    key: str
    etag: str
    size: int


class ListingPage(_Frozen):
    """One page of a listing, in key order; ``next_token`` ``None`` on the last page."""

    objects: tuple[ListedObject, ...]
    next_token: str | None = None


class FetchedObject(_Frozen):
    """An object's bytes with the ETag and version id they were read at."""

    key: str
    data: bytes
    etag: str
    version_id: str | None = None


def matches(relative_key: str, globs: tuple[str, ...]) -> bool:
    """True when ``relative_key`` matches one of ``globs``: ``**`` matches any run of characters
    (folders included), ``*`` and ``?`` stay within one folder, ``[...]`` is a class."""
    return any(_glob_regex(glob).fullmatch(relative_key) is not None for glob in globs)


def _glob_regex(glob: str) -> re.Pattern[str]:
    parts = glob.split("**")
    # fnmatch.translate lets ``*`` cross ``/``; within one part, it must not.
    translated = [fnmatch.translate(part)[4:-3].replace(".*", "[^/]*") for part in parts]
    return re.compile(".*".join(translated), re.DOTALL)


def source_uri(bucket: str, key: str) -> str:
    """``s3://bucket/key`` with the key percent-encoded (spaces and controls never reach a link)."""
    return f"s3://{bucket}/{quote(key, safe='/')}"


def title_from_key(key: str) -> str:
    """A title when the document has none: the key's file name without its suffix."""
    name = posixpath.basename(key) or key
    stem = name.rsplit(".", 1)[0] if "." in name.lstrip(".") else name
    return (stem.strip() or name)[:TITLE_MAX_CHARS]


def key_problem(key: str) -> FailureReason | None:
    """Why an object with ``key`` cannot be synced, or ``None``."""
    if len(key.encode("utf-8")) > KEY_MAX_BYTES or len(key) + 30 > EXTERNAL_ID_MAX_CHARS:
        return FailureReason.KEY_TOO_LONG
    return None


def clean_etag(etag: str) -> str:
    """An ETag without the quotes S3 puts around it."""
    return etag.strip('"')
