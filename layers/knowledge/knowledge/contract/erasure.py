"""Tenant erasure on the write API (DESIGN §12 "Tenant erasure"): the request and the job's answer.

- ``POST /v1/erasures`` takes ``ErasureRequest`` and answers ``ErasureResponse`` (202, ``queued``);
- ``GET /v1/erasures/{erasure_id}`` answers the job: its phase, the records erased so far and its
  receipt.

The receipt is a ``DeletionReceipt`` (``knowledge.contract.deletion``) of every purge the job made,
with one difference of scale: each entry's ``ids`` holds the first 100 ids (sorted) of its kind,
and ``count`` counts them all (each item's and note's own receipt added up, so a cached vector two
items share is counted for each). A dry run's receipt equals the real erasure's for the same state.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StrictBool, field_validator

from knowledge.contract.bundles import MAX_BASES_PER_EXPORT
from knowledge.contract.deletion import DeletedRecords, DeletionReceipt
from knowledge.domain import ids
from knowledge.domain.bundles import BundleJob, BundleJobStatus
from knowledge.domain.erasure import ErasurePhase, ErasureProgress

STORES = ("table", "index", "pins", "embedding_cache", "queued_messages")


class ErasureRequest(BaseModel):
    """An erasure of the caller's whole tenant, or with ``knowledge_base_ids`` of those bases only
    (their items and records; no note). ``dry_run``: only count what would go. A real erasure
    needs ``confirm_tenant_id`` equal to the caller's tenant id (a guard against the wrong token);
    a dry run does not."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    dry_run: StrictBool = False
    confirm_tenant_id: str | None = Field(default=None, min_length=1, max_length=128)
    knowledge_base_ids: Annotated[list[str], Field(min_length=1, max_length=MAX_BASES_PER_EXPORT)] | None = (
        None
    )

    @field_validator("knowledge_base_ids")
    @classmethod
    def _base_ids(cls, value: list[str] | None) -> list[str] | None:
        for knowledge_base_id in value or []:
            if not ids.is_well_formed(knowledge_base_id, ids.KB_PREFIX):
                raise ValueError(ids.shape_of(ids.KB_PREFIX))
        return value


class ErasureResponse(BaseModel):
    """An erasure job. ``status``: ``queued``, ``running``, ``succeeded`` or ``failed`` (``error``
    says why); ``knowledge_base_ids`` the bases chosen (``None``: the whole tenant); ``phase``:
    ``bases``, ``notes`` or ``done``; ``erased`` counts the
    records erased (or, for a dry run, that would be) so far, by kind; ``receipt`` lists them per
    store (see the module doc)."""

    erasure_id: str
    tenant_id: str
    status: BundleJobStatus
    dry_run: bool
    knowledge_base_ids: list[str] | None
    phase: ErasurePhase
    erased: dict[str, int]
    receipt: DeletionReceipt
    requested_by: str
    error: str | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None

    @classmethod
    def of(cls, job: BundleJob) -> ErasureResponse:
        progress = job.erasure or ErasureProgress()
        stores: dict[str, list[DeletedRecords]] = {store: [] for store in STORES}
        for entry in progress.tally:
            stores.setdefault(entry.store, []).append(
                DeletedRecords(
                    kind=entry.kind,
                    ids=list(entry.ids),
                    count=entry.count,
                    state=entry.state,
                )
            )
        return cls(
            erasure_id=job.job_id,
            tenant_id=job.tenant_id,
            status=job.status,
            dry_run=progress.dry_run,
            knowledge_base_ids=list(progress.base_ids or ()) if progress.chosen_bases else None,
            phase=progress.phase,
            erased=dict(sorted(progress.records.items())),
            receipt=DeletionReceipt(dry_run=progress.dry_run, **stores),
            requested_by=job.requested_by,
            error=job.error,
            created_at=job.created_at,
            started_at=job.started_at,
            finished_at=job.finished_at,
        )
