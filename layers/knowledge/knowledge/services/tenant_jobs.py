"""What the tenant jobs (exports, imports, erasures: ``knowledge.domain.bundles``) share: the store
they read and write, what one work message did, and a worker's take of a job."""

from __future__ import annotations

from datetime import datetime, timedelta
from enum import StrEnum
from typing import Protocol

from knowledge.domain.bundles import BundleJob, BundleJobKind, BundleJobStatus
from knowledge.observability import logger
from knowledge.ports import BundleStore, CorpusStore, MemoryStore


class TenantStore(CorpusStore, MemoryStore, BundleStore, Protocol):
    """What the tenant jobs read and write: knowledge, memory and the jobs' records."""


class JobAction(StrEnum):
    """What one work message of a tenant job did."""

    EXPORTED = "exported"
    IMPORTED = "imported"
    ERASED = "erased"
    PAUSED = "paused"
    """Out of time: the progress is stored and the next step queued."""
    SKIPPED = "skipped"
    FAILED = "failed"


def take(
    store: BundleStore,
    tenant_id: str,
    job_id: str,
    kinds: tuple[BundleJobKind, ...],
    *,
    now: datetime,
    lease: timedelta,
) -> BundleJob | None:
    """The job, stored ``running`` with a lease until ``now + lease`` (its first start kept), when a
    worker may take it (``BundleJob.takeable``) and it is of one of ``kinds``; ``None`` otherwise
    (absent, finished, held by another worker). ``ConflictError`` when another worker took it
    between the read and the write."""
    job = store.get_bundle_job(tenant_id, job_id)
    if job is None or job.kind not in kinds or job.finished or not job.takeable(now):
        logger.info("tenant job work skipped", extra={"tenant_id": tenant_id, "job_id": job_id})
        return None
    running = job.model_copy(
        update={
            "status": BundleJobStatus.RUNNING,
            "started_at": job.started_at or now,
            "lease_until": now + lease,
        }
    )
    return store.put_bundle_job(running, expected_version=job.version)
