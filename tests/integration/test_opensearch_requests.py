"""Requests ``OpenSearchIndex`` sends and answers it parses, through a recording connection.

Expected bodies are written out in full: they are the wire contract with OpenSearch (k-NN filter
inside the ``knn`` clause, tenant routing, external versions), and answer shapes follow the
OpenSearch documentation of ``_msearch``, ``_bulk`` and k-NN scores.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest
import requests
from opensearchpy import Connection, OpenSearch
from opensearchpy.exceptions import ConnectionError as OpenSearchConnectionError
from opensearchpy.exceptions import RequestError

from knowledge.adapters.opensearch import queries as dsl
from knowledge.adapters.opensearch.engine import build_opensearch_client
from knowledge.adapters.opensearch.passages import OpenSearchIndex
from knowledge.domain.retrieval.hits import ChunkHit, IndexQuery, Leg
from knowledge.errors import DependencyUnavailableError, IndexConfigurationError
from tests.support.index import item, viewer


@dataclass
class Recorded:
    method: str
    url: str
    params: dict[str, Any]
    body: Any

    def lines(self) -> list[Any]:
        """An NDJSON body (``_msearch``, ``_bulk``) as a list of decoded lines."""
        return [json.loads(line) for line in self.body.splitlines() if line.strip()]


class RecordingConnection(Connection):
    """Records every request and answers from a script of ``(status, body)`` or exceptions."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.requests: list[Recorded] = []
        self.answers: deque[tuple[int, Any] | Exception] = deque()

    def perform_request(
        self,
        method: str,
        url: str,
        params: Mapping[str, Any] | None = None,
        body: Any = None,
        timeout: float | None = None,
        ignore: Any = (),
        headers: Mapping[str, str] | None = None,
    ) -> tuple[int, dict[str, str], str]:
        text = body.decode() if isinstance(body, bytes) else body
        decoded = json.loads(text) if text and not text.endswith("\n") else text
        # The client escapes query parameters to bytes; compare them as the strings on the wire.
        query = {
            key: value.decode() if isinstance(value, bytes) else str(value)
            for key, value in (params or {}).items()
        }
        self.requests.append(Recorded(method, url, query, decoded))
        answer = self.answers.popleft() if self.answers else (200, {})
        if isinstance(answer, Exception):
            raise answer
        status, payload = answer
        raw = json.dumps(payload)
        if not 200 <= status < 300 and status not in ignore:
            self._raise_error(status, raw, "application/json")
        return status, {"content-type": "application/json"}, raw


@pytest.fixture
def client() -> OpenSearch:
    return OpenSearch(
        hosts=[{"host": "search.test", "port": 443}], connection_class=RecordingConnection, max_retries=0
    )


@pytest.fixture
def wire(client: OpenSearch) -> RecordingConnection:
    connection: RecordingConnection = client.transport.get_connection()
    return connection


@pytest.fixture
def index(client: OpenSearch) -> OpenSearchIndex:
    return OpenSearchIndex(client, "chunks")


def ready(index: OpenSearchIndex, wire: RecordingConnection, *, dimension: int = 8) -> None:
    wire.answers.extend([(200, {}), (200, mapping_answer("model-a", dimension))])
    index.ensure_ready(model_id="model-a", dimension=dimension)
    wire.requests.clear()


def mapping_answer(model: str, dimension: int, analysis: str | None = dsl.LAYOUT) -> dict[str, Any]:
    return {
        "chunks-000001": {
            "mappings": {
                "_meta": {"embedding_model": model, "dimension": dimension, "layout": analysis},
                "properties": {"vector": {"type": "knn_vector", "dimension": dimension}},
            }
        }
    }


def bulk_answer(*results: tuple[str, int, str]) -> dict[str, Any]:
    """A ``_bulk`` answer; each result is ``(id, status, result or error type)``."""
    items = []
    for doc_id, status, outcome in results:
        entry: dict[str, Any] = {"_index": "chunks", "_id": doc_id, "status": status}
        if status < 300:
            entry["result"] = outcome
        else:
            entry["error"] = {"type": outcome, "reason": f"[{doc_id}]: {outcome}"}
        items.append({"index": entry})
    return {"took": 3, "errors": any(status >= 300 for _, status, _ in results), "items": items}


def both_legs_query() -> IndexQuery:
    return IndexQuery(
        text='zebra "stripes"',
        vector=[0.6, 0.8],
        visibility=viewer(tenant="t1", subject="u1", teams=["red", "blue"], bases=["kb_b", "kb_a"]),
        k=3,
    )


def visibility(doc_type: str) -> dict[str, Any]:
    """The visibility filter of ``both_legs_query`` over documents of ``doc_type``."""
    filter_ = {
        **VISIBILITY["bool"],
        "filter": [{"term": {"doc_type": doc_type}}, *VISIBILITY["bool"]["filter"][1:]],
    }
    return {"bool": filter_}


VISIBILITY = {
    "bool": {
        "filter": [
            {"term": {"doc_type": "chunk"}},
            {"term": {"tenant_id": "t1"}},
            {"terms": {"knowledge_base_id": ["kb_a", "kb_b"]}},
            {
                "bool": {
                    "should": [
                        {"term": {"scope": "tenant"}},
                        {"term": {"owner_id": "u1"}},
                        {
                            "bool": {
                                "filter": [
                                    {"term": {"scope": "team"}},
                                    {"terms": {"team_id": ["blue", "red"]}},
                                ]
                            }
                        },
                    ],
                    "minimum_should_match": 1,
                }
            },
        ]
    }
}
SORT = [{"_score": "desc"}, {"knowledge_item_id": "asc"}, {"ordinal": "asc"}]


def hit(item_id: str, ordinal: int, score: float, *, passage: bool = True) -> dict[str, Any]:
    """A hit of the lexical leg (a passage) or, with ``passage=False``, of the semantic leg (a chunk)."""
    text = (
        {"title": "Title", "text": f"text of {item_id}"} if passage else {"chunk_text": f"chunk of {item_id}"}
    )
    return {
        "_index": "chunks-000001",
        "_id": f"{item_id}:p{ordinal}" if passage else f"{item_id}:{ordinal}",
        "_score": score,
        "_routing": "t1",
        "_source": {
            "doc_type": "passage" if passage else "chunk",
            "tenant_id": "t1",
            "knowledge_base_id": "kb_a",
            "knowledge_item_id": item_id,
            "knowledge_revision_id": f"kr_{item_id}",
            **text,
            "ordinal": ordinal,
            "start": 10 * ordinal,
            "end": 10 * ordinal + 9,
            "item_version": 2,
        },
        "sort": [score, item_id, ordinal],
    }


def search_answer(*hits: dict[str, Any]) -> dict[str, Any]:
    return {
        "took": 2,
        "timed_out": False,
        "_shards": {"total": 1, "successful": 1, "skipped": 0, "failed": 0},
        "hits": {"total": {"value": len(hits), "relation": "eq"}, "max_score": None, "hits": list(hits)},
        "status": 200,
    }


# Search


def test_search_both_legs_sends_one_msearch_with_filter_inside_knn(
    index: OpenSearchIndex, wire: RecordingConnection
) -> None:
    wire.answers.append((200, {"took": 2, "responses": [search_answer(), search_answer()]}))

    index.search(both_legs_query())

    [request] = wire.requests
    assert (request.method, request.url) == ("POST", "/chunks/_msearch")
    assert request.lines() == [
        {"routing": "t1"},
        {
            "size": 3,
            "query": {
                "bool": {
                    "must": [
                        {
                            "multi_match": {
                                "query": 'zebra "stripes"',
                                "fields": ["title^1", "text"],
                                "type": "best_fields",
                                "tie_breaker": 0.3,
                            }
                        }
                    ],
                    "filter": [visibility("passage")],
                }
            },
            "sort": SORT,
            "track_scores": True,
            "_source": {"excludes": ["vector"]},
        },
        {"routing": "t1"},
        {
            # k + 1 neighbours, so a tie across the k-th place is seen (opensearch.engine).
            "size": 4,
            "query": {"knn": {"vector": {"vector": [0.6, 0.8], "k": 4, "filter": VISIBILITY}}},
            "sort": SORT,
            "track_scores": True,
            "_source": {"excludes": ["vector"]},
        },
    ]


def test_search_visibility_without_teams_or_allow_list_omits_those_clauses(
    index: OpenSearchIndex, wire: RecordingConnection
) -> None:
    wire.answers.append((200, {"responses": [search_answer()]}))

    index.search(
        IndexQuery(text="zebra", visibility=viewer(subject="u1"), k=5, legs=frozenset({Leg.LEXICAL}))
    )

    assert wire.requests[0].lines()[1]["query"]["bool"]["filter"] == [
        {
            "bool": {
                "filter": [
                    {"term": {"doc_type": "passage"}},
                    {"term": {"tenant_id": "t1"}},
                    {
                        "bool": {
                            "should": [{"term": {"scope": "tenant"}}, {"term": {"owner_id": "u1"}}],
                            "minimum_should_match": 1,
                        }
                    },
                ]
            }
        }
    ]


def test_search_title_boost_sets_multi_match_field_weight(
    client: OpenSearch, wire: RecordingConnection
) -> None:
    wire.answers.append((200, {"responses": [search_answer()]}))

    OpenSearchIndex(client, "chunks", title_boost=3.5).search(
        IndexQuery(text="zebra", visibility=viewer(), k=5, legs=frozenset({Leg.LEXICAL}))
    )

    assert wire.requests[0].lines()[1]["query"]["bool"]["must"][0]["multi_match"]["fields"] == [
        "title^3.5",
        "text",
    ]


def test_search_as_of_filters_both_legs_by_validity_interval(
    index: OpenSearchIndex, wire: RecordingConnection
) -> None:
    wire.answers.append((200, {"responses": [search_answer(), search_answer()]}))
    moment = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)

    index.search(both_legs_query().model_copy(update={"as_of": moment}))

    lines = wire.requests[0].lines()
    lexical_filter = lines[1]["query"]["bool"]["filter"][0]["bool"]["filter"]
    semantic_filter = lines[3]["query"]["knn"]["vector"]["filter"]["bool"]["filter"]
    interval = [
        {"range": {"valid_from": {"lte": "2026-03-01T12:00:00+00:00"}}},
        {
            "bool": {
                "should": [
                    {"bool": {"must_not": [{"exists": {"field": "valid_to"}}]}},
                    {"range": {"valid_to": {"gt": "2026-03-01T12:00:00+00:00"}}},
                ],
                "minimum_should_match": 1,
            }
        },
    ]
    assert lexical_filter[-2:] == interval
    assert semantic_filter[-2:] == interval


def test_span_action_history_entry_carries_its_interval() -> None:
    start, end = datetime(2026, 3, 1, tzinfo=UTC), datetime(2026, 3, 2, tzinfo=UTC)
    entry = item("ki_1@3", ["x"]).model_copy(update={"valid_from": start, "valid_to": end})

    chunk, passage = (dsl.span_action("h", entry, span) for span in (entry.chunks[0], entry.passages[0]))
    live = dsl.span_action("c", item("ki_1", ["x"]), entry.chunks[0])

    assert chunk["_source"]["valid_from"] == passage["_source"]["valid_from"] == start.isoformat()
    assert chunk["_source"]["valid_to"] == end.isoformat()
    assert "valid_from" not in live["_source"]
    assert "valid_to" not in live["_source"]


def test_search_without_as_of_has_no_interval_filter(
    index: OpenSearchIndex, wire: RecordingConnection
) -> None:
    wire.answers.append((200, {"responses": [search_answer(), search_answer()]}))

    index.search(both_legs_query())

    assert "valid_from" not in json.dumps(wire.requests[0].lines())


def test_search_parses_documented_msearch_answer_bm25_and_cosine(
    index: OpenSearchIndex, wire: RecordingConnection
) -> None:
    lexical = search_answer(hit("ki_1", 0, 7.25), hit("ki_2", 3, 2.5))
    # cosinesimil: score = (1 + cos) / 2, so 0.95 is cos 0.9 and 0.5 is cos 0.
    semantic = search_answer(hit("ki_2", 1, 0.95, passage=False), hit("ki_3", 0, 0.5, passage=False))
    wire.answers.append((200, {"took": 4, "responses": [lexical, semantic]}))

    hits = index.search(both_legs_query())

    assert hits.lexical == [
        ChunkHit(
            knowledge_base_id="kb_a",
            knowledge_item_id="ki_1",
            knowledge_revision_id="kr_ki_1",
            ordinal=0,
            start=0,
            end=9,
            text="text of ki_1",
            score=7.25,
        ),
        ChunkHit(
            knowledge_base_id="kb_a",
            knowledge_item_id="ki_2",
            knowledge_revision_id="kr_ki_2",
            ordinal=3,
            start=30,
            end=39,
            text="text of ki_2",
            score=2.5,
        ),
    ]
    assert [(h.knowledge_item_id, h.ordinal, h.text) for h in hits.semantic] == [
        ("ki_2", 1, "chunk of ki_2"),
        ("ki_3", 0, "chunk of ki_3"),
    ]
    assert [h.score for h in hits.semantic] == pytest.approx([0.9, 0.0])


def test_search_leg_error_in_msearch_answer_raises_dependency_unavailable(
    index: OpenSearchIndex, wire: RecordingConnection
) -> None:
    failed = {
        "error": {
            "type": "search_phase_execution_exception",
            "reason": "all shards failed",
            "root_cause": [{"type": "circuit_breaking_exception", "reason": "[parent] Data too large"}],
        },
        "status": 429,
    }
    wire.answers.append((200, {"took": 1, "responses": [search_answer(hit("ki_1", 0, 1.0)), failed]}))

    with pytest.raises(DependencyUnavailableError) as raised:
        index.search(both_legs_query())

    assert raised.value.details == {"leg": "semantic"}
    assert raised.value.retryable is True


def _failed_leg() -> dict[str, Any]:
    return {
        "error": {"type": "search_phase_execution_exception", "reason": "all shards failed"},
        "status": 400,
    }


def test_search_tolerated_semantic_leg_failure_is_reported_with_the_lexical_hits(
    index: OpenSearchIndex, wire: RecordingConnection
) -> None:
    wire.answers.append((200, {"took": 1, "responses": [search_answer(hit("ki_1", 0, 1.0)), _failed_leg()]}))

    hits = index.search(both_legs_query().model_copy(update={"tolerate": frozenset({Leg.SEMANTIC})}))

    assert [(h.knowledge_item_id, h.score) for h in hits.lexical] == [("ki_1", 1.0)]
    assert (hits.semantic, hits.failed) == ([], Leg.SEMANTIC)
    assert len(wire.requests) == 1


def test_search_tolerated_leg_failure_of_every_leg_raises(
    index: OpenSearchIndex, wire: RecordingConnection
) -> None:
    wire.answers.append((200, {"took": 1, "responses": [_failed_leg(), _failed_leg()]}))
    tolerant = both_legs_query().model_copy(update={"tolerate": frozenset({Leg.LEXICAL, Leg.SEMANTIC})})

    with pytest.raises(DependencyUnavailableError) as raised:
        index.search(tolerant)

    assert raised.value.details == {"leg": "lexical"}


def test_search_untolerated_lexical_leg_failure_raises_even_when_semantic_is_tolerated(
    index: OpenSearchIndex, wire: RecordingConnection
) -> None:
    wire.answers.append((200, {"took": 1, "responses": [_failed_leg(), search_answer()]}))

    with pytest.raises(DependencyUnavailableError) as raised:
        index.search(both_legs_query().model_copy(update={"tolerate": frozenset({Leg.SEMANTIC})}))

    assert raised.value.details == {"leg": "lexical"}


@pytest.mark.parametrize("status", [429, 500, 503])
def test_search_throttled_or_failing_cluster_raises_dependency_unavailable(
    index: OpenSearchIndex, wire: RecordingConnection, status: int
) -> None:
    wire.answers.append((status, {"error": {"type": "es_rejected_execution_exception"}, "status": status}))

    with pytest.raises(DependencyUnavailableError):
        index.search(both_legs_query())


def test_search_unreachable_cluster_raises_dependency_unavailable(
    index: OpenSearchIndex, wire: RecordingConnection
) -> None:
    wire.answers.append(OpenSearchConnectionError("N/A", "connection refused", OSError("refused")))

    with pytest.raises(DependencyUnavailableError):
        index.search(both_legs_query())


def test_search_bad_request_is_not_reported_as_outage(
    index: OpenSearchIndex, wire: RecordingConnection
) -> None:
    wire.answers.append((400, {"error": {"type": "parsing_exception"}, "status": 400}))

    with pytest.raises(RequestError):
        index.search(both_legs_query())


def test_search_blank_text_lexical_only_sends_nothing(
    index: OpenSearchIndex, wire: RecordingConnection
) -> None:
    hits = index.search(IndexQuery(text="   ", visibility=viewer(), k=5, legs=frozenset({Leg.LEXICAL})))

    assert (hits.lexical, hits.semantic, wire.requests) == ([], [], [])


def test_search_vector_of_wrong_dimension_raises_before_sending(
    index: OpenSearchIndex, wire: RecordingConnection
) -> None:
    ready(index, wire, dimension=4)

    with pytest.raises(ValueError, match="dimension"):
        index.search(both_legs_query())

    assert wire.requests == []


# Index configuration


def test_ensure_ready_missing_index_creates_knn_mapping_with_meta(
    index: OpenSearchIndex, wire: RecordingConnection
) -> None:
    wire.answers.extend([(404, {}), (200, {"acknowledged": True}), (200, mapping_answer("model-a", 384))])

    index.ensure_ready(model_id="model-a", dimension=384)

    head, create, read = wire.requests
    assert (head.method, head.url, create.method, create.url) == ("HEAD", "/chunks", "PUT", "/chunks")
    assert (read.method, read.url) == ("GET", "/chunks/_mapping")
    keyword = {"type": "keyword"}
    text = {
        "type": "text",
        "analyzer": "knowledge_text",
        "search_analyzer": "knowledge_query",
        "similarity": "knowledge_bm25",
    }
    assert create.body == {
        "settings": {"index": {"knn": True, **dsl.text_settings()}},
        "mappings": {
            "_meta": {"embedding_model": "model-a", "dimension": 384, "layout": dsl.LAYOUT},
            "dynamic": "strict",
            "properties": {
                "doc_type": keyword,
                "tenant_id": keyword,
                "knowledge_base_id": keyword,
                "knowledge_item_id": keyword,
                "knowledge_revision_id": keyword,
                "owner_id": keyword,
                "team_id": keyword,
                "scope": keyword,
                "title": text,
                "text": text,
                "chunk_text": {"type": "text", "index": False},
                "ordinal": {"type": "integer"},
                "start": {"type": "integer"},
                "end": {"type": "integer"},
                "item_version": {"type": "long"},
                "removed": {"type": "boolean"},
                "valid_from": {"type": "date"},
                "valid_to": {"type": "date"},
                "vector": {
                    "type": "knn_vector",
                    "dimension": 384,
                    "method": {"name": "hnsw", "space_type": "cosinesimil", "engine": "lucene"},
                },
            },
        },
    }


def test_ensure_ready_index_created_concurrently_checks_its_mapping(
    index: OpenSearchIndex, wire: RecordingConnection
) -> None:
    exists = {
        "error": {"type": "resource_already_exists_exception", "reason": "index [chunks] already exists"}
    }
    wire.answers.extend([(404, {}), (400, exists), (200, mapping_answer("model-b", 384))])

    with pytest.raises(IndexConfigurationError, match="model-b"):
        index.ensure_ready(model_id="model-a", dimension=384)


@pytest.mark.parametrize(
    "answer",
    [
        mapping_answer("model-b", 8),
        mapping_answer("model-a", 16),
        mapping_answer("model-a", 8, analysis=None),
        {"chunks": {"mappings": {"properties": {"text": {"type": "text"}}}}},
    ],
    ids=["other-model", "other-dimension", "english-analysis", "no-meta"],
)
def test_ensure_ready_existing_index_built_otherwise_raises_without_writing(
    index: OpenSearchIndex, wire: RecordingConnection, answer: dict[str, Any]
) -> None:
    wire.answers.extend([(200, {}), (200, answer)])

    with pytest.raises(IndexConfigurationError):
        index.ensure_ready(model_id="model-a", dimension=8)

    assert [request.method for request in wire.requests] == ["HEAD", "GET"]


def test_upsert_before_ensure_ready_raises_configuration_error(index: OpenSearchIndex) -> None:
    with pytest.raises(IndexConfigurationError, match="ensure_ready"):
        index.upsert(item("ki_1"))


# Writes


def test_upsert_new_item_writes_versioned_head_then_routed_chunks(
    index: OpenSearchIndex, wire: RecordingConnection
) -> None:
    ready(index, wire)
    wire.answers.extend(
        [
            (200, bulk_answer(("ki_1", 201, "created"))),
            (200, bulk_answer(("ki_1:0", 201, "created"), ("ki_1:1", 201, "created"))),
        ]
    )
    written = item("ki_1", ("first", "second"), version=3, tenant="t9", base="kb_q", title="T")

    accepted = index.upsert(written)

    head, chunks = wire.requests
    assert accepted is True
    assert (head.method, head.url, chunks.method, chunks.url) == ("POST", "/_bulk", "POST", "/_bulk")
    assert head.lines() == [
        {
            "index": {
                "_index": "chunks",
                "_id": "ki_1",
                "routing": "t9",
                "version": 6,
                "version_type": "external_gte",
            }
        },
        {
            "doc_type": "item",
            "tenant_id": "t9",
            "knowledge_base_id": "kb_q",
            "knowledge_item_id": "ki_1",
            "knowledge_revision_id": "kr_ki_1_v3",
            "item_version": 3,
            "removed": False,
        },
    ]
    lines = chunks.lines()
    assert lines[0] == {
        "index": {
            "_index": "chunks",
            "_id": "ki_1:0",
            "routing": "t9",
            "version": 6,
            "version_type": "external_gte",
        }
    }
    common = {
        "tenant_id": "t9",
        "knowledge_base_id": "kb_q",
        "knowledge_item_id": "ki_1",
        "knowledge_revision_id": "kr_ki_1_v3",
        "owner_id": "owner",
        "team_id": None,
        "scope": "tenant",
        "ordinal": 0,
        "start": 0,
        "end": 5,
        "item_version": 3,
    }
    assert lines[1] == {
        **common,
        "doc_type": "chunk",
        "chunk_text": "first",
        "vector": written.chunks[0].vector,
    }
    assert [line["index"]["_id"] for line in lines[::2]] == ["ki_1:0", "ki_1:1", "ki_1:p0", "ki_1:p1"]
    assert lines[5] == {**common, "doc_type": "passage", "title": "T", "text": "first"}


def test_upsert_existing_item_deletes_superseded_chunks_by_query(
    index: OpenSearchIndex, wire: RecordingConnection
) -> None:
    ready(index, wire)
    wire.answers.extend(
        [
            (200, bulk_answer(("ki_1", 200, "updated"))),
            (200, bulk_answer(("ki_1:0", 200, "updated"))),
            (200, {"_shards": {"total": 1, "successful": 1, "failed": 0}}),
            (200, {"took": 1, "deleted": 2, "failures": []}),
        ]
    )

    accepted = index.upsert(item("ki_1", ("only chunk",), version=4, tenant="t9"))

    refresh, delete = wire.requests[2:]
    assert accepted is True
    assert (refresh.method, refresh.url) == ("POST", "/chunks/_refresh")
    assert (delete.method, delete.url) == ("POST", "/chunks/_delete_by_query")
    assert delete.params == {"routing": "t9", "conflicts": "proceed"}
    assert delete.body == {
        "query": {
            "bool": {
                "filter": [{"terms": {"doc_type": ["chunk", "passage"]}}],
                "should": [
                    {
                        "bool": {
                            "filter": [{"term": {"knowledge_item_id": "ki_1"}}],
                            "should": [
                                {"range": {"item_version": {"lt": 4}}},
                                {
                                    "bool": {
                                        "filter": [
                                            {"term": {"doc_type": "chunk"}},
                                            {"range": {"ordinal": {"gte": 1}}},
                                        ]
                                    }
                                },
                                {
                                    "bool": {
                                        "filter": [
                                            {"term": {"doc_type": "passage"}},
                                            {"range": {"ordinal": {"gte": 1}}},
                                        ]
                                    }
                                },
                            ],
                            "minimum_should_match": 1,
                        }
                    }
                ],
                "minimum_should_match": 1,
            }
        }
    }


def test_upsert_head_conflict_returns_false_and_writes_no_chunks(
    index: OpenSearchIndex, wire: RecordingConnection
) -> None:
    ready(index, wire)
    wire.answers.append((200, bulk_answer(("ki_1", 409, "version_conflict_engine_exception"))))

    accepted = index.upsert(item("ki_1", version=2))

    assert accepted is False
    assert len(wire.requests) == 1


def test_upsert_chunk_conflict_after_newer_head_returns_false(
    index: OpenSearchIndex, wire: RecordingConnection
) -> None:
    ready(index, wire)
    newer_head = {"docs": [{"_index": "chunks", "_id": "ki_1", "_version": 8, "found": True, "_source": {}}]}
    wire.answers.extend(
        [
            (200, bulk_answer(("ki_1", 201, "created"))),
            (200, bulk_answer(("ki_1:0", 409, "version_conflict_engine_exception"))),
            (200, newer_head),
        ]
    )

    accepted = index.upsert(item("ki_1", version=2))

    mget = wire.requests[2]
    assert accepted is False
    assert (mget.url, mget.body) == ("/chunks/_mget", {"docs": [{"_id": "ki_1", "routing": "t1"}]})
    assert len(wire.requests) == 3


def test_upsert_chunk_conflict_under_own_head_resends_chunk_unversioned(
    index: OpenSearchIndex, wire: RecordingConnection
) -> None:
    ready(index, wire)
    own_head = {"docs": [{"_index": "chunks", "_id": "ki_1", "_version": 4, "found": True, "_source": {}}]}
    wire.answers.extend(
        [
            (200, bulk_answer(("ki_1", 201, "created"))),
            (
                200,
                bulk_answer(("ki_1:0", 200, "updated"), ("ki_1:1", 409, "version_conflict_engine_exception")),
            ),
            (200, own_head),
            (200, bulk_answer(("ki_1:1", 201, "created"))),
        ]
    )

    accepted = index.upsert(item("ki_1", ("a", "b"), version=2))

    resend = wire.requests[3]
    assert accepted is True
    assert resend.lines()[0] == {"index": {"_index": "chunks", "_id": "ki_1:1", "routing": "t1"}}
    assert len(resend.lines()) == 2


@pytest.mark.parametrize(
    ("status", "error", "attempts"),
    [
        (429, DependencyUnavailableError, 3),
        (503, DependencyUnavailableError, 1),
        (400, IndexConfigurationError, 1),
    ],
)
def test_upsert_chunk_rejected_raises_mapped_error_after_retrying_throttling(
    client: OpenSearch, wire: RecordingConnection, status: int, error: type[Exception], attempts: int
) -> None:
    index = OpenSearchIndex(client, "chunks", bulk_retries=2, bulk_backoff_seconds=0.001)
    ready(index, wire)
    rejected = bulk_answer(("ki_1:0", status, "es_rejected_execution_exception"))
    wire.answers.extend([(200, bulk_answer(("ki_1", 201, "created"))), *[(200, rejected)] * 5])

    with pytest.raises(error):
        index.upsert(item("ki_1"))

    assert len(wire.requests) == 1 + attempts


def test_remove_item_writes_tombstone_version_then_deletes_chunks(
    index: OpenSearchIndex, wire: RecordingConnection
) -> None:
    wire.answers.extend([(201, {"result": "created"}), (200, {}), (200, {"deleted": 3})])

    index.remove_item("t4", "ki_1", version=2)

    tombstone, refresh, delete = wire.requests
    assert (tombstone.method, tombstone.url) == ("PUT", "/chunks/_doc/ki_1")
    assert tombstone.params == {"routing": "t4", "version": "5", "version_type": "external_gte"}
    assert tombstone.body == {
        "doc_type": "item",
        "tenant_id": "t4",
        "knowledge_item_id": "ki_1",
        "item_version": 2,
        "removed": True,
    }
    assert refresh.url == "/chunks/_refresh"
    assert (delete.url, delete.params["routing"]) == ("/chunks/_delete_by_query", "t4")
    assert delete.body["query"]["bool"]["filter"] == [
        {"terms": {"doc_type": ["chunk", "passage", "part"]}},
        {"term": {"tenant_id": "t4"}},
        {"term": {"knowledge_item_id": "ki_1"}},
    ]


def test_remove_item_stale_version_deletes_nothing(index: OpenSearchIndex, wire: RecordingConnection) -> None:
    conflict = {"error": {"type": "version_conflict_engine_exception"}, "status": 409}
    wire.answers.append((409, conflict))

    index.remove_item("t4", "ki_1", version=2)

    assert [request.method for request in wire.requests] == ["PUT"]


def test_remove_base_deletes_base_chunks_routed_to_tenant(
    index: OpenSearchIndex, wire: RecordingConnection
) -> None:
    wire.answers.extend([(200, {}), (200, {"deleted": 7})])

    index.remove_base("t4", "kb_q")

    refresh, delete = wire.requests
    assert (refresh.url, delete.url) == ("/chunks/_refresh", "/chunks/_delete_by_query")
    assert delete.params == {"routing": "t4", "conflicts": "proceed"}
    assert delete.body["query"]["bool"]["filter"] == [
        {"terms": {"doc_type": ["chunk", "passage", "part"]}},
        {"term": {"tenant_id": "t4"}},
        {"term": {"knowledge_base_id": "kb_q"}},
    ]


# Client


def test_build_opensearch_client_sigv4_signs_for_region_and_service() -> None:
    client = build_opensearch_client(
        "https://search-domain.eu-west-1.es.amazonaws.com", auth="sigv4", region="eu-west-1", service="aoss"
    )
    connection = client.transport.get_connection()
    prepared = requests.Request(
        "POST", "https://search-domain.eu-west-1.es.amazonaws.com/chunks/_msearch", data=b"{}\n"
    ).prepare()

    signed = connection.session.auth(prepared)

    assert connection.host == "https://search-domain.eu-west-1.es.amazonaws.com:443"
    assert signed.headers["Authorization"].startswith("AWS4-HMAC-SHA256 Credential=testing/")
    assert "/eu-west-1/aoss/aws4_request" in signed.headers["Authorization"]
    assert "X-Amz-Security-Token" in signed.headers


def test_build_opensearch_client_without_auth_uses_plain_http() -> None:
    client = build_opensearch_client("http://127.0.0.1:9200", auth="none", region="us-east-1")
    connection = client.transport.get_connection()

    assert connection.host == "http://127.0.0.1:9200"
    assert connection.session.auth is None
