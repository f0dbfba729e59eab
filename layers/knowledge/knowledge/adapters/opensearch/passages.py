"""``OpenSearchIndex``: the ``SearchIndex`` port on OpenSearch (opensearch-py; SigV4 on AWS).

Document layout, routing and the external-version encoding are described in
``knowledge.adapters.opensearch.queries``. Writes of one item, in order:

1. its head at external version ``2·v`` (``external_gte``): a 409 means the index already holds a
   newer state (or a tombstone at ``v`` or above), so nothing else is written and ``upsert`` is False;
2. its chunks and passages with the same external version, by ``helpers.bulk``;
3. chunks and passages the new revision no longer contains, by ``delete_by_query`` after a refresh (the query
   only sees refreshed documents). Only items whose head already existed need this step.

A part (``upsert_part``) is written the same way, its own chunks and passages only, then its part
mark (``queries.part_action``); documents of older versions of the item are deleted and
the marks of its version are counted after a refresh. The refresh of the last part written sees
every mark written before it, so one of the writers of the last parts always reports ``complete``.

``delete_by_query`` deletes with internal versioning, which leaves a deleted chunk's version one above
its external version for ``index.gc_deletes`` (60 s). Re-indexing the same item version inside that
window is refused with a 409 although the head is still ours; those chunks are re-sent without a
version. A 409 while the head has moved on means a newer write won: ``upsert`` then returns False.

Errors: connection failures, timeouts, 429 and 5xx answers (also per leg of ``_msearch`` and per
document of a bulk request) raise ``DependencyUnavailableError``; a missing index or a mapping that
rejects our documents raises ``IndexConfigurationError``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from itertools import islice
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
from knowledge.domain.retrieval.hits import (
    TIE_BREAKER,
    TITLE_BOOST,
    Chunk,
    ChunkHit,
    IndexedChunk,
    IndexedItem,
    IndexQuery,
    Leg,
    LegHits,
)
from knowledge.domain.retrieval.index_work import PartWrite
from knowledge.errors import IndexConfigurationError
from knowledge.observability import logger

if TYPE_CHECKING:
    from knowledge.settings import Settings

_BULK_TIMEOUT_SECONDS = 60
_DELETE_GROUP = 200  # items per delete_by_query, well under the 1,024 boolean clause limit


def _batches(items: Sequence[IndexedItem], size: int) -> Iterator[list[tuple[int, IndexedItem]]]:
    """``(position, item)`` batches in which each item id appears once, earlier positions first, so
    bookkeeping by item id holds within a batch and repeated ids are applied in input order."""
    pending = list(enumerate(items))
    while pending:
        batch: list[tuple[int, IndexedItem]] = []
        seen: set[str] = set()
        rest: list[tuple[int, IndexedItem]] = []
        for position, item in pending:
            if len(batch) < size and item.knowledge_item_id not in seen:
                seen.add(item.knowledge_item_id)
                batch.append((position, item))
            else:
                rest.append((position, item))
        yield batch
        pending = rest


def _hit(item: IndexedItem, span: Chunk | IndexedChunk, score: float) -> ChunkHit:
    return ChunkHit(
        knowledge_base_id=item.knowledge_base_id,
        knowledge_item_id=item.knowledge_item_id,
        knowledge_revision_id=item.knowledge_revision_id,
        ordinal=span.ordinal,
        start=span.start,
        end=span.end,
        text=span.text,
        score=score,
    )


def _ranked(hits: list[ChunkHit], k: int) -> list[ChunkHit]:
    """The ``k`` best of ``hits``: score descending, ties by item id, then ordinal (``parse_hits``)."""
    return sorted(hits, key=lambda hit: (-hit.score, hit.knowledge_item_id, hit.ordinal))[:k]


def _parse_hits(response: Mapping[str, Any], semantic: bool) -> list[ChunkHit]:
    return dsl.parse_hits(response, semantic=semantic)


class OpenSearchIndex:
    """The chunk index of DESIGN §4 on one OpenSearch index (or alias) ``index_name``.

    ``client`` is an ``opensearchpy.OpenSearch`` (see ``build_opensearch_client``). ``refresh=True``
    makes every write visible to search before it returns (tests, local runs); Lambda leaves it off
    and relies on the refresh interval. ``title_boost`` and ``tie_breaker`` shape the BM25 leg
    (``multi_match`` ``best_fields`` over ``title^title_boost`` and ``text``). Documents refused with
    429 are retried ``bulk_retries`` times, waiting ``bulk_backoff_seconds`` doubled each time.
    """

    def __init__(
        self,
        client: Any,
        index_name: str,
        *,
        refresh: bool = False,
        title_boost: float = TITLE_BOOST,
        tie_breaker: float = TIE_BREAKER,
        shards: int | None = None,
        batch_size: int = 500,
        bulk_retries: int = 3,
        bulk_backoff_seconds: float = 2.0,
    ) -> None:
        self._client = client
        self._name = index_name
        self._refresh = refresh
        self._title_boost = title_boost
        self._tie_breaker = tie_breaker
        self._shards = shards
        self._batch_size = batch_size
        self._bulk_options: dict[str, Any] = {
            "raise_on_error": False,
            "max_retries": bulk_retries,
            "initial_backoff": bulk_backoff_seconds,
            "request_timeout": _BULK_TIMEOUT_SECONDS,
        }
        self._dimension: int | None = None

    @property
    def index_name(self) -> str:
        return self._name

    def ensure_ready(self, *, model_id: str, dimension: int) -> None:
        """Create the index if missing; raise ``IndexConfigurationError`` if it records another model,
        dimension or layout (``_meta.embedding_model``, ``_meta.dimension``, the mapped vector
        dimension, ``_meta.layout``)."""
        with translated("ensure_ready"):
            if not self._client.indices.exists(index=self._name):
                self._create(model_id, dimension)
            recorded = dsl.recorded_config(self._client.indices.get_mapping(index=self._name))
        if not recorded.matches(model_id, dimension):
            raise IndexConfigurationError(
                f"Search index {self._name!r} was built for embedding model {recorded.model_id!r} with "
                f"dimension {recorded.dimension}, but {model_id!r} with dimension {dimension} is "
                "configured. Index into a new index or restore the previous model.",
                {"index_model": recorded.model_id, "index_dimension": recorded.dimension},
            )
        if recorded.layout != dsl.LAYOUT:
            raise IndexConfigurationError(
                f"Search index {self._name!r} has layout {recorded.layout!r}, but this version "
                f"writes and searches layout {dsl.LAYOUT!r} (passages for BM25 with CJK bigrams and "
                "accent folding, chunks for kNN). Index into a new index.",
                {"index_layout": recorded.layout, "layout": dsl.LAYOUT},
            )
        self._dimension = dimension

    def _create(self, model_id: str, dimension: int) -> None:
        body = dsl.index_body(model_id=model_id, dimension=dimension, shards=self._shards)
        try:
            self._client.indices.create(index=self._name, body=body)
        except RequestError as error:
            # Another process created it first; its mapping is checked like any existing index.
            if error.error != "resource_already_exists_exception":
                raise
            return
        logger.info("search index created", extra={"index": self._name, "model_id": model_id})

    def upsert(self, item: IndexedItem) -> bool:
        """Replace the item's chunks; False when the index holds a newer state (see module docs)."""
        return self.upsert_many([item])[0]

    def upsert_many(self, items: Sequence[IndexedItem]) -> list[bool]:
        """``upsert`` for many items with a few bulk requests per ``batch_size`` items.

        Raises ``ValueError`` (before writing anything) when a vector does not have the index's
        dimension or is zero; ``IndexConfigurationError`` before ``ensure_ready``.
        """
        if self._dimension is None:
            raise IndexConfigurationError("The search index is not configured; call ensure_ready first.")
        for item in items:
            for chunk in item.chunks:
                check_vector(chunk.vector, self._dimension)
        results = [False] * len(items)
        with translated("upsert"):
            for batch in _batches(items, self._batch_size):
                written = self._write([item for _, item in batch])
                for position, item in batch:
                    results[position] = item.knowledge_item_id in written
            if self._refresh and items:
                self.refresh()
        return results

    def upsert_part(self, item: IndexedItem, *, part: int, parts: int) -> PartWrite:
        """Add one part of the item's version (see ``SearchIndex.upsert_part`` and the module docs).
        Raises ``ValueError`` (before writing) for a bad vector or part number;
        ``IndexConfigurationError`` before ``ensure_ready``."""
        if not 0 <= part < parts:
            raise ValueError("part must be in [0, parts)")
        if self._dimension is None:
            raise IndexConfigurationError("The search index is not configured; call ensure_ready first.")
        for chunk in item.chunks:
            check_vector(chunk.vector, self._dimension)
        with translated("upsert_part"):
            heads = self._write_heads([item])
            if item.knowledge_item_id not in heads:
                return PartWrite(written=False)
            if self._write_chunks([item]) or not self._write_part_mark(item, part):
                return PartWrite(written=False)  # a newer version overtook this write
            self._client.indices.refresh(index=self._name)
            if heads[item.knowledge_item_id] != "created":
                self._client.delete_by_query(
                    index=self._name,
                    body=dsl.older_versions_query(item.tenant_id, item.knowledge_item_id, item.version),
                    routing=item.tenant_id,
                    conflicts="proceed",
                    refresh=True,
                    request_timeout=_BULK_TIMEOUT_SECONDS,
                )
            answer = self._client.search(
                index=self._name,
                body=dsl.held_parts_body(item.tenant_id, item.knowledge_item_id, item.version, parts),
                routing=item.tenant_id,
            )
        held = frozenset(
            int(hit["_source"]["ordinal"])
            for hit in answer["hits"]["hits"]
            if 0 <= int(hit["_source"]["ordinal"]) < parts
        )
        return PartWrite(written=True, held=held, complete=len(held) >= parts)

    def _write_part_mark(self, item: IndexedItem, part: int) -> bool:
        """Write the part's mark; False when a newer version of the item overtook it. A 409 while
        the head is still ours comes from a ``delete_by_query`` tombstone (see the module docs)."""
        if not self._bulk([dsl.part_action(self._name, item, part)]):
            return True
        if self._head_versions([item]).get(item.knowledge_item_id) != dsl.live_version(item.version):
            return False
        self._bulk([dsl.part_action(self._name, item, part, versioned=False)])
        return True

    def _write(self, batch: list[IndexedItem]) -> set[str]:
        """Write one batch (unique item ids); return the ids whose state the index now holds."""
        heads = self._write_heads(batch)
        accepted = [item for item in batch if item.knowledge_item_id in heads]
        overtaken = self._write_chunks(accepted)
        replaced = [
            item
            for item in accepted
            if heads[item.knowledge_item_id] != "created" and item.knowledge_item_id not in overtaken
        ]
        self._delete_superseded(replaced)
        return {item.knowledge_item_id for item in accepted} - overtaken

    def _write_heads(self, batch: list[IndexedItem]) -> dict[str, str]:
        """Index the heads; ``{item id: "created" | "updated"}`` for the heads that were not stale."""
        results: dict[str, str] = {}
        actions = (dsl.head_action(self._name, item) for item in batch)
        for ok, info in helpers.streaming_bulk(self._client, actions, **self._bulk_options):
            result = info["index"]
            if ok:
                results[result["_id"]] = result.get("result", "updated")
            elif result.get("status") == 409:
                logger.info("stale index write ignored", extra={"knowledge_item_id": result["_id"]})
            else:
                raise document_error(result)
        return results

    def _write_chunks(self, accepted: list[IndexedItem]) -> set[str]:
        """Index the chunks and passages of accepted items; return the ids of items a newer write has
        overtaken."""
        spans: list[tuple[IndexedItem, Chunk | IndexedChunk]] = [
            *((item, chunk) for item in accepted for chunk in item.chunks),
            *((item, passage) for item in accepted for passage in item.passages),
        ]
        owner = {dsl.span_id(item.knowledge_item_id, span): (item, span) for item, span in spans}
        conflicts = self._bulk(dsl.span_action(self._name, item, span) for item, span in owner.values())
        if not conflicts:
            return set()
        conflicted = {owner[chunk_id][0].knowledge_item_id: owner[chunk_id][0] for chunk_id in conflicts}
        heads = self._head_versions(list(conflicted.values()))
        overtaken = {
            item_id
            for item_id, item in conflicted.items()
            if heads.get(item_id) != dsl.live_version(item.version)
        }
        for item_id in overtaken:
            logger.info("index write overtaken by a newer version", extra={"knowledge_item_id": item_id})
        # The head is still ours, so these 409s come from delete_by_query tombstones (see module docs);
        # an unversioned index cannot conflict.
        self._bulk(
            dsl.span_action(self._name, *owner[chunk_id], versioned=False)
            for chunk_id in sorted(conflicts)
            if owner[chunk_id][0].knowledge_item_id not in overtaken
        )
        return overtaken

    def _bulk(self, actions: Any) -> set[str]:
        """Run ``helpers.bulk``; return the ids refused with a version conflict, raise on other failures."""
        _, errors = helpers.bulk(self._client, actions, **self._bulk_options)
        conflicts: set[str] = set()
        for error in errors:
            result = next(iter(error.values()))
            if result.get("status") != 409:
                raise document_error(result)
            conflicts.add(result["_id"])
        return conflicts

    def _head_versions(self, items: list[IndexedItem]) -> dict[str, int]:
        docs = [{"_id": item.knowledge_item_id, "routing": item.tenant_id} for item in items]
        answer = self._client.mget(index=self._name, body={"docs": docs})
        return {doc["_id"]: int(doc["_version"]) for doc in answer["docs"] if doc.get("found")}

    def _delete_superseded(self, items: list[IndexedItem]) -> None:
        if not items:
            return
        self._client.indices.refresh(index=self._name)
        iterator = iter(items)
        while group := list(islice(iterator, _DELETE_GROUP)):
            self._client.delete_by_query(
                index=self._name,
                body=dsl.superseded_chunks_query(group),
                routing=",".join(sorted({item.tenant_id for item in group})),
                conflicts="proceed",
                request_timeout=_BULK_TIMEOUT_SECONDS,
            )

    def remove_item(self, tenant_id: str, knowledge_item_id: str, *, version: int) -> None:
        """Tombstone the item at ``version`` and delete its chunks; a no-op when the index holds a
        newer live version or a tombstone at or above ``version``."""
        with translated("remove_item"):
            try:
                self._client.index(
                    index=self._name,
                    id=knowledge_item_id,
                    routing=tenant_id,
                    body=dsl.tombstone_source(tenant_id, knowledge_item_id, version),
                    version=dsl.tombstone_version(version),
                    version_type="external_gte",
                )
            except OpenSearchConflictError:
                logger.info("stale index removal ignored", extra={"knowledge_item_id": knowledge_item_id})
                return
            self._client.indices.refresh(index=self._name)
            self._client.delete_by_query(
                index=self._name,
                body=dsl.item_chunks_query(tenant_id, knowledge_item_id),
                routing=tenant_id,
                conflicts="proceed",
                request_timeout=_BULK_TIMEOUT_SECONDS,
            )
            if self._refresh:
                self.refresh()

    def held_version(self, tenant_id: str, knowledge_item_id: str) -> int | None:
        """The version the item's head holds, live or a tombstone; ``None`` without a head."""
        return document_version(self._client, self._name, tenant_id, knowledge_item_id)

    def document_ids(self, tenant_id: str) -> set[str]:
        """The items (history entries ``{item}@{version}`` in a history index) whose chunks or
        passages the index holds for ``tenant_id`` (tombstones left out): the names a deletion
        receipt gives them; at most 10,000 documents read, as of the last refresh."""
        query = {
            "bool": {
                "filter": [
                    {"terms": {"doc_type": list(dsl.ITEM_DOCUMENTS)}},
                    {"term": {"tenant_id": tenant_id}},
                ]
            }
        }
        with translated("document_ids"):
            answer = self._client.search(
                index=self._name,
                body={"size": 10_000, "_source": ["knowledge_item_id"], "query": query},
                routing=tenant_id,
            )
        return {str(hit["_source"]["knowledge_item_id"]) for hit in answer["hits"]["hits"]}

    def remove_base(self, tenant_id: str, knowledge_base_id: str) -> None:
        """Delete every chunk of the base. Item heads stay, so stale writes are still refused and a
        re-upsert at the same version restores the item."""
        with translated("remove_base"):
            self._client.indices.refresh(index=self._name)
            answer = self._client.delete_by_query(
                index=self._name,
                body=dsl.base_chunks_query(tenant_id, knowledge_base_id),
                routing=tenant_id,
                conflicts="proceed",
                request_timeout=_BULK_TIMEOUT_SECONDS,
            )
            logger.info(
                "search index base removed",
                extra={"knowledge_base_id": knowledge_base_id, "deleted": answer.get("deleted")},
            )
            if self._refresh:
                self.refresh()

    def search(self, query: IndexQuery) -> LegHits:
        """Both requested legs in one ``_msearch`` routed to the tenant's shard (``search_legs``).

        Lexical hits carry BM25 scores; semantic hits carry cosine similarity (converted back from the
        ``cosinesimil`` score). An empty query text runs no lexical leg. A leg the engine fails is raised
        as ``DependencyUnavailableError`` (details ``{"leg": ...}``), or, when ``query.tolerate`` names
        it and the other leg answered, reported as ``LegHits.failed``. Raises ``ValueError`` when the
        semantic leg is requested without a vector or with one of the wrong dimension.
        """
        visibility, as_of = query.visibility, query.as_of
        legs: list[tuple[Leg, BodyAt]] = []
        if Leg.LEXICAL in query.legs and query.text.strip():
            text, boost, tie = query.text, self._title_boost, self._tie_breaker
            legs.append(
                (
                    Leg.LEXICAL,
                    lambda depth: dsl.lexical_body(
                        text, visibility, depth, title_boost=boost, tie_breaker=tie, as_of=as_of
                    ),
                )
            )
        if Leg.SEMANTIC in query.legs:
            vector = query.vector
            if vector is None:
                raise ValueError("the semantic leg needs a query vector")
            check_vector(vector, len(vector) if self._dimension is None else self._dimension)
            legs.append((Leg.SEMANTIC, lambda depth: dsl.semantic_body(vector, visibility, depth, as_of)))
        found = search_legs(
            self._client, self._name, visibility.tenant_id, legs, query.k, _parse_hits, query.tolerate
        )
        return LegHits(
            lexical=found.hits.get(Leg.LEXICAL, []),
            semantic=found.hits.get(Leg.SEMANTIC, []),
            failed=found.failed,
        )

    def score_items(self, query: IndexQuery, items: Sequence[IndexedItem]) -> LegHits:
        """The hits ``items`` would give beside what the index holds (``SearchIndex.score_items``).
        Lexical: the query's terms by the fields' search analyzer (``_analyze``) and each passage's
        ``title`` and ``text`` terms with the statistics of the tenant's shard (``_mtermvectors`` of
        artificial documents, routed by tenant: term and document frequencies, document count,
        total length per field) with the ``items``' passages counted beside the shard's, so a
        passage scores as it will once indexed; each field scored by OpenSearch's BM25
        (``lucene_bm25``) and
        combined as ``lexical_body``'s ``multi_match`` ``best_fields`` combines them (the better of
        ``title^title_boost`` and ``text``, plus ``tie_breaker`` times the other). Lengths are
        exact where Lucene stores them in one byte, so a long passage's score may differ by a few
        percent from the one it gets once indexed. Semantic: the cosine of each chunk's vector,
        computed here. ``DependencyUnavailableError`` when a request fails; ``ValueError`` for a
        semantic leg without a vector or with one of the wrong dimension."""
        lexical: list[ChunkHit] = []
        semantic: list[ChunkHit] = []
        spans = [(item, passage) for item in items for passage in item.passages]
        if Leg.LEXICAL in query.legs and spans and query.text.strip():
            lexical = self._scored_passages(query.text, query.visibility.tenant_id, spans)
        if Leg.SEMANTIC in query.legs and any(item.chunks for item in items):
            vector = query.vector
            if vector is None:
                raise ValueError("the semantic leg needs a query vector")
            check_vector(vector, len(vector) if self._dimension is None else self._dimension)
            semantic = [
                _hit(item, chunk, cosine(vector, chunk.vector)) for item in items for chunk in item.chunks
            ]
        return LegHits(lexical=_ranked(lexical, query.k), semantic=_ranked(semantic, query.k))

    def _scored_passages(
        self, text: str, tenant_id: str, spans: Sequence[tuple[IndexedItem, Chunk]]
    ) -> list[ChunkHit]:
        with translated("score_items"):
            analyzed = self._client.indices.analyze(
                index=self._name, body={"analyzer": dsl.QUERY_ANALYZER, "text": text}
            )
            terms = [str(token["token"]) for token in analyzed.get("tokens", [])]
            if not terms:
                return []
            answer = self._client.mtermvectors(
                index=self._name,
                body={"docs": [{"doc": {"title": item.title, "text": span.text}} for item, span in spans]},
                routing=tenant_id,
                fields="title,text",
                term_statistics=True,
                field_statistics=True,
                positions=False,
                offsets=False,
            )
        vectors = [document.get("term_vectors", {}) for document in answer["docs"]]
        titles = [fields.get("title", {}) for fields in vectors]
        texts = [fields.get("text", {}) for fields in vectors]
        hits = []
        for (item, span), title, body in zip(spans, titles, texts, strict=False):
            title_score = lucene_bm25(terms, title, titles, beside=True)
            text_score = lucene_bm25(terms, body, texts, beside=True)
            if title_score is None and text_score is None:
                continue
            weaker, better = sorted((self._title_boost * (title_score or 0.0), text_score or 0.0))
            hits.append(_hit(item, span, better + self._tie_breaker * weaker))
        return hits

    def refresh(self) -> None:
        """Make every write so far visible to search."""
        with translated("refresh"):
            self._client.indices.refresh(index=self._name)


def build(settings: Settings) -> OpenSearchIndex:
    """The index ``OPENSEARCH_INDEX`` on the cluster of ``settings`` (``engine.client_of``)."""
    client, name = client_of(settings, "OPENSEARCH_INDEX", settings.opensearch_index)
    return OpenSearchIndex(client, name)


HISTORY_SUFFIX = "-history"
"""The knowledge history index is named after the chunk index: ``{OPENSEARCH_INDEX}-history``."""


def build_history(settings: Settings) -> OpenSearchIndex:
    """The knowledge history index ``{OPENSEARCH_INDEX}-history`` (DESIGN §11): one entry per item
    state (``{item}@{state version}``) with its validity interval, searched with ``IndexQuery.as_of``."""
    client, name = client_of(settings, "OPENSEARCH_INDEX", settings.opensearch_index)
    return OpenSearchIndex(client, name + HISTORY_SUFFIX)
