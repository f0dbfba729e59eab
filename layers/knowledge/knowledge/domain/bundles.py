"""Tenant jobs (DESIGN §12): exports, imports and erasures; what a job is and the counts it keeps.

An export writes a tenant's records (or chosen bases' and a note path prefix's) to a JSONL bundle
(``knowledge.contract.bundles``); an import writes a bundle's records into the caller's tenant; an
erasure deletes every base, item and note of the tenant (``knowledge.domain.erasure``). All
run as jobs: ``queued`` when asked for, ``running`` while the document queue's consumer works on
them, then ``succeeded`` or ``failed`` (``error`` says why). ``version`` moves with every stored
step (conditional writes); ``object_key`` names the bundle in the bundle bucket.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from knowledge.domain.erasure import ErasureProgress


class BundleJobKind(StrEnum):
    EXPORT = "export"
    IMPORT = "import"
    ERASE = "erase"


class BundleJobStatus(StrEnum):
    AWAITING_UPLOAD = "awaiting_upload"
    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"


class BundleSelection(BaseModel):
    """What an export takes: every base when ``knowledge_base_ids`` is ``None`` (none when it is
    empty), every note under ``path_prefix`` (``None``: every note; notes are left out when
    ``include_notes`` is false), and the cached vectors of the chunks when ``include_vectors``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    knowledge_base_ids: tuple[str, ...] | None = None
    path_prefix: str | None = None
    include_notes: bool = True
    include_vectors: bool = False


class BundleJob(BaseModel):
    """One export, import or erasure of a tenant. ``counts`` holds records by kind (exported, or
    for an import ``<kind>.imported``, ``<kind>.present`` and ``<kind>.conflicts``); ``bytes`` is
    the bundle's size once written (export) or read (import); ``erasure`` is an erasure's progress
    (``knowledge.domain.erasure``; an erasure has no bundle, so no ``object_key``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tenant_id: str
    job_id: str
    kind: BundleJobKind
    status: BundleJobStatus
    requested_by: str
    selection: BundleSelection = BundleSelection()
    object_key: str = ""
    counts: dict[str, int] = Field(default_factory=dict)
    conflicts: tuple[str, ...] = ()
    bytes: int = Field(default=0, ge=0)
    error: str | None = None
    lines_done: int = Field(default=0, ge=0)
    """An import's bundle lines applied so far (its header included): a resumed run goes on after them."""
    created_at: datetime
    started_at: datetime | None = None
    finished_at: datetime | None = None
    lease_until: datetime | None = None
    """When the worker running the job gives it up unless it stored a step by then."""
    erasure: ErasureProgress | None = None
    keep_vectors: bool = False
    """An import started by a platform administrator: the bundle's vectors may go into the
    embedding cache every tenant shares (a tenant administrator's are ignored and re-embedded)."""
    version: int = Field(default=1, ge=1)

    @property
    def finished(self) -> bool:
        return self.status in (BundleJobStatus.SUCCEEDED, BundleJobStatus.FAILED)

    def takeable(self, now: datetime) -> bool:
        """Whether a worker may take the job at ``now``: ``queued``, or ``running`` with its lease
        run out (its worker stopped)."""
        if self.status is BundleJobStatus.QUEUED:
            return True
        running = self.status is BundleJobStatus.RUNNING
        return running and (self.lease_until is None or self.lease_until <= now)
