"""bench.relevance: the alpha curve agrees with fusing once per alpha (the slow way it replaces); one
search pass over several ``SearchIndex`` backends scores and times every mode; the comparison table,
latency percentiles and leg overlap are right."""

from __future__ import annotations

import random

import pytest

from bench.normalization import candidates
from bench.relevance import (
    ALPHA_GRID,
    BOTH_LEGS,
    MODES,
    ModeResult,
    Split,
    best_alpha,
    comparison_lines,
    evaluate,
    hybrid_curve,
    latency_ms,
    leg_overlap,
    mode_results,
    search_all,
)
from knowledge.adapters.embedded.passages import EmbeddedIndex
from knowledge.domain.retrieval.chunking import Chunker
from knowledge.domain.retrieval.hits import ChunkHit, Leg, LegHits, SearchMode
from knowledge.services.documents import build_indexed_item
from knowledge.services.retrieval import legs_for
from tests.support.embedding import HashingEmbedder


def _hit(item: str, ordinal: int = 0, score: float = 1.0) -> ChunkHit:
    return ChunkHit(
        knowledge_base_id="kb_1",
        knowledge_item_id=item,
        knowledge_revision_id=f"{item}-r1",
        ordinal=ordinal,
        start=0,
        end=1,
        text="x",
        score=score,
    )


def _leg(rng: random.Random, items: list[str], low: float, high: float) -> list[ChunkHit]:
    return [
        _hit(item, ordinal, round(rng.uniform(low, high), 2))
        for item in rng.sample(items, k=len(items) // 2)
        for ordinal in range(rng.randint(1, 2))
    ]


def _corpus(seed: int) -> tuple[dict[str, LegHits], Split]:
    rng = random.Random(seed)
    items = [f"d{n:02d}" for n in range(30)]
    hits, qrels = {}, {}
    for query in range(12):
        qid = f"q{query}"
        hits[qid] = LegHits(lexical=_leg(rng, items, 0.0, 12.0), semantic=_leg(rng, items, -0.2, 0.9))
        qrels[qid] = {item: 1 for item in rng.sample(items, k=3)}
    return hits, Split(queries={qid: qid for qid in hits}, qrels=qrels)


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("name", ["lower-bounds(0, 0)", "min-max", "z-score-floor"])
def test_hybrid_curve_equals_fusing_once_per_alpha(seed: int, name: str) -> None:
    hits, split = _corpus(seed)
    normalizer = candidates()[name]

    curve = hybrid_curve(hits, split, ALPHA_GRID, normalizer)

    expected = [
        evaluate(hits, split, SearchMode.HYBRID, alpha, normalizer)["nDCG@10"] for alpha in ALPHA_GRID
    ]
    assert [alpha for alpha, _ in curve] == ALPHA_GRID
    assert [ndcg for _, ndcg in curve] == pytest.approx(expected, abs=1e-12)


def test_best_alpha_prefers_the_alpha_closest_to_one_half_on_ties() -> None:
    assert best_alpha([(0.2, 0.7), (0.45, 0.71), (0.6, 0.71), (0.9, 0.5)]) == (0.45, 0.71)


# One pass over several backends

DOCUMENTS = {
    "d1": ("Zebras", "Zebras graze on the open savanna in large herds."),
    "d2": ("Glaciers", "Glaciers carve valleys as the ice moves downhill."),
    "d3": ("Volcanoes", "Lava from volcanoes cools into basalt rock."),
    "d4": ("Savanna grasses", "Grasses of the savanna survive fire and drought."),
}
QUERIES = {"q1": "zebra herds", "q2": "ice carving valleys", "q3": "savanna fire"}
QRELS = {"q1": {"d1": 1}, "q2": {"d2": 1}, "q3": {"d4": 1}}


def _index(embedder: HashingEmbedder) -> EmbeddedIndex:
    index = EmbeddedIndex()
    index.ensure_ready(model_id=embedder.model_id, dimension=embedder.dimension)
    index.upsert_many(
        [
            build_indexed_item(
                chunker=Chunker(),
                embedder=embedder,
                tenant_id="bench",
                knowledge_base_id="kb_bench",
                knowledge_item_id=doc_id,
                knowledge_revision_id=f"{doc_id}-r1",
                version=1,
                owner_id="bench",
                team_id=None,
                scope="tenant",
                title=title,
                content=text,
            )
            for doc_id, (title, text) in DOCUMENTS.items()
        ]
    )
    return index


def test_search_all_runs_every_leg_set_on_every_backend_and_scores_every_mode() -> None:
    embedder = HashingEmbedder(dimension=32)
    indexes = {"first": _index(embedder), "second": _index(embedder)}
    vectors = dict(zip(QUERIES, embedder.embed(list(QUERIES.values())), strict=True))
    leg_sets = list(dict.fromkeys(legs_for(mode) for mode in MODES))
    split = Split(queries=QUERIES, qrels=QRELS)

    searches = search_all(indexes, QUERIES, vectors, leg_sets, warmup=1)
    results = {name: mode_results(searches, name, split, alpha=0.5) for name in indexes}

    for name in indexes:
        assert set(searches.hits[name]) == set(leg_sets)
        assert all(len(seconds) == len(QUERIES) for seconds in searches.seconds[name].values())
        lexical_only = searches.hits[name][frozenset({Leg.LEXICAL})]["q1"]
        assert lexical_only.semantic == []
        assert lexical_only.lexical[0].knowledge_item_id == "d1"
        assert searches.hits[name][BOTH_LEGS]["q2"].semantic[0].knowledge_item_id == "d2"
        assert results[name][SearchMode.LEXICAL].figures["nDCG@10"] == pytest.approx(1.0)
    figures = {
        name: {mode: result.figures for mode, result in by_mode.items()} for name, by_mode in results.items()
    }
    assert figures["first"] == figures["second"]
    assert list(figures["first"]) == list(MODES)


def test_comparison_lines_show_each_backend_then_the_difference_from_the_first() -> None:
    def result(ndcg: float, p50: float) -> ModeResult:
        return ModeResult({"nDCG@10": ndcg, "Recall@10": 0.5, "Recall@100": 0.9}, p50, 2 * p50)

    results = {
        "embedded": {mode: result(0.700, 1.0) for mode in MODES},
        "opensearch": {mode: result(0.688, 12.5) for mode in MODES},
    }

    lines = comparison_lines(results)

    assert len(lines) == 1 + 3 * len(MODES)
    assert lines[1].split() == ["lexical", "embedded", "0.700", "0.500", "0.900", "1.0", "2.0"]
    assert lines[2].split() == ["lexical", "opensearch", "0.688", "0.500", "0.900", "12.5", "25.0"]
    assert lines[3].split() == ["lexical", "opensearch", "-", "embedded", "-0.012", "+0.000", "+0.000"]
    assert [line.split()[0] for line in lines[1::3]] == [mode.value for mode in MODES]


def test_latency_ms_gives_the_median_and_95th_percentile_in_milliseconds() -> None:
    seconds = [n / 1000 for n in range(1, 101)]  # 1 .. 100 ms

    p50, p95 = latency_ms(seconds)

    assert p50 == pytest.approx(50.5)
    assert p95 == pytest.approx(95.05)
    assert latency_ms([0.004]) == (4.0, 4.0)


def test_leg_overlap_is_the_share_of_reference_spans_the_other_returns() -> None:
    reference = [_hit("a", 0), _hit("a", 1), _hit("b", 0), _hit("c", 0)]
    other = [_hit("a", 1, score=0.2), _hit("c", 0), _hit("d", 0), _hit("a", 2)]

    assert leg_overlap(reference, other) == 0.5
    assert leg_overlap(reference, reference[::-1]) == 1.0
    assert leg_overlap([], other) == 1.0
