"""The memory services over in-process fakes, with the stream played by hand: after each write the
test calls ``world.sync()``, as the indexer would on the table's stream."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from knowledge.adapters.embedded.notes import EmbeddedNoteIndex
from knowledge.adapters.embedding_cache import CachedEmbedder, InProcessEmbeddingCache
from knowledge.adapters.in_process.store import InProcessKnowledgeStore
from knowledge.adapters.runtime_switch import StaticRuntimeSwitch
from knowledge.contract.memory import (
    ForgetMemoryArguments,
    MemoryContextResponse,
    MemoryResponse,
    MemorySearchResponse,
    PinMemoryArguments,
    PinView,
    RecallContextArguments,
    RememberArguments,
    SearchMemoryArguments,
    UnpinMemoryArguments,
)
from knowledge.domain.memory.context_pack import count_cl100k
from knowledge.domain.models import Permission, Principal
from knowledge.ports import NoteIndex
from knowledge.services.memory_search import MemorySearchService
from knowledge.services.note_indexing import NoteIndexingService
from knowledge.services.notes import NoteService
from knowledge.services.pins import PinService
from knowledge.services.recall import RecallService
from tests.support.embedding import HashingEmbedder
from tests.unit.services.conftest import TENANT, caller

READ, WRITE = Permission.MEMORY_READ, Permission.MEMORY_WRITE
SHARE, ADMIN = Permission.MEMORY_SHARE, Permission.MEMORY_ADMIN


def agent(subject_id: str = "alice", *scopes: Permission, **kwargs: Any) -> Principal:
    """A principal holding ``scopes`` (both memory scopes when none are named)."""
    return caller(subject_id, *(scopes or (READ, WRITE)), **kwargs)


class ManualClock:
    """Aware UTC time that moves only when told to."""

    def __init__(self) -> None:
        self.now = datetime(2026, 6, 1, 9, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


@dataclass
class MemoryWorld:
    clock: ManualClock = field(default_factory=ManualClock)
    cache: InProcessEmbeddingCache = field(default_factory=InProcessEmbeddingCache)
    enabled: bool = True
    index_factory: Callable[[], NoteIndex] = EmbeddedNoteIndex
    history_factory: Callable[[], NoteIndex] = lambda: EmbeddedNoteIndex(history=True)
    """The note index and the note history index (``as_of``); in process unless a test says."""
    stored_items_limit: int = 0
    """The tenants' stored items quota (0: none)."""

    def __post_init__(self) -> None:
        self.store = InProcessKnowledgeStore(clock=self.clock, stored_items_limit=self.stored_items_limit)
        self.embedder = CachedEmbedder(HashingEmbedder(), self.cache)
        self.index = self.index_factory()
        self.index.ensure_ready(model_id=self.embedder.model_id, dimension=self.embedder.dimension)
        self.history = self.history_factory()
        self.history.ensure_ready(model_id=self.embedder.model_id, dimension=self.embedder.dimension)
        switch = StaticRuntimeSwitch(self.enabled)
        self.notes = NoteService(self.store, self.embedder.forget, switch, self.clock)
        self.search_service = MemorySearchService(
            self.store, self.index, self.embedder, switch, self.clock, history=lambda: self.history
        )
        self.indexing = NoteIndexingService(self.store, self.index, self.embedder, history=self.history)
        self.pins = PinService(self.store, self.notes, self.clock)
        self.recall_service = RecallService(
            self.store,
            self.index,
            self.embedder,
            self.notes,
            self.pins,
            self.search_service,
            count_cl100k,
            self.clock,
        )
        self.known: dict[tuple[str, str], int] = {}

    def remember(
        self, principal: Principal, content: str, *, sync: bool = True, **arguments: Any
    ) -> MemoryResponse:
        answer = self.notes.remember(principal, RememberArguments(content=content, **arguments)).response
        self.known[principal.tenant_id, answer.note.note_id] = answer.note.version
        for superseded in arguments.get("supersedes", []):
            self.known.setdefault((principal.tenant_id, superseded), 1)
        if sync:
            self.sync()
        return answer

    def forget(self, principal: Principal, note_id: str, mode: str = "soft") -> None:
        self.notes.forget(principal, ForgetMemoryArguments(note_id=note_id, mode=mode))  # type: ignore[arg-type]
        self.sync()

    def search(self, principal: Principal, query: str, **arguments: Any) -> MemorySearchResponse:
        return self.search_service.search_memory(principal, SearchMemoryArguments(query=query, **arguments))

    def found(self, principal: Principal, query: str, **arguments: Any) -> list[str]:
        return [result.content for result in self.search(principal, query, **arguments).results]

    def recall(
        self, principal: Principal, query: str | None = None, **arguments: Any
    ) -> MemoryContextResponse:
        return self.recall_service.recall_context(principal, RecallContextArguments(query=query, **arguments))

    def recalled(self, principal: Principal, query: str | None = None, **arguments: Any) -> list[str]:
        """The ids of the notes in the pack, in order."""
        return [item.note_id for item in self.recall(principal, query, **arguments).items]

    def pin(self, principal: Principal, note_id: str, **arguments: Any) -> PinView:
        return self.pins.pin(principal, PinMemoryArguments(note_id=note_id, **arguments)).pin

    def unpin(self, principal: Principal, note_id: str) -> bool:
        return self.pins.unpin(principal, UnpinMemoryArguments(note_id=note_id)).removed

    def sync(self) -> None:
        """Index every note written so far, as the stream consumer would."""
        for (tenant_id, note_id), version in self.known.items():
            self.indexing.sync_note(tenant_id, note_id, last_known_version=version)


TENANT_ID = TENANT
