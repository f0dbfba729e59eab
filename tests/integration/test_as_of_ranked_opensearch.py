"""The ranked ``as_of`` property of ``search_knowledge`` (``tests/unit/services/test_as_of_ranked.py``)
on a real OpenSearch node: the chunk index and the knowledge history index are ``OpenSearchIndex``
instances (fresh ones per history), the store and services as in the unit suite. Fewer histories,
each a few seconds."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from opensearchpy import OpenSearch

from knowledge.adapters.opensearch.engine import build_opensearch_client
from knowledge.adapters.opensearch.passages import OpenSearchIndex
from knowledge.ports import SearchIndex
from tests.support.fuzzing import budget
from tests.support.knowledge_history import OWNER, READER, HistoryRun, KnowledgeWorld, Op, operations


class _Indexes:
    def __init__(self, client: OpenSearch) -> None:
        self.client = client
        self.created: list[str] = []

    def factory(self, kind: str) -> Callable[[], SearchIndex]:
        def build() -> SearchIndex:
            name = f"as-of-{kind}-{uuid.uuid4().hex[:12]}"
            self.created.append(name)
            return OpenSearchIndex(self.client, name, refresh=True)

        return build

    def world(self) -> KnowledgeWorld:
        return KnowledgeWorld(index_factory=self.factory("chunks"), history_factory=self.factory("history"))

    def drop(self) -> None:
        while self.created:
            self.client.indices.delete(index=self.created.pop(), ignore_unavailable=True)


@pytest.fixture
def indexes(opensearch_url: str) -> Iterator[_Indexes]:
    made = _Indexes(build_opensearch_client(opensearch_url, auth="none", region="us-east-1"))
    yield made
    made.drop()


def test_as_of_ranked_three_revisions_on_opensearch_find_the_revision_current_then(
    indexes: _Indexes,
) -> None:
    run = HistoryRun(indexes.world())
    run.play(
        [("create", 0, True, ["amber"]), ("revise", 0, True, ["basalt"]), ("revise", 0, True, ["cobalt"])]
    )
    revisions = [next(iter(run.expected(moment, READER)))[1] for moment in range(3)]
    assert len(set(revisions)) == 3
    for moment, at in enumerate(run.moments):
        for mode in ("lexical", "semantic", "hybrid"):
            assert run.world.found(READER, as_of=at, mode=mode) == run.expected(moment, READER), mode


def test_as_of_ranked_random_histories_on_opensearch_equal_their_replay(indexes: _Indexes) -> None:
    @settings(
        max_examples=budget(20, 200),
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )
    @given(history=operations())
    def replayed(history: list[Op]) -> None:
        run = HistoryRun(indexes.world())
        try:
            run.play(history)
            for moment, at in enumerate(run.moments):
                for principal in (OWNER, READER):
                    expected = run.expected(moment, principal)
                    for mode in ("lexical", "semantic"):
                        assert run.world.found(principal, as_of=at, mode=mode) == expected, (moment, mode)
        finally:
            indexes.drop()

    replayed()
