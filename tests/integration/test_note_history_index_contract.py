"""The note history index (DESIGN §10 "Time"), run against both note index adapters: one document
per version with its validity interval, an ``as_of`` filter inside both legs and browse, rewrites
that close an interval, and removal with a tombstone that keeps late writes out."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from knowledge.domain.memory.notes import MemoryType
from knowledge.domain.memory.retrieval import IndexedNote, NoteFilter, NoteQuery
from knowledge.domain.models import Scope
from knowledge.domain.retrieval.hits import Leg
from knowledge.ports import NoteIndex
from tests.support.index import axis
from tests.support.note_index import NOTE_ADAPTER_LEGS, NOTE_ADAPTERS, open_note_index

T0 = datetime(2026, 6, 1, tzinfo=UTC)
TENANT = "tenant-a"


@pytest.fixture
def history(request: pytest.FixtureRequest) -> Iterator[NoteIndex]:
    adapter: str = request.param
    url = request.getfixturevalue("opensearch_url") if adapter == "opensearch" else None
    with open_note_index(adapter, url, history=True) as opened:
        yield opened


def version(number: int, start: int, end: int | None, **fields: Any) -> IndexedNote:
    """Version ``number`` of note ``nt_a``, valid from ``T0 + start`` hours until ``T0 + end``."""
    values: dict[str, Any] = {
        "tenant_id": TENANT,
        "note_id": "nt_a",
        "version": number,
        "owner_id": "me",
        "scope": Scope.PRIVATE,
        "memory_type": MemoryType.FACT,
        "path": "/",
        "content": f"the zebra crossed the river, take {number}",
        "updated_at": T0 + timedelta(hours=start),
        "valid_from": T0 + timedelta(hours=start),
        "valid_to": None if end is None else T0 + timedelta(hours=end),
        "vector": axis(0),
    }
    values.update(fields)
    return IndexedNote(**values)


def at(hours: float) -> NoteFilter:
    moment = T0 + timedelta(hours=hours)
    return NoteFilter(tenant_id=TENANT, subject_id="me", now=moment, as_of=moment)


def found(index: NoteIndex, note_filter: NoteFilter, leg: Leg) -> list[tuple[str, int]]:
    hits = index.search(
        NoteQuery(text="zebra", vector=axis(0), filter=note_filter, k=10, legs=frozenset({leg}))
    )
    chosen = hits.lexical if leg is Leg.LEXICAL else hits.semantic
    return [(hit.note_id, hit.version) for hit in chosen]


@pytest.mark.parametrize(("history", "leg"), NOTE_ADAPTER_LEGS, indirect=["history"])
def test_note_history_as_of_each_moment_finds_the_version_valid_then(history: NoteIndex, leg: Leg) -> None:
    assert history.upsert_notes([version(1, 0, 2), version(2, 2, 4), version(3, 4, None)]) == [True] * 3

    answers = [found(history, at(hours), leg) for hours in (-1, 0, 1.5, 2, 3.9, 4, 100)]

    assert answers == [
        [],
        [("nt_a", 1)],
        [("nt_a", 1)],
        [("nt_a", 2)],
        [("nt_a", 2)],
        [("nt_a", 3)],
        [("nt_a", 3)],
    ]


@pytest.mark.parametrize("history", NOTE_ADAPTERS, indirect=True)
def test_note_history_rewrite_closes_the_interval_and_browse_filters_too(history: NoteIndex) -> None:
    history.upsert_notes([version(1, 0, None)])
    history.upsert_notes([version(1, 0, 2), version(2, 2, None, importance=0.9)])

    assert [hit.version for hit in history.browse(at(3), 10)] == [2]
    assert [hit.version for hit in history.browse(at(1), 10)] == [1]


@pytest.mark.parametrize("history", NOTE_ADAPTERS, indirect=True)
def test_note_history_expiry_is_judged_at_the_moment(history: NoteIndex) -> None:
    history.upsert_notes([version(1, 0, None, expires_at=T0 + timedelta(hours=5))])

    assert found(history, at(4), Leg.LEXICAL) == [("nt_a", 1)]
    assert found(history, at(6), Leg.LEXICAL) == []


@pytest.mark.parametrize("history", NOTE_ADAPTERS, indirect=True)
def test_note_history_removal_drops_every_version_and_refuses_late_writes(history: NoteIndex) -> None:
    history.upsert_notes([version(1, 0, 2), version(2, 2, None)])

    history.remove_note(TENANT, "nt_a", version=3)
    late = history.upsert_notes([version(2, 2, None)])

    assert late == [False]
    assert [found(history, at(hours), Leg.LEXICAL) for hours in (1, 3)] == [[], []]
    assert history.browse(at(3), 10) == []
