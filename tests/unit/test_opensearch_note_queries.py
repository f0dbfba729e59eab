"""Request bodies of the OpenSearch notes index: every filter inside both legs, routing by tenant."""

from __future__ import annotations

from datetime import UTC, datetime

from knowledge.adapters.opensearch.notes import filter_query, lexical_body, note_source, semantic_body
from knowledge.domain.memory.notes import MemoryType
from knowledge.domain.memory.retrieval import IndexedNote, NoteFilter
from knowledge.domain.models import Scope

NOW = datetime(2026, 6, 1, tzinfo=UTC)
FILTER = NoteFilter(
    tenant_id="acme",
    subject_id="alice",
    team_ids=frozenset({"red", "blue"}),
    memory_type=MemoryType.DECISION,
    path_prefix="/projects",
    now=NOW,
)


def test_semantic_body_carries_the_filter_inside_the_knn_clause() -> None:
    body = semantic_body([0.6, 0.8], FILTER, 40)

    knn = body["query"]["knn"]["vector"]
    assert (knn["k"], knn["filter"]) == (40, filter_query(FILTER))
    assert body["size"] == 40


def test_lexical_body_filters_without_scoring_the_filter() -> None:
    body = lexical_body("deploy plan", FILTER, 40)

    assert body["query"]["bool"]["must"] == [{"match": {"content": "deploy plan"}}]
    assert body["query"]["bool"]["filter"] == [filter_query(FILTER)]


def test_filter_query_names_tenant_audience_narrowing_supersession_and_expiry() -> None:
    clauses = filter_query(FILTER)["bool"]["filter"]

    assert {"term": {"tenant_id": "acme"}} in clauses
    assert {"term": {"memory_type": "decision"}} in clauses
    assert {"term": {"path_prefixes": "/projects"}} in clauses
    assert {"term": {"superseded": False}} in clauses
    audience = clauses[2]["bool"]["should"]
    assert audience[2]["bool"]["filter"][1] == {"terms": {"team_id": ["blue", "red"]}}
    assert clauses[-1]["bool"]["should"][1] == {"range": {"expires_at": {"gt": NOW.isoformat()}}}


def test_note_source_lists_every_path_prefix_of_the_note() -> None:
    note = IndexedNote(
        tenant_id="acme",
        note_id="nt_1",
        version=3,
        owner_id="alice",
        scope=Scope.PRIVATE,
        memory_type=MemoryType.FACT,
        path="/projects/alpha",
        content="x",
        vector=[1.0, 0.0],
    )

    assert note_source(note)["path_prefixes"] == ["/", "/projects", "/projects/alpha"]
    assert note_source(note)["note_version"] == 3
