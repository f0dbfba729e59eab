"""How a search reads the store: the read-time truth check of a round of candidates is one batched
read (DESIGN §4), counted by a wrapper around the in-memory store; every ranked query also lists
the items the index has not taken yet (``pending_index``), and reads their bases when there are any."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from knowledge.adapters.embedded.passages import EmbeddedIndex
from knowledge.adapters.in_process.store import InProcessKnowledgeStore
from knowledge.adapters.runtime_switch import StaticRuntimeSwitch
from knowledge.contract.search import KnowledgeSearchResponse, SearchKnowledgeArguments
from knowledge.domain.models import Scope, Source
from knowledge.services.indexing import IndexingService
from knowledge.services.ranking import window
from knowledge.services.search import SearchService
from tests.support.embedding import HashingEmbedder
from tests.unit.services.conftest import READ, TENANT, caller

READER = caller("agent-7", READ)
QUERY = "zephyr ledger migration"


class CountingStore:
    """The store, counting every method called on it by name."""

    def __init__(self, store: InProcessKnowledgeStore) -> None:
        self._store = store
        self.calls: Counter[str] = Counter()

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._store, name)

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls[name] += 1
            return method(*args, **kwargs)

        return counted


@pytest.fixture
def counting(store: InProcessKnowledgeStore) -> CountingStore:
    return CountingStore(store)


@pytest.fixture
def search(counting: CountingStore, index: EmbeddedIndex, embedder: HashingEmbedder) -> SearchService:
    return SearchService(counting, index, embedder, StaticRuntimeSwitch(True))  # type: ignore[arg-type]


def _published_items(store: InProcessKnowledgeStore, indexing: IndexingService, count: int) -> list[str]:
    base = store.create_base(TENANT, name="Handbook", owner_id="owner-1", scope=Scope.TENANT, team_id=None)
    item_ids = []
    for number in range(count):
        item, _ = store.create_item(
            TENANT,
            base.knowledge_base_id,
            title=f"Zephyr note {number}",
            content=f"The zephyr ledger migration, step {number}: " + "ledger " * (number % 7),
            source=Source(),
            external_id=None,
            publish=True,
        )
        indexing.sync_item(TENANT, item.knowledge_item_id, last_known_version=item.version)
        item_ids.append(item.knowledge_item_id)
    return item_ids


def _query(search: SearchService, max_results: int = 10) -> KnowledgeSearchResponse:
    answer = search.search_knowledge(READER, SearchKnowledgeArguments(query=QUERY, max_results=max_results))
    assert isinstance(answer, KnowledgeSearchResponse)
    return answer


def _ids(answer: KnowledgeSearchResponse) -> list[str]:
    return [result.knowledge_item_id for result in answer.results]


def test_search_fresh_candidates_reads_the_store_once(
    search: SearchService, counting: CountingStore, store: InProcessKnowledgeStore, indexing: IndexingService
) -> None:
    _published_items(store, indexing, 40)

    answer = _query(search)

    assert len(answer.results) == 10
    assert all(result.title.startswith("Zephyr note") for result in answer.results)
    assert counting.calls == Counter({"read_candidates": 1, "list_unindexed_items": 1})


def test_search_stale_first_window_reads_once_more_per_window_and_skips_stale_hits(
    search: SearchService, counting: CountingStore, store: InProcessKnowledgeStore, indexing: IndexingService
) -> None:
    _published_items(store, indexing, 40)
    ranked = _ids(_query(search, max_results=40))
    stale = ranked[: window(10) + 5]  # the whole first window and more: newer revisions the index lacks
    for item_id in stale:
        store.add_revision(
            TENANT,
            item_id,
            content="Rewritten.",
            title=None,
            source=None,
            publish=True,
            expected_version=None,
        )
    counting.calls.clear()

    answer = _query(search)

    assert _ids(answer) == ranked[window(10) + 5 :][:10]
    assert counting.calls == Counter({"read_candidates": 2, "list_unindexed_items": 1, "get_bases": 1})
    assert answer.pending_index.writes == len(stale)
