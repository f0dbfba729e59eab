"""Random item histories for the ranked ``as_of`` property of ``search_knowledge`` (DESIGN §11),
played on a ``KnowledgeWorld`` (the in-process store, an index and a knowledge history index).

A history is a list of item and base writes (create, revise, roll back, archive, deactivate or
reactivate a base, and delivery of the index syncs that wait, possibly in reverse order), one per
second of the world's clock. After each write the runner takes the store's own state of every item
(its status and current revision): that snapshot is the replay of the history up to that moment.

The rule the answers are held to: a ranked query ``as_of=t`` finds exactly the items whose state at
``t`` was published, each with the revision current then, among those the caller may see *today*
(the base's visibility and status now). Every revision holds the same word and its own counter, so
one lexical query matches every such item and no two passages are copies.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

from hypothesis import strategies as st

from knowledge.adapters.embedded.passages import EmbeddedIndex
from knowledge.adapters.embedding_cache import CachedEmbedder, InProcessEmbeddingCache
from knowledge.adapters.in_process.store import InProcessKnowledgeStore
from knowledge.adapters.runtime_switch import StaticRuntimeSwitch
from knowledge.contract.search import KnowledgeSearchResponse, SearchKnowledgeArguments
from knowledge.domain.access.visibility import can_see
from knowledge.domain.models import BaseStatus, ItemStatus, Permission, Principal, Scope, Source
from knowledge.domain.retrieval.chunking import Chunker
from knowledge.errors import KnowledgeError
from knowledge.ports import SearchIndex
from knowledge.services.indexing import IndexingService
from knowledge.services.search import SearchService
from tests.support.embedding import HashingEmbedder
from tests.unit.services.conftest import TENANT, caller
from tests.unit.services.memory_world import ManualClock

WORD = "zephyr"
"""In every revision, so one lexical query finds every item a caller may see."""
FILLER = ("amber", "basalt", "cobalt", "dune", "ember", "fjord", "glacier", "harbor", "iris", "juniper")
OWNER = caller("alice", Permission.READ)
READER = caller("bob", Permission.READ)
BASES = (("Handbook", Scope.TENANT), ("Diary", Scope.PRIVATE))
"""Both owned by ``OWNER``; ``READER`` sees the tenant-scoped one only."""

_T = TypeVar("_T")
Op = tuple[Any, ...]
Answer = frozenset[tuple[str, str]]
"""The ``(knowledge_item_id, knowledge_revision_id)`` pairs of a ranked answer."""


def operations() -> st.SearchStrategy[list[Op]]:
    """Random histories of 1–16 writes; a write names an item by a number taken modulo the items
    created so far (and does nothing before the first)."""
    target = st.integers(0, 9)
    words = st.lists(st.sampled_from(FILLER), min_size=1, max_size=3)
    write = st.one_of(
        st.tuples(st.just("create"), st.integers(0, len(BASES) - 1), st.booleans(), words),
        st.tuples(st.just("revise"), target, st.booleans(), words),
        st.tuples(st.just("rollback"), target, st.integers(0, 5)),
        st.tuples(st.just("archive"), target),
        st.tuples(st.just("base"), st.integers(0, len(BASES) - 1), st.booleans()),
        st.tuples(st.just("deliver"), st.booleans()),
    )
    return st.lists(write, min_size=1, max_size=16)


@dataclass
class KnowledgeWorld:
    """The store, the live index and the knowledge history index, and the services over them."""

    index_factory: Callable[[], SearchIndex] = EmbeddedIndex
    history_factory: Callable[[], SearchIndex] = EmbeddedIndex
    clock: ManualClock = field(default_factory=ManualClock)

    def __post_init__(self) -> None:
        self.store = InProcessKnowledgeStore(clock=self.clock)
        self.cache = InProcessEmbeddingCache()
        self.embedder = CachedEmbedder(HashingEmbedder(), self.cache)
        self.index = self.index_factory()
        self.history = self.history_factory()
        for index in (self.index, self.history):
            index.ensure_ready(model_id=self.embedder.model_id, dimension=self.embedder.dimension)
        chunker = Chunker(max_tokens=64, overlap_tokens=8)
        self.indexing = IndexingService(self.store, self.index, self.embedder, chunker, history=self.history)
        self.search_service = SearchService(
            self.store,
            self.index,
            self.embedder,
            StaticRuntimeSwitch(True),
            self.clock,
            history=lambda: self.history,
        )

    def query(
        self, principal: Principal, *, as_of: datetime | None = None, mode: str = "lexical", text: str = WORD
    ) -> KnowledgeSearchResponse:
        answer = self.search_service.search_knowledge(
            principal,
            SearchKnowledgeArguments(query=text, mode=mode, max_results=50, as_of=as_of),  # type: ignore[arg-type]
        )
        assert isinstance(answer, KnowledgeSearchResponse)
        return answer

    def found(self, principal: Principal, *, as_of: datetime | None = None, mode: str = "lexical") -> Answer:
        return frozenset(
            (result.knowledge_item_id, result.knowledge_revision_id)
            for result in self.query(principal, as_of=as_of, mode=mode).results
        )


@dataclass
class HistoryRun:
    """Plays a history on ``world``, delivering each item's index sync when a ``deliver`` write
    says (and all of them at the end), and keeps the store's state of every item after each write."""

    world: KnowledgeWorld
    moments: list[datetime] = field(default_factory=list)
    snapshots: list[dict[str, tuple[ItemStatus, str | None, str]]] = field(default_factory=list)
    items: list[str] = field(default_factory=list)
    pending: list[tuple[str, int]] = field(default_factory=list)
    counter: int = 0

    def __post_init__(self) -> None:
        store = self.world.store
        self.bases = [
            store.create_base(TENANT, name=name, owner_id=OWNER.subject_id, scope=scope, team_id=None)
            for name, scope in BASES
        ]

    def play(self, history: list[Op]) -> None:
        for op in history:
            self.world.clock.advance(1)
            with contextlib.suppress(KnowledgeError):
                self._apply(op)
            self.moments.append(self.world.clock.now)
            self.snapshots.append(self._snapshot())
        self._deliver(reverse=False)
        self.world.clock.advance(1)

    def expected(self, moment: int, principal: Principal) -> Answer:
        """The replay at ``moment``: published items then, with their revision then, that
        ``principal`` may see today."""
        store = self.world.store
        return frozenset(
            (item_id, revision_id)
            for item_id, (status, revision_id, base_id) in self.snapshots[moment].items()
            if status is ItemStatus.PUBLISHED
            and revision_id is not None
            and can_see(principal, _present(store.get_base(TENANT, base_id)))
        )

    def _content(self, words: list[str]) -> str:
        self.counter += 1
        return f"{WORD} {' '.join(words)} r{self.counter}"

    def _apply(self, op: Op) -> None:
        store = self.world.store
        kind = op[0]
        if kind == "create":
            _, base, publish, words = op
            item, _ = store.create_item(
                TENANT,
                self.bases[base].knowledge_base_id,
                title=f"Item {len(self.items)}",
                content=self._content(words),
                source=Source(),
                external_id=None,
                publish=publish,
            )
            self.items.append(item.knowledge_item_id)
            self.pending.append((item.knowledge_item_id, item.version))
            return
        if kind == "base":
            _, position, active = op
            base = _present(store.get_base(TENANT, self.bases[position].knowledge_base_id))
            store.update_base(
                TENANT,
                base.knowledge_base_id,
                expected_version=base.version,
                status=BaseStatus.ACTIVE if active else BaseStatus.INACTIVE,
            )
            return
        if kind == "deliver":
            self._deliver(reverse=op[1])
            return
        if not self.items:
            return
        item_id = self.items[op[1] % len(self.items)]
        item = _present(store.get_item(TENANT, item_id))
        if kind == "revise":
            _, _, publish, words = op
            item, _ = store.add_revision(
                TENANT,
                item_id,
                content=self._content(words),
                title=None,
                source=None,
                publish=publish,
                expected_version=item.version,
            )
        elif kind == "rollback":
            revisions = store.list_revisions(TENANT, item_id, limit=50, next_token=None).entries
            chosen = revisions[op[2] % len(revisions)]
            item = store.publish_revision(
                TENANT, item_id, chosen.knowledge_revision_id, expected_version=item.version
            )
        else:
            item = store.archive_item(TENANT, item_id, expected_version=item.version)
        self.pending.append((item_id, item.version))

    def _deliver(self, *, reverse: bool) -> None:
        """Run the waiting index syncs (as the stream consumer would, one per write), in write order
        or reversed."""
        waiting, self.pending = self.pending, []
        for item_id, version in reversed(waiting) if reverse else waiting:
            self.world.indexing.sync_item(TENANT, item_id, last_known_version=version)

    def _snapshot(self) -> dict[str, tuple[ItemStatus, str | None, str]]:
        store = self.world.store
        snapshot = {}
        for item_id in self.items:
            item = _present(store.get_item(TENANT, item_id))
            snapshot[item_id] = (item.status, item.current_revision_id, item.knowledge_base_id)
        return snapshot


def _present(record: _T | None) -> _T:
    assert record is not None
    return record
