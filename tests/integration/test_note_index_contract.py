"""The ``NoteIndex`` contract (DESIGN §9), run against every note index adapter: both legs, every
filter inside every leg, external versions and configuration."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from knowledge.domain.memory.notes import MemoryType
from knowledge.domain.memory.retrieval import IndexedNote, NoteFilter, NoteQuery
from knowledge.domain.models import Scope
from knowledge.domain.retrieval.hits import Leg
from knowledge.errors import IndexConfigurationError
from knowledge.ports import NoteIndex
from tests.support.index import DIMENSION, MODEL_ID, at_angle, axis
from tests.support.note_index import NOTE_ADAPTER_LEGS, NOTE_ADAPTERS, open_note_index

NOW = datetime(2026, 6, 1, tzinfo=UTC)
TENANT = "tenant-a"
WORD = "zebra"


@pytest.fixture
def index(request: pytest.FixtureRequest) -> Iterator[NoteIndex]:
    adapter: str = request.param
    url = request.getfixturevalue("opensearch_url") if adapter == "opensearch" else None
    with open_note_index(adapter, url) as opened:
        yield opened


def note(note_id: str, content: str = f"the {WORD} crossed the savanna", **fields: Any) -> IndexedNote:
    values: dict[str, Any] = {
        "tenant_id": TENANT,
        "note_id": note_id,
        "version": 1,
        "owner_id": "me",
        "scope": Scope.PRIVATE,
        "memory_type": MemoryType.FACT,
        "path": "/",
        "content": content,
        "vector": axis(0),
        **fields,
    }
    return IndexedNote(**values)


def probe(leg: Leg, k: int = 10, **filters: Any) -> NoteQuery:
    values: dict[str, Any] = {"tenant_id": TENANT, "subject_id": "me", "now": NOW, **filters}
    return NoteQuery(text=WORD, vector=axis(0), filter=NoteFilter(**values), k=k, legs=frozenset({leg}))


def found(index: NoteIndex, query: NoteQuery) -> list[str]:
    legs = index.search(query)
    return [hit.note_id for hit in [*legs.lexical, *legs.semantic]]


every_adapter = pytest.mark.parametrize("index", NOTE_ADAPTERS, indirect=True)
every_leg = pytest.mark.parametrize(("index", "leg"), NOTE_ADAPTER_LEGS, indirect=["index"])


@every_leg
def test_search_after_upsert_finds_the_note_at_its_version(index: NoteIndex, leg: Leg) -> None:
    index.upsert_notes([note("nt_1", version=3), note("nt_2", "nothing alike here", vector=axis(4))])

    legs = index.search(probe(leg))
    hits = legs.lexical if leg is Leg.LEXICAL else legs.semantic

    assert hits[0].note_id == "nt_1"
    assert hits[0].version == 3
    assert hits[0].score > 0


@every_leg
@pytest.mark.parametrize(
    ("fields", "filters"),
    [
        ({"tenant_id": "tenant-b"}, {}),
        ({"owner_id": "someone-else"}, {}),
        (
            {"owner_id": "someone-else", "scope": Scope.TEAM, "team_id": "red"},
            {"team_ids": frozenset({"blue"})},
        ),
        ({}, {"scope": Scope.TENANT}),
        ({"agent_id": "agent-1"}, {"agent_id": "agent-2"}),
        ({}, {"memory_type": MemoryType.PREFERENCE}),
        ({"path": "/projects/alphabet"}, {"path_prefix": "/projects/alpha"}),
        ({"superseded": True}, {}),
        ({"expires_at": NOW - timedelta(seconds=1)}, {}),
    ],
    ids=[
        "other-tenant",
        "private-of-other",
        "other-team",
        "scope",
        "agent",
        "type",
        "path",
        "superseded",
        "expired",
    ],
)
def test_search_filters_apply_inside_every_leg(
    index: NoteIndex, leg: Leg, fields: dict[str, Any], filters: dict[str, Any]
) -> None:
    index.upsert_notes([note("nt_hidden", **fields)])

    assert found(index, probe(leg, **filters)) == []


@every_leg
@pytest.mark.parametrize(
    ("fields", "filters"),
    [
        ({"owner_id": "someone-else", "scope": Scope.TENANT}, {}),
        (
            {"owner_id": "someone-else", "scope": Scope.TEAM, "team_id": "red"},
            {"team_ids": frozenset({"red"})},
        ),
        ({"path": "/projects/alpha/design"}, {"path_prefix": "/projects/alpha"}),
        ({"superseded": True}, {"include_superseded": True}),
        ({"expires_at": NOW + timedelta(seconds=1), "agent_id": "a"}, {"agent_id": "a"}),
    ],
    ids=["tenant-scope", "own-team", "path-below", "superseded-asked", "unexpired"],
)
def test_search_admitted_notes_are_found_on_every_leg(
    index: NoteIndex, leg: Leg, fields: dict[str, Any], filters: dict[str, Any]
) -> None:
    index.upsert_notes([note("nt_seen", **fields)])

    assert found(index, probe(leg, **filters)) == ["nt_seen"]


@every_leg
def test_search_hidden_notes_never_take_a_top_k_slot(index: NoteIndex, leg: Leg) -> None:
    hidden = [note(f"nt_h{n}", f"{WORD} " * 5, owner_id="other") for n in range(5)]
    index.upsert_notes([*hidden, note("nt_mine", f"a {WORD} and many other words", vector=at_angle(0.8))])

    assert found(index, probe(leg, k=1)) == ["nt_mine"]


@every_leg
def test_search_equal_scores_order_by_note_id_and_a_smaller_k_is_a_prefix(index: NoteIndex, leg: Leg) -> None:
    index.upsert_notes([note(f"nt_{letter}") for letter in "dbeacf"])  # same text, same vector

    everything = found(index, probe(leg, k=6))

    assert everything == [f"nt_{letter}" for letter in "abcdef"]
    for k in range(1, 6):
        assert found(index, probe(leg, k=k)) == everything[:k]


@every_adapter
@pytest.mark.parametrize(
    "vector",
    [[0.0] * DIMENSION, [float("nan")] + [0.5] * (DIMENSION - 1), [1e39] + [0.5] * (DIMENSION - 1)],
    ids=["zero", "nan", "beyond_float32"],
)
def test_upsert_notes_vector_without_a_cosine_raises_and_writes_nothing(
    index: NoteIndex, vector: list[float]
) -> None:
    with pytest.raises(ValueError, match="no cosine similarity"):
        index.upsert_notes([note("nt_good"), note("nt_bad", vector=vector)])

    assert found(index, probe(Leg.LEXICAL)) == []


@every_adapter
def test_upsert_notes_older_version_is_refused(index: NoteIndex) -> None:
    assert index.upsert_notes([note("nt_1", version=2)]) == [True]

    assert index.upsert_notes([note("nt_1", "older text", version=1)]) == [False]
    assert index.search(probe(Leg.LEXICAL)).lexical[0].version == 2


@every_adapter
def test_remove_note_leaves_a_tombstone_that_refuses_its_version(index: NoteIndex) -> None:
    index.upsert_notes([note("nt_1", version=1)])

    index.remove_note(TENANT, "nt_1", version=2)

    assert found(index, probe(Leg.LEXICAL)) == []
    assert index.upsert_notes([note("nt_1", version=2)]) == [False]
    assert index.upsert_notes([note("nt_1", version=3)]) == [True]
    assert found(index, probe(Leg.LEXICAL)) == ["nt_1"]


@every_adapter
def test_upsert_notes_replaces_the_text_of_a_note(index: NoteIndex) -> None:
    index.upsert_notes([note("nt_1", version=1)])

    index.upsert_notes([note("nt_1", "the okapi is shy", version=2)])

    assert found(index, probe(Leg.LEXICAL)) == []


@every_adapter
def test_ensure_ready_with_another_model_is_a_configuration_error(index: NoteIndex) -> None:
    with pytest.raises(IndexConfigurationError):
        index.ensure_ready(model_id="another-model", dimension=DIMENSION)
    index.ensure_ready(model_id=MODEL_ID, dimension=DIMENSION)


@every_adapter
def test_search_query_of_stop_words_only_matches_nothing_lexically(index: NoteIndex) -> None:
    index.upsert_notes([note("nt_1", "the and of")])

    query = probe(Leg.LEXICAL).model_copy(update={"text": "the and"})
    assert index.search(query).lexical == []


def browse_filter(**filters: Any) -> NoteFilter:
    values: dict[str, Any] = {"tenant_id": TENANT, "subject_id": "me", "now": NOW, **filters}
    return NoteFilter(**values)


@every_adapter
def test_browse_orders_by_importance_then_recency_then_id_within_the_filter(index: NoteIndex) -> None:
    index.upsert_notes(
        [
            note("nt_low", importance=0.1, updated_at=NOW),
            note("nt_old", importance=0.9, updated_at=NOW - timedelta(days=2)),
            note("nt_new", importance=0.9, updated_at=NOW - timedelta(days=1)),
            note("nt_tie_b", importance=0.5, updated_at=NOW),
            note("nt_tie_a", importance=0.5, updated_at=NOW),
            note("nt_theirs", importance=1.0, owner_id="someone-else"),
            note("nt_gone", importance=1.0, expires_at=NOW - timedelta(seconds=1)),
            note("nt_replaced", importance=1.0, superseded=True),
        ]
    )
    index.refresh()

    hits = index.browse(browse_filter(), 10)

    assert [hit.note_id for hit in hits] == ["nt_new", "nt_old", "nt_tie_a", "nt_tie_b", "nt_low"]
    assert [hit.score for hit in hits] == pytest.approx([0.9, 0.9, 0.5, 0.5, 0.1])
    assert [hit.note_id for hit in index.browse(browse_filter(), 2)] == ["nt_new", "nt_old"]
    assert [hit.note_id for hit in index.browse(browse_filter(include_superseded=True), 1)] == ["nt_replaced"]


@every_adapter
def test_browse_of_a_caller_without_notes_is_empty(index: NoteIndex) -> None:
    index.upsert_notes([note("nt_1", owner_id="someone-else")])
    index.refresh()

    assert index.browse(browse_filter(), 5) == []


@every_leg
def test_score_notes_scores_a_copy_of_a_held_note_as_search_scores_it(index: NoteIndex, leg: Leg) -> None:
    index.upsert_notes(
        [
            note("nt_1", f"the {WORD} crossed the savanna at dawn", vector=at_angle(0.2)),
            note("nt_2", f"a {WORD} and a {WORD} in the river", vector=at_angle(0.5)),
            note("nt_3", "nothing alike here", vector=axis(4)),
        ]
    )
    query = probe(leg)
    held = {hit.note_id: hit.score for hit in [*index.search(query).lexical, *index.search(query).semantic]}

    scored = index.score_notes(
        query,
        [
            note("nt_9", f"a {WORD} and a {WORD} in the river", vector=at_angle(0.5)),
            note("nt_8", "nothing alike here", vector=axis(4)),
        ],
    )
    hits = scored.lexical if leg is Leg.LEXICAL else scored.semantic

    assert hits[0].note_id == "nt_9"
    assert hits[0].score == pytest.approx(held["nt_2"], rel=1e-5)
    if leg is Leg.LEXICAL:
        assert [hit.note_id for hit in hits] == ["nt_9"]  # no shared term: no lexical hit
    assert index.search(query).lexical == index.search(query).lexical  # nothing was written
    assert "nt_9" not in found(index, query)
