"""retrieval.retrieve, the two-leg loop of both corpora: rounds, refill, and degradation to the
lexical leg (a failed semantic leg reported as data costs no extra round trip)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pytest

from knowledge.domain.retrieval.hits import CANDIDATE_DEPTH, Leg, SearchMode
from knowledge.errors import DependencyUnavailableError
from knowledge.services.retrieval import (
    BOTH_LEGS,
    LEXICAL_ONLY,
    REFILL_DEPTH,
    Retrieval,
    Round,
    can_degrade,
    legs_for,
    normalize_mode,
    retrieve,
)

SEMANTIC_ONLY = frozenset({Leg.SEMANTIC})


@dataclass(frozen=True)
class _Hits:
    lexical: list[str] = field(default_factory=list)
    semantic: list[str] = field(default_factory=list)
    failed: Leg | None = None


class _Page:
    """Keeps every hit it is given; ``wanted`` decides nothing here (the loop compares)."""

    def __init__(self) -> None:
        self.rounds: list[_Hits] = []

    def add(self, hits: _Hits) -> int:
        self.rounds.append(hits)
        return sum(len(round_.lexical) + len(round_.semantic) for round_ in self.rounds)


class _Embedder:
    model_id = "fake"
    dimension = 2

    def __init__(self, *, down: bool = False) -> None:
        self.down = down

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if self.down:
            raise DependencyUnavailableError("The embedding model is unavailable or throttled; retry later.")
        return [[1.0, 0.0] for _ in texts]

    def forget(self, texts: Sequence[str]) -> None:
        """Nothing cached."""


class _Index:
    """Answers each round from a script (a ``_Hits`` or an error to raise), recording the rounds."""

    def __init__(self, *answers: _Hits | DependencyUnavailableError) -> None:
        self.answers = list(answers)
        self.rounds: list[Round] = []

    def search(self, round_: Round) -> _Hits:
        self.rounds.append(round_)
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


def _full(depth: int) -> list[str]:
    return [f"d{number}" for number in range(depth)]


def _run(
    index: _Index, legs: frozenset[Leg], wanted: int = 10, *, embedder: _Embedder | None = None
) -> tuple[Retrieval[_Hits, _Page], list[_Page]]:
    pages: list[_Page] = []

    def new_page() -> _Page:
        pages.append(_Page())
        return pages[-1]

    retrieval = retrieve(embedder or _Embedder(), "query", legs, wanted, index.search, new_page)
    return retrieval, pages


def test_retrieve_full_first_round_is_one_round_trip_tolerating_the_semantic_leg() -> None:
    index = _Index(_Hits(lexical=["a", "b"], semantic=["b"]))

    retrieval, pages = _run(index, BOTH_LEGS, wanted=2)

    assert [(r.legs, r.tolerate, r.k, r.vector) for r in index.rounds] == [
        (BOTH_LEGS, SEMANTIC_ONLY, CANDIDATE_DEPTH, [1.0, 0.0])
    ]
    assert retrieval.degraded is False
    assert retrieval.first == _Hits(lexical=["a", "b"], semantic=["b"])
    assert retrieval.page is pages[0]


def test_retrieve_short_page_with_a_full_leg_refills_once_at_refill_depth() -> None:
    index = _Index(_Hits(lexical=_full(CANDIDATE_DEPTH)), _Hits(lexical=["x"]))

    retrieval, _ = _run(index, LEXICAL_ONLY, wanted=CANDIDATE_DEPTH + 5)

    assert [(r.legs, r.tolerate, r.k, r.vector) for r in index.rounds] == [
        (LEXICAL_ONLY, frozenset(), CANDIDATE_DEPTH, None),
        (LEXICAL_ONLY, frozenset(), REFILL_DEPTH, None),
    ]
    assert len(retrieval.page.rounds) == 2
    assert retrieval.first.lexical == _full(CANDIDATE_DEPTH)


def test_retrieve_short_page_with_exhausted_legs_asks_no_refill() -> None:
    index = _Index(_Hits(lexical=["a"], semantic=["a"]))

    retrieval, _ = _run(index, BOTH_LEGS, wanted=10)

    assert len(index.rounds) == 1
    assert retrieval.degraded is False


def test_retrieve_semantic_leg_reported_failed_degrades_within_the_same_round_trip() -> None:
    index = _Index(_Hits(lexical=["a"], failed=Leg.SEMANTIC))

    retrieval, pages = _run(index, BOTH_LEGS)

    assert len(index.rounds) == 1
    assert retrieval.degraded is True
    assert [page.rounds for page in pages] == [[_Hits(lexical=["a"], failed=Leg.SEMANTIC)]]


def test_retrieve_after_a_reported_semantic_failure_the_refill_runs_the_lexical_leg_alone() -> None:
    index = _Index(_Hits(lexical=_full(CANDIDATE_DEPTH), failed=Leg.SEMANTIC), _Hits(lexical=["x"]))

    retrieval, _ = _run(index, BOTH_LEGS, wanted=CANDIDATE_DEPTH + 5)

    assert [(r.legs, r.tolerate, r.k, r.vector) for r in index.rounds] == [
        (BOTH_LEGS, SEMANTIC_ONLY, CANDIDATE_DEPTH, [1.0, 0.0]),
        (LEXICAL_ONLY, frozenset(), REFILL_DEPTH, None),
    ]
    assert retrieval.degraded is True


def test_retrieve_semantic_failure_in_the_refill_ranks_again_lexical_only_from_the_first_round() -> None:
    index = _Index(
        _Hits(lexical=_full(CANDIDATE_DEPTH), semantic=["s"]),
        _Hits(lexical=["x"], failed=Leg.SEMANTIC),
        _Hits(lexical=["a"]),
    )

    retrieval, pages = _run(index, BOTH_LEGS, wanted=CANDIDATE_DEPTH + 5)

    assert [(r.legs, r.k) for r in index.rounds] == [
        (BOTH_LEGS, CANDIDATE_DEPTH),
        (BOTH_LEGS, REFILL_DEPTH),
        (LEXICAL_ONLY, CANDIDATE_DEPTH),
    ]
    assert retrieval.degraded is True
    assert retrieval.page is pages[-1]
    assert retrieval.first == _Hits(lexical=["a"])
    assert pages[-1].rounds == [_Hits(lexical=["a"])]


def test_retrieve_semantic_failure_raised_by_the_index_ranks_again_lexical_only() -> None:
    failure = DependencyUnavailableError("The search index could not run the search.", {"leg": "semantic"})
    index = _Index(failure, _Hits(lexical=["a"]))

    retrieval, _ = _run(index, BOTH_LEGS)

    assert [(r.legs, r.vector) for r in index.rounds] == [(BOTH_LEGS, [1.0, 0.0]), (LEXICAL_ONLY, None)]
    assert retrieval.degraded is True
    assert retrieval.first == _Hits(lexical=["a"])


def test_retrieve_semantic_only_search_raises_a_failed_index_leg() -> None:
    failure = DependencyUnavailableError("The search index could not run the search.", {"leg": "semantic"})
    index = _Index(failure)

    with pytest.raises(DependencyUnavailableError):
        _run(index, SEMANTIC_ONLY)

    assert index.rounds[0].tolerate == frozenset()


def test_retrieve_a_reported_failure_of_an_untolerated_leg_is_raised() -> None:
    index = _Index(_Hits(semantic=["a"], failed=Leg.LEXICAL))

    with pytest.raises(DependencyUnavailableError) as raised:
        _run(index, BOTH_LEGS)

    assert raised.value.details == {"leg": "lexical"}


def test_retrieve_whole_index_failure_is_raised() -> None:
    index = _Index(DependencyUnavailableError("The search index is unavailable."))

    with pytest.raises(DependencyUnavailableError):
        _run(index, BOTH_LEGS)

    assert len(index.rounds) == 1


def test_retrieve_embedder_down_degrades_a_two_leg_search_to_its_lexical_leg() -> None:
    index = _Index(_Hits(lexical=["a"]))

    retrieval, _ = _run(index, BOTH_LEGS, embedder=_Embedder(down=True))

    assert [(r.legs, r.tolerate, r.vector) for r in index.rounds] == [(LEXICAL_ONLY, frozenset(), None)]
    assert retrieval.degraded is True


def test_retrieve_embedder_down_fails_a_semantic_only_search() -> None:
    index = _Index()

    with pytest.raises(DependencyUnavailableError):
        _run(index, SEMANTIC_ONLY, embedder=_Embedder(down=True))

    assert index.rounds == []


@pytest.mark.parametrize(
    ("mode", "legs", "degradable"),
    [
        (SearchMode.HYBRID, BOTH_LEGS, True),
        (SearchMode.RRF, BOTH_LEGS, True),
        (SearchMode.LEXICAL, LEXICAL_ONLY, False),
        (SearchMode.SEMANTIC, SEMANTIC_ONLY, False),
    ],
)
def test_legs_for_each_mode_and_whether_it_may_degrade(
    mode: SearchMode, legs: frozenset[Leg], degradable: bool
) -> None:
    assert legs_for(mode) == legs
    assert can_degrade(legs) is degradable


def test_normalize_mode_ignores_case_and_space_and_defaults_to_hybrid() -> None:
    assert normalize_mode(" RRF ") is SearchMode.RRF
    assert normalize_mode("bm25") is SearchMode.HYBRID
