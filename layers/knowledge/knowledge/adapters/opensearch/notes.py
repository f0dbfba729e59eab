"""``OpenSearchNoteIndex``: the ``NoteIndex`` port on its own OpenSearch index (DESIGN §9: ``notes``).

One document per note (id ``{note}``, routed by ``tenant_id``): ``content`` analyzed as the
knowledge index analyzes text (BM25; ``opensearch.queries.text_settings``), keyword fields for
every filter (``path_prefixes`` holds every prefix a
``path_prefix`` filter may name), ``superseded``, ``expires_at`` and ``vector`` as a ``knn_vector``
(HNSW, Lucene engine, ``cosinesimil``, which filters during the graph search). A removed note leaves
a tombstone document (``removed: true``, no vector) so its version survives.

External versions are those of the chunk index (``queries``): ``2·v`` for a live note at
version ``v``, ``2·v + 1`` for a tombstone at ``v``, written with ``external_gte``, so a late, older
write is refused with a 409 and never regresses a note. Both legs run in one ``_msearch`` routed to
the tenant's shard, every ``NoteFilter`` condition inside each leg (inside the ``knn`` clause for
the semantic one).

History (``history=True``, the note history index of DESIGN §10 "Time", ``{notes}-history``): one
document per note version (id ``{note}@{version}``) with ``valid_from`` and ``valid_to`` (absent
while current); a ``NoteFilter`` with ``as_of`` admits the versions valid then (a range filter in
both legs). A version is rewritten at the same external version (``external_gte``) when the next
version closes its interval. ``remove_note`` writes the note's tombstone (id ``{note}``) and deletes
every version document at or below it; a write checks the tombstone first and skips versions it
covers. Errors as ``OpenSearchIndex``: ``DependencyUnavailableError`` for an unreachable
or failing engine, ``IndexConfigurationError`` for a missing index or another embedding model.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from opensearchpy import helpers
from opensearchpy.exceptions import ConflictError as OpenSearchConflictError
from opensearchpy.exceptions import RequestError

from knowledge.adapters.opensearch import queries as dsl
from knowledge.adapters.opensearch.engine import (
    BodyAt,
    check_vector,
    client_of,
    cosine,
    document_error,
    document_version,
    lucene_bm25,
    search_legs,
    translated,
)
from knowledge.domain.memory.notes import path_ancestors
from knowledge.domain.memory.retrieval import IndexedNote, NoteFilter, NoteHit, NoteLegHits, NoteQuery
from knowledge.domain.models import Scope
from knowledge.domain.retrieval.hits import Leg
from knowledge.errors import IndexConfigurationError
from knowledge.observability import logger

if TYPE_CHECKING:
    from knowledge.settings import Settings

_KEYWORDS = (
    "tenant_id",
    "note_id",
    "owner_id",
    "team_id",
    "scope",
    "agent_id",
    "memory_type",
    "path_prefixes",
)
_SORT = [{"_score": "desc"}, {"note_id": "asc"}]
_BROWSE_FIELDS: dict[str, Any] = {
    "importance": {"type": "float"},
    "updated_at": {"type": "date"},
    "valid_from": {"type": "date"},
    "valid_to": {"type": "date"},
}
"""Fields ``browse`` sorts by and the validity interval of a history document; ``ensure_ready``
adds them to an index created before they existed."""
_BROWSE_SORT = [
    {"importance": {"order": "desc", "missing": "_last"}},
    {"updated_at": {"order": "desc", "missing": "_last"}},
    {"note_id": "asc"},
]
_SOURCE = {"includes": ["note_id", "note_version"]}


def index_body(*, model_id: str, dimension: int) -> dict[str, Any]:
    """Settings and mapping of the notes index; ``_meta`` records the embedding model and dimension."""
    properties: dict[str, Any] = {name: {"type": "keyword"} for name in _KEYWORDS}
    properties.update(
        {
            "content": dsl.text_field(),
            "note_version": {"type": "long"},
            "superseded": {"type": "boolean"},
            "removed": {"type": "boolean"},
            "expires_at": {"type": "date"},
            **_BROWSE_FIELDS,
            "vector": {
                "type": "knn_vector",
                "dimension": dimension,
                "method": {"name": "hnsw", "space_type": "cosinesimil", "engine": "lucene"},
            },
        }
    )
    return {
        "settings": {"index": {"knn": True, **dsl.text_settings()}},
        "mappings": {
            "_meta": {"embedding_model": model_id, "dimension": dimension},
            "dynamic": "strict",
            "properties": properties,
        },
    }


def note_source(note: IndexedNote) -> dict[str, Any]:
    return {
        "tenant_id": note.tenant_id,
        "note_id": note.note_id,
        "note_version": note.version,
        "owner_id": note.owner_id,
        "team_id": note.team_id,
        "scope": note.scope.value,
        "agent_id": note.agent_id,
        "memory_type": note.memory_type.value,
        "path_prefixes": path_ancestors(note.path),
        "content": note.content,
        "importance": note.importance,
        "updated_at": note.updated_at.isoformat() if note.updated_at else None,
        "superseded": note.superseded,
        "removed": False,
        "expires_at": note.expires_at.isoformat() if note.expires_at else None,
        "vector": list(note.vector),
        **({"valid_from": note.valid_from.isoformat()} if note.valid_from else {}),
        **({"valid_to": note.valid_to.isoformat()} if note.valid_to else {}),
    }


def filter_query(note_filter: NoteFilter) -> dict[str, Any]:
    """``NoteFilter`` as a filter-context bool query (lists sorted for byte-equal requests)."""
    clauses: list[dict[str, Any]] = [
        {"term": {"tenant_id": note_filter.tenant_id}},
        {"term": {"removed": False}},
    ]
    who: list[dict[str, Any]] = [
        {"term": {"scope": Scope.TENANT.value}},
        {"term": {"owner_id": note_filter.subject_id}},
    ]
    if note_filter.team_ids:
        who.append(
            {
                "bool": {
                    "filter": [
                        {"term": {"scope": Scope.TEAM.value}},
                        {"terms": {"team_id": sorted(note_filter.team_ids)}},
                    ]
                }
            }
        )
    clauses.append({"bool": {"should": who, "minimum_should_match": 1}})
    for field, value in (
        ("scope", note_filter.scope.value if note_filter.scope else None),
        ("team_id", note_filter.team_id),
        ("agent_id", note_filter.agent_id),
        ("memory_type", note_filter.memory_type.value if note_filter.memory_type else None),
        ("path_prefixes", note_filter.path_prefix),
    ):
        if value is not None:
            clauses.append({"term": {field: value}})
    if not note_filter.include_superseded:
        clauses.append({"term": {"superseded": False}})
    unexpired = [
        {"bool": {"must_not": [{"exists": {"field": "expires_at"}}]}},
        {"range": {"expires_at": {"gt": note_filter.now.isoformat()}}},
    ]
    clauses.append({"bool": {"should": unexpired, "minimum_should_match": 1}})
    if note_filter.as_of is not None:
        moment = note_filter.as_of.isoformat()
        clauses.append({"range": {"valid_from": {"lte": moment}}})
        still = [
            {"bool": {"must_not": [{"exists": {"field": "valid_to"}}]}},
            {"range": {"valid_to": {"gt": moment}}},
        ]
        clauses.append({"bool": {"should": still, "minimum_should_match": 1}})
    return {"bool": {"filter": clauses}}


def lexical_body(text: str, note_filter: NoteFilter, k: int) -> dict[str, Any]:
    """BM25 over ``content`` (a ``match`` query: user input is analyzed as words, never parsed)."""
    return {
        "size": k,
        "query": {"bool": {"must": [{"match": {"content": text}}], "filter": [filter_query(note_filter)]}},
        "sort": _SORT,
        "track_scores": True,
        "_source": _SOURCE,
    }


def semantic_body(vector: Sequence[float], note_filter: NoteFilter, k: int) -> dict[str, Any]:
    """kNN with the filter inside the ``knn`` clause, so hidden notes never take a top-k slot."""
    return {
        "size": k,
        "query": {"knn": {"vector": {"vector": list(vector), "k": k, "filter": filter_query(note_filter)}}},
        "sort": _SORT,
        "track_scores": True,
        "_source": _SOURCE,
    }


def browse_body(note_filter: NoteFilter, k: int) -> dict[str, Any]:
    """The admitted notes without a query, by importance, then update time, then id."""
    return {
        "size": k,
        "query": filter_query(note_filter),
        "sort": _BROWSE_SORT,
        "_source": {"includes": ["note_id", "note_version", "importance"]},
    }


def parse_browsed(response: Mapping[str, Any]) -> list[NoteHit]:
    return [
        NoteHit(
            note_id=hit["_source"]["note_id"],
            version=int(hit["_source"]["note_version"]),
            score=float(hit["_source"].get("importance", 0.5)),
        )
        for hit in response["hits"]["hits"]
    ]


def parse_hits(response: Mapping[str, Any], *, semantic: bool) -> list[NoteHit]:
    hits = [
        NoteHit(
            note_id=hit["_source"]["note_id"],
            version=int(hit["_source"]["note_version"]),
            score=dsl.cosine_from_score(float(hit["_score"])) if semantic else float(hit["_score"]),
        )
        for hit in response["hits"]["hits"]
    ]
    return sorted(hits, key=lambda hit: (-hit.score, hit.note_id))


def _parse(response: Mapping[str, Any], semantic: bool) -> list[NoteHit]:
    return parse_hits(response, semantic=semantic)


class OpenSearchNoteIndex:
    """The notes index on one OpenSearch index (or alias) ``index_name``; ``client`` as built by
    ``build_opensearch_client``. ``refresh=True`` makes every write searchable before it returns."""

    def __init__(self, client: Any, index_name: str, *, refresh: bool = False, history: bool = False) -> None:
        self._history = history
        self._client = client
        self._name = index_name
        self._refresh = refresh
        self._dimension: int | None = None

    @property
    def index_name(self) -> str:
        return self._name

    def ensure_ready(self, *, model_id: str, dimension: int) -> None:
        """Create the index if missing; ``IndexConfigurationError`` if it records another model."""
        with translated("ensure_ready"):
            if not self._client.indices.exists(index=self._name):
                try:
                    self._client.indices.create(
                        index=self._name, body=index_body(model_id=model_id, dimension=dimension)
                    )
                except RequestError as error:
                    if error.error != "resource_already_exists_exception":
                        raise
            else:
                self._client.indices.put_mapping(index=self._name, body={"properties": _BROWSE_FIELDS})
            recorded = dsl.recorded_config(self._client.indices.get_mapping(index=self._name))
        if not recorded.matches(model_id, dimension):
            raise IndexConfigurationError(
                f"Note index {self._name!r} was built for embedding model {recorded.model_id!r} with "
                f"dimension {recorded.dimension}, but {model_id!r} with dimension {dimension} is configured.",
                {"index_model": recorded.model_id, "index_dimension": recorded.dimension},
            )
        self._dimension = dimension

    def upsert_notes(self, notes: Sequence[IndexedNote]) -> list[bool]:
        """Index each note at external version ``2·v``; ``False`` for a note refused with a 409."""
        if self._dimension is None:
            raise IndexConfigurationError("The note index is not configured; call ensure_ready first.")
        for note in notes:
            check_vector(note.vector, self._dimension)
        if self._history:
            return self._upsert_versions(notes)
        actions = (
            {
                "_op_type": "index",
                "_index": self._name,
                "_id": note.note_id,
                "_routing": note.tenant_id,
                "version": dsl.live_version(note.version),
                "version_type": "external_gte",
                "_source": note_source(note),
            }
            for note in notes
        )
        written: list[bool] = []
        with translated("upsert_notes"):
            for ok, info in helpers.streaming_bulk(self._client, actions, raise_on_error=False):
                result = info["index"]
                if not ok and result.get("status") != 409:
                    raise document_error(result)
                written.append(ok)
            if self._refresh and notes:
                self.refresh()
        return written

    def _upsert_versions(self, notes: Sequence[IndexedNote]) -> list[bool]:
        """History mode: each version's document at its own id, skipping versions a tombstone covers."""
        tombstones = self._tombstones(notes)
        keep = [tombstones.get((note.tenant_id, note.note_id), 0) < note.version for note in notes]
        actions = (
            {
                "_op_type": "index",
                "_index": self._name,
                "_id": f"{note.note_id}@{note.version}",
                "_routing": note.tenant_id,
                "version": dsl.live_version(note.version),
                "version_type": "external_gte",
                "_source": note_source(note),
            }
            for note, kept in zip(notes, keep, strict=True)
            if kept
        )
        results: list[bool] = []
        with translated("upsert_notes"):
            for ok, info in helpers.streaming_bulk(self._client, actions, raise_on_error=False):
                result = info["index"]
                if not ok and result.get("status") != 409:
                    raise document_error(result)
                results.append(ok)
            if self._refresh and results:
                self.refresh()
        written = iter(results)
        return [next(written) if kept else False for kept in keep]

    def _tombstones(self, notes: Sequence[IndexedNote]) -> dict[tuple[str, str], int]:
        """The tombstone version of each note of ``notes`` that has one (history mode)."""
        keys = sorted({(note.tenant_id, note.note_id) for note in notes})
        if not keys:
            return {}
        docs = [{"_id": note_id, "routing": tenant_id} for tenant_id, note_id in keys]
        with translated("upsert_notes"):
            answer = self._client.mget(index=self._name, body={"docs": docs})
        return {
            (doc["_source"]["tenant_id"], doc["_source"]["note_id"]): int(doc["_source"]["note_version"])
            for doc in answer["docs"]
            if doc.get("found") and doc["_source"].get("removed")
        }

    def remove_note(self, tenant_id: str, note_id: str, *, version: int) -> None:
        """Replace the note by a tombstone at ``2·v + 1``; a no-op when a newer state is held. In
        history mode, also delete every version document the tombstone covers."""
        tombstone = {"tenant_id": tenant_id, "note_id": note_id, "note_version": version, "removed": True}
        if self._history:
            self._remove_versions(tenant_id, note_id, version, tombstone)
            return
        with translated("remove_note"):
            try:
                self._client.index(
                    index=self._name,
                    id=note_id,
                    routing=tenant_id,
                    body=tombstone,
                    version=dsl.tombstone_version(version),
                    version_type="external_gte",
                )
            except OpenSearchConflictError:
                logger.info("stale note index removal ignored", extra={"note_id": note_id})
                return
            if self._refresh:
                self.refresh()

    def held_version(self, tenant_id: str, note_id: str) -> int | None:
        """The version the note's document holds, live or a tombstone (the tombstone alone in a
        history index, whose version documents are ``{note}@{version}``); ``None`` without one."""
        return document_version(self._client, self._name, tenant_id, note_id)

    def _remove_versions(self, tenant_id: str, note_id: str, version: int, tombstone: dict[str, Any]) -> None:
        covered = {
            "bool": {
                "filter": [
                    {"term": {"tenant_id": tenant_id}},
                    {"term": {"note_id": note_id}},
                    {"term": {"removed": False}},
                    {"range": {"note_version": {"lte": version}}},
                ]
            }
        }
        with translated("remove_note"):
            try:
                self._client.index(
                    index=self._name,
                    id=note_id,
                    routing=tenant_id,
                    body=tombstone,
                    version=dsl.tombstone_version(version),
                    version_type="external_gte",
                )
            except OpenSearchConflictError:
                logger.info("stale note history removal ignored", extra={"note_id": note_id})
            self._client.delete_by_query(
                index=self._name,
                body={"query": covered},
                routing=tenant_id,
                refresh=True,
                conflicts="proceed",
            )

    def search(self, query: NoteQuery) -> NoteLegHits:
        """Both requested legs in one ``_msearch`` (``search_legs``): a leg the engine fails is raised,
        or reported as ``NoteLegHits.failed`` when ``query.tolerate`` names it and the other leg
        answered; ``ValueError`` for a semantic leg without a vector or with one of the wrong
        dimension."""
        note_filter = query.filter
        legs: list[tuple[Leg, BodyAt]] = []
        if Leg.LEXICAL in query.legs and query.text.strip():
            text = query.text
            legs.append((Leg.LEXICAL, lambda depth: lexical_body(text, note_filter, depth)))
        if Leg.SEMANTIC in query.legs:
            vector = query.vector
            if vector is None:
                raise ValueError("the semantic leg needs a query vector")
            check_vector(vector, self._dimension or len(vector))
            legs.append((Leg.SEMANTIC, lambda depth: semantic_body(vector, note_filter, depth)))
        found = search_legs(
            self._client, self._name, note_filter.tenant_id, legs, query.k, _parse, query.tolerate
        )
        return NoteLegHits(
            lexical=found.hits.get(Leg.LEXICAL, []),
            semantic=found.hits.get(Leg.SEMANTIC, []),
            failed=found.failed,
        )

    def score_notes(self, query: NoteQuery, notes: Sequence[IndexedNote]) -> NoteLegHits:
        """Lexical: the query's terms by the field's search analyzer (``_analyze``) and each note's
        terms with the statistics of the tenant's shard (``_mtermvectors`` of artificial documents,
        routed by tenant: term and document frequencies, document count, total length), scored by
        OpenSearch's BM25 (k1 1.2, b 0.75, every term counted in the length) with the statistics the
        shard scores its own hits with in the same search, so both rank alike. Lengths are exact where Lucene
        stores them in one byte, so a long note's score may differ by a few percent from the one it
        gets once indexed. Semantic: cosine, computed here. ``DependencyUnavailableError`` when a
        request fails."""
        lexical: list[NoteHit] = []
        semantic: list[NoteHit] = []
        tenant_id = query.filter.tenant_id
        if Leg.LEXICAL in query.legs and notes and query.text.strip():
            with translated("score_notes"):
                analyzed = self._client.indices.analyze(
                    index=self._name, body={"analyzer": dsl.QUERY_ANALYZER, "text": query.text}
                )
                terms = [str(token["token"]) for token in analyzed.get("tokens", [])]
                answer = (
                    self._client.mtermvectors(
                        index=self._name,
                        body={"docs": [{"doc": {"content": note.content}} for note in notes]},
                        routing=tenant_id,
                        fields="content",
                        term_statistics=True,
                        field_statistics=True,
                        positions=False,
                        offsets=False,
                    )
                    if terms
                    else {"docs": []}
                )
            fields = [document.get("term_vectors", {}).get("content", {}) for document in answer["docs"]]
            for note, vectors in zip(notes, fields, strict=False):
                score = lucene_bm25(terms, vectors, fields)
                if score is not None:
                    lexical.append(NoteHit(note_id=note.note_id, version=note.version, score=score))
        if Leg.SEMANTIC in query.legs and notes:
            if query.vector is None:
                raise ValueError("the semantic leg needs a query vector")
            check_vector(query.vector, self._dimension or len(query.vector))
            semantic = [
                NoteHit(note_id=note.note_id, version=note.version, score=cosine(query.vector, note.vector))
                for note in notes
            ]
        return NoteLegHits(
            lexical=sorted(lexical, key=lambda hit: (-hit.score, hit.note_id))[: query.k],
            semantic=sorted(semantic, key=lambda hit: (-hit.score, hit.note_id))[: query.k],
        )

    def browse(self, note_filter: NoteFilter, k: int) -> list[NoteHit]:
        """Admitted notes by importance, then update time (newest first), then id, routed to the
        tenant's shard."""
        with translated("browse"):
            answer = self._client.search(
                index=self._name, body=browse_body(note_filter, k), routing=note_filter.tenant_id
            )
        return parse_browsed(answer)

    def refresh(self) -> None:
        with translated("refresh"):
            self._client.indices.refresh(index=self._name)

    def document_ids(self, tenant_id: str) -> set[str]:
        """The live documents held for ``tenant_id`` (tombstones left out): note ids, or
        ``<note_id>@<version>`` in a history index (the names a deletion receipt gives them); at
        most 10,000, as of the last refresh."""
        live = {"bool": {"filter": [{"term": {"tenant_id": tenant_id}}, {"term": {"removed": False}}]}}
        with translated("document_ids"):
            answer = self._client.search(
                index=self._name, body={"size": 10_000, "_source": False, "query": live}, routing=tenant_id
            )
        return {str(hit["_id"]) for hit in answer["hits"]["hits"]}


def build(settings: Settings) -> OpenSearchNoteIndex:
    """The notes' index ``OPENSEARCH_NOTES_INDEX`` on the cluster of ``settings``
    (``engine.client_of``)."""
    client, name = client_of(settings, "OPENSEARCH_NOTES_INDEX", settings.opensearch_notes_index)
    return OpenSearchNoteIndex(client, name)


HISTORY_SUFFIX = "-history"
"""The note history index is named after the notes' index: ``{OPENSEARCH_NOTES_INDEX}-history``."""


def build_history(settings: Settings) -> OpenSearchNoteIndex:
    """The note history index ``{OPENSEARCH_NOTES_INDEX}-history`` on the cluster of ``settings``."""
    client, name = client_of(settings, "OPENSEARCH_NOTES_INDEX", settings.opensearch_notes_index)
    return OpenSearchNoteIndex(client, name + HISTORY_SUFFIX, history=True)
