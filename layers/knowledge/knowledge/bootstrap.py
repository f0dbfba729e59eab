"""The composition root: the one place that turns settings into concrete adapters and services.

Handlers call ``get_container()``; it is built once per process (per Lambda container), lazily,
and builds each adapter and service on first use, so nothing touches the network at import time and
a function imports only the adapters its routes use (importing this module loads no adapter, no
service and no settings). Tests and the local runtime build their own with
``build_container(settings, ...)`` and install it with ``use_container``.
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
        QuotaStore,
        RuntimeSwitch,
        SearchIndex,
        WorkQueue,
    )
    from knowledge.services.curation import CurationService
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

IDEMPOTENCY_PARTITION = "IDEMPOTENCY"
"""The static ``PK`` of the write API's idempotency records in the knowledge table (``SK`` is the
hashed key; ``expiration`` is the table's TTL attribute)."""

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
        return self._once("store", lambda: build_store(self.settings))

    @property
    def embedder(self) -> Embedder:
        return self._once("embedder", lambda: build_embedder(self.settings))

    @property
    def index(self) -> SearchIndex:
        return self._checked("index", self._once("index", lambda: build_index(self.settings)))

    @property
    def note_index(self) -> NoteIndex:
        return self._checked("note_index", self._once("note_index", lambda: build_note_index(self.settings)))

    @property
    def runtime_switch(self) -> RuntimeSwitch:
        return self._once("runtime_switch", lambda: build_runtime_switch(self.settings))

    @property
    def work_queue(self) -> WorkQueue | None:
        """Where the stream consumer sends index work; ``None`` (no ``INDEX_WORK_QUEUE_URL``): it
        indexes in process."""
        return self._once("work_queue", lambda: build_work_queue(self.settings))

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
        return self._once("idempotency", lambda: build_idempotency_store(self.settings))

    def _checked(self, name: str, index: _C) -> _C:
        with self._lock:
            if name not in self._ready:
                embedder = self.embedder
                index.ensure_ready(model_id=embedder.model_id, dimension=embedder.dimension)
                self._ready.add(name)
        return index

    def _forget_embeddings(self, texts: Sequence[str]) -> None:
        self.embedder.forget(texts)

    # Services

    @property
    def search(self) -> SearchService:
        def build() -> SearchService:
            from knowledge.services.search import SearchService

            return SearchService(self.store, self.index, self.embedder, self.runtime_switch)

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
                self.store, self.note_index, self.embedder, self.runtime_switch, utc_now
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
                notes=NoteIndexingService(self.store, self.note_index, self.embedder),
                work=self.work_queue,
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
        return self._once("quotas", lambda: build_quotas(self.settings, self.store))

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


def build_store(settings: Settings, *, dynamodb_client: Any = None) -> KnowledgeStore:
    from knowledge.adapters.dynamodb.knowledge_store import DynamoDBKnowledgeStore

    return DynamoDBKnowledgeStore(
        settings.table_name,
        dynamodb_client=dynamodb_client,
        page_size_chars=settings.page_size_chars,
        stored_items_limit=settings.tenant_max_stored_items,
    )


def build_quotas(settings: Settings, store: QuotaStore) -> QuotaService:
    """The tenant quotas of ``settings`` counted in ``store``, on the wall clock."""
    import time

    from knowledge.services.quotas import QuotaService

    return QuotaService(
        store,
        requests_per_second=settings.tenant_requests_per_second,
        writes_per_second=settings.tenant_writes_per_second,
        clock=time.time,
    )


def build_work_queue(settings: Settings, *, sqs_client: Any = None) -> WorkQueue | None:
    """The index work queue of ``settings.index_work_queue_url`` (``None`` when it is unset)."""
    if settings.index_work_queue_url is None:
        return None
    import boto3
    from botocore.config import Config

    from knowledge.adapters.sqs_work_queue import SqsWorkQueue

    client = sqs_client or boto3.client("sqs", config=Config(retries={"mode": "standard"}))
    return SqsWorkQueue(settings.index_work_queue_url, sqs_client=client)


def build_idempotency_store(settings: Settings, *, dynamodb_client: Any = None) -> BasePersistenceLayer:
    """Powertools' DynamoDB persistence layer on the knowledge table: ``PK`` is
    ``IDEMPOTENCY_PARTITION``, ``SK`` the hashed key, ``expiration`` (epoch seconds) its TTL."""
    import boto3
    from aws_lambda_powertools.utilities.idempotency import DynamoDBPersistenceLayer
    from botocore.config import Config

    client = dynamodb_client or boto3.client("dynamodb", config=Config(retries={"mode": "standard"}))
    return DynamoDBPersistenceLayer(
        table_name=settings.table_name,
        key_attr="PK",
        sort_key_attr="SK",
        static_pk_value=IDEMPOTENCY_PARTITION,
        expiry_attr="expiration",
        boto3_client=client,
    )


def build_embedder(settings: Settings) -> Embedder:
    """The configured model behind a content-hash cache: a SQLite file when
    ``EMBEDDING_CACHE_PATH`` is set, else the table or process memory (``EMBEDDING_CACHE``)."""
    from knowledge.adapters.embedding_cache import (
        CachedEmbedder,
        DynamoDBEmbeddingCache,
        InProcessEmbeddingCache,
        SqliteEmbeddingCache,
    )
    from knowledge.ports import EmbeddingCache

    inner: Embedder
    if settings.embedder == "bedrock":
        from knowledge.adapters.bedrock_embedder import BedrockEmbedder

        model_id, dimension = settings.bedrock_model_id, settings.embedding_dimension
        if model_id is None or dimension is None:
            raise ValueError("EMBEDDER=bedrock needs BEDROCK_MODEL_ID and EMBEDDING_DIMENSION.")
        inner = BedrockEmbedder(model_id=model_id, dimension=dimension)
    else:
        from knowledge.adapters.local_embedder import LocalEmbedder

        inner = LocalEmbedder()
    cache: EmbeddingCache
    if settings.embedding_cache_path is not None:
        cache = SqliteEmbeddingCache(settings.embedding_cache_path)
    elif settings.embedding_cache == "table":
        cache = DynamoDBEmbeddingCache(settings.table_name)
    else:
        cache = InProcessEmbeddingCache()
    return CachedEmbedder(inner, cache)


def build_index(settings: Settings) -> SearchIndex:
    if settings.search_backend == "opensearch":
        from knowledge.adapters.opensearch.engine import build_opensearch_client
        from knowledge.adapters.opensearch.passages import OpenSearchIndex

        url, name = settings.opensearch_url, settings.opensearch_index
        if not url or not name:
            raise ValueError("SEARCH_BACKEND=opensearch needs OPENSEARCH_URL and OPENSEARCH_INDEX.")
        client = build_opensearch_client(
            url,
            auth=settings.opensearch_auth,
            region=settings.aws_region,
            service=settings.opensearch_service,
        )
        return OpenSearchIndex(client, name)
    from knowledge.adapters.embedded.passages import EmbeddedIndex

    return EmbeddedIndex()


def build_note_index(settings: Settings) -> NoteIndex:
    """The notes' own index (DESIGN §9): ``OPENSEARCH_NOTES_INDEX`` on the search backend's cluster,
    or in process (the embedded engines)."""
    if settings.search_backend == "opensearch":
        from knowledge.adapters.opensearch.engine import build_opensearch_client
        from knowledge.adapters.opensearch.notes import OpenSearchNoteIndex

        url, name = settings.opensearch_url, settings.opensearch_notes_index
        if not url or not name:
            raise ValueError("SEARCH_BACKEND=opensearch needs OPENSEARCH_URL and OPENSEARCH_NOTES_INDEX.")
        client = build_opensearch_client(
            url,
            auth=settings.opensearch_auth,
            region=settings.aws_region,
            service=settings.opensearch_service,
        )
        return OpenSearchNoteIndex(client, name)
    from knowledge.adapters.embedded.notes import EmbeddedNoteIndex

    return EmbeddedNoteIndex()


def queued_notes(store: KnowledgeStore, purge_embeddings: Callable[[Sequence[str]], None]) -> NoteService:
    """The note service of queue ingestion: the runtime switch governs the tools, not ingestion, so
    queued memories are applied whatever it says."""
    from knowledge.adapters.runtime_switch import StaticRuntimeSwitch
    from knowledge.services.notes import NoteService

    return NoteService(store, purge_embeddings, StaticRuntimeSwitch(True), utc_now)


def _purger(settings: Settings) -> Callable[[Sequence[str]], None]:
    """``Embedder.forget`` of the configured embedder, built on the first hard forget only, so a
    function that never purges needs no embedding settings."""

    def purge(texts: Sequence[str]) -> None:
        build_embedder(settings).forget(texts)

    return purge


def utc_now() -> datetime:
    """The services' clock: aware UTC."""
    return datetime.now(UTC)


def build_runtime_switch(settings: Settings) -> RuntimeSwitch:
    from knowledge.adapters.runtime_switch import ParameterRuntimeSwitch, StaticRuntimeSwitch

    if settings.runtime_switch_parameter:
        return ParameterRuntimeSwitch(
            settings.runtime_switch_parameter,
            max_age=settings.runtime_switch_max_age_seconds,
            fallback=settings.knowledge_runtime_enabled,
        )
    return StaticRuntimeSwitch(settings.knowledge_runtime_enabled)


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
    )
    if index is not None:
        container._checked("index", index)
    if note_index is not None:
        container._checked("note_index", note_index)
    return container


_lock = threading.Lock()
_container: Container | None = None
_token_service: TokenService | None = None
_ingest_service: IngestService | None = None
_note_service_instance: NoteService | None = None
_pin_service_instance: PinService | None = None
_quota_service: QuotaService | None = None


def get_container() -> Container:
    """The process's container, built from ``get_settings()`` on first use."""
    from knowledge.settings import get_settings

    global _container
    with _lock:
        if _container is None:
            _container = build_container(get_settings())
        return _container


def get_token_service() -> TokenService:
    """Token resolution alone, for the authorizer: the installed container's when there is one,
    otherwise a service over the store only (no index or embedder is built), built once."""
    from knowledge.services.tokens import TokenService
    from knowledge.settings import get_settings

    global _token_service
    with _lock:
        if _container is not None:
            return _container.tokens
        if _token_service is None:
            _token_service = TokenService(build_store(get_settings()))
        return _token_service


def get_ingest_service() -> IngestService:
    """Queue ingestion alone, for the ingest consumer, which writes the store only: the installed
    container's when there is one, otherwise a service over the store and the token service that
    authenticates each message (no index or embedder is built, so the function needs no search or
    model permissions), built once."""
    from knowledge.services.ingest import IngestService
    from knowledge.services.tokens import TokenService
    from knowledge.settings import get_settings

    global _ingest_service
    with _lock:
        if _container is not None:
            return _container.ingest
        if _ingest_service is None:
            settings = get_settings()
            store = build_store(settings)
            _ingest_service = IngestService(
                store,
                queued_notes(store, _purger(settings)),
                TokenService(store),
                max_content_chars=settings.max_content_chars,
            )
        return _ingest_service


def get_note_service() -> NoteService:
    """The memory writes and note reads alone, for the functions that need no search index
    (remember, forget_memory, note reads): the installed container's when there is one, otherwise a
    service over the store, the runtime switch and an embedder whose cache a hard forget purges (the
    model itself is never called), built once."""
    from knowledge.services.notes import NoteService
    from knowledge.settings import get_settings

    global _note_service_instance
    with _lock:
        if _container is not None:
            return _container.notes
        if _note_service_instance is None:
            settings = get_settings()
            _note_service_instance = NoteService(
                build_store(settings), _purger(settings), build_runtime_switch(settings), utc_now
            )
        return _note_service_instance


def get_pin_service() -> PinService:
    """The pin tools (and ``remember`` with ``pin``) over the note service of ``get_note_service``,
    for the functions that need no search index."""
    from knowledge.services.pins import PinService

    global _pin_service_instance
    notes = get_note_service()
    with _lock:
        if _container is not None:
            return _container.pins
        if _pin_service_instance is None:
            _pin_service_instance = PinService(notes.store, notes, utc_now)
        return _pin_service_instance


def get_quota_service() -> QuotaService:
    """The tenant quotas, for the REST and MCP boundaries of every function: the installed
    container's when there is one, otherwise quotas over the store alone, built once."""
    from knowledge.settings import get_settings

    global _quota_service
    with _lock:
        if _container is not None:
            return _container.quotas
        if _quota_service is None:
            settings = get_settings()
            _quota_service = build_quotas(settings, build_store(settings))
        return _quota_service


def use_container(container: Container | None) -> None:
    """Install ``container`` as the process's container (``None`` resets it and the store-only
    services)."""
    global _container, _token_service, _ingest_service, _note_service_instance, _pin_service_instance
    global _quota_service
    with _lock:
        _container = container
        _token_service = None
        _note_service_instance = None
        _pin_service_instance = None
        _ingest_service = None
        _quota_service = None
