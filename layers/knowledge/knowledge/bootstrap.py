"""The composition root: the one place that chooses adapters from the settings and wires services.

Every caller, handler or route, reaches adapters and services through ``get_container()``; it is
built once per process (per Lambda container), lazily, and builds each adapter and service on first
use, so nothing touches the network at import time and a function imports only the adapters its
routes use (importing this module loads no adapter, no service and no settings). This module
chooses (``index_for``, ``note_index_for``, ``embedder_for``, ``work_queue_for`` read the settings
and pick an adapter); each adapter module constructs itself (its ``build(settings)``). Tests and the
local runtime build their own container with ``build_container(settings, ...)`` and install it with
``use_container``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.idempotency.persistence.base import BasePersistenceLayer

    from knowledge.domain.retrieval.chunking import Chunker
    from knowledge.ports import (
        Embedder,
        KnowledgeStore,
        NoteIndex,
        RuntimeSwitch,
        SearchIndex,
        SyncWorkQueue,
        VectorCache,
        WorkQueue,
    )
    from knowledge.services.bundles import BundleService
    from knowledge.services.curation import CurationService
    from knowledge.services.data_sources import DataSourceService
    from knowledge.services.document_sync import DocumentSync
    from knowledge.services.erasure import ErasureService
    from knowledge.services.indexing import IndexingService
    from knowledge.services.ingest import IngestService
    from knowledge.services.memory_search import MemorySearchService
    from knowledge.services.notes import NoteService
    from knowledge.services.pins import PinService
    from knowledge.services.quotas import QuotaService
    from knowledge.services.recall import RecallService
    from knowledge.services.search import SearchService
    from knowledge.services.token_admin import TokenAdministration
    from knowledge.services.tokens import TokenService
    from knowledge.settings import Settings

_T = TypeVar("_T")


class _Checked(Protocol):
    def ensure_ready(self, *, model_id: str, dimension: int) -> None: ...


_C = TypeVar("_C", bound=_Checked)


class Container:
    """Adapters and services of one process, each built on first use (from ``settings``, unless
    ``build_container`` was handed it) and kept: a function builds, and imports, only what its
    routes touch, so the authorizer never loads a search engine or a model and the write API never
    loads the embedding model. An index is checked against the embedder
    (``SearchIndex.ensure_ready``) when it is first used. Every member is safe to share across
    threads; a configuration error (``ValueError``) surfaces on the first use of what it concerns.
    """

    def __init__(
        self,
        settings: Settings,
        *,
        store: KnowledgeStore | None = None,
        index: SearchIndex | None = None,
        embedder: Embedder | None = None,
        runtime_switch: RuntimeSwitch | None = None,
        idempotency_store: BasePersistenceLayer | None = None,
        note_index: NoteIndex | None = None,
        work_queue: WorkQueue | None = None,
        search: SearchService | None = None,
        quotas: QuotaService | None = None,
        note_history_index: NoteIndex | None = None,
        history_index: SearchIndex | None = None,
    ) -> None:
        self.settings = settings
        given = {
            "store": store,
            "index": index,
            "embedder": embedder,
            "runtime_switch": runtime_switch,
            "idempotency": idempotency_store,
            "note_index": note_index,
            "work_queue": work_queue,
            "search": search,
            "quotas": quotas,
            "note_history_index": note_history_index,
            "history_index": history_index,
        }
        # ``is None``, not ``or``: an empty index (or any adapter with ``__len__``) is falsy.
        self._built: dict[str, Any] = {name: value for name, value in given.items() if value is not None}
        self._ready: set[str] = set()
        self._lock = threading.RLock()

    def _once(self, name: str, build: Callable[[], _T]) -> _T:
        with self._lock:
            if name not in self._built:
                self._built[name] = build()
            built: _T = self._built[name]
            return built

    # Adapters

    @property
    def store(self) -> KnowledgeStore:
        def build() -> KnowledgeStore:
            from knowledge.adapters.dynamodb import knowledge_store

            return knowledge_store.build(self.settings)

        return self._once("store", build)

    @property
    def embedder(self) -> Embedder:
        return self._once("embedder", lambda: embedder_for(self.settings))

    @property
    def index(self) -> SearchIndex:
        return self._checked("index", self._once("index", lambda: index_for(self.settings)))

    @property
    def note_index(self) -> NoteIndex:
        return self._checked("note_index", self._once("note_index", lambda: note_index_for(self.settings)))

    @property
    def note_history_index(self) -> NoteIndex:
        """Every version of every note with its validity interval, for answers as of a moment."""
        return self._checked(
            "note_history_index",
            self._once("note_history_index", lambda: note_history_index_for(self.settings)),
        )

    @property
    def history_index(self) -> SearchIndex:
        """Every state of every item with the revision current over its validity interval, for
        ranked knowledge queries as of a moment (DESIGN §11)."""
        return self._checked(
            "history_index", self._once("history_index", lambda: history_index_for(self.settings))
        )

    @property
    def runtime_switch(self) -> RuntimeSwitch:
        def build() -> RuntimeSwitch:
            from knowledge.adapters import runtime_switch

            return runtime_switch.build(self.settings)

        return self._once("runtime_switch", build)

    @property
    def work_queue(self) -> WorkQueue | None:
        """Where the stream consumer sends index work; ``None`` (no ``INDEX_WORK_QUEUE_URL``): it
        indexes in process."""
        return self._once("work_queue", lambda: work_queue_for(self.settings))

    @property
    def chunker(self) -> Chunker:
        def build() -> Chunker:
            from knowledge.domain.retrieval.chunking import Chunker

            return Chunker(
                max_tokens=self.settings.chunk_tokens, overlap_tokens=self.settings.chunk_overlap_tokens
            )

        return self._once("chunker", build)

    def idempotency(self) -> BasePersistenceLayer:
        """The idempotency persistence layer, built on first use (read routes never need it)."""

        def build() -> BasePersistenceLayer:
            from knowledge.adapters.dynamodb import idempotency

            return idempotency.build(self.settings)

        return self._once("idempotency", build)

    def _checked(self, name: str, index: _C) -> _C:
        with self._lock:
            if name not in self._ready:
                embedder = self.embedder
                index.ensure_ready(model_id=embedder.model_id, dimension=embedder.dimension)
                self._ready.add(name)
        return index

    def _vector_cache(self) -> VectorCache | None:
        """The embedder's cache (``None`` for an embedder passed in without one)."""
        from knowledge import ports

        embedder = self.embedder
        return embedder if isinstance(embedder, ports.VectorCache) else None

    def _forget_embeddings(self, texts: Sequence[str]) -> None:
        self.embedder.forget(texts)

    # Services

    @property
    def search(self) -> SearchService:
        def build() -> SearchService:
            from knowledge.services.search import SearchService

            return SearchService(
                self.store,
                self.index,
                self.embedder,
                self.runtime_switch,
                utc_now,
                history=lambda: self.history_index,
                chunker=self.chunker,
            )

        return self._once("search", build)

    @property
    def tokens(self) -> TokenService:
        def build() -> TokenService:
            from knowledge.services.tokens import TokenService

            return TokenService(self.store)

        return self._once("tokens", build)

    @property
    def notes(self) -> NoteService:
        def build() -> NoteService:
            from knowledge.services.notes import NoteService

            return NoteService(self.store, self._forget_embeddings, self.runtime_switch, utc_now)

        return self._once("notes", build)

    @property
    def memory_search(self) -> MemorySearchService:
        def build() -> MemorySearchService:
            from knowledge.services.memory_search import MemorySearchService

            return MemorySearchService(
                self.store,
                self.note_index,
                self.embedder,
                self.runtime_switch,
                utc_now,
                history=lambda: self.note_history_index,
            )

        return self._once("memory_search", build)

    @property
    def pins(self) -> PinService:
        def build() -> PinService:
            from knowledge.services.pins import PinService

            return PinService(self.store, self.notes, utc_now)

        return self._once("pins", build)

    @property
    def recall(self) -> RecallService:
        def build() -> RecallService:
            from knowledge.domain.memory.context_pack import count_cl100k
            from knowledge.services.recall import RecallService

            return RecallService(
                self.store,
                self.note_index,
                self.embedder,
                self.notes,
                self.pins,
                self.memory_search,
                count_cl100k,
                utc_now,
            )

        return self._once("recall", build)

    @property
    def indexing(self) -> IndexingService:
        def build() -> IndexingService:
            from knowledge.services.indexing import IndexingService
            from knowledge.services.note_indexing import NoteIndexingService

            return IndexingService(
                self.store,
                self.index,
                self.embedder,
                self.chunker,
                notes=NoteIndexingService(
                    self.store, self.note_index, self.embedder, history=self.note_history_index
                ),
                work=self.work_queue,
                history=self.history_index,
            )

        return self._once("indexing", build)

    @property
    def token_admin(self) -> TokenAdministration:
        def build() -> TokenAdministration:
            from knowledge.services.token_admin import TokenAdministration

            return TokenAdministration(self.store, self.tokens)

        return self._once("token_admin", build)

    @property
    def quotas(self) -> QuotaService:
        """The tenant quotas of ``settings``, counted in the store, on the wall clock."""

        def build() -> QuotaService:
            import time

            from knowledge.services.quotas import QuotaService

            return QuotaService(
                self.store,
                requests_per_second=self.settings.tenant_requests_per_second,
                writes_per_second=self.settings.tenant_writes_per_second,
                clock=time.time,
                stored_items_limit=self.settings.tenant_max_stored_items,
            )

        return self._once("quotas", build)

    @property
    def curation(self) -> CurationService:
        def build() -> CurationService:
            from knowledge.services.curation import CurationService

            return CurationService(
                self.store,
                self.indexing,
                self.runtime_switch,
                max_content_chars=self.settings.max_content_chars,
            )

        return self._once("curation", build)

    @property
    def data_sources(self) -> DataSourceService:
        def build() -> DataSourceService:
            from knowledge.adapters.dynamodb import data_source_records
            from knowledge.services.data_sources import DataSourceService

            return DataSourceService(
                self.store,
                self._once("data_source_store", lambda: data_source_records.build(self.settings)),
                sync_queue_for(self.settings),
                utc_now,
                allowed_buckets=frozenset(
                    name.strip() for name in self.settings.document_buckets.split(",") if name.strip()
                ),
            )

        return self._once("data_sources", build)

    def document_sync(self, *, lease_seconds: int) -> DocumentSync:
        """The document queue's worker; ``lease_seconds`` is the longest run of one invocation."""

        def build() -> DocumentSync:
            from knowledge.adapters import document_conversion, s3_documents
            from knowledge.adapters.dynamodb import data_source_records
            from knowledge.services.document_sync import DocumentSync

            return DocumentSync(
                self.store,
                self._once("data_source_store", lambda: data_source_records.build(self.settings)),
                s3_documents.build(self.settings),
                document_conversion.ConvertedDocuments(),
                sync_queue_for(self.settings),
                utc_now,
                max_document_bytes=self.settings.max_document_bytes,
                max_content_chars=self.settings.max_content_chars,
                page_size=self.settings.sync_page_size,
                lease_seconds=lease_seconds,
                bundles=self.bundles(lease_seconds=lease_seconds),
                erasures=self.erasures(lease_seconds=lease_seconds),
            )

        return self._once("document_sync", build)

    def bundles(self, *, lease_seconds: int = 900) -> BundleService:
        """Export and import jobs (``knowledge.services.bundles``); ``lease_seconds`` is the longest
        run of one invocation of the worker."""

        def build() -> BundleService:
            from knowledge.services.bundles import BundleService

            bucket = None
            if self.settings.bundle_bucket is not None:
                from knowledge.adapters import s3_bundles

                bucket = s3_bundles.build(self.settings.bundle_bucket)
            return BundleService(
                self.store,
                bucket,
                sync_queue_for(self.settings),
                utc_now,
                vectors=self._vector_cache,
                chunker=lambda: self.chunker,
                held=lambda: self.indexing,
                lease_seconds=lease_seconds,
            )

        return self._once("bundles", build)

    def erasures(self, *, lease_seconds: int = 900) -> ErasureService:
        """Tenant erasures (``knowledge.services.erasure``); ``lease_seconds`` is the longest run of
        one invocation of the worker."""

        def build() -> ErasureService:
            from knowledge.services.erasure import ErasureService

            return ErasureService(
                self.store,
                self.curation,
                self.notes,
                sync_queue_for(self.settings),
                utc_now,
                lease_seconds=lease_seconds,
            )

        return self._once("erasures", build)

    @property
    def ingest(self) -> IngestService:
        def build() -> IngestService:
            from knowledge.services.ingest import IngestService

            return IngestService(
                self.store,
                queued_notes(self.store, self._forget_embeddings),
                self.tokens,
                max_content_chars=self.settings.max_content_chars,
            )

        return self._once("ingest", build)


def index_for(settings: Settings) -> SearchIndex:
    """The knowledge index ``SEARCH_BACKEND`` names: OpenSearch's or the embedded engine's."""
    if settings.search_backend == "opensearch":
        from knowledge.adapters.opensearch import passages as opensearch_passages

        return opensearch_passages.build(settings)
    from knowledge.adapters.embedded import passages as embedded_passages

    return embedded_passages.build(settings)


def note_index_for(settings: Settings) -> NoteIndex:
    """The notes' own index (DESIGN §9) on the engine ``SEARCH_BACKEND`` names."""
    if settings.search_backend == "opensearch":
        from knowledge.adapters.opensearch import notes as opensearch_notes

        return opensearch_notes.build(settings)
    from knowledge.adapters.embedded import notes as embedded_notes

    return embedded_notes.build(settings)


def note_history_index_for(settings: Settings) -> NoteIndex:
    """The note history index (DESIGN §10 "Time") on the engine ``SEARCH_BACKEND`` names."""
    if settings.search_backend == "opensearch":
        from knowledge.adapters.opensearch import notes as opensearch_notes

        return opensearch_notes.build_history(settings)
    from knowledge.adapters.embedded import notes as embedded_notes

    return embedded_notes.build_history(settings)


def history_index_for(settings: Settings) -> SearchIndex:
    """The knowledge history index (DESIGN §11) on the engine ``SEARCH_BACKEND`` names."""
    if settings.search_backend == "opensearch":
        from knowledge.adapters.opensearch import passages as opensearch_passages

        return opensearch_passages.build_history(settings)
    from knowledge.adapters.embedded import passages as embedded_passages

    return embedded_passages.build_history(settings)


def embedder_for(settings: Settings) -> Embedder:
    """The model ``EMBEDDER`` names (Bedrock's or the offline one) behind the embedding cache of
    ``settings``."""
    from knowledge.adapters import embedding_cache

    if settings.embedder == "bedrock":
        from knowledge.adapters import bedrock_embedder

        return embedding_cache.build(settings, bedrock_embedder.build(settings))
    from knowledge.adapters import local_embedder

    return embedding_cache.build(settings, local_embedder.build(settings))


def work_queue_for(settings: Settings) -> WorkQueue | None:
    """The SQS index work queue of ``INDEX_WORK_QUEUE_URL``; ``None`` when it is unset."""
    if settings.index_work_queue_url is None:
        return None
    from knowledge.adapters import sqs_work_queue

    return sqs_work_queue.build(settings)


def sync_queue_for(settings: Settings) -> SyncWorkQueue | None:
    """The document queue of ``DOCUMENT_QUEUE_URL`` for sync work; ``None`` when it is unset."""
    if settings.document_queue_url is None:
        return None
    from knowledge.adapters import sqs_sync_queue

    return sqs_sync_queue.build(settings)


def queued_notes(store: KnowledgeStore, purge_embeddings: Callable[[Sequence[str]], None]) -> NoteService:
    """The note service of queue ingestion: the runtime switch governs the tools, not ingestion, so
    queued memories are applied whatever it says."""
    from knowledge.adapters.runtime_switch import StaticRuntimeSwitch
    from knowledge.services.notes import NoteService

    return NoteService(store, purge_embeddings, StaticRuntimeSwitch(True), utc_now)


def utc_now() -> datetime:
    """The services' clock: aware UTC."""
    return datetime.now(UTC)


def build_container(
    settings: Settings,
    *,
    store: KnowledgeStore | None = None,
    index: SearchIndex | None = None,
    embedder: Embedder | None = None,
    runtime_switch: RuntimeSwitch | None = None,
    idempotency_store: BasePersistenceLayer | None = None,
    note_index: NoteIndex | None = None,
    work_queue: WorkQueue | None = None,
    search: SearchService | None = None,
    quotas: QuotaService | None = None,
    note_history_index: NoteIndex | None = None,
    history_index: SearchIndex | None = None,
) -> Container:
    """The container of ``settings``; any adapter, and the search and quota services, can be passed
    in instead of built (on first use). An index passed in is made ready for the embedder now, so its
    caller can write to it at once."""
    container = Container(
        settings,
        store=store,
        index=index,
        embedder=embedder,
        runtime_switch=runtime_switch,
        idempotency_store=idempotency_store,
        note_index=note_index,
        work_queue=work_queue,
        search=search,
        quotas=quotas,
        note_history_index=note_history_index,
        history_index=history_index,
    )
    if index is not None:
        container._checked("index", index)
    if note_index is not None:
        container._checked("note_index", note_index)
    if note_history_index is not None:
        container._checked("note_history_index", note_history_index)
    if history_index is not None:
        container._checked("history_index", history_index)
    return container


_lock = threading.Lock()
_container: Container | None = None


def get_container() -> Container:
    """The process's container, built from ``get_settings()`` on first use."""
    from knowledge.settings import get_settings

    global _container
    with _lock:
        if _container is None:
            _container = build_container(get_settings())
        return _container


def use_container(container: Container | None) -> None:
    """Install ``container`` as the process's container (``None`` resets it: the next
    ``get_container()`` builds a new one from the settings)."""
    global _container
    with _lock:
        _container = container
