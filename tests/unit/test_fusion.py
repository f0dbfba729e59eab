from __future__ import annotations

import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from knowledge.domain.retrieval.fusion import RRF_K, FusedHit, clamp_alpha, collapse, fuse
from knowledge.domain.retrieval.hits import ChunkHit, LegHits, SearchMode


def _hit(item: str, score: float, *, ordinal: int = 0, revision: str = "kr_1") -> ChunkHit:
    return ChunkHit(
        knowledge_base_id="kb_1",
        knowledge_item_id=item,
        knowledge_revision_id=revision,
        ordinal=ordinal,
        start=ordinal * 100,
        end=ordinal * 100 + 50,
        text=f"{item} chunk {ordinal}",
        score=score,
    )


def _leg(scores: dict[str, float]) -> list[ChunkHit]:
    return [_hit(item, score) for item, score in scores.items()]


def _finals(hits: list[FusedHit]) -> dict[str, float]:
    return {hit.knowledge_item_id: hit.final for hit in hits}


def _order(hits: list[FusedHit]) -> list[str]:
    return [hit.knowledge_item_id for hit in hits]


def _scores(hit: FusedHit) -> dict[str, tuple[float, float, int] | None]:
    """Each leg's ``(raw, normalized, rank)`` for ``hit``, ``None`` for a leg that did not return it."""
    return {
        leg: (score.raw, score.normalized, score.rank) if score else None
        for leg, score in (("lexical", hit.lexical), ("semantic", hit.semantic))
    }


def test_collapse_keeps_best_chunk_per_item_best_first() -> None:
    hits = [_hit("a", 2.0, ordinal=0), _hit("b", 3.0), _hit("a", 5.0, ordinal=4), _hit("b", 1.0, ordinal=2)]

    collapsed = collapse(hits)

    assert [(hit.knowledge_item_id, hit.ordinal, hit.score) for hit in collapsed] == [
        ("a", 4, 5.0),
        ("b", 0, 3.0),
    ]


def test_collapse_equal_scores_break_ties_by_item_then_ordinal() -> None:
    hits = [
        _hit("b", 1.0, ordinal=1),
        _hit("a", 1.0, ordinal=3),
        _hit("b", 1.0, ordinal=0),
        _hit("a", 1.0, ordinal=2),
    ]

    collapsed = collapse(hits)

    assert [(hit.knowledge_item_id, hit.ordinal) for hit in collapsed] == [("a", 2), ("b", 0)]


# Chunk hits of a few items and ordinals, scores on a coarse grid (many ties) or not finite.
_CHUNK_HITS = st.lists(
    st.builds(
        _hit,
        st.sampled_from(["a", "b", "c", "d"]),
        st.one_of(
            st.integers(min_value=0, max_value=4).map(float),
            st.sampled_from([math.nan, math.inf, -math.inf, 1e308]),
        ),
        ordinal=st.integers(min_value=0, max_value=3),
    ),
    max_size=12,
)


def _reference_collapse(hits: list[ChunkHit]) -> list[tuple[str, int, float]]:
    """The definition: non-finite scores become the minimum finite one, sort by (-score, item,
    ordinal), keep the first hit of each item."""
    finite = [hit.score for hit in hits if math.isfinite(hit.score)]
    floor = min(finite, default=0.0)
    scored = [(hit.score if math.isfinite(hit.score) else floor, hit) for hit in hits]
    kept: dict[str, tuple[str, int, float]] = {}
    for score, hit in sorted(scored, key=lambda pair: (-pair[0], pair[1].knowledge_item_id, pair[1].ordinal)):
        kept.setdefault(hit.knowledge_item_id, (hit.knowledge_item_id, hit.ordinal, score))
    return list(kept.values())


@settings(max_examples=300, deadline=None)
@given(hits=_CHUNK_HITS, presorted=st.booleans())
def test_collapse_matches_its_definition_for_any_leg_order(hits: list[ChunkHit], presorted: bool) -> None:
    # Adapters hand legs over in order (the one-pass path); any other order is sorted first.
    if presorted:
        hits = sorted(hits, key=lambda hit: (-hit.score, hit.knowledge_item_id, hit.ordinal))

    collapsed = collapse(hits)

    assert [(hit.knowledge_item_id, hit.ordinal, hit.score) for hit in collapsed] == _reference_collapse(hits)


def test_fuse_lexical_mode_ranks_that_leg_alone_by_raw_score() -> None:
    legs = LegHits(lexical=_leg({"a": 2.5, "b": 7.0}), semantic=_leg({"b": 0.2, "c": 0.9}))

    fused = fuse(legs, SearchMode.LEXICAL, 0.5)

    assert _finals(fused) == {"b": 7.0, "a": 2.5}
    assert _order(fused) == ["b", "a"]
    assert _scores(fused[0]) == {"lexical": (7.0, 1.0, 1), "semantic": (0.2, pytest.approx(0.2 / 0.9), 2)}
    assert _scores(fused[1]) == {"lexical": (2.5, pytest.approx(2.5 / 7.0), 2), "semantic": None}


def test_fuse_semantic_mode_ranks_that_leg_alone_by_raw_score() -> None:
    legs = LegHits(lexical=_leg({"a": 2.5, "b": 7.0}), semantic=_leg({"b": 0.2, "c": 0.9}))

    fused = fuse(legs, SearchMode.SEMANTIC, 0.5)

    assert _order(fused) == ["c", "b"]
    assert _finals(fused) == {"c": 0.9, "b": 0.2}
    assert _scores(fused[1])["lexical"] == (7.0, 1.0, 1)


def test_fuse_hybrid_combines_legs_scaled_by_their_best_score() -> None:
    legs = LegHits(
        lexical=_leg({"a": 10.0, "b": 5.0, "c": 0.0}),
        semantic=_leg({"b": 0.9, "d": 0.45, "a": 0.09}),
    )

    fused = fuse(legs, SearchMode.HYBRID, 0.3)

    normalized_lexical = {"a": 1.0, "b": 0.5, "c": 0.0}
    normalized_semantic = {"b": 1.0, "d": 0.5, "a": 0.1}
    expected = {
        item: 0.3 * normalized_lexical.get(item, 0.0) + 0.7 * normalized_semantic.get(item, 0.0)
        for item in "abcd"
    }
    assert _finals(fused) == pytest.approx(expected)
    assert _order(fused) == sorted(expected, key=lambda item: -expected[item])
    by_item = {hit.knowledge_item_id: hit for hit in fused}
    assert by_item["d"].lexical is None
    assert by_item["d"].semantic is not None
    assert by_item["d"].semantic.normalized == pytest.approx(0.5)


def test_fuse_hybrid_single_hit_leg_normalizes_to_one() -> None:
    legs = LegHits(lexical=_leg({"a": 3.2}), semantic=_leg({"b": 0.8, "a": 0.4}))

    fused = fuse(legs, SearchMode.HYBRID, 0.5)

    assert _finals(fused) == pytest.approx({"a": 0.5 + 0.5 * 0.5, "b": 0.5})
    assert _order(fused) == ["a", "b"]


def test_fuse_hybrid_leg_with_equal_scores_normalizes_every_hit_to_one() -> None:
    legs = LegHits(lexical=_leg({"a": 4.0, "b": 4.0, "c": 4.0}))

    fused = fuse(legs, SearchMode.HYBRID, 0.25)

    assert all(hit.lexical is not None and hit.lexical.normalized == 1.0 for hit in fused)
    assert _finals(fused) == pytest.approx({"a": 0.25, "b": 0.25, "c": 0.25})


def test_fuse_hybrid_empty_leg_contributes_zero() -> None:
    legs = LegHits(lexical=_leg({"a": 9.0, "b": 3.0, "c": 1.0}), semantic=[])

    fused = fuse(legs, SearchMode.HYBRID, 0.6)

    assert _finals(fused) == pytest.approx({"a": 0.6, "b": 0.6 / 3, "c": 0.6 / 9})
    assert all(hit.semantic is None for hit in fused)


@pytest.mark.parametrize(("alpha", "clamped"), [(7.0, 1.0), (-3.0, 0.0), (0.4, 0.4)])
def test_fuse_alpha_outside_unit_interval_is_clamped(alpha: float, clamped: float) -> None:
    legs = LegHits(lexical=_leg({"a": 9.0, "b": 3.0}), semantic=_leg({"b": 0.9, "c": 0.1}))

    assert fuse(legs, SearchMode.HYBRID, alpha) == fuse(legs, SearchMode.HYBRID, clamped)
    assert clamp_alpha(alpha) == clamped


def test_fuse_nan_alpha_raises_value_error() -> None:
    with pytest.raises(ValueError, match="alpha"):
        fuse(LegHits(), SearchMode.HYBRID, math.nan)


# Scores on a 0.1 grid: distinct raw scores stay distinct after normalization (no rounding ties).
_SCORES = st.dictionaries(
    st.sampled_from([f"ki_{n:02d}" for n in range(12)]),
    st.integers(min_value=-10, max_value=300).map(lambda tenths: tenths / 10),
    max_size=12,
)


@settings(max_examples=200, deadline=None)
@given(lexical=_SCORES, semantic=_SCORES)
def test_fuse_hybrid_alpha_one_and_zero_follow_the_single_legs_order(
    lexical: dict[str, float], semantic: dict[str, float]
) -> None:
    legs = LegHits(lexical=_leg(lexical), semantic=_leg(semantic))

    for alpha, mode, scores in ((1.0, SearchMode.LEXICAL, lexical), (0.0, SearchMode.SEMANTIC, semantic)):
        # Scores at or below the lower bound 0 all normalize to 0 (and tie), unless none is above it
        ranked = {item for item, score in scores.items() if score > 0 or max(scores.values()) <= 0}
        alone = [item for item in _order(fuse(legs, mode, 0.5)) if item in ranked]

        assert [item for item in _order(fuse(legs, SearchMode.HYBRID, alpha)) if item in ranked] == alone


@settings(max_examples=200, deadline=None)
@given(lexical=_SCORES, semantic=_SCORES, alpha=st.floats(min_value=0.01, max_value=1.0))
def test_fuse_hybrid_positive_leg_score_keeps_positive_credit(
    lexical: dict[str, float], semantic: dict[str, float], alpha: float
) -> None:
    fused = fuse(LegHits(lexical=_leg(lexical), semantic=_leg(semantic)), SearchMode.HYBRID, alpha)

    for hit in fused:
        if hit.lexical is not None and hit.lexical.raw > 0:
            assert hit.lexical.normalized == pytest.approx(hit.lexical.raw / max(lexical.values()))
            assert hit.final >= alpha * hit.lexical.normalized > 0


def test_fuse_hybrid_rare_keyword_match_beats_a_semantic_neighbour_without_it() -> None:
    # Twelve documents; the query word is in two of them, once in ``b``. Plain min–max gave ``b``
    # lexical 0.0 while ``c``, which lacks the word, got semantic 0.774, and ``c`` ranked above ``b``.
    cosines = {"a": 0.34, "b": 0.22, "c": 0.287, "d": 0.356, **{f"x{n}": 0.05 + n / 100 for n in range(8)}}
    legs = LegHits(lexical=_leg({"a": 3.1, "b": 1.2}), semantic=_leg(cosines))

    fused = {hit.knowledge_item_id: hit for hit in fuse(legs, SearchMode.HYBRID, 0.5)}

    assert fused["b"].lexical is not None
    assert fused["b"].lexical.normalized == pytest.approx(1.2 / 3.1)
    assert fused["b"].final > fused["c"].final


def test_fuse_hybrid_normalized_scores_do_not_depend_on_the_weakest_candidate() -> None:
    shallow = LegHits(lexical=_leg({"a": 8.0, "b": 4.0}), semantic=_leg({"a": 0.6, "b": 0.3}))
    deep = LegHits(
        lexical=_leg({"a": 8.0, "b": 4.0, "z": 0.5}), semantic=_leg({"a": 0.6, "b": 0.3, "z": 0.01})
    )

    scores = [
        {hit.knowledge_item_id: hit.final for hit in fuse(legs, SearchMode.HYBRID, 0.5)}
        for legs in (shallow, deep)
    ]

    assert scores[1]["a"] == scores[0]["a"]
    assert scores[1]["b"] == scores[0]["b"]


def test_fuse_hybrid_leg_of_non_positive_scores_falls_back_to_min_max() -> None:
    legs = LegHits(semantic=_leg({"a": -0.1, "b": -0.3, "c": -0.5}))

    fused = fuse(legs, SearchMode.HYBRID, 0.0)

    assert _finals(fused) == pytest.approx({"a": 1.0, "b": 0.5, "c": 0.0})


def test_fuse_rrf_sums_reciprocal_ranks_over_returning_legs() -> None:
    legs = LegHits(
        lexical=_leg({"a": 12.0, "b": 8.0, "c": 1.0}),
        semantic=_leg({"c": 0.9, "d": 0.8, "a": 0.7}),
    )

    fused = fuse(legs, SearchMode.RRF, 0.5)

    assert _finals(fused) == pytest.approx(
        {
            "a": 1 / (RRF_K + 1) + 1 / (RRF_K + 3),
            "b": 1 / (RRF_K + 2),
            "c": 1 / (RRF_K + 3) + 1 / (RRF_K + 1),
            "d": 1 / (RRF_K + 2),
        }
    )
    assert RRF_K == 60
    assert _order(fused) == ["a", "c", "b", "d"]


def test_fuse_rrf_reports_every_leg_score_of_an_item() -> None:
    legs = LegHits(lexical=_leg({"a": 12.0, "b": 8.0}), semantic=_leg({"b": 0.3, "a": 0.7}))

    top = fuse(legs, SearchMode.RRF, 0.5)[0]

    assert top.knowledge_item_id == "a"
    assert _scores(top) == {"lexical": (12.0, 1.0, 1), "semantic": (0.7, 1.0, 1)}


def test_fuse_ranks_count_items_not_chunks() -> None:
    legs = LegHits(lexical=[_hit("a", 9.0), _hit("a", 8.9, ordinal=1), _hit("b", 8.0)])

    fused = fuse(legs, SearchMode.RRF, 0.5)

    assert [hit.lexical.rank for hit in fused if hit.lexical] == [1, 2]
    assert fused[0].chunk.ordinal == 0


@pytest.mark.parametrize("mode", list(SearchMode))
def test_fuse_equal_scores_break_ties_by_item_id_whatever_the_input_order(mode: SearchMode) -> None:
    lexical = _leg({"d": 2.0, "b": 2.0, "a": 2.0, "c": 2.0})
    semantic = _leg({"c": 0.5, "a": 0.5, "d": 0.5, "b": 0.5})
    shuffled = random.Random(7)

    results = []
    for _ in range(5):
        shuffled.shuffle(lexical)
        shuffled.shuffle(semantic)
        results.append(fuse(LegHits(lexical=lexical, semantic=semantic), mode, 0.5))

    assert _order(results[0]) == ["a", "b", "c", "d"]
    assert all(result == results[0] for result in results)


def test_fuse_non_finite_scores_count_as_the_leg_minimum() -> None:
    legs = LegHits(lexical=_leg({"a": math.nan, "b": 3.0, "c": 1.0, "d": math.inf, "e": -math.inf}))

    lexical = fuse(legs, SearchMode.LEXICAL, 0.5)
    hybrid = fuse(legs, SearchMode.HYBRID, 1.0)

    assert _order(lexical) == ["b", "a", "c", "d", "e"]
    assert _finals(lexical) == {"b": 3.0, "a": 1.0, "c": 1.0, "d": 1.0, "e": 1.0}
    assert _finals(hybrid) == pytest.approx({"b": 1.0, "a": 1 / 3, "c": 1 / 3, "d": 1 / 3, "e": 1 / 3})
    assert all(math.isfinite(hit.final) for hit in lexical + hybrid)


def test_fuse_leg_of_only_non_finite_scores_scores_zero() -> None:
    legs = LegHits(semantic=_leg({"a": math.nan, "b": math.inf}))

    assert _finals(fuse(legs, SearchMode.SEMANTIC, 0.5)) == {"a": 0.0, "b": 0.0}


def test_fuse_huge_scores_still_normalize_into_unit_interval() -> None:
    legs = LegHits(
        lexical=_leg({"a": 1.5e308, "b": 0.0, "c": -1.5e308}),
        semantic=_leg({"a": -1e-300, "b": -1.5e308, "c": -1.7e308}),
    )

    fused = {hit.knowledge_item_id: hit for hit in fuse(legs, SearchMode.HYBRID, 0.5)}

    lexical = {item: hit.lexical.normalized for item, hit in fused.items() if hit.lexical}
    semantic = {item: hit.semantic.normalized for item, hit in fused.items() if hit.semantic}
    assert lexical == pytest.approx({"a": 1.0, "b": 0.0, "c": 0.0})
    assert semantic == pytest.approx({"a": 1.0, "b": 0.2 / 1.7, "c": 0.0})


@pytest.mark.parametrize(("alpha", "ordinal"), [(0.9, 0), (0.1, 3), (0.5, 0)])
def test_fuse_chunk_comes_from_the_leg_contributing_more(alpha: float, ordinal: int) -> None:
    legs = LegHits(
        lexical=[_hit("a", 5.0, ordinal=0), _hit("b", 1.0)],
        semantic=[_hit("a", 0.9, ordinal=3), _hit("b", 0.1)],
    )

    top = fuse(legs, SearchMode.HYBRID, alpha)[0]

    assert top.knowledge_item_id == "a"
    assert top.chunk.ordinal == ordinal


def test_fuse_rrf_chunk_comes_from_the_better_ranked_leg() -> None:
    legs = LegHits(
        lexical=[_hit("b", 9.0), _hit("a", 5.0, ordinal=0)],
        semantic=[_hit("a", 0.9, ordinal=3), _hit("b", 0.1)],
    )

    fused = {hit.knowledge_item_id: hit for hit in fuse(legs, SearchMode.RRF, 0.5)}

    assert fused["a"].chunk.ordinal == 3
    assert fused["b"].chunk.ordinal == 0


def test_fuse_lagging_index_keeps_the_revision_of_the_better_contribution() -> None:
    legs = LegHits(
        lexical=[_hit("a", 2.0, revision="kr_old"), _hit("b", 9.0)],
        semantic=[_hit("a", 0.95, revision="kr_new"), _hit("b", 0.2)],
    )

    fused = {hit.knowledge_item_id: hit for hit in fuse(legs, SearchMode.HYBRID, 0.5)}

    assert fused["a"].knowledge_revision_id == "kr_new"
    assert fused["a"].chunk.knowledge_revision_id == "kr_new"


@pytest.mark.parametrize("mode", list(SearchMode))
def test_fuse_empty_legs_return_nothing(mode: SearchMode) -> None:
    assert fuse(LegHits(), mode, 0.5) == []
