"""Read-your-own-writes over knowledge (DESIGN §9): ``search_knowledge`` reports ``pending_index``
(the published items the index has not taken yet that the caller may read) and, with
``consistent: true``, ranks their current revisions by the index's own rules, in place of any
older revision the index holds. The indexer is held back by not syncing the items written."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from knowledge.adapters.embedded.passages import EmbeddedIndex
from knowledge.adapters.in_process.store import InProcessKnowledgeStore
from knowledge.adapters.runtime_switch import StaticRuntimeSwitch
from knowledge.contract.search import PENDING_INDEX_LIMIT, KnowledgeSearchResponse, SearchKnowledgeArguments
from knowledge.domain.models import BaseStatus, KnowledgeBase, KnowledgeItem, Principal, Scope, Source
from knowledge.domain.retrieval.chunking import Chunker
from knowledge.errors import DependencyUnavailableError
from knowledge.services.indexing import IndexingService
from knowledge.services.search import SearchService
from tests.support.embedding import FailingEmbedder, HashingEmbedder
from tests.unit.services.conftest import READ, TENANT, caller

READER = caller("agent-7", READ, team_ids=["platform"])
HERON = "The staging database is called heron and runs in the eastern region."
EGRET = "The billing ledger is reconciled every night by the egret batch job."


@pytest.fixture
def search(
    store: InProcessKnowledgeStore, index: EmbeddedIndex, embedder: HashingEmbedder, chunker: Chunker
) -> SearchService:
    return SearchService(store, index, embedder, StaticRuntimeSwitch(True), chunker=chunker)


def _base(
    store: InProcessKnowledgeStore, scope: Scope = Scope.TENANT, team_id: str | None = None
) -> KnowledgeBase:
    return store.create_base(TENANT, name="Handbook", owner_id="owner-1", scope=scope, team_id=team_id)


def _write(
    store: InProcessKnowledgeStore,
    base: KnowledgeBase,
    content: str,
    *,
    title: str = "Runbook",
    indexing: IndexingService | None = None,
) -> KnowledgeItem:
    """A published item; indexed only when ``indexing`` is given (else the indexer lags)."""
    item, _ = store.create_item(
        TENANT,
        base.knowledge_base_id,
        title=title,
        content=content,
        source=Source(),
        external_id=None,
        publish=True,
    )
    if indexing is not None:
        indexing.sync_item(TENANT, item.knowledge_item_id, last_known_version=item.version)
    return item


def _query(
    search: SearchService, text: str, principal: Principal = READER, **arguments: Any
) -> KnowledgeSearchResponse:
    answer = search.search_knowledge(principal, SearchKnowledgeArguments(query=text, **arguments))
    assert isinstance(answer, KnowledgeSearchResponse)
    return answer


def _lexical(answer: KnowledgeSearchResponse, item: KnowledgeItem) -> float | None:
    [result] = [result for result in answer.results if result.knowledge_item_id == item.knowledge_item_id]
    return result.scores.lexical


def _found(answer: KnowledgeSearchResponse) -> list[str]:
    return [result.knowledge_item_id for result in answer.results]


def test_search_without_consistent_reports_the_pending_item_and_does_not_find_it(
    search: SearchService, store: InProcessKnowledgeStore
) -> None:
    _write(store, _base(store), HERON)

    answer = _query(search, "staging database heron")

    assert answer.results == []
    assert (answer.pending_index.writes, answer.pending_index.included) == (1, False)


@pytest.mark.parametrize("mode", ["hybrid", "lexical", "semantic", "rrf"])
def test_search_consistent_finds_the_item_just_published_while_the_indexer_lags(
    search: SearchService, store: InProcessKnowledgeStore, indexing: IndexingService, mode: str
) -> None:
    base = _base(store)
    _write(store, base, EGRET, indexing=indexing)
    pending = _write(store, base, HERON)

    answer = _query(search, "staging database heron", mode=mode, consistent=True)

    assert _found(answer)[0] == pending.knowledge_item_id
    result = answer.results[0]
    assert result.knowledge_revision_id == pending.current_revision_id
    assert HERON[result.locator.offset : result.locator.offset + result.locator.length] == result.excerpt
    assert (answer.pending_index.writes, answer.pending_index.included) == (1, True)


def test_search_consistent_ranks_pending_and_indexed_items_together(
    search: SearchService, store: InProcessKnowledgeStore, indexing: IndexingService
) -> None:
    base = _base(store)
    indexed = _write(store, base, "The heron database backup runs weekly.", indexing=indexing)
    pending = _write(store, base, HERON)

    answer = _query(search, "staging database heron", mode="lexical", consistent=True)

    assert _found(answer) == [pending.knowledge_item_id, indexed.knowledge_item_id]


def test_search_consistent_pending_item_scores_as_it_does_once_indexed(
    search: SearchService, store: InProcessKnowledgeStore, indexing: IndexingService
) -> None:
    base = _base(store)
    _write(store, base, EGRET, indexing=indexing)
    pending = _write(store, base, HERON)
    before = _query(search, "staging database heron", mode="lexical", consistent=True)

    indexing.sync_item(TENANT, pending.knowledge_item_id, last_known_version=pending.version)
    after = _query(search, "staging database heron", mode="lexical", consistent=True)

    assert after.pending_index.writes == 0
    assert _lexical(before, pending) == pytest.approx(_lexical(after, pending), rel=1e-6)


def test_search_consistent_shows_the_new_revision_never_the_stale_one(
    search: SearchService, store: InProcessKnowledgeStore, indexing: IndexingService
) -> None:
    item = _write(store, _base(store), EGRET, indexing=indexing)
    revised, _ = store.add_revision(
        TENANT,
        item.knowledge_item_id,
        content=HERON,
        title=None,
        source=None,
        publish=True,
        expected_version=item.version,
    )

    old_words = _query(search, "billing ledger egret", mode="lexical", consistent=True)
    new_words = _query(search, "staging database heron", mode="lexical", consistent=True)

    assert old_words.results == []  # the index still holds the old revision: it gives way
    assert old_words.pending_index.writes == 1
    assert _found(new_words) == [item.knowledge_item_id]
    assert new_words.results[0].knowledge_revision_id == revised.current_revision_id
    assert "heron" in new_words.results[0].excerpt


@pytest.mark.parametrize(
    ("scope", "team_id", "visible"),
    [(Scope.TENANT, None, True), (Scope.TEAM, "platform", True), (Scope.TEAM, "billing", False)],
)
def test_search_consistent_pending_item_follows_the_visibility_rule(
    search: SearchService,
    store: InProcessKnowledgeStore,
    scope: Scope,
    team_id: str | None,
    visible: bool,
) -> None:
    pending = _write(store, _base(store, scope, team_id), HERON)

    answer = _query(search, "staging database heron", consistent=True)

    assert _found(answer) == ([pending.knowledge_item_id] if visible else [])
    assert answer.pending_index.writes == (1 if visible else 0)


def test_search_consistent_pending_item_outside_the_token_bases_or_the_filter_is_left_out(
    search: SearchService, store: InProcessKnowledgeStore
) -> None:
    other = _base(store)
    narrowed = _base(store)
    _write(store, other, HERON)
    kept = _write(store, narrowed, HERON)
    restricted = caller("agent-7", READ, knowledge_base_ids=[narrowed.knowledge_base_id])

    by_token = _query(search, "staging database heron", restricted, consistent=True)
    by_filter = _query(
        search, "staging database heron", consistent=True, knowledge_base_id=narrowed.knowledge_base_id
    )

    for answer in (by_token, by_filter):
        assert _found(answer) == [kept.knowledge_item_id]
        assert answer.pending_index.writes == 1


def test_search_consistent_pending_item_of_an_inactive_base_is_left_out(
    search: SearchService, store: InProcessKnowledgeStore
) -> None:
    base = _base(store)
    _write(store, base, HERON)
    store.update_base(
        TENANT, base.knowledge_base_id, expected_version=base.version, status=BaseStatus.INACTIVE
    )

    answer = _query(search, "staging database heron", consistent=True)

    assert (answer.results, answer.pending_index.writes) == ([], 0)


def test_search_consistent_with_as_of_adds_nothing(
    store: InProcessKnowledgeStore, index: EmbeddedIndex, embedder: HashingEmbedder, chunker: Chunker
) -> None:
    history = EmbeddedIndex()
    history.ensure_ready(model_id=embedder.model_id, dimension=embedder.dimension)
    search = SearchService(
        store, index, embedder, StaticRuntimeSwitch(True), history=lambda: history, chunker=chunker
    )
    _write(store, _base(store), HERON)

    answer = _query(
        search, "staging database heron", consistent=True, as_of=datetime.now(UTC) - timedelta(seconds=1)
    )

    assert answer.results == []
    assert (answer.pending_index.writes, answer.pending_index.included) == (1, False)


def test_search_consistent_embedder_failure_on_pending_degrades_hybrid_to_lexical(
    store: InProcessKnowledgeStore, index: EmbeddedIndex, chunker: Chunker
) -> None:
    search = SearchService(store, index, FailingEmbedder("heron"), StaticRuntimeSwitch(True), chunker=chunker)
    pending = _write(store, _base(store), HERON)

    answer = _query(search, "staging database", consistent=True)

    assert answer.degraded is True
    assert _found(answer) == [pending.knowledge_item_id]


def test_search_pending_index_counts_at_most_the_limit(
    search: SearchService, store: InProcessKnowledgeStore
) -> None:
    base = _base(store)
    for number in range(PENDING_INDEX_LIMIT + 3):
        _write(store, base, f"Note {number} about the heron database.")

    answer = _query(search, "heron database")

    assert answer.pending_index.writes == PENDING_INDEX_LIMIT


def test_search_consistent_semantic_query_embedder_failure_on_pending_is_dependency_unavailable(
    store: InProcessKnowledgeStore, index: EmbeddedIndex, chunker: Chunker
) -> None:
    search = SearchService(store, index, FailingEmbedder("heron"), StaticRuntimeSwitch(True), chunker=chunker)
    _write(store, _base(store), HERON)

    with pytest.raises(DependencyUnavailableError) as raised:
        _query(search, "staging database", mode="semantic", consistent=True)

    assert raised.value.details == {"leg": "semantic"}
