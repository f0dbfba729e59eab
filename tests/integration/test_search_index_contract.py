"""The ``SearchIndex`` contract (DESIGN §4), run against every adapter of ``tests.support.index``.

Both legs run on both adapters: the embedded index and OpenSearch (a real node with k-NN).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from knowledge.domain.retrieval.fusion import fuse
from knowledge.domain.retrieval.hits import Chunk, IndexedItem, IndexQuery, Leg, LegHits, SearchMode
from knowledge.errors import IndexConfigurationError
from knowledge.ports import SearchIndex
from tests.support import multilingual
from tests.support.index import (
    ADAPTER_LEGS,
    ADAPTERS,
    DIMENSION,
    MODEL_ID,
    at_angle,
    axis,
    found_items,
    item,
    leg_hits,
    open_index,
    query,
    viewer,
)


@pytest.fixture
def index(request: pytest.FixtureRequest) -> Iterator[SearchIndex]:
    adapter: str = request.param
    url = request.getfixturevalue("opensearch_url") if adapter == "opensearch" else None
    with open_index(adapter, url) as opened:
        yield opened


every_adapter = pytest.mark.parametrize("index", ADAPTERS, indirect=True)
every_leg = pytest.mark.parametrize(("index", "leg"), ADAPTER_LEGS, indirect=["index"])

MATCH = "zebra"


def matching(item_id: str, **kwargs: Any) -> Any:
    """An item whose single chunk matches the probe on both legs (the word and the vector ``axis(0)``)."""
    return item(item_id, (f"the {MATCH} crossed the savanna",), vectors=[axis(0)], **kwargs)


def probe(leg: Leg, k: int = 10, **viewer_kwargs: Any) -> IndexQuery:
    return query(MATCH, leg=leg, vector=axis(0), visibility=viewer(**viewer_kwargs), k=k)


# Found after upsert, scores


@every_leg
def test_search_after_upsert_returns_chunk_fields(index: SearchIndex, leg: Leg) -> None:
    index.upsert(
        item(
            "ki_1",
            ("nothing relevant here", "a zebra in the second chunk"),
            vectors=[axis(3), axis(0)],
            base="kb_x",
            revision="kr_1",
        )
    )

    hits = index.search(probe(leg))

    best = (hits.lexical if leg is Leg.LEXICAL else hits.semantic)[0]
    assert (best.knowledge_base_id, best.knowledge_item_id, best.knowledge_revision_id) == (
        "kb_x",
        "ki_1",
        "kr_1",
    )
    assert (best.ordinal, best.start, best.end) == (1, 21, 48)
    assert best.text == "a zebra in the second chunk"


@every_leg
def test_search_lexical_leg_ranks_passages_semantic_leg_chunks(index: SearchIndex, leg: Leg) -> None:
    chunked = item("ki_1", ("the zebra grazes", " near the river"), vectors=[axis(0), axis(2)])
    whole = Chunk(ordinal=0, start=0, end=31, text="the zebra grazes near the river")
    index.upsert(chunked.model_copy(update={"passages": [whole]}))

    hits = index.search(probe(leg))

    expected = (0, 0, 31, whole.text) if leg is Leg.LEXICAL else (0, 0, 16, "the zebra grazes")
    best = (hits.lexical or hits.semantic)[0]
    assert (best.ordinal, best.start, best.end, best.text) == expected
    assert len(hits.lexical) == (1 if leg is Leg.LEXICAL else 0)


@every_adapter
def test_upsert_same_version_with_fewer_passages_removes_the_others(index: SearchIndex) -> None:
    first = item("ki_1", ("alpha", "bravo"), version=3)
    index.upsert(first)
    single = Chunk(ordinal=0, start=0, end=5, text="alpha")

    index.upsert(first.model_copy(update={"passages": [single]}))

    assert leg_hits(index.search(query("alpha bravo")), Leg.LEXICAL) == [("ki_1", 0)]
    assert index.search(query("bravo")).lexical == []


@every_leg
def test_search_one_leg_requested_other_leg_empty(index: SearchIndex, leg: Leg) -> None:
    index.upsert(matching("ki_1"))

    hits = index.search(probe(leg))

    assert (hits.semantic if leg is Leg.LEXICAL else hits.lexical) == []
    assert leg_hits(hits, leg) == [("ki_1", 0)]


@every_adapter
def test_search_semantic_score_is_cosine_similarity(index: SearchIndex) -> None:
    cosines = {"ki_near": 0.9, "ki_mid": 0.5, "ki_far": -0.3}
    index.upsert_many([item(item_id, ("text",), vectors=[at_angle(c)]) for item_id, c in cosines.items()])

    hits = index.search(query(leg=Leg.SEMANTIC, vector=axis(0))).semantic

    assert [hit.knowledge_item_id for hit in hits] == ["ki_near", "ki_mid", "ki_far"]
    assert [hit.score for hit in hits] == pytest.approx(list(cosines.values()), abs=1e-4)


@every_leg
def test_search_k_limits_hits_best_first(index: SearchIndex, leg: Leg) -> None:
    # Item i repeats the word i times in a text of constant length, and sits at a cosine growing with i.
    items = [
        item(f"ki_{i:02d}", (" ".join([MATCH] * i + ["filler"] * (12 - i)),), vectors=[at_angle(i / 12)])
        for i in range(1, 13)
    ]
    index.upsert_many(items)

    hits = index.search(probe(leg, k=5))

    assert leg_hits(hits, leg) == [(f"ki_{i:02d}", 0) for i in (12, 11, 10, 9, 8)]
    scores = [hit.score for hit in (hits.lexical if leg is Leg.LEXICAL else hits.semantic)]
    assert scores == sorted(scores, reverse=True)


@every_leg
def test_search_equal_scores_order_by_item_then_ordinal(index: SearchIndex, leg: Leg) -> None:
    same = (f"{MATCH} twin text", f"{MATCH} twin text")
    index.upsert_many(
        [item(item_id, same, vectors=[axis(0), axis(0)]) for item_id in ("ki_c", "ki_a", "ki_b")]
    )

    hits = index.search(probe(leg, k=4))

    assert leg_hits(hits, leg) == [("ki_a", 0), ("ki_a", 1), ("ki_b", 0), ("ki_b", 1)]


@every_leg
@pytest.mark.parametrize("k", [3, 11])
def test_search_runs_of_equal_scores_order_by_item_then_ordinal_at_every_level(
    index: SearchIndex, leg: Leg, k: int
) -> None:
    # Three levels of score, eight items tied at each, written in an order that is neither by
    # score nor by id. The k-th hit sits inside a run: with k = 3 the run goes on past 2k hits.
    levels = {3: 0.9, 2: 0.6, 1: 0.3}
    ids = {level: [f"ki_{level}{letter}" for letter in "hdbfagce"] for level in levels}
    items = [
        item(
            item_id,
            (" ".join([MATCH] * level + ["filler"] * (4 - level)),),
            vectors=[at_angle(levels[level])],
        )
        for position in range(8)
        for level in (2, 1, 3)
        for item_id in [ids[level][position]]
    ]
    index.upsert_many(items)

    hits = index.search(probe(leg, k=k))

    expected = [(item_id, 0) for level in (3, 2) for item_id in sorted(ids[level])][:k]
    assert leg_hits(hits, leg) == expected


@every_leg
def test_search_smaller_k_is_a_prefix_of_larger_k(index: SearchIndex, leg: Leg) -> None:
    # Three score levels on each leg, four items each, written out of id order.
    index.upsert_many(
        [
            item(
                f"ki_{(7 * n) % 12:02d}",
                (f"{MATCH} " + "grass " * (n % 3),),
                vectors=[at_angle(1.0 - (n % 3) / 4)],
            )
            for n in range(12)
        ]
    )

    everything = leg_hits(index.search(probe(leg, k=12)), leg)

    assert len(everything) == 12
    for k in range(1, 12):
        assert leg_hits(index.search(probe(leg, k=k)), leg) == everything[:k]


@every_adapter
def test_search_lexical_title_match_counts(index: SearchIndex) -> None:
    index.upsert_many(
        [
            item("ki_title", ("grassland animals of the savanna",), title="Zebra"),
            item("ki_text", (f"grassland animals {MATCH} savanna",), title="Grassland"),
            item("ki_none", ("grassland animals of the savanna",), title="Grassland"),
        ]
    )

    hits = index.search(query(MATCH)).lexical

    assert [hit.knowledge_item_id for hit in hits] == ["ki_title", "ki_text"]


@every_adapter
def test_search_lexical_stems_english_words(index: SearchIndex) -> None:
    index.upsert(item("ki_1", ("The zebras were running across the plains",)))

    assert found_items(index, "zebra runs") == {"ki_1"}


# One analyzer for every language family


def _probe_cases() -> list[Any]:
    cases = []
    for adapter in ADAPTERS:
        for probe_ in multilingual.PROBES:
            cases.append(pytest.param(adapter, probe_, id=f"{adapter}-{probe_.query}"))
    return cases


@pytest.mark.parametrize(("index", "probe_"), _probe_cases(), indirect=["index"])
def test_search_lexical_multilingual_sanity_set(index: SearchIndex, probe_: multilingual.Probe) -> None:
    index.upsert_many([item(f"ki_{p.key}", (p.text,), title=p.title) for p in multilingual.PASSAGES])

    assert found_items(index, probe_.query) == {f"ki_{key}" for key in probe_.expected}


def test_search_lexical_bm25_scores_equal_on_both_engines_cjk_lengths_included(opensearch_url: str) -> None:
    passages = [item(f"ki_{p.key}", (p.text,), title=p.title) for p in multilingual.PASSAGES]
    scores: dict[str, dict[tuple[str, str, int], float]] = {}
    for adapter in ADAPTERS:
        with open_index(adapter, opensearch_url) as index:
            index.upsert_many(passages)
            scores[adapter] = {
                (probe_.query, hit.knowledge_item_id, hit.ordinal): hit.score
                for probe_ in multilingual.PROBES
                for hit in index.search(query(probe_.query)).lexical
            }

    assert scores["embedded"].keys() == scores["opensearch"].keys()
    assert scores["embedded"] == pytest.approx(scores["opensearch"], rel=1e-4)


@every_adapter
def test_search_lexical_accents_fold_both_ways(index: SearchIndex) -> None:
    index.upsert_many([item("ki_plain", ("resume the cafe",)), item("ki_accented", ("Résumé du café",))])

    assert found_items(index, "résumé café") == {"ki_plain", "ki_accented"}
    assert found_items(index, "resume cafe") == {"ki_plain", "ki_accented"}


@every_adapter
def test_search_lexical_cjk_adjacent_to_latin_is_split(index: SearchIndex) -> None:
    index.upsert(item("ki_1", ("Python3の使い方を学ぶ",)))

    assert found_items(index, "python3") == {"ki_1"}
    assert found_items(index, "使い方") == {"ki_1"}


# Visibility: tenant, base allow-list, scope


VISIBILITY_CASES = [
    # base fields, viewer fields, visible
    pytest.param({"scope": "tenant"}, {"subject": "someone"}, True, id="tenant-scope-any-subject"),
    pytest.param({"scope": "tenant"}, {"tenant": "t2"}, False, id="other-tenant"),
    pytest.param({"scope": "private", "owner": "alice"}, {"subject": "alice"}, True, id="private-owner"),
    pytest.param({"scope": "private", "owner": "alice"}, {"subject": "bob"}, False, id="private-other"),
    pytest.param({"scope": "team", "team": "red"}, {"teams": ["blue", "red"]}, True, id="team-member"),
    pytest.param({"scope": "team", "team": "red"}, {"teams": ["blue"]}, False, id="team-non-member"),
    pytest.param(
        {"scope": "team", "team": "red", "owner": "alice"}, {"subject": "alice"}, True, id="team-owner"
    ),
    pytest.param({"base": "kb_a"}, {"bases": ["kb_a", "kb_z"]}, True, id="allow-list-admits"),
    pytest.param({"base": "kb_a"}, {"bases": ["kb_z"]}, False, id="allow-list-excludes"),
    pytest.param({"base": "kb_a"}, {"bases": []}, False, id="allow-list-empty"),
]


@every_leg
@pytest.mark.parametrize(("base_fields", "viewer_fields", "visible"), VISIBILITY_CASES)
def test_search_visibility_rule_admits_only_visible_chunks(
    index: SearchIndex, leg: Leg, base_fields: dict[str, Any], viewer_fields: dict[str, Any], visible: bool
) -> None:
    # A control item the viewer sees (unless the allow-list is empty) keeps the filter itself under test.
    bases = viewer_fields.get("bases")
    control_base = bases[0] if bases else "kb_control"
    index.upsert_many(
        [
            matching("ki_0", tenant=viewer_fields.get("tenant", "t1"), base=control_base),
            matching("ki_1", **base_fields),
        ]
    )

    hits = index.search(probe(leg, **viewer_fields))

    expected = ([("ki_0", 0)] if bases != [] else []) + ([("ki_1", 0)] if visible else [])
    assert leg_hits(hits, leg) == expected


@every_leg
def test_search_tenants_see_only_their_own_items(index: SearchIndex, leg: Leg) -> None:
    index.upsert_many([matching("ki_t1", tenant="t1"), matching("ki_t2", tenant="t2")])

    assert leg_hits(index.search(probe(leg, tenant="t1")), leg) == [("ki_t1", 0)]
    assert leg_hits(index.search(probe(leg, tenant="t2")), leg) == [("ki_t2", 0)]


@every_leg
def test_search_hidden_better_matches_never_take_top_k(index: SearchIndex, leg: Leg) -> None:
    hidden = [
        item(
            f"ki_hidden_{i:02d}",
            (f"{MATCH} {MATCH} {MATCH}",),
            title="Zebra",
            scope="private",
            owner="alice",
            vectors=[axis(0)],
        )
        for i in range(30)
    ]
    visible = item(
        "ki_visible", (f"a {MATCH} among many other words of a longer chunk",), vectors=[at_angle(0.2)]
    )
    index.upsert_many([*hidden, visible])

    hits = index.search(probe(leg, k=5, subject="bob"))

    assert leg_hits(hits, leg) == [("ki_visible", 0)]


# Normalization edge cases (DESIGN §4) on each adapter's own hits


def _fused(index: SearchIndex, leg: Leg, **viewer_kwargs: Any) -> dict[str, Any]:
    """Hybrid fusion of one leg's hits from ``index`` (the other leg empty), by item id."""
    hits = index.search(probe(leg, **viewer_kwargs))
    legs = LegHits(lexical=hits.lexical) if leg is Leg.LEXICAL else LegHits(semantic=hits.semantic)
    alpha = 1.0 if leg is Leg.LEXICAL else 0.0
    return {hit.knowledge_item_id: hit for hit in fuse(legs, SearchMode.HYBRID, alpha)}


@every_leg
def test_fusion_single_hit_normalizes_to_one(index: SearchIndex, leg: Leg) -> None:
    index.upsert_many([matching("ki_1"), item("ki_2", ("unrelated words",), vectors=[[-1.0] + [0.0] * 7])])

    fused = _fused(index, leg)

    assert fused["ki_1"].final == 1.0
    assert set(fused) <= {"ki_1", "ki_2"}
    assert all(hit.final == 0.0 for item_id, hit in fused.items() if item_id != "ki_1")


@every_leg
def test_fusion_equal_scores_normalize_to_one(index: SearchIndex, leg: Leg) -> None:
    index.upsert_many([matching("ki_1"), matching("ki_2"), matching("ki_3")])

    fused = _fused(index, leg)

    assert {item_id: hit.final for item_id, hit in fused.items()} == {"ki_1": 1.0, "ki_2": 1.0, "ki_3": 1.0}


@every_leg
def test_fusion_weaker_match_keeps_credit_in_proportion(index: SearchIndex, leg: Leg) -> None:
    index.upsert_many(
        [
            item("ki_strong", (f"{MATCH} {MATCH} {MATCH} stripes",), vectors=[axis(0)]),
            item(
                "ki_weak", (f"a {MATCH} among many other words of a longer chunk",), vectors=[at_angle(0.4)]
            ),
        ]
    )

    fused = _fused(index, leg)
    raw = {item_id: (hit.lexical or hit.semantic).raw for item_id, hit in fused.items()}

    assert fused["ki_strong"].final == 1.0
    assert fused["ki_weak"].final == pytest.approx(raw["ki_weak"] / raw["ki_strong"])
    assert 0.0 < fused["ki_weak"].final < 1.0


@every_leg
def test_fusion_empty_leg_contributes_nothing(index: SearchIndex, leg: Leg) -> None:
    index.upsert(matching("ki_1", scope="private", owner="alice"))

    assert _fused(index, leg, subject="bob") == {}


# Writes and versions


@every_leg
def test_upsert_new_revision_removes_superseded_chunks(index: SearchIndex, leg: Leg) -> None:
    index.upsert(
        item(
            "ki_1", (f"{MATCH} alpha", f"{MATCH} bravo", f"{MATCH} charlie"), version=1, vectors=[axis(0)] * 3
        )
    )

    accepted = index.upsert(item("ki_1", (f"{MATCH} delta",), version=2, vectors=[axis(0)]))

    hits = index.search(probe(leg))
    assert accepted is True
    assert leg_hits(hits, leg) == [("ki_1", 0)]
    assert [hit.knowledge_revision_id for hit in (hits.lexical or hits.semantic)] == ["kr_ki_1_v2"]
    assert found_items(index, "alpha bravo charlie") == set()


@every_adapter
def test_upsert_same_version_with_fewer_chunks_replaces_all(index: SearchIndex) -> None:
    index.upsert(item("ki_1", ("alpha", "bravo", "charlie"), version=4))

    accepted = index.upsert(item("ki_1", ("alpha",), version=4))

    assert accepted is True
    assert leg_hits(index.search(query("alpha bravo charlie")), Leg.LEXICAL) == [("ki_1", 0)]


@every_adapter
def test_upsert_same_version_twice_is_idempotent(index: SearchIndex) -> None:
    first = index.upsert(item("ki_1", (f"{MATCH} one", f"{MATCH} two"), version=2))
    second = index.upsert(item("ki_1", (f"{MATCH} one", f"{MATCH} two"), version=2))

    assert (first, second) == (True, True)
    assert sorted(leg_hits(index.search(query(MATCH)), Leg.LEXICAL)) == [("ki_1", 0), ("ki_1", 1)]


@every_adapter
def test_upsert_lower_version_is_ignored(index: SearchIndex) -> None:
    index.upsert(item("ki_1", ("newer words",), version=3))

    accepted = index.upsert(item("ki_1", ("older words",), version=2))

    assert accepted is False
    assert found_items(index, "newer") == {"ki_1"}
    assert found_items(index, "older") == set()


@every_adapter
def test_upsert_many_returns_one_result_per_item_in_order(index: SearchIndex) -> None:
    index.upsert(item("ki_d", ("delta words",), version=5))

    results = index.upsert_many(
        [
            item("ki_a", ("alpha second",), version=2),
            item("ki_b", ("bravo words",), version=1),
            item("ki_a", ("alpha first",), version=1),
            item("ki_c", ("charlie words",), version=1),
            item("ki_d", ("delta stale",), version=4),
        ]
    )

    assert results == [True, True, False, True, False]
    assert found_items(index, "alpha bravo charlie delta") == {"ki_a", "ki_b", "ki_c", "ki_d"}
    assert found_items(index, "first stale") == set()


@every_adapter
def test_upsert_wrong_dimension_raises_and_writes_nothing(index: SearchIndex) -> None:
    good = item("ki_good", ("good words",))
    bad = item("ki_bad", ("bad words",), vectors=[[1.0] * (DIMENSION + 1)])

    with pytest.raises(ValueError, match="dimension"):
        index.upsert_many([good, bad])

    assert found_items(index, "good bad words") == set()


BAD_VECTORS = {
    "zero": [0.0] * DIMENSION,
    "nan": [float("nan")] + [0.5] * (DIMENSION - 1),
    "infinite": [float("inf")] + [0.5] * (DIMENSION - 1),
    "beyond_float32": [1e39] + [0.5] * (DIMENSION - 1),
    "norm_beyond_float32": [3e38] * DIMENSION,
}
"""Vectors no engine can score by cosine: OpenSearch's ``knn_vector`` refuses the non-finite ones
(a 400 for that document alone, after the others of the bulk request were written)."""


@pytest.mark.parametrize("index", ADAPTERS, indirect=True)
@pytest.mark.parametrize("kind", sorted(BAD_VECTORS))
def test_upsert_vector_without_a_cosine_raises_and_writes_nothing(index: SearchIndex, kind: str) -> None:
    good = item("ki_good", ("good words",))
    bad = item("ki_bad", ("bad words",), vectors=[BAD_VECTORS[kind]])

    with pytest.raises(ValueError, match="no cosine similarity"):
        index.upsert_many([good, bad])

    assert found_items(index, "good bad words") == set()


@pytest.mark.parametrize("index", ADAPTERS, indirect=True)
@pytest.mark.parametrize("kind", sorted(BAD_VECTORS))
def test_search_query_vector_without_a_cosine_raises(index: SearchIndex, kind: str) -> None:
    index.upsert(matching("ki_1"))

    with pytest.raises(ValueError, match="no cosine similarity"):
        index.search(query(MATCH, leg=Leg.SEMANTIC, vector=BAD_VECTORS[kind]))


def part(item_id: str, texts: Sequence[str], *, first: int, version: int) -> IndexedItem:
    """One part of an item version: chunks and passages numbered from ``first``."""
    whole = item(item_id, texts, version=version)
    chunks = [chunk.model_copy(update={"ordinal": chunk.ordinal + first}) for chunk in whole.chunks]
    passages = [span.model_copy(update={"ordinal": span.ordinal + first}) for span in whole.passages]
    return whole.model_copy(update={"chunks": chunks, "passages": passages})


@every_adapter
def test_upsert_part_in_any_order_completes_on_the_last_part(index: SearchIndex) -> None:
    second = index.upsert_part(part("ki_1", (f"{MATCH} second",), first=1, version=2), part=1, parts=2)
    first = index.upsert_part(part("ki_1", (f"{MATCH} first",), first=0, version=2), part=0, parts=2)

    assert (second.written, second.held, second.complete) == (True, frozenset({1}), False)
    assert (first.written, first.held, first.complete) == (True, frozenset({0, 1}), True)
    assert sorted(leg_hits(index.search(query(MATCH)), Leg.LEXICAL)) == [("ki_1", 0), ("ki_1", 1)]


@every_adapter
def test_upsert_part_replayed_keeps_one_copy(index: SearchIndex) -> None:
    written = part("ki_1", (f"{MATCH} only",), first=0, version=2)
    index.upsert_part(written, part=0, parts=2)

    again = index.upsert_part(written, part=0, parts=2)

    assert (again.written, again.held, again.complete) == (True, frozenset({0}), False)
    assert leg_hits(index.search(query(MATCH)), Leg.LEXICAL) == [("ki_1", 0)]


@every_adapter
def test_upsert_part_of_a_newer_version_drops_the_older_chunks(index: SearchIndex) -> None:
    index.upsert(item("ki_1", ("older words", "older tail"), version=1))

    written = index.upsert_part(part("ki_1", ("newer words",), first=0, version=2), part=0, parts=2)

    assert (written.written, written.held) == (True, frozenset({0}))
    assert found_items(index, "older") == set()
    assert found_items(index, "newer") == {"ki_1"}


@every_adapter
def test_upsert_part_of_an_older_version_or_a_removed_one_writes_nothing(index: SearchIndex) -> None:
    index.upsert(item("ki_1", ("current words",), version=3))
    index.remove_item("t1", "ki_2", version=5)

    older = index.upsert_part(part("ki_1", ("stale words",), first=0, version=2), part=0, parts=2)
    removed = index.upsert_part(part("ki_2", ("stale words",), first=0, version=5), part=0, parts=1)

    assert (older.written, older.complete) == (False, False)
    assert (removed.written, removed.complete) == (False, False)
    assert found_items(index, "stale") == set()
    assert found_items(index, "current") == {"ki_1"}


@every_adapter
def test_remove_item_drops_part_marks_with_the_chunks(index: SearchIndex) -> None:
    index.upsert_part(part("ki_1", (f"{MATCH} one",), first=0, version=2), part=0, parts=2)
    index.remove_item("t1", "ki_1", version=2)

    after = index.upsert_part(part("ki_1", (f"{MATCH} two",), first=1, version=3), part=1, parts=2)

    assert (after.written, after.held, after.complete) == (True, frozenset({1}), False)
    assert leg_hits(index.search(query(MATCH)), Leg.LEXICAL) == [("ki_1", 1)]


@every_adapter
def test_upsert_part_number_outside_the_parts_raises(index: SearchIndex) -> None:
    with pytest.raises(ValueError, match="part"):
        index.upsert_part(part("ki_1", ("words",), first=0, version=1), part=2, parts=2)

    assert found_items(index, "words") == set()


@every_adapter
def test_remove_item_hides_chunks_and_refuses_upserts_up_to_its_version(index: SearchIndex) -> None:
    index.upsert(item("ki_1", (f"{MATCH} words",), version=1))

    index.remove_item("t1", "ki_1", version=2)

    assert found_items(index, MATCH) == set()
    assert index.upsert(item("ki_1", (f"{MATCH} words",), version=2)) is False
    assert index.upsert(item("ki_1", (f"{MATCH} words",), version=1)) is False
    assert found_items(index, MATCH) == set()
    assert index.upsert(item("ki_1", (f"{MATCH} words",), version=3)) is True
    assert found_items(index, MATCH) == {"ki_1"}


@every_adapter
def test_remove_item_older_than_indexed_version_is_ignored(index: SearchIndex) -> None:
    index.upsert(item("ki_1", (f"{MATCH} words",), version=3))

    index.remove_item("t1", "ki_1", version=2)

    assert found_items(index, MATCH) == {"ki_1"}


@every_adapter
def test_remove_item_never_indexed_refuses_older_upserts(index: SearchIndex) -> None:
    index.remove_item("t1", "ki_1", version=4)

    assert index.upsert(item("ki_1", (f"{MATCH} words",), version=3)) is False
    assert found_items(index, MATCH) == set()


@every_adapter
def test_remove_base_removes_only_that_base_of_that_tenant(index: SearchIndex) -> None:
    index.upsert_many(
        [
            item("ki_a1", (f"{MATCH} one",), base="kb_a"),
            item("ki_a2", (f"{MATCH} two",), base="kb_a"),
            item("ki_b", (f"{MATCH} three",), base="kb_b"),
            item("ki_other", (f"{MATCH} four",), base="kb_a", tenant="t2"),
        ]
    )

    index.remove_base("t1", "kb_a")

    assert found_items(index, MATCH) == {"ki_b"}
    assert found_items(index, MATCH, viewer(tenant="t2")) == {"ki_other"}


@every_adapter
def test_remove_base_then_same_version_upsert_restores_item(index: SearchIndex) -> None:
    index.upsert(item("ki_1", (f"{MATCH} one", f"{MATCH} two"), version=2))
    index.remove_base("t1", "kb_a")

    restored = index.upsert(item("ki_1", (f"{MATCH} one", f"{MATCH} two"), version=2))
    stale = index.upsert(item("ki_1", (f"{MATCH} old",), version=1))

    assert (restored, stale) == (True, False)
    assert sorted(leg_hits(index.search(query(MATCH)), Leg.LEXICAL)) == [("ki_1", 0), ("ki_1", 1)]


@every_adapter
def test_upsert_concurrent_writers_and_readers_keep_every_item(index: SearchIndex) -> None:
    def write(writer: int) -> list[bool]:
        results = []
        for n in range(25):
            results.append(index.upsert(item(f"ki_{writer}_{n:02d}", (f"{MATCH} from writer {writer}",))))
            index.search(query(MATCH, k=5))
        return results

    with ThreadPoolExecutor(max_workers=4) as pool:
        outcomes = [result for results in pool.map(write, range(4)) for result in results]

    assert outcomes == [True] * 100
    assert len(index.search(query(MATCH, k=200)).lexical) == 100


# Query text is user input


@every_adapter
@pytest.mark.parametrize(
    "text",
    [
        'title:"zebra (stripes*',
        "zebra AND OR NOT )",
        "+zebra -stripes ~2 ^3 [a TO b] {c}",
        'zebra\\ "unbalanced',
        "zebra/stripes!?:&&||",
    ],
)
def test_search_query_syntax_is_plain_words(index: SearchIndex, text: str) -> None:
    index.upsert(item("ki_1", ("a zebra without stripes",)))

    assert found_items(index, text) == {"ki_1"}


@every_adapter
@pytest.mark.parametrize("text", ["", "   ", "the and of", '* : ( ) "', "it is not to be"])
def test_search_empty_or_stopword_only_query_yields_empty_lexical_leg(index: SearchIndex, text: str) -> None:
    index.upsert(item("ki_1", ("the and of it is not to be", "more text")))

    assert index.search(query(text)).lexical == []


@every_adapter
def test_search_semantic_leg_without_vector_raises(index: SearchIndex) -> None:
    with pytest.raises(ValueError, match="vector"):
        index.search(IndexQuery(text=MATCH, visibility=viewer(), k=5, legs=frozenset({Leg.SEMANTIC})))


# Configuration


@every_adapter
@pytest.mark.parametrize(("model_id", "dimension"), [("other-model", DIMENSION), (MODEL_ID, DIMENSION * 2)])
def test_ensure_ready_other_model_or_dimension_raises(
    index: SearchIndex, model_id: str, dimension: int
) -> None:
    with pytest.raises(IndexConfigurationError, match="dimension"):
        index.ensure_ready(model_id=model_id, dimension=dimension)


@every_adapter
def test_ensure_ready_same_configuration_keeps_content(index: SearchIndex) -> None:
    index.upsert(item("ki_1", (f"{MATCH} words",)))

    index.ensure_ready(model_id=MODEL_ID, dimension=DIMENSION)

    assert found_items(index, MATCH) == {"ki_1"}


# Scale


@every_adapter
def test_upsert_many_thousands_of_chunks_searchable(index: SearchIndex) -> None:
    items = [
        item(
            f"ki_{i:05d}",
            (f"common words number {i}", f"more common words {i}"),
            vectors=[axis(i), axis(i + 1)],
        )
        for i in range(2_000)
    ]
    items[1234] = item("ki_01234", ("common words", f"the rare {MATCH}"), vectors=[axis(2), axis(0)])

    results = index.upsert_many(items)

    assert results == [True] * len(items)
    assert leg_hits(index.search(query(MATCH)), Leg.LEXICAL) == [("ki_01234", 1)]
    assert len(index.search(query("common", k=50)).lexical) == 50


# score_items: hits of revisions the index does not hold yet (read-your-own-writes)


def _hits(hits: LegHits, leg: Leg) -> list[tuple[str, int, float]]:
    chosen = hits.lexical if leg is Leg.LEXICAL else hits.semantic
    return [(hit.knowledge_item_id, hit.ordinal, hit.score) for hit in chosen]


@every_leg
def test_score_items_scores_a_pending_item_as_the_index_does_once_it_holds_it(
    index: SearchIndex, leg: Leg
) -> None:
    index.upsert(item("ki_held", ("the zebra grazed", "lions rest"), vectors=[at_angle(0.5), axis(2)]))
    index.upsert(item("ki_other", ("a quiet river bank",), vectors=[axis(3)], title="Zebra notes"))
    pending = item(
        "ki_new", ("a zebra crossed the zebra savanna",), vectors=[at_angle(0.8)], title="Zebra field guide"
    )

    scored = index.score_items(probe(leg), [pending])
    index.upsert(pending)
    held = [hit for hit in _hits(index.search(probe(leg)), leg) if hit[0] == "ki_new"]

    assert [(item_id, ordinal) for item_id, ordinal, _ in _hits(scored, leg)] == [("ki_new", 0)]
    assert _hits(scored, leg)[0][2] == pytest.approx(held[0][2], rel=1e-5)


@every_adapter
def test_score_items_leaves_out_a_passage_without_a_query_term_and_writes_nothing(index: SearchIndex) -> None:
    index.upsert(matching("ki_held"))

    scored = index.score_items(probe(Leg.LEXICAL), [item("ki_new", ("nothing of the kind",))])

    assert scored.lexical == []
    assert found_items(index, MATCH) == {"ki_held"}


@every_adapter
def test_score_items_title_match_alone_scores_the_passage(index: SearchIndex) -> None:
    index.upsert(matching("ki_held"))
    pending = item("ki_new", ("about grasslands",), title="Zebra")

    scored = index.score_items(probe(Leg.LEXICAL), [pending])
    index.upsert(pending)
    held = [hit for hit in _hits(index.search(probe(Leg.LEXICAL)), Leg.LEXICAL) if hit[0] == "ki_new"]

    assert _hits(scored, Leg.LEXICAL)[0][2] == pytest.approx(held[0][2], rel=1e-5)


@every_adapter
def test_score_items_cuts_each_leg_at_k_best_first(index: SearchIndex) -> None:
    pending = [
        item(f"ki_{n}", (" ".join(["zebra"] * (n + 1)) + " grass",), vectors=[at_angle(0.1 * (n + 1))])
        for n in range(5)
    ]

    scored = index.score_items(
        query(MATCH, vector=axis(0), k=3).model_copy(update={"legs": frozenset({Leg.LEXICAL, Leg.SEMANTIC})}),
        pending,
    )

    assert [hit.knowledge_item_id for hit in scored.semantic] == ["ki_4", "ki_3", "ki_2"]
    assert len(scored.lexical) == 3
    assert [hit.score for hit in scored.lexical] == sorted(
        (hit.score for hit in scored.lexical), reverse=True
    )
