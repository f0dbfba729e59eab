"""Read-your-own-writes of ``search_knowledge`` on a real OpenSearch node
(``tests/unit/services/test_search_read_your_writes.py`` has the embedded index): with
``consistent: true`` the published items the indexer has not taken yet are scored by
``OpenSearchIndex.score_items`` (``_analyze`` and ``_mtermvectors`` statistics of the tenant's
shard, cosine of their chunks) and ranked with the index's hits. The indexer is held back by not
syncing the items written."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from knowledge.adapters.in_process.store import InProcessKnowledgeStore
from knowledge.adapters.opensearch.engine import build_opensearch_client
from knowledge.adapters.opensearch.passages import OpenSearchIndex
from knowledge.adapters.runtime_switch import StaticRuntimeSwitch
from knowledge.contract.search import KnowledgeSearchResponse, SearchKnowledgeArguments
from knowledge.domain.models import KnowledgeBase, KnowledgeItem, Permission, Principal, Scope, Source
from knowledge.domain.retrieval.chunking import Chunker
from knowledge.services.indexing import IndexingService
from knowledge.services.search import SearchService
from tests.support.embedding import HashingEmbedder
from tests.support.store import TickingClock

TENANT = "acme"
READER = Principal(
    tenant_id=TENANT,
    subject_id="agent-7",
    scopes=frozenset({Permission.READ.value}),
    team_ids=frozenset({"platform"}),
)
HERON = "The staging database is called heron and runs in the eastern region."
CORPUS = [
    "The billing ledger is reconciled every night by the egret batch job.",
    "The heron database backup runs weekly on Sundays.",
    "Release trains leave on Thursdays after the staging checks pass.",
]


class World:
    def __init__(self, index: OpenSearchIndex) -> None:
        self.store = InProcessKnowledgeStore(clock=TickingClock())
        embedder = HashingEmbedder()
        index.ensure_ready(model_id=embedder.model_id, dimension=embedder.dimension)
        chunker = Chunker(max_tokens=64, overlap_tokens=8)
        self.indexing = IndexingService(self.store, index, embedder, chunker)
        self.search = SearchService(self.store, index, embedder, StaticRuntimeSwitch(True), chunker=chunker)

    def base(self, scope: Scope = Scope.TENANT, team_id: str | None = None) -> KnowledgeBase:
        return self.store.create_base(
            TENANT, name="Handbook", owner_id="owner-1", scope=scope, team_id=team_id
        )

    def write(self, base: KnowledgeBase, content: str, *, indexed: bool) -> KnowledgeItem:
        item, _ = self.store.create_item(
            TENANT,
            base.knowledge_base_id,
            title="Runbook",
            content=content,
            source=Source(),
            external_id=None,
            publish=True,
        )
        if indexed:
            self.sync(item)
        return item

    def sync(self, item: KnowledgeItem) -> None:
        self.indexing.sync_item(TENANT, item.knowledge_item_id, last_known_version=item.version)

    def query(self, text: str, **arguments: Any) -> KnowledgeSearchResponse:
        answer = self.search.search_knowledge(READER, SearchKnowledgeArguments(query=text, **arguments))
        assert isinstance(answer, KnowledgeSearchResponse)
        return answer


@pytest.fixture
def world(opensearch_url: str) -> Iterator[World]:
    client = build_opensearch_client(opensearch_url, auth="none", region="us-east-1")
    name = f"ryw-{uuid.uuid4().hex[:12]}"
    yield World(OpenSearchIndex(client, name, refresh=True))
    client.indices.delete(index=name, ignore_unavailable=True)


@pytest.mark.parametrize("mode", ["lexical", "semantic", "hybrid"])
def test_opensearch_consistent_finds_the_item_the_indexer_has_not_taken(world: World, mode: str) -> None:
    base = world.base()
    for content in CORPUS:
        world.write(base, content, indexed=True)
    pending = world.write(base, HERON, indexed=False)

    lagging = world.query("heron eastern region", mode=mode)
    consistent = world.query("heron eastern region", mode=mode, consistent=True)

    assert pending.knowledge_item_id not in [result.knowledge_item_id for result in lagging.results]
    assert (lagging.pending_index.writes, lagging.pending_index.included) == (1, False)
    assert consistent.results[0].knowledge_item_id == pending.knowledge_item_id
    assert consistent.results[0].knowledge_revision_id == pending.current_revision_id
    assert (consistent.pending_index.writes, consistent.pending_index.included) == (1, True)


def test_opensearch_consistent_pending_passage_scores_as_it_does_once_indexed(world: World) -> None:
    base = world.base()
    for content in CORPUS:
        world.write(base, content, indexed=True)
    pending = world.write(base, HERON, indexed=False)
    before = world.query("staging database heron", mode="lexical", consistent=True)

    world.sync(pending)
    after = world.query("staging database heron", mode="lexical", consistent=True)

    assert after.pending_index.writes == 0
    # The indexed passages' own scores move as the corpus grows; the pending one's does not.
    assert _lexical(before, pending) == pytest.approx(_lexical(after, pending), rel=1e-5)


def _lexical(answer: KnowledgeSearchResponse, item: KnowledgeItem) -> float | None:
    [result] = [result for result in answer.results if result.knowledge_item_id == item.knowledge_item_id]
    return result.scores.lexical


def test_opensearch_consistent_hides_the_stale_revision_the_index_holds(world: World) -> None:
    item = world.write(world.base(), CORPUS[0], indexed=True)
    revised, _ = world.store.add_revision(
        TENANT,
        item.knowledge_item_id,
        content=HERON,
        title=None,
        source=None,
        publish=True,
        expected_version=item.version,
    )

    old_words = world.query("billing ledger egret", mode="lexical", consistent=True)
    new_words = world.query("staging database heron", mode="lexical", consistent=True)

    assert old_words.results == []
    assert [(r.knowledge_item_id, r.knowledge_revision_id) for r in new_words.results] == [
        (item.knowledge_item_id, revised.current_revision_id)
    ]


def test_opensearch_consistent_leaves_out_a_pending_item_of_a_base_the_caller_cannot_read(
    world: World,
) -> None:
    world.write(world.base(Scope.TEAM, "billing"), HERON, indexed=False)

    answer = world.query("staging database heron", consistent=True)

    assert (answer.results, answer.pending_index.writes) == ([], 0)
