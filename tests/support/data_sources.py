"""In-memory fakes of the data source ports: ``MemoryDataSources`` (``DataSourceStore``, versioned
jobs, records in key order), ``MemoryBucket`` (``DocumentBucket``, listing in key order with integer
tokens), ``MemoryQueue`` (``SyncWorkQueue``) and ``TextConverter`` (``DocumentConverter``)."""

from __future__ import annotations

import hashlib

from knowledge.contract.data_sources import SyncWork
from knowledge.domain.data_sources import (
    DataSource,
    FetchedObject,
    ListedObject,
    ListingPage,
    SyncedObject,
    SyncJob,
)
from knowledge.domain.segments import ConvertedDocument
from knowledge.errors import ConflictError, ConversionError, DependencyUnavailableError


class MemoryDataSources:
    def __init__(self) -> None:
        self.sources: dict[tuple[str, str], DataSource] = {}
        self.jobs: dict[tuple[str, str, str], SyncJob] = {}
        self.synced: dict[tuple[str, str], dict[str, SyncedObject]] = {}

    def create_data_source(self, source: DataSource) -> None:
        self.sources[(source.tenant_id, source.data_source_id)] = source

    def get_data_source(self, tenant_id: str, data_source_id: str) -> DataSource | None:
        return self.sources.get((tenant_id, data_source_id))

    def list_data_sources(self, tenant_id: str, knowledge_base_id: str) -> list[DataSource]:
        return [
            source
            for (tenant, _), source in sorted(self.sources.items())
            if tenant == tenant_id and source.knowledge_base_id == knowledge_base_id
        ]

    def data_sources_of_bucket(self, bucket: str) -> list[DataSource]:
        return [source for source in self.sources.values() if source.bucket == bucket]

    def delete_data_source(self, tenant_id: str, data_source_id: str) -> None:
        self.sources.pop((tenant_id, data_source_id), None)
        self.synced.pop((tenant_id, data_source_id), None)

    def create_job(self, job: SyncJob) -> None:
        self.jobs[(job.tenant_id, job.data_source_id, job.sync_job_id)] = job

    def get_job(self, tenant_id: str, data_source_id: str, sync_job_id: str) -> SyncJob | None:
        return self.jobs.get((tenant_id, data_source_id, sync_job_id))

    def put_job(self, job: SyncJob, *, expected_version: int) -> SyncJob:
        key = (job.tenant_id, job.data_source_id, job.sync_job_id)
        stored = self.jobs[key]
        if stored.version != expected_version:
            raise ConflictError("changed", current_version=stored.version)
        self.jobs[key] = job.model_copy(update={"version": expected_version + 1})
        return self.jobs[key]

    def get_synced(self, tenant_id: str, data_source_id: str, key: str) -> SyncedObject | None:
        return self.synced.get((tenant_id, data_source_id), {}).get(key)

    def synced_between(
        self, tenant_id: str, data_source_id: str, *, after: str | None, through: str | None, limit: int
    ) -> list[SyncedObject]:
        records = self.synced.get((tenant_id, data_source_id), {})
        keys = sorted(
            key
            for key in records
            if (after is None or key.encode() > after.encode())
            and (through is None or key.encode() <= through.encode())
        )
        return [records[key] for key in keys[:limit]]

    def put_synced(self, tenant_id: str, data_source_id: str, record: SyncedObject) -> None:
        self.synced.setdefault((tenant_id, data_source_id), {})[record.key] = record

    def delete_synced(self, tenant_id: str, data_source_id: str, key: str) -> None:
        self.synced.get((tenant_id, data_source_id), {}).pop(key, None)


class MemoryBucket:
    """Objects by bucket and key; ``fail_listing`` makes every listing unavailable."""

    def __init__(self) -> None:
        self.objects: dict[tuple[str, str], bytes] = {}
        self.fail_listing = False

    def put(self, bucket: str, key: str, data: bytes) -> None:
        self.objects[(bucket, key)] = data

    def _listed(self, bucket: str, key: str) -> ListedObject:
        data = self.objects[(bucket, key)]
        return ListedObject(key=key, etag=hashlib.md5(data).hexdigest(), size=len(data))  # S3's ETag

    def list_page(
        self, bucket: str, prefix: str, *, continuation_token: str | None, limit: int
    ) -> ListingPage:
        if self.fail_listing:
            raise DependencyUnavailableError("The document bucket is unavailable; retry later.")
        keys = sorted(
            (key for name, key in self.objects if name == bucket and key.startswith(prefix)), key=str.encode
        )
        start = int(continuation_token or 0)
        page = keys[start : start + limit]
        following = str(start + limit) if start + limit < len(keys) else None
        return ListingPage(objects=tuple(self._listed(bucket, key) for key in page), next_token=following)

    def head(self, bucket: str, key: str) -> ListedObject | None:
        return self._listed(bucket, key) if (bucket, key) in self.objects else None

    def fetch(self, bucket: str, key: str) -> FetchedObject | None:
        if (bucket, key) not in self.objects:
            return None
        listed = self._listed(bucket, key)
        return FetchedObject(key=key, data=self.objects[(bucket, key)], etag=listed.etag)


class MemoryQueue:
    def __init__(self) -> None:
        self.sent: list[SyncWork] = []

    def send(self, work: SyncWork) -> None:
        self.sent.append(work)


class TextConverter:
    """UTF-8 ``.md`` and ``.txt``; ``explode`` names keys whose conversion raises a bare exception,
    as a parser's bug would."""

    def __init__(self, explode: frozenset[str] = frozenset()) -> None:
        self.explode = explode

    def suffixes(self) -> frozenset[str]:
        return frozenset({".md", ".txt"})

    def convert(self, name: str, data: bytes) -> ConvertedDocument:
        if name in self.explode:
            raise RuntimeError("parser bug")
        try:
            return ConvertedDocument(title=None, content=data.decode())
        except UnicodeDecodeError:
            raise ConversionError("the text is not UTF-8") from None
