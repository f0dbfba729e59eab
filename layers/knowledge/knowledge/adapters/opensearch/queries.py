"""Request bodies and response parsing of the OpenSearch chunk index (DESIGN §4). Pure functions, no I/O.

One index holds three kinds of documents, told apart by ``doc_type``:

- ``passage`` (id ``{item}:p{ordinal}``): one passage of the current revision of a published item
  (the lexical leg's unit), with ``title``/``text`` analyzed by ``TEXT_ANALYZER`` (BM25).
- ``chunk`` (id ``{item}:{ordinal}``): one chunk of that revision (the semantic leg's unit), with
  ``vector`` as a ``knn_vector`` (HNSW, Lucene engine, ``cosinesimil``) and its text in
  ``chunk_text``, stored but not indexed, so chunks never weigh in BM25's statistics.
- ``item`` (id ``{item}``): the item's head, a small document that carries the item's version
  through OpenSearch external versioning, so a late, older write is refused with a 409.
- ``part`` (id ``{item}:part{n}``): the mark that part ``n`` (in ``ordinal``) of the item version
  ``item_version`` is written, for items indexed in parts (``upsert_part``); never searched.

External versions encode the item version and whether it was removed: ``2·v`` for a live item at
version ``v`` and ``2·v + 1`` for a tombstone left by ``remove_item(version=v)``. With
``version_type=external_gte`` that gives the contract's order: an upsert at ``v`` replaces a live
``v`` (idempotent re-apply) but not a tombstone at ``v``; a removal at ``v`` beats a live ``v``.

Every document is routed by ``tenant_id``; every search filters by tenant, so a tenant's queries hit
one shard and never see another tenant's chunks.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, NamedTuple

from knowledge.domain.access.visibility import VisibilityFilter
from knowledge.domain.models import Scope
from knowledge.domain.retrieval.hits import Chunk, ChunkHit, IndexedChunk, IndexedItem

CHUNK = "chunk"
PASSAGE = "passage"
HEAD = "item"
PART = "part"
SPANS = (CHUNK, PASSAGE)
ITEM_DOCUMENTS = (CHUNK, PASSAGE, PART)
"""What ``remove_item`` and ``remove_base`` delete (everything but heads)."""

_KEYWORDS = (
    "doc_type",
    "tenant_id",
    "knowledge_base_id",
    "knowledge_item_id",
    "knowledge_revision_id",
    "owner_id",
    "team_id",
    "scope",
)

TEXT_ANALYZER = "knowledge_text"
QUERY_ANALYZER = "knowledge_query"
SIMILARITY = "knowledge_bm25"
LAYOUT = "knowledge-passages-2"
"""Recorded in ``_meta.layout``: the version of the document layout (passages and chunks) and of
``text_settings``; an index laid out otherwise is refused, as one built for another embedding
model."""


def analysis_settings() -> dict[str, Any]:
    """``TEXT_ANALYZER`` and ``QUERY_ANALYZER``, the analysis of ``knowledge.domain.retrieval.analysis`` in
    built-in filters only: the ``standard`` tokenizer (UAX #29 words), ``cjk_width``, ``lowercase``,
    ``asciifolding``, ``cjk_bigram`` (indexed text keeps single characters too), Lucene's English
    stop words, porter2 stems (possessives included)."""

    def analyzer(bigrams: str) -> dict[str, Any]:
        filters = ["cjk_width", "lowercase", "asciifolding", bigrams, "knowledge_stop", "knowledge_stem"]
        return {"type": "custom", "tokenizer": "standard", "filter": filters}

    return {
        "filter": {
            "knowledge_cjk_unigrams_bigrams": {"type": "cjk_bigram", "output_unigrams": True},
            "knowledge_stop": {"type": "stop", "stopwords": "_english_"},
            "knowledge_stem": {"type": "stemmer", "language": "porter2"},
        },
        "analyzer": {
            TEXT_ANALYZER: analyzer("knowledge_cjk_unigrams_bigrams"),
            QUERY_ANALYZER: analyzer("cjk_bigram"),
        },
    }


def text_settings() -> dict[str, Any]:
    """Index settings of every index with analyzed text: ``analysis_settings`` and ``SIMILARITY``,
    Lucene's BM25 (k1 1.2, b 0.75) with ``discount_overlaps`` off, so that a field's length counts
    every term, the single CJK characters stacked on their bigrams included, as the embedded
    index's field norms do; with Lucene's default a CJK text is shorter than there and scores
    higher."""
    return {
        "analysis": analysis_settings(),
        "similarity": {SIMILARITY: {"type": "BM25", "k1": 1.2, "b": 0.75, "discount_overlaps": False}},
    }


def text_field() -> dict[str, Any]:
    """The mapping of an analyzed text field (``text_settings``)."""
    return {
        "type": "text",
        "analyzer": TEXT_ANALYZER,
        "search_analyzer": QUERY_ANALYZER,
        "similarity": SIMILARITY,
    }


def live_version(version: int) -> int:
    """External version of an item's head and chunks while the item is indexed at ``version``."""
    return 2 * version


def tombstone_version(version: int) -> int:
    """External version of the head left by ``remove_item(version=version)``."""
    return 2 * version + 1


def index_body(*, model_id: str, dimension: int, shards: int | None = None) -> dict[str, Any]:
    """Settings and mapping of the chunk index; ``_meta`` records the embedding model and dimension.

    The vector uses the Lucene HNSW engine because it filters *during* the graph search (efficient
    k-NN filtering, OpenSearch ≥ 2.4), so visibility never costs top-k slots.
    """
    settings: dict[str, Any] = {"knn": True, **text_settings()}
    if shards is not None:
        settings["number_of_shards"] = shards
    properties: dict[str, Any] = {name: {"type": "keyword"} for name in _KEYWORDS}
    properties.update(
        {
            "title": text_field(),
            "text": text_field(),
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
                "dimension": dimension,
                "method": {"name": "hnsw", "space_type": "cosinesimil", "engine": "lucene"},
            },
        }
    )
    return {
        "settings": {"index": settings},
        "mappings": {
            "_meta": {"embedding_model": model_id, "dimension": dimension, "layout": LAYOUT},
            "dynamic": "strict",
            "properties": properties,
        },
    }


class RecordedConfig(NamedTuple):
    """What an existing index records: ``_meta`` model, dimension and layout, and the mapped vector
    dimension."""

    model_id: str | None
    dimension: int | None
    vector_dimension: int | None
    layout: str | None = None

    def matches(self, model_id: str, dimension: int) -> bool:
        return self.model_id == model_id and self.dimension == self.vector_dimension == dimension


def recorded_config(mapping_response: Mapping[str, Any]) -> RecordedConfig:
    """The configuration in a ``GET {index}/_mapping`` answer.

    The answer is keyed by the concrete index name, which differs from the request when it named an
    alias, so its single entry is taken whatever the key.
    """
    entry: Mapping[str, Any] = next(iter(mapping_response.values()), {})
    mappings = entry.get("mappings", {})
    meta = mappings.get("_meta", {})
    vector = mappings.get("properties", {}).get("vector", {})
    return RecordedConfig(
        meta.get("embedding_model"), meta.get("dimension"), vector.get("dimension"), meta.get("layout")
    )


def chunk_id(knowledge_item_id: str, ordinal: int) -> str:
    return f"{knowledge_item_id}:{ordinal}"


def passage_id(knowledge_item_id: str, ordinal: int) -> str:
    return f"{knowledge_item_id}:p{ordinal}"


def span_id(knowledge_item_id: str, span: Chunk | IndexedChunk) -> str:
    """The document id of a chunk (``IndexedChunk``) or a passage (``Chunk``)."""
    if isinstance(span, IndexedChunk):
        return chunk_id(knowledge_item_id, span.ordinal)
    return passage_id(knowledge_item_id, span.ordinal)


def head_action(index: str, item: IndexedItem) -> dict[str, Any]:
    """Bulk action writing the item's live head at ``live_version(item.version)``."""
    return {
        "_op_type": "index",
        "_index": index,
        "_id": item.knowledge_item_id,
        "routing": item.tenant_id,
        "version": live_version(item.version),
        "version_type": "external_gte",
        "_source": {
            "doc_type": HEAD,
            "tenant_id": item.tenant_id,
            "knowledge_base_id": item.knowledge_base_id,
            "knowledge_item_id": item.knowledge_item_id,
            "knowledge_revision_id": item.knowledge_revision_id,
            "item_version": item.version,
            "removed": False,
        },
    }


def part_id(knowledge_item_id: str, part: int) -> str:
    return f"{knowledge_item_id}:part{part}"


def part_action(index: str, item: IndexedItem, part: int, *, versioned: bool = True) -> dict[str, Any]:
    """Bulk action writing the mark of part ``part`` of the item version, at its live version
    (``versioned=False``: without one, as ``span_action``)."""
    action: dict[str, Any] = {
        "_op_type": "index",
        "_index": index,
        "_id": part_id(item.knowledge_item_id, part),
        "routing": item.tenant_id,
        "version": live_version(item.version),
        "version_type": "external_gte",
        "_source": {
            "doc_type": PART,
            "tenant_id": item.tenant_id,
            "knowledge_base_id": item.knowledge_base_id,
            "knowledge_item_id": item.knowledge_item_id,
            "knowledge_revision_id": item.knowledge_revision_id,
            "item_version": item.version,
            "ordinal": part,
        },
    }
    if not versioned:
        del action["version"], action["version_type"]
    return action


def held_parts_body(tenant_id: str, knowledge_item_id: str, version: int, parts: int) -> dict[str, Any]:
    """The part marks of one item version (their part numbers in ``ordinal``)."""
    clauses = [
        {"term": {"doc_type": PART}},
        {"term": {"tenant_id": tenant_id}},
        {"term": {"knowledge_item_id": knowledge_item_id}},
        {"term": {"item_version": version}},
    ]
    return {"size": parts, "_source": ["ordinal"], "query": {"bool": {"filter": clauses}}}


def older_versions_query(tenant_id: str, knowledge_item_id: str, version: int) -> dict[str, Any]:
    """Chunks, passages and part marks of the item at a version below ``version``."""
    clauses = [
        {"terms": {"doc_type": list(ITEM_DOCUMENTS)}},
        {"term": {"tenant_id": tenant_id}},
        {"term": {"knowledge_item_id": knowledge_item_id}},
        {"range": {"item_version": {"lt": version}}},
    ]
    return {"query": {"bool": {"filter": clauses}}}


def tombstone_source(tenant_id: str, knowledge_item_id: str, version: int) -> dict[str, Any]:
    """Source of the head left by ``remove_item``; indexed at ``tombstone_version(version)``."""
    return {
        "doc_type": HEAD,
        "tenant_id": tenant_id,
        "knowledge_item_id": knowledge_item_id,
        "item_version": version,
        "removed": True,
    }


def span_action(
    index: str, item: IndexedItem, span: Chunk | IndexedChunk, *, versioned: bool = True
) -> dict[str, Any]:
    """Bulk action writing one chunk (``IndexedChunk``: vector and stored text) or one passage
    (``Chunk``: analyzed title and text). ``versioned=False`` drops the external version (see the
    adapter)."""
    source: dict[str, Any] = {
        "tenant_id": item.tenant_id,
        "knowledge_base_id": item.knowledge_base_id,
        "knowledge_item_id": item.knowledge_item_id,
        "knowledge_revision_id": item.knowledge_revision_id,
        "owner_id": item.owner_id,
        "team_id": item.team_id,
        "scope": item.scope,
        "ordinal": span.ordinal,
        "start": span.start,
        "end": span.end,
        "item_version": item.version,
        **({"valid_from": item.valid_from.isoformat()} if item.valid_from is not None else {}),
        **({"valid_to": item.valid_to.isoformat()} if item.valid_to is not None else {}),
    }
    if isinstance(span, IndexedChunk):
        source.update({"doc_type": CHUNK, "chunk_text": span.text, "vector": span.vector})
    else:
        source.update({"doc_type": PASSAGE, "title": item.title, "text": span.text})
    action: dict[str, Any] = {
        "_op_type": "index",
        "_index": index,
        "_id": span_id(item.knowledge_item_id, span),
        "routing": item.tenant_id,
        "_source": source,
    }
    if versioned:
        action["version"] = live_version(item.version)
        action["version_type"] = "external_gte"
    return action


def superseded_chunks_query(items: Iterable[IndexedItem]) -> dict[str, Any]:
    """Chunks and passages of ``items`` that their new revision does not contain: an older
    ``item_version``, or an ordinal at or beyond the new count of its kind (a re-applied version with
    fewer chunks or passages)."""

    def beyond(doc_type: str, count: int) -> dict[str, Any]:
        clauses = [{"term": {"doc_type": doc_type}}, {"range": {"ordinal": {"gte": count}}}]
        return {"bool": {"filter": clauses}}

    per_item = [
        {
            "bool": {
                "filter": [{"term": {"knowledge_item_id": item.knowledge_item_id}}],
                "should": [
                    {"range": {"item_version": {"lt": item.version}}},
                    beyond(CHUNK, len(item.chunks)),
                    beyond(PASSAGE, len(item.passages)),
                ],
                "minimum_should_match": 1,
            }
        }
        for item in items
    ]
    return {
        "query": {
            "bool": {
                "filter": [{"terms": {"doc_type": list(SPANS)}}],
                "should": per_item,
                "minimum_should_match": 1,
            }
        }
    }


def item_chunks_query(tenant_id: str, knowledge_item_id: str) -> dict[str, Any]:
    """Every chunk, passage and part mark of one item of ``tenant_id``."""
    return _tenant_chunks_query(tenant_id, "knowledge_item_id", knowledge_item_id)


def base_chunks_query(tenant_id: str, knowledge_base_id: str) -> dict[str, Any]:
    """Every chunk, passage and part mark of one base of ``tenant_id``."""
    return _tenant_chunks_query(tenant_id, "knowledge_base_id", knowledge_base_id)


def _tenant_chunks_query(tenant_id: str, field: str, value: str) -> dict[str, Any]:
    terms = [{"tenant_id": tenant_id}, {field: value}]
    clauses = [{"terms": {"doc_type": list(ITEM_DOCUMENTS)}}, *({"term": term} for term in terms)]
    return {"query": {"bool": {"filter": clauses}}}


def visibility_query(
    visibility: VisibilityFilter, doc_type: str = CHUNK, as_of: datetime | None = None
) -> dict[str, Any]:
    """``VisibilityFilter.admits`` as a filter-context bool query over documents of ``doc_type``
    (chunks or passages); with ``as_of`` (history index), also ``valid_from <= as_of < valid_to``
    (``valid_to`` absent: still current).

    Lists are sorted so equal filters give byte-equal requests (cacheable, testable).
    """
    clauses: list[dict[str, Any]] = [
        {"term": {"doc_type": doc_type}},
        {"term": {"tenant_id": visibility.tenant_id}},
    ]
    if visibility.knowledge_base_ids is not None:
        clauses.append({"terms": {"knowledge_base_id": sorted(visibility.knowledge_base_ids)}})
    who: list[dict[str, Any]] = [
        {"term": {"scope": Scope.TENANT.value}},
        {"term": {"owner_id": visibility.subject_id}},
    ]
    if visibility.team_ids:
        who.append(
            {
                "bool": {
                    "filter": [
                        {"term": {"scope": Scope.TEAM.value}},
                        {"terms": {"team_id": sorted(visibility.team_ids)}},
                    ]
                }
            }
        )
    clauses.append({"bool": {"should": who, "minimum_should_match": 1}})
    if as_of is not None:
        moment = as_of.isoformat()
        clauses.append({"range": {"valid_from": {"lte": moment}}})
        clauses.append(
            {
                "bool": {
                    "should": [
                        {"bool": {"must_not": [{"exists": {"field": "valid_to"}}]}},
                        {"range": {"valid_to": {"gt": moment}}},
                    ],
                    "minimum_should_match": 1,
                }
            }
        )
    return {"bool": {"filter": clauses}}


_SOURCE = {"excludes": ["vector"]}
# Equal scores are ordered by item id then ordinal inside the engine, so ties at the k-th place are
# cut the same way by every adapter; ``track_scores`` keeps ``_score`` in sorted hits.
_SORT = [{"_score": "desc"}, {"knowledge_item_id": "asc"}, {"ordinal": "asc"}]


def lexical_body(
    text: str,
    visibility: VisibilityFilter,
    k: int,
    *,
    title_boost: float,
    tie_breaker: float,
    as_of: datetime | None = None,
) -> dict[str, Any]:
    """BM25 leg over passages: ``multi_match`` (``best_fields``: the better of ``title^boost`` and
    ``text``, plus ``tie_breaker`` times the other) scored in ``must``, visibility in ``filter`` (no
    effect on scores). ``multi_match`` analyzes the text as plain words, so query syntax in user
    input (quotes, ``:``, ``*``, ``AND``) is never parsed."""
    return {
        "size": k,
        "query": {
            "bool": {
                "must": [
                    {
                        "multi_match": {
                            "query": text,
                            "fields": [f"title^{title_boost:g}", "text"],
                            "type": "best_fields",
                            "tie_breaker": tie_breaker,
                        }
                    }
                ],
                "filter": [visibility_query(visibility, PASSAGE, as_of)],
            }
        },
        "sort": _SORT,
        "track_scores": True,
        "_source": _SOURCE,
    }


def semantic_body(
    vector: Sequence[float], visibility: VisibilityFilter, k: int, as_of: datetime | None = None
) -> dict[str, Any]:
    """kNN leg with the visibility filter *inside* the ``knn`` clause (efficient filtering), so hidden
    chunks are skipped during the graph search instead of being cut from its top k afterwards."""
    return {
        "size": k,
        "query": {
            "knn": {
                "vector": {
                    "vector": list(vector),
                    "k": k,
                    "filter": visibility_query(visibility, CHUNK, as_of),
                }
            }
        },
        "sort": _SORT,
        "track_scores": True,
        "_source": _SOURCE,
    }


def cosine_from_score(score: float) -> float:
    """Cosine similarity from an OpenSearch ``cosinesimil`` score.

    OpenSearch scores ``cosinesimil`` as ``(2 − d) / 2`` with ``d = 1 − cos`` (k-NN "Spaces"
    documentation), i.e. ``score = (1 + cos) / 2``; so ``cos = 2·score − 1``, clamped to [-1, 1].
    """
    return max(-1.0, min(1.0, 2.0 * score - 1.0))


def parse_hits(response: Mapping[str, Any], *, semantic: bool) -> list[ChunkHit]:
    """Chunk hits of one search answer, best first, ties by item id then ordinal.

    Raises ``KeyError``/``ValueError`` on an answer without the documented ``hits.hits[]._source``.
    """
    hits: list[ChunkHit] = []
    for hit in response["hits"]["hits"]:
        source = hit["_source"]
        raw = float(hit["_score"])
        hits.append(
            ChunkHit(
                knowledge_base_id=str(source["knowledge_base_id"]),
                knowledge_item_id=str(source["knowledge_item_id"]),
                knowledge_revision_id=str(source["knowledge_revision_id"]),
                ordinal=int(source["ordinal"]),
                start=int(source["start"]),
                end=int(source["end"]),
                text=str(source.get("chunk_text" if semantic else "text", "")),
                score=cosine_from_score(raw) if semantic else raw,
            )
        )
    hits.sort(key=lambda h: (-h.score, h.knowledge_item_id, h.ordinal))
    return hits
