"""Services against in-process fakes: the in-memory store (held to the store contract), the embedded
index and a hashing embedder. Nothing here reaches the network or moto."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

import pytest

from knowledge.adapters.embedded.passages import EmbeddedIndex
from knowledge.adapters.in_process.store import InProcessKnowledgeStore
from knowledge.adapters.runtime_switch import StaticRuntimeSwitch
from knowledge.domain.models import Permission, Principal
from knowledge.domain.retrieval.chunking import Chunker
from knowledge.services.curation import CurationService
from knowledge.services.indexing import IndexingService
from knowledge.services.token_admin import TokenAdministration
from knowledge.services.tokens import TokenService
from tests.support.embedding import HashingEmbedder
from tests.support.store import TickingClock

TENANT = "acme"
MAX_CONTENT_CHARS = 1_000
"""The content limit of the services under test (small, so that a test can exceed it cheaply)."""
READ, WRITE, ADMIN, PLATFORM = (
    Permission.READ,
    Permission.WRITE,
    Permission.ADMIN,
    Permission.PLATFORM_ADMIN,
)


def caller(
    subject_id: str,
    *scopes: Permission,
    tenant_id: str = TENANT,
    team_ids: Iterable[str] = (),
    knowledge_base_ids: Iterable[str] | None = None,
    expires_at: datetime | None = None,
) -> Principal:
    """A principal as the authorizer hands it to the services."""
    return Principal(
        tenant_id=tenant_id,
        subject_id=subject_id,
        scopes=frozenset(scope.value for scope in scopes),
        team_ids=frozenset(team_ids),
        knowledge_base_ids=None if knowledge_base_ids is None else frozenset(knowledge_base_ids),
        expires_at=expires_at,
    )


@pytest.fixture
def clock() -> TickingClock:
    return TickingClock()


@pytest.fixture
def store(clock: TickingClock) -> InProcessKnowledgeStore:
    return InProcessKnowledgeStore(clock=clock)


@pytest.fixture
def embedder() -> HashingEmbedder:
    return HashingEmbedder()


@pytest.fixture
def index(embedder: HashingEmbedder) -> EmbeddedIndex:
    index = EmbeddedIndex()
    index.ensure_ready(model_id=embedder.model_id, dimension=embedder.dimension)
    return index


@pytest.fixture
def chunker() -> Chunker:
    return Chunker(max_tokens=64, overlap_tokens=8)


@pytest.fixture
def indexing(
    store: InProcessKnowledgeStore, index: EmbeddedIndex, embedder: HashingEmbedder, chunker: Chunker
) -> IndexingService:
    return IndexingService(store, index, embedder, chunker)


@pytest.fixture
def curation(store: InProcessKnowledgeStore, indexing: IndexingService) -> CurationService:
    return CurationService(store, indexing, StaticRuntimeSwitch(True), max_content_chars=MAX_CONTENT_CHARS)


@pytest.fixture
def tokens(store: InProcessKnowledgeStore, clock: TickingClock) -> TokenService:
    return TokenService(store, clock=clock)


@pytest.fixture
def token_admin(store: InProcessKnowledgeStore, tokens: TokenService) -> TokenAdministration:
    return TokenAdministration(store, tokens)
