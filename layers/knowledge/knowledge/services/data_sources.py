"""Data sources on the write API (DESIGN §6, data sources): create, list, read and delete a base's
S3 data sources, start a sync and read its job.

Rights follow the base's: writing (create, delete, sync) needs ``knowledge:write`` and a base the
caller sees, as adding items does; reading needs ``knowledge:read`` and a visible base. A data
source or job of another base, another tenant or none at all is one answer,
``ResourceUnavailableError``. A bucket the deployment does not grant is ``BucketNotAllowedError``.
"""

from __future__ import annotations

from datetime import datetime

from knowledge.contract.data_sources import (
    CreateDataSourceRequest,
    DataSourceList,
    DataSourceResponse,
    SyncJobResponse,
    SyncWork,
)
from knowledge.domain import ids
from knowledge.domain.data_sources import DataSource, SyncJob
from knowledge.domain.models import KnowledgeBase, Permission, Principal
from knowledge.errors import BucketNotAllowedError, DependencyUnavailableError, ResourceUnavailableError
from knowledge.observability import logger
from knowledge.ports import BaseStore, Clock, DataSourceStore, SyncWorkQueue
from knowledge.services.access import find_base, require_scope


class DataSourceService:
    """``queue`` ``None``: syncs cannot start (``DependencyUnavailableError``)."""

    def __init__(
        self,
        bases: BaseStore,
        sources: DataSourceStore,
        queue: SyncWorkQueue | None,
        clock: Clock,
        *,
        allowed_buckets: frozenset[str],
    ) -> None:
        self._bases = bases
        self._sources = sources
        self._queue = queue
        self._clock = clock
        self._allowed = allowed_buckets

    # -- checks run before the write routes (``knowledge.api.writes``) ----------------------------

    def authorize_write(self, principal: Principal, knowledge_base_id: str) -> None:
        self._base(principal, knowledge_base_id, Permission.WRITE)

    # -- routes ------------------------------------------------------------------------------------

    def create(
        self, principal: Principal, knowledge_base_id: str, request: CreateDataSourceRequest
    ) -> DataSourceResponse:
        base = self._base(principal, knowledge_base_id, Permission.WRITE)
        if request.bucket not in self._allowed:
            raise BucketNotAllowedError(
                "The deployment grants no read on this bucket; add it to DocumentBuckets.",
                {"bucket": request.bucket},
            )
        source = DataSource(
            data_source_id=ids.new_data_source_id(),
            tenant_id=principal.tenant_id,
            knowledge_base_id=base.knowledge_base_id,
            bucket=request.bucket,
            prefix=request.prefix,
            include=tuple(request.include),
            created_by=principal.subject_id,
            created_at=self._clock(),
        )
        self._sources.create_data_source(source)
        logger.info(
            "data source created",
            extra={
                "tenant_id": source.tenant_id,
                "knowledge_base_id": source.knowledge_base_id,
                "data_source_id": source.data_source_id,
            },
        )
        return DataSourceResponse.of(source)

    def list(self, principal: Principal, knowledge_base_id: str) -> DataSourceList:
        base = self._base(principal, knowledge_base_id, Permission.READ)
        found = self._sources.list_data_sources(principal.tenant_id, base.knowledge_base_id)
        return DataSourceList(data_sources=[DataSourceResponse.of(source) for source in found])

    def get(self, principal: Principal, knowledge_base_id: str, data_source_id: str) -> DataSourceResponse:
        return DataSourceResponse.of(
            self._source(principal, knowledge_base_id, data_source_id, Permission.READ)
        )

    def delete(self, principal: Principal, knowledge_base_id: str, data_source_id: str) -> None:
        """Remove the data source, its jobs and records; the items it wrote stay in the base."""
        source = self._source(principal, knowledge_base_id, data_source_id, Permission.WRITE)
        self._sources.delete_data_source(source.tenant_id, source.data_source_id)

    def start_sync(
        self, principal: Principal, knowledge_base_id: str, data_source_id: str
    ) -> SyncJobResponse:
        source = self._source(principal, knowledge_base_id, data_source_id, Permission.WRITE)
        if self._queue is None:
            raise DependencyUnavailableError("Syncs need the document queue (DOCUMENT_QUEUE_URL).")
        job = SyncJob(
            sync_job_id=ids.new_sync_job_id(),
            data_source_id=source.data_source_id,
            tenant_id=source.tenant_id,
            knowledge_base_id=source.knowledge_base_id,
            created_at=self._clock(),
        )
        self._sources.create_job(job)
        self._queue.send(
            SyncWork(
                op="sync",
                tenant_id=job.tenant_id,
                data_source_id=job.data_source_id,
                sync_job_id=job.sync_job_id,
            )
        )
        logger.info(
            "sync queued",
            extra={
                "tenant_id": job.tenant_id,
                "data_source_id": job.data_source_id,
                "sync_job_id": job.sync_job_id,
            },
        )
        return SyncJobResponse.of(job)

    def get_job(self, principal: Principal, knowledge_base_id: str, sync_job_id: str) -> SyncJobResponse:
        """The job, found through the base's data sources (a job id names no data source)."""
        base = self._base(principal, knowledge_base_id, Permission.READ)
        ids.require_well_formed(sync_job_id, ids.SYNC_JOB_PREFIX, "sync_job_id")
        for source in self._sources.list_data_sources(principal.tenant_id, base.knowledge_base_id):
            job = self._sources.get_job(principal.tenant_id, source.data_source_id, sync_job_id)
            if job is not None:
                return SyncJobResponse.of(job)
        raise ResourceUnavailableError()

    # -- lookups -----------------------------------------------------------------------------------

    def _base(self, principal: Principal, knowledge_base_id: str, scope: Permission) -> KnowledgeBase:
        require_scope(principal, scope)
        return find_base(self._bases, principal, knowledge_base_id)

    def _source(
        self, principal: Principal, knowledge_base_id: str, data_source_id: str, scope: Permission
    ) -> DataSource:
        base = self._base(principal, knowledge_base_id, scope)
        ids.require_well_formed(data_source_id, ids.DATA_SOURCE_PREFIX, "data_source_id")
        source = self._sources.get_data_source(principal.tenant_id, data_source_id)
        if source is None or source.knowledge_base_id != base.knowledge_base_id:
            raise ResourceUnavailableError()
        return source


def lease_expired(job: SyncJob, now: datetime) -> bool:
    """True when no worker holds ``job`` (never leased, released, or its lease ran out)."""
    return job.lease_until is None or job.lease_until <= now
