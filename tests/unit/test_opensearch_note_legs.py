"""``OpenSearchNoteIndex.search`` over a scripted ``_msearch``: a failed leg is raised naming it, or,
when the query tolerates it, reported with the other leg's hits from the same request."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from knowledge.adapters.opensearch.notes import OpenSearchNoteIndex
from knowledge.domain.memory.retrieval import NoteFilter, NoteQuery
from knowledge.domain.retrieval.hits import Leg
from knowledge.errors import DependencyUnavailableError

FILTER = NoteFilter(tenant_id="acme", subject_id="alice", now=datetime(2026, 6, 1, tzinfo=UTC))


class _MsearchClient:
    """Answers one ``_msearch`` with the given per-leg answers, recording the calls."""

    def __init__(self, *responses: dict[str, object]) -> None:
        self.responses = list(responses)
        self.calls: list[list[dict[str, object]]] = []

    def msearch(self, index: str, body: list[dict[str, object]]) -> dict[str, object]:
        self.calls.append(body)
        return {"responses": self.responses}


_LEXICAL_ANSWER = {
    "hits": {"hits": [{"_score": 2.5, "_source": {"note_id": "nt_a", "note_version": 3}}]},
}
_FAILED_LEG = {"error": {"type": "search_phase_execution_exception"}, "status": 400}


def test_search_tolerated_semantic_failure_comes_back_with_the_lexical_hits_in_one_msearch() -> None:
    client = _MsearchClient(_LEXICAL_ANSWER, _FAILED_LEG)
    index = OpenSearchNoteIndex(client, "notes")

    hits = index.search(
        NoteQuery(text="deploy", vector=[0.6, 0.8], filter=FILTER, k=5, tolerate=frozenset({Leg.SEMANTIC}))
    )

    assert [(hit.note_id, hit.version, hit.score) for hit in hits.lexical] == [("nt_a", 3, 2.5)]
    assert (hits.semantic, hits.failed) == ([], Leg.SEMANTIC)
    assert len(client.calls) == 1


def test_search_untolerated_semantic_failure_raises_naming_the_leg() -> None:
    index = OpenSearchNoteIndex(_MsearchClient(_LEXICAL_ANSWER, _FAILED_LEG), "notes")

    with pytest.raises(DependencyUnavailableError) as raised:
        index.search(NoteQuery(text="deploy", vector=[0.6, 0.8], filter=FILTER, k=5))

    assert raised.value.details == {"leg": "semantic"}
