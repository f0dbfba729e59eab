"""search_memory when its semantic leg fails: hybrid falls back to the lexical leg with
``degraded: true``; semantic mode has nothing to fall back to."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from knowledge.adapters.runtime_switch import StaticRuntimeSwitch
from knowledge.domain.memory.retrieval import NoteLegHits, NoteQuery
from knowledge.domain.retrieval.hits import Leg
from knowledge.errors import DependencyUnavailableError
from knowledge.services.memory_search import MemorySearchService
from tests.unit.services.memory_world import MemoryWorld, agent


class _DownEmbedder:
    """An embedding model that is throttled on every call (as Bedrock after its retries)."""

    model_id = "down"
    dimension = 64

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        raise DependencyUnavailableError("The embedding model is unavailable or throttled; retry later.")

    def forget(self, texts: Sequence[str]) -> None:
        """Nothing cached."""


class _KnnDownIndex:
    """The note index with its k-NN leg failing, as OpenSearch reports a failed leg of ``_msearch``."""

    def __init__(self, inner: object) -> None:
        self._inner = inner
        self.legs: list[frozenset[Leg]] = []

    def search(self, query: NoteQuery) -> NoteLegHits:
        self.legs.append(query.legs)
        if Leg.SEMANTIC in query.legs:
            raise DependencyUnavailableError(
                "The search index could not run the search.", {"leg": "semantic"}
            )
        return self._inner.search(query)  # type: ignore[attr-defined, no-any-return]


@pytest.fixture
def world() -> MemoryWorld:
    world = MemoryWorld()
    alice = agent("alice")
    world.remember(alice, "The staging database is pg-stage-3.")
    world.remember(alice, "Deploys are frozen on Fridays.")
    return world


def _service(world: MemoryWorld, *, embedder: object = None, index: object = None) -> MemorySearchService:
    return MemorySearchService(
        world.store,
        index or world.index,  # type: ignore[arg-type]
        embedder or world.embedder,  # type: ignore[arg-type]
        StaticRuntimeSwitch(True),
        world.clock,
    )


def test_search_memory_embedder_down_hybrid_is_degraded_to_lexical(world: MemoryWorld) -> None:
    world.search_service = _service(world, embedder=_DownEmbedder())

    answer = world.search(agent("alice"), "staging database", explain=True)

    assert answer.degraded is True
    assert [result.content for result in answer.results] == ["The staging database is pg-stage-3."]
    assert answer.results[0].scores is not None
    assert answer.results[0].scores.semantic is None


def test_search_memory_knn_leg_down_hybrid_is_degraded_to_lexical(world: MemoryWorld) -> None:
    index = _KnnDownIndex(world.index)
    world.search_service = _service(world, index=index)

    answer = world.search(agent("alice"), "deploys fridays")

    assert answer.degraded is True
    assert [result.content for result in answer.results] == ["Deploys are frozen on Fridays."]
    assert index.legs[-1] == frozenset({Leg.LEXICAL})


def test_search_memory_embedder_down_semantic_mode_is_dependency_unavailable(world: MemoryWorld) -> None:
    world.search_service = _service(world, embedder=_DownEmbedder())

    with pytest.raises(DependencyUnavailableError):
        world.search(agent("alice"), "staging database", mode="semantic")


def test_search_memory_healthy_hybrid_is_not_degraded(world: MemoryWorld) -> None:
    answer = world.search(agent("alice"), "staging database")

    assert answer.degraded is False
    assert "degraded" not in answer.model_dump()
    assert answer.results[0].content == "The staging database is pg-stage-3."
