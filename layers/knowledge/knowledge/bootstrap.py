"""The composition root: the one place that turns settings into concrete adapters and services.

Handlers call ``get_container()``; it is built once per process (per Lambda container), lazily,
so nothing touches the network at import time. Tests and the local runtime build their own with
``build_container(settings, ...)`` and install it with ``use_container``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from knowledge.domain.chunking import Chunker
from knowledge.domain.context_pack import count_cl100k
from knowledge.ports import Embedder, KnowledgeStore, NoteIndex, QuotaStore, RuntimeSwitch, SearchIndex
from knowledge.services.curation import CurationService
from knowledge.services.indexing import IndexingService
from knowledge.services.ingest import IngestService
from knowledge.services.memory_search import MemorySearchService
from knowledge.services.note_indexing import NoteIndexingService
from knowledge.services.notes import NoteService
from knowledge.services.pins import PinService
from knowledge.services.quotas import QuotaService
from knowledge.services.recall import RecallService
from knowledge.services.search import SearchService
from knowledge.services.token_admin import TokenAdministration
from knowledge.services.tokens import TokenService
from knowledge.settings import Settings, get_settings

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.idempotency.persistence.base import BasePersistenceLayer

IDEMPOTENCY_PARTITION = "IDEMPOTENCY"
"""The static ``PK`` of the write API's idempotency records in the knowledge table (``SK`` is the
hashed key; ``expiration`` is the table's TTL attribute)."""


@dataclass
class Container:
    """Adapters and services of one process. Every field is safe to share across threads."""

    settings: Settings
    store: KnowledgeStore
    index: SearchIndex
    embedder: Embedder
    runtime_switch: RuntimeSwitch
    chunker: Chunker
    note_index: NoteIndex
    idempotency_store: BasePersistenceLayer | None = None
    """Where write routes keep ``Idempotency-Key`` answers; built on first use when not given."""
    search: SearchService = field(init=False)
    tokens: TokenService = field(init=False)
    indexing: IndexingService = field(init=False)
    curation: CurationService = field(init=False)
    token_admin: TokenAdministration = field(init=False)
    ingest: IngestService = field(init=False)
    notes: NoteService = field(init=False)
    memory_search: MemorySearchService = field(init=False)
    pins: PinService = field(init=False)
    recall: RecallService = field(init=False)
    quotas: QuotaService = field(init=False)
    _lock: threading.Lock = field(init=False, repr=False, default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.search = SearchService(self.store, self.index, self.embedder, self.runtime_switch)
        self.tokens = TokenService(self.store)
        self.notes = NoteService(self.store, self.embedder.forget, self.runtime_switch, utc_now)
        self.memory_search = MemorySearchService(
            self.store, self.note_index, self.embedder, self.runtime_switch, utc_now
        )
        self.pins = PinService(self.store, self.notes, utc_now)
        self.recall = RecallService(
            self.store,
            self.note_index,
            self.embedder,
            self.notes,
            self.pins,
            self.memory_search,
            count_cl100k,
            utc_now,
        )
        self.indexing = IndexingService(
            self.store,
            self.index,
            self.embedder,
            self.chunker,
            notes=NoteIndexingService(self.store, self.note_index, self.embedder),
        )
        self.token_admin = TokenAdministration(self.store, self.tokens)
        self.quotas = build_quotas(self.settings, self.store)
        self.curation = CurationService(
            self.store,
            self.indexing,
            self.runtime_switch,
            max_content_chars=self.settings.max_content_chars,
        )
        self.ingest = IngestService(
            self.store,
            queued_notes(self.store, self.embedder.forget),
            max_content_chars=self.settings.max_content_chars,
        )

    def idempotency(self) -> BasePersistenceLayer:
        """The idempotency persistence layer, built on first use (read routes never need it)."""
        with self._lock:
            if self.idempotency_store is None:
                self.idempotency_store = build_idempotency_store(self.settings)
            return self.idempotency_store


def build_store(settings: Settings, *, dynamodb_client: Any = None) -> KnowledgeStore:
    from knowledge.adapters.dynamodb.knowledge_store import DynamoDBKnowledgeStore

    return DynamoDBKnowledgeStore(
        settings.table_name, dynamodb_client=dynamodb_client, page_size_chars=settings.page_size_chars
    )


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


def build_quotas(settings: Settings, store: QuotaStore) -> QuotaService:
    """The tenant quotas of ``settings`` counted in ``store``, on the wall clock."""
    return QuotaService(
        store,
        requests_per_second=settings.tenant_requests_per_second,
        writes_per_second=settings.tenant_writes_per_second,
        clock=time.time,
    )


def build_embedder(settings: Settings) -> Embedder:
    """The configured model behind a content-hash cache: a SQLite file when
    ``EMBEDDING_CACHE_PATH`` is set, else the table or process memory (``EMBEDDING_CACHE``)."""
    from knowledge.adapters.embedding_cache import (
        CachedEmbedder,
        DynamoDBEmbeddingCache,
        InMemoryEmbeddingCache,
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
        cache = InMemoryEmbeddingCache()
    return CachedEmbedder(inner, cache)


def build_index(settings: Settings) -> SearchIndex:
    if settings.search_backend == "opensearch":
        from knowledge.adapters.opensearch_index import OpenSearchIndex, build_opensearch_client

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
    from knowledge.adapters.embedded_index import EmbeddedIndex

    return EmbeddedIndex()


def build_note_index(settings: Settings) -> NoteIndex:
    """The notes' own index (DESIGN §9): ``OPENSEARCH_NOTES_INDEX`` on the search backend's cluster,
    or in process (the embedded engines)."""
    if settings.search_backend == "opensearch":
        from knowledge.adapters.opensearch_index import build_opensearch_client
        from knowledge.adapters.opensearch_note_index import OpenSearchNoteIndex

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
    from knowledge.adapters.embedded_note_index import EmbeddedNoteIndex

    return EmbeddedNoteIndex()


def queued_notes(store: KnowledgeStore, purge_embeddings: Callable[[Sequence[str]], None]) -> NoteService:
    """The note service of queue ingestion: the runtime switch governs the tools, not ingestion, so
    queued memories are applied whatever it says."""
    from knowledge.adapters.runtime_switch import StaticRuntimeSwitch

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
) -> Container:
    """Build every adapter from ``settings``; any of them can be passed in instead."""
    # ``is None``, not ``or``: an empty index (or any adapter with ``__len__``) is falsy.
    embedder = embedder if embedder is not None else build_embedder(settings)
    index = index if index is not None else build_index(settings)
    index.ensure_ready(model_id=embedder.model_id, dimension=embedder.dimension)
    note_index = note_index if note_index is not None else build_note_index(settings)
    note_index.ensure_ready(model_id=embedder.model_id, dimension=embedder.dimension)
    return Container(
        settings=settings,
        store=store if store is not None else build_store(settings),
        index=index,
        embedder=embedder,
        runtime_switch=runtime_switch if runtime_switch is not None else build_runtime_switch(settings),
        chunker=Chunker(max_tokens=settings.chunk_tokens, overlap_tokens=settings.chunk_overlap_tokens),
        idempotency_store=idempotency_store,
        note_index=note_index,
    )


_lock = threading.Lock()
_container: Container | None = None
_token_service: TokenService | None = None
_ingest_service: IngestService | None = None
_note_service_instance: NoteService | None = None
_pin_service_instance: PinService | None = None
_quota_service: QuotaService | None = None


def get_container() -> Container:
    """The process's container, built from ``get_settings()`` on first use."""
    global _container
    with _lock:
        if _container is None:
            _container = build_container(get_settings())
        return _container


def get_token_service() -> TokenService:
    """Token resolution alone, for the authorizer: the installed container's when there is one,
    otherwise a service over the store only (no index or embedder is built), built once."""
    global _token_service
    with _lock:
        if _container is not None:
            return _container.tokens
        if _token_service is None:
            _token_service = TokenService(build_store(get_settings()))
        return _token_service


def get_ingest_service() -> IngestService:
    """Queue ingestion alone, for the ingest consumer, which writes the store only: the installed
    container's when there is one, otherwise a service over the store (no index or embedder is
    built, so the function needs no search or model permissions), built once."""
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
                max_content_chars=settings.max_content_chars,
            )
        return _ingest_service


def get_note_service() -> NoteService:
    """The memory writes and note reads alone, for the functions that need no search index
    (remember, forget_memory, note reads): the installed container's when there is one, otherwise a
    service over the store, the runtime switch and an embedder whose cache a hard forget purges (the
    model itself is never called), built once."""
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
        _quota_service = None
        _token_service = None
        _note_service_instance = None
        _pin_service_instance = None
        _ingest_service = None
