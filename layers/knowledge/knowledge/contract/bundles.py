"""Export and import on the write API (DESIGN §9 "Export and import"): the requests, the job
answers, the document queue's bundle work, and the lines of a bundle.

- ``POST /v1/exports`` takes ``ExportRequest`` and answers ``BundleJobResponse`` (202, ``queued``);
- ``POST /v1/imports`` takes ``ImportRequest`` and answers ``BundleJobResponse`` (201,
  ``awaiting_upload``, with ``upload_url``: PUT the bundle there), then
  ``POST /v1/imports/{import_id}/start`` queues it (202);
- ``GET /v1/exports/{export_id}`` and ``GET /v1/imports/{import_id}`` answer the job; a succeeded
  export carries ``download_url``.

A bundle is JSON Lines (UTF-8, one JSON object a line), in this order:

1. ``{"kind": "bundle", "format": "knowledge-bundle", "format_version": 1, "tenant_id",
   "exported_at", "embedding": {"model_id", "dimension"}, "selection": {...}}``;
2. ``{"kind": "base", "base": {...}}`` per knowledge base, by id;
3. ``{"kind": "item", "item": {...}, "revisions": [{"revision": {...}, "content": "..."}],
   "states": [...]}`` per item (every revision with its whole content, oldest first, and the
   item's state history), by base then id;
4. ``{"kind": "note", "note": {...}, "versions": [...]}`` per note (its current state and every
   version), by id;
5. ``{"kind": "pin", "pin": {...}}`` per pin, by note id;
6. ``{"kind": "vectors", "vectors": {"<embedding key>": [floats]}}`` lines (``include_vectors``):
   cached embeddings of the bundle's texts, keyed as the embedding cache keys them;
7. ``{"kind": "end", "counts": {"base": n, "item": n, ...}}``: a bundle without it was cut short.

Records carry no ``tenant_id`` (the importing tenant is the caller's) and no index state
(``indexed_revision_id``, ``indexed_version``); revisions carry no page layout (the importing
store pages content its own way). Ids, versions and timestamps are kept, so history (``as_of``)
and provenance survive a round trip.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, field_validator

from knowledge.domain import ids
from knowledge.domain.bundles import BundleJob, BundleJobKind, BundleJobStatus, BundleSelection
from knowledge.domain.memory.notes import PATH_MAX_CHARS

BUNDLE_FORMAT = "knowledge-bundle"
BUNDLE_FORMAT_VERSION = 1
MAX_BASES_PER_EXPORT = 100
CONFLICTS_KEPT = 50
"""An import's answer lists its first 50 conflicts (``counts`` counts them all)."""

JobId = Annotated[str, Field(min_length=1, max_length=64)]


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ExportRequest(_Request):
    """What to export: ``knowledge_base_ids`` (default: every base of the tenant; ``[]``: none),
    notes under ``path_prefix`` (default: every note) unless ``include_notes`` is false, and the
    cached vectors when ``include_vectors`` (a same-model import then embeds nothing again)."""

    knowledge_base_ids: Annotated[list[str], Field(max_length=MAX_BASES_PER_EXPORT)] | None = None
    path_prefix: Annotated[str, Field(min_length=1, max_length=PATH_MAX_CHARS)] | None = None
    include_notes: StrictBool = True
    include_vectors: StrictBool = False

    @field_validator("knowledge_base_ids")
    @classmethod
    def _base_ids(cls, value: list[str] | None) -> list[str] | None:
        if value is not None:
            for knowledge_base_id in value:
                if not ids.is_well_formed(knowledge_base_id, ids.KB_PREFIX):
                    raise ValueError(ids.shape_of(ids.KB_PREFIX))
        return value

    @field_validator("path_prefix")
    @classmethod
    def _path(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith("/"):
            raise ValueError("must be a note path: it starts with '/'")
        return value

    def selection(self) -> BundleSelection:
        return BundleSelection(
            knowledge_base_ids=None
            if self.knowledge_base_ids is None
            else tuple(sorted(set(self.knowledge_base_ids))),
            path_prefix=self.path_prefix,
            include_notes=self.include_notes,
            include_vectors=self.include_vectors,
        )


class ImportRequest(_Request):
    """An import of a bundle the caller uploads next (nothing to choose yet: every record of the
    bundle goes into the caller's tenant)."""


class BundleJobResponse(BaseModel):
    """An export or import job. ``status``: ``awaiting_upload`` (an import before its start),
    ``queued``, ``running``, ``succeeded`` or ``failed`` (``error`` says why). ``counts`` holds
    records by kind (an import: ``<kind>.imported``, ``<kind>.present`` for records the tenant
    already had, ``<kind>.conflicts``); ``conflicts`` names the first 50 records refused (an
    external id or semantic key another record holds). ``download_url`` (a succeeded export) and
    ``upload_url`` (an import awaiting its upload) are presigned and expire at ``url_expires_at``."""

    job_id: str
    kind: BundleJobKind
    status: BundleJobStatus
    selection: BundleSelection | None = None
    counts: dict[str, int]
    conflicts: list[str]
    bytes: int
    error: str | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    download_url: str | None = None
    upload_url: str | None = None
    url_expires_at: datetime | None = None

    @classmethod
    def of(
        cls,
        job: BundleJob,
        *,
        download_url: str | None = None,
        upload_url: str | None = None,
        url_expires_at: datetime | None = None,
    ) -> BundleJobResponse:
        return cls(
            job_id=job.job_id,
            kind=job.kind,
            status=job.status,
            selection=job.selection if job.kind is BundleJobKind.EXPORT else None,
            counts=dict(sorted(job.counts.items())),
            conflicts=list(job.conflicts),
            bytes=job.bytes,
            error=job.error,
            created_at=job.created_at,
            started_at=job.started_at,
            finished_at=job.finished_at,
            download_url=download_url,
            upload_url=upload_url,
            url_expires_at=url_expires_at,
        )


class BundleWork(BaseModel):
    """Run one export, import or erasure job (the document queue; the job's own record says
    what)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    op: Literal["export", "import", "erase"]
    tenant_id: Annotated[str, Field(min_length=1, max_length=128, pattern=r"^[^#\s]+$")]
    job_id: str

    @field_validator("job_id")
    @classmethod
    def _job_id(cls, value: str) -> str:
        prefixes = (ids.EXPORT_PREFIX, ids.IMPORT_PREFIX, ids.ERASURE_PREFIX)
        if not any(ids.is_well_formed(value, prefix) for prefix in prefixes):
            raise ValueError("must be an export, import or erasure id")
        return value


class BundleHeader(BaseModel):
    """The first line of a bundle."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["bundle"] = "bundle"
    format: Literal["knowledge-bundle"] = "knowledge-bundle"
    format_version: int
    tenant_id: str
    exported_at: datetime
    embedding: dict[str, Any]
    selection: BundleSelection


class BundleEnd(BaseModel):
    """The last line of a bundle: the records it holds, by kind."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["end"] = "end"
    counts: dict[str, int]
