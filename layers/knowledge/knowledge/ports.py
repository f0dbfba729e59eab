"""Ports: the abstractions services depend on. Adapters in ``knowledge.adapters`` implement them;
only ``knowledge.bootstrap`` chooses and builds the concrete ones."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Protocol

from knowledge.domain.models import (
    BaseStatus,
    ContentWindow,
    KnowledgeBase,
    KnowledgeItem,
    Page,
    Revision,
    Scope,
    Source,
    TokenRecord,
)
from knowledge.domain.retrieval import IndexedItem, IndexQuery, LegHits


class KnowledgeStore(Protocol):
    """The source of truth (DESIGN §3). Every method is scoped by ``tenant_id``.

    Errors: ``ConflictError`` (lost version race, with the current version), ``ResourceUnavailableError``
    (absent base/item/revision on a write), ``DependencyUnavailableError`` (throttling, outage).
    Getters return ``None`` for absent records; visibility is the services' job. An item's ``title``
    changes only when a revision becomes current (created or added with ``publish``, or published,
    a rollback included): it is the current revision's title, never a draft's.
    """

    # Bases
    def create_base(
        self, tenant_id: str, *, name: str, owner_id: str, scope: Scope, team_id: str | None
    ) -> KnowledgeBase: ...

    def update_base(
        self,
        tenant_id: str,
        knowledge_base_id: str,
        *,
        expected_version: int,
        status: BaseStatus | None = None,
        name: str | None = None,
    ) -> KnowledgeBase: ...

    def get_base(self, tenant_id: str, knowledge_base_id: str) -> KnowledgeBase | None: ...

    def get_bases(self, tenant_id: str, knowledge_base_ids: Sequence[str]) -> dict[str, KnowledgeBase]: ...

    def list_bases(self, tenant_id: str, *, limit: int, next_token: str | None) -> Page[KnowledgeBase]: ...

    # Items and revisions
    def create_item(
        self,
        tenant_id: str,
        knowledge_base_id: str,
        *,
        title: str,
        content: str,
        source: Source,
        external_id: str | None,
        publish: bool,
    ) -> tuple[KnowledgeItem, Revision]: ...

    def add_revision(
        self,
        tenant_id: str,
        knowledge_item_id: str,
        *,
        content: str,
        title: str | None,
        source: Source | None,
        publish: bool,
        expected_version: int | None,
    ) -> tuple[KnowledgeItem, Revision]: ...

    def publish_revision(
        self, tenant_id: str, knowledge_item_id: str, knowledge_revision_id: str, *, expected_version: int
    ) -> KnowledgeItem: ...

    def archive_item(
        self, tenant_id: str, knowledge_item_id: str, *, expected_version: int
    ) -> KnowledgeItem: ...

    def set_indexed_revision(
        self,
        tenant_id: str,
        knowledge_item_id: str,
        knowledge_revision_id: str | None,
        *,
        expected_version: int | None = None,
    ) -> None:
        """Record which revision the index holds, without moving ``version``; with
        ``expected_version``, only while the item is still at that version (``ConflictError`` when it
        moved on, ``ResourceUnavailableError`` when it was archived meanwhile), so a slow indexer
        can never overwrite the mark of a newer one."""
        ...

    def get_item(self, tenant_id: str, knowledge_item_id: str) -> KnowledgeItem | None: ...

    def get_items(self, tenant_id: str, knowledge_item_ids: Sequence[str]) -> dict[str, KnowledgeItem]: ...

    def find_item_by_external_id(
        self, tenant_id: str, knowledge_base_id: str, external_id: str
    ) -> KnowledgeItem | None: ...

    def list_items(
        self, tenant_id: str, knowledge_base_id: str, *, limit: int, next_token: str | None
    ) -> Page[KnowledgeItem]: ...

    def get_revision(
        self, tenant_id: str, knowledge_item_id: str, knowledge_revision_id: str
    ) -> Revision | None: ...

    def get_revisions(
        self, tenant_id: str, keys: Sequence[tuple[str, str]]
    ) -> dict[tuple[str, str], Revision]: ...

    def list_revisions(
        self, tenant_id: str, knowledge_item_id: str, *, limit: int, next_token: str | None
    ) -> Page[Revision]: ...

    def read_content(self, revision: Revision, *, offset: int, limit: int) -> ContentWindow: ...

    def read_all_content(self, revision: Revision) -> str: ...

    # Tokens
    def put_token(self, record: TokenRecord) -> None: ...

    def get_token(self, token_hash: str) -> TokenRecord | None: ...

    def revoke_token(self, token_hash: str) -> None: ...


class Embedder(Protocol):
    """Text → L2-normalized float32 vectors of ``dimension`` floats; cosine similarity is the dot product.

    Errors: ``DependencyUnavailableError`` when the model service is down or throttled.
    """

    @property
    def model_id(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> list[list[float]]: ...


class EmbeddingCache(Protocol):
    """Vectors by content key (``sha256(model_id, text)``), so unchanged text is never embedded twice."""

    def get_many(self, keys: Sequence[str]) -> Mapping[str, list[float]]: ...

    def put_many(self, vectors: Mapping[str, list[float]]) -> None: ...


class SearchIndex(Protocol):
    """Chunks of current published revisions with BM25 and kNN search (DESIGN §4).

    Errors: ``IndexConfigurationError`` when the index was built for another embedding model or
    dimension; ``DependencyUnavailableError`` when the engine is unreachable.
    """

    def ensure_ready(self, *, model_id: str, dimension: int) -> None: ...

    def upsert(self, item: IndexedItem) -> bool:
        """Replace the item's chunks; ``False`` (nothing written) if the index holds a higher version."""
        ...

    def upsert_many(self, items: Sequence[IndexedItem]) -> list[bool]:
        """``upsert`` for a batch in one pass (bulk requests, one commit); one result per item, in order."""
        ...

    def remove_item(self, tenant_id: str, knowledge_item_id: str, *, version: int) -> None:
        """Remove the item's chunks and remember ``version``: a later upsert at or below it is ignored."""
        ...

    def remove_base(self, tenant_id: str, knowledge_base_id: str) -> None: ...

    def search(self, query: IndexQuery) -> LegHits: ...

    def refresh(self) -> None: ...


class RuntimeSwitch(Protocol):
    """The operational kill switch of DESIGN §5."""

    def is_enabled(self) -> bool: ...


class Clock(Protocol):
    def __call__(self) -> datetime: ...
