"""The ``search_knowledge`` use case: ranked query over current published revisions, or an addressed
read of one item/revision in bounded windows (spec + DESIGN §4–§5).

Errors (``knowledge.errors``): ``RuntimeDisabledError`` (switch off), ``InsufficientScopeError``
(no ``knowledge:read``), ``InvalidRequestError`` / ``QueryRequiredError`` / ``ItemRequiredError``
(request shape), ``ResourceUnavailableError`` (absent, unauthorized, inactive or unpublished — one
answer for all), ``PageUnavailableError`` (an addressed read of a ``page`` the revision lacks),
``DependencyUnavailableError`` (store, index or embedder down).

Locators name the revision's segment covering their offset (page, sheet and rows, section) when
the revision has segments (``contract.search.Locator.within``).

``as_of`` (DESIGN §10 "Time") on an addressed read answers as of that moment, with today's
authorization (the base visible and active now): the item's state then (``ItemStore.list_item_states``,
``domain.as_of.item_state_at``) must be published, the revision read is the one current then (or
the one named, when it was published by then), and ``is_current`` / ``current_revision_id`` are as
of then. A time without a zone or in the future is ``AsOfInvalidError``. A ranked query with
``as_of`` (DESIGN §11) searches the knowledge history index (``history``: one entry per item state,
``{item}@{state version}``, with its validity interval) with ``IndexQuery.as_of``, so both legs keep
only the entries valid then; hits are mapped back to their item and checked against the item's
states (``ranking.ItemPage`` with ``as_of``) under today's authorization. Without a history index
it is ``InvalidRequestError`` (``details.as_of``).

Ranking: ``retrieval.retrieve`` runs the rounds of both legs; ``ranking.ItemPage`` fuses them and
checks each candidate's truth against the store (windows, duplicates, refill order: ``ranking``).

Read-your-own-writes (DESIGN §9): the published items of the caller's tenant whose current revision
the index has not taken yet (``ItemStore.list_unindexed_items``, the newest ``PENDING_INDEX_LIMIT``)
that the caller may read under today's rules and the query's ``knowledge_base_id`` (their base
visible and active: ``can_see``) are counted in every ranked answer (``pending_index``). With
``consistent: true`` (and no ``as_of``: those revisions are newer than any past moment) they also
join each round: their current revisions are read from the store, chunked and embedded as the
indexer does (``documents.build_indexed_item``; embedded only when the round runs the semantic
leg), scored by the index's own rules (``SearchIndex.score_items``) and merged into each leg in
place of whatever older revision of them the index holds (``hits.with_pending``), before fusion and
the same read-time truth check. An embedder failure there is the semantic leg's (``details.leg``),
so a hybrid query degrades as below.

Degradation: when a hybrid query's semantic leg fails (the embedder raises
``DependencyUnavailableError``, or the index reports the k-NN leg failed: ``LegHits.failed``, or
``details.leg == "semantic"`` on the error it raises), the query is answered by its lexical leg alone
with ``degraded: true``. A semantic query has no lexical leg to fall back to, and a failure of the
lexical leg or of the whole index call is ``DependencyUnavailableError``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime

from knowledge.contract.search import (
    LIMIT_CHARS_MAX,
    LIMIT_CHARS_MIN,
    MAX_RESULTS_MAX,
    MAX_RESULTS_MIN,
    PENDING_INDEX_LIMIT,
    KnowledgeReadResponse,
    KnowledgeSearchResponse,
    LegReports,
    LexicalLegReport,
    Locator,
    PendingIndex,
    SearchKnowledgeArguments,
    SearchResult,
    SemanticLegReport,
    SourceRef,
)
from knowledge.domain import ids
from knowledge.domain.access.visibility import VisibilityFilter, can_see
from knowledge.domain.as_of import item_state_at, resolve_as_of
from knowledge.domain.bounds import INTEGER_MAX, OFFSET_MAX
from knowledge.domain.models import (
    ItemStatus,
    KnowledgeBase,
    KnowledgeItem,
    Permission,
    Principal,
    Revision,
)
from knowledge.domain.retrieval.analysis import query_terms
from knowledge.domain.retrieval.chunking import Chunker
from knowledge.domain.retrieval.excerpts import EXCERPT_MAX_CHARS, citation, make_excerpt, reference
from knowledge.domain.retrieval.hits import (
    ChunkHit,
    IndexedItem,
    IndexQuery,
    Leg,
    LegHits,
    SearchMode,
    item_of_history_key,
    with_pending,
)
from knowledge.domain.segments import page_offset
from knowledge.domain.text import is_blank
from knowledge.errors import (
    DependencyUnavailableError,
    InsufficientScopeError,
    InvalidRequestError,
    ItemRequiredError,
    PageUnavailableError,
    QueryRequiredError,
    ResourceUnavailableError,
    RuntimeDisabledError,
)
from knowledge.observability import logger
from knowledge.ports import Clock, CorpusStore, Embedder, RuntimeSwitch, SearchIndex
from knowledge.services.access import find_base, find_item
from knowledge.services.documents import build_indexed_item
from knowledge.services.ranking import Accepted, ItemPage
from knowledge.services.retrieval import Round, legs_for, normalize_mode, retrieve, scores_of


class SearchService:
    """Runs the tool for an authenticated principal. Thread-safe if its ports are."""

    def __init__(
        self,
        store: CorpusStore,
        index: SearchIndex,
        embedder: Embedder,
        runtime_switch: RuntimeSwitch,
        clock: Clock | None = None,
        history: Callable[[], SearchIndex] | None = None,
        chunker: Chunker | None = None,
    ) -> None:
        """``history`` opens the knowledge history index on the first ranked query with ``as_of``
        (``None``: such a query is refused); ``chunker`` splits pending revisions as the indexer
        does (default: ``Chunker()``, the settings' defaults)."""
        self._history = history
        self._chunker = chunker or Chunker()
        self._clock = clock or _utc_now
        self._store = store
        self._index = index
        self._embedder = embedder
        self._switch = runtime_switch

    def search_knowledge(
        self, principal: Principal, arguments: SearchKnowledgeArguments
    ) -> KnowledgeSearchResponse | KnowledgeReadResponse:
        """Answer one call: query mode when ``query`` is set, addressed read when an item id is."""
        if not self._switch.is_enabled():
            raise RuntimeDisabledError()
        if not principal.has_scope(Permission.READ):
            raise InsufficientScopeError(
                "The token lacks the knowledge:read scope.", {"required_scope": Permission.READ.value}
            )
        _check_bounds(arguments)
        query = "" if is_blank(arguments.query) else arguments.query.strip()
        if query and (arguments.knowledge_item_id or arguments.knowledge_revision_id):
            raise InvalidRequestError(
                "query is mutually exclusive with knowledge_item_id and knowledge_revision_id."
            )
        as_of = resolve_as_of(arguments.as_of, self._clock())
        if query:
            if as_of is not None and self._history is None:
                raise InvalidRequestError(
                    "as_of is answered for an addressed read (knowledge_item_id); this service "
                    "has no history index for a ranked query.",
                    {"as_of": as_of.isoformat()},
                )
            return self._query(principal, arguments, query, as_of)
        if arguments.knowledge_revision_id and not arguments.knowledge_item_id:
            raise ItemRequiredError("knowledge_revision_id requires knowledge_item_id.")
        if not arguments.knowledge_item_id:
            raise QueryRequiredError("Provide a query for ranked search or a knowledge_item_id to read.")
        return self._read(principal, arguments, as_of)

    # -- query mode -------------------------------------------------------------------------------

    def _query(
        self,
        principal: Principal,
        arguments: SearchKnowledgeArguments,
        query: str,
        as_of: datetime | None = None,
    ) -> KnowledgeSearchResponse:
        mode = normalize_mode(arguments.mode)
        alpha = min(1.0, max(0.0, arguments.alpha))
        narrow_to = arguments.knowledge_base_id or None
        if narrow_to is not None:
            self._visible_base(principal, narrow_to)
        terms = query_terms(query)
        legs = _legs_for(mode, has_terms=bool(terms))
        visibility = VisibilityFilter.for_principal(principal, narrow_to=narrow_to)
        store, wanted = self._store, arguments.max_results
        index = self._index if as_of is None or self._history is None else self._history()
        pending = self.unindexed(principal, narrow_to)
        # As of a past moment, revisions not indexed yet are newer than it: consistent adds nothing.
        included = arguments.consistent and as_of is None
        ranked_pending = _PendingRevisions(store, self._chunker, self._embedder, pending if included else [])

        def search(round_: Round) -> LegHits:
            index_query = IndexQuery(
                text=query,
                vector=round_.vector,
                visibility=visibility,
                k=round_.k,
                legs=round_.legs,
                tolerate=round_.tolerate,
                as_of=as_of,
            )
            hits = index.search(index_query)
            if as_of is not None:
                return _items_of_history(hits)
            if not ranked_pending.ids:
                return hits
            answered = index_query.legs - {hits.failed} if hits.failed is not None else index_query.legs
            scored = index.score_items(
                index_query.model_copy(update={"legs": answered}),
                ranked_pending.items(semantic=Leg.SEMANTIC in answered),
            )
            return with_pending(hits, scored, ranked_pending.ids, index_query.k)

        retrieval = retrieve(
            self._embedder,
            query,
            legs,
            wanted,
            search,
            lambda: ItemPage(store, principal, mode, alpha, wanted, as_of),
        )
        degraded = retrieval.degraded
        if degraded:
            logger.warning("knowledge search degraded to its lexical leg", extra={"mode": mode.value})
        results = [_result(entry, query) for entry in retrieval.page.results]
        logger.info(
            "knowledge searched",
            extra={
                "mode": mode.value,
                "results": len(results),
                "lexical_terms": len(terms),
                "tenant_id": principal.tenant_id,
                "as_of": as_of is not None,
                "pending_index": len(pending),
                "consistent": included,
            },
        )
        return KnowledgeSearchResponse(
            query=arguments.query,
            mode=mode.value,
            alpha=alpha,
            results=results,
            legs=_leg_reports(mode, len(terms), retrieval.first),
            degraded=degraded,
            as_of=as_of,
            pending_index=PendingIndex(writes=len(pending), included=included),
        )

    def unindexed(
        self, principal: Principal, narrow_to: str | None = None
    ) -> list[tuple[KnowledgeItem, KnowledgeBase]]:
        """The tenant's published items whose current revision the index has not taken yet (the
        newest ``PENDING_INDEX_LIMIT``, as stored now) that ``principal`` may read: base visible and
        active (``can_see``), and ``narrow_to`` when given; each with its base. One listing and
        one batched read of their bases."""
        items = self._store.list_unindexed_items(principal.tenant_id, limit=PENDING_INDEX_LIMIT)
        if not items:
            return []
        bases = self._store.get_bases(principal.tenant_id, sorted({item.knowledge_base_id for item in items}))
        return [
            (item, base)
            for item in items
            if (base := bases.get(item.knowledge_base_id)) is not None
            and (narrow_to is None or base.knowledge_base_id == narrow_to)
            and can_see(principal, base)
        ]

    # -- addressed read ---------------------------------------------------------------------------

    def _read(
        self, principal: Principal, arguments: SearchKnowledgeArguments, as_of: datetime | None = None
    ) -> KnowledgeReadResponse:
        item_id = arguments.knowledge_item_id
        revision_id = arguments.knowledge_revision_id or None
        ids.require_well_formed(item_id, ids.ITEM_PREFIX, "knowledge_item_id")
        if revision_id is not None:
            ids.require_well_formed(revision_id, ids.REVISION_PREFIX, "knowledge_revision_id")
        # One get_item and one get_base whatever the answer (``find_item``): an absent item and
        # one the caller may not see take the same work before their identical 404.
        item, base = find_item(self._store, principal, item_id)
        current_revision_id = item.current_revision_id
        if as_of is not None:
            state = item_state_at(item, self._store.list_item_states(principal.tenant_id, item_id), as_of)
            current_revision_id = state.current_revision_id if state is not None else None
            if state is None or state.status is not ItemStatus.PUBLISHED:
                raise ResourceUnavailableError()
        elif item.status is not ItemStatus.PUBLISHED:
            raise ResourceUnavailableError()
        if current_revision_id is None:
            raise ResourceUnavailableError()
        if arguments.knowledge_base_id and arguments.knowledge_base_id != item.knowledge_base_id:
            raise ResourceUnavailableError()
        revision = self._store.get_revision(principal.tenant_id, item_id, revision_id or current_revision_id)
        if revision is None or revision.published_at is None:
            raise ResourceUnavailableError()
        if as_of is not None and revision.published_at > as_of:
            raise ResourceUnavailableError()
        offset = _start_of_read(revision, arguments)
        window = self._store.read_content(revision, offset=offset, limit=arguments.limit_chars)
        end = window.offset + len(window.text)
        return KnowledgeReadResponse(
            owner=base.owner_id,
            team=base.team_id,
            scope=base.scope.value,
            knowledge_base_id=base.knowledge_base_id,
            knowledge_item_id=item.knowledge_item_id,
            knowledge_revision_id=revision.knowledge_revision_id,
            title=revision.title,
            content=window.text,
            locator=Locator.within(revision.segments, window.offset, len(window.text)),
            source=SourceRef(uri=revision.source.uri, title=revision.source.title),
            reference=reference(
                base.knowledge_base_id,
                item.knowledge_item_id,
                revision.knowledge_revision_id,
                window.offset,
                end,
            ),
            content_offset=window.offset,
            content_limit=arguments.limit_chars,
            content_total_chars=revision.total_chars,
            content_truncated=window.truncated,
            is_current=revision.knowledge_revision_id == current_revision_id,
            current_revision_id=current_revision_id,
            as_of=as_of,
        )

    def _visible_base(self, principal: Principal, knowledge_base_id: str) -> KnowledgeBase:
        return find_base(self._store, principal, knowledge_base_id)


def _start_of_read(revision: Revision, arguments: SearchKnowledgeArguments) -> int:
    """Where an addressed read starts: ``offset``, or the first character of ``page`` (when not 0).

    Raises ``InvalidRequestError`` for an offset past the end or a page beside a non-zero offset,
    and ``PageUnavailableError`` for a page the revision has no segment for.
    """
    if arguments.page:
        if arguments.offset:
            raise InvalidRequestError(
                "Give page or offset, not both.", {"page": arguments.page, "offset": arguments.offset}
            )
        start = page_offset(revision.segments, arguments.page)
        if start is None:
            pages = [segment.page for segment in revision.segments if segment.page is not None]
            raise PageUnavailableError(
                arguments.page, min(pages) if pages else None, max(pages) if pages else None
            )
        return start
    if arguments.offset > revision.total_chars:
        raise InvalidRequestError(
            "offset is beyond the end of the revision.",
            {"offset": arguments.offset, "content_total_chars": revision.total_chars},
        )
    return arguments.offset


class _PendingRevisions:
    """The current revisions of pending items as the index would hold them (``IndexedItem``), built
    on first use (content read, chunked, embedded only when a leg needs vectors), for ranking with
    the index's hits. ``ids`` are the items'."""

    def __init__(
        self,
        store: CorpusStore,
        chunker: Chunker,
        embedder: Embedder,
        pending: Sequence[tuple[KnowledgeItem, KnowledgeBase]],
    ) -> None:
        self._store = store
        self._chunker = chunker
        self._embedder = embedder
        self._pending = list(pending)
        self.ids = {item.knowledge_item_id for item, _ in pending}
        self._built: dict[bool, list[IndexedItem]] = {}

    def items(self, *, semantic: bool) -> list[IndexedItem]:
        """The pending revisions, with their chunks' vectors when ``semantic``. An embedder failure
        is ``DependencyUnavailableError`` with ``details.leg == "semantic"``; a revision the store
        no longer holds is left out (the truth check would drop it anyway)."""
        built = self._built.get(semantic)
        if built is None:
            built = self._built[semantic] = self._build(semantic)
        return built

    def _build(self, semantic: bool) -> list[IndexedItem]:
        tenant_id = self._pending[0][0].tenant_id
        revisions = self._store.get_revisions(
            tenant_id,
            [
                (item.knowledge_item_id, item.current_revision_id)
                for item, _ in self._pending
                if item.current_revision_id
            ],
        )
        embedder = self._embedder if semantic else _NO_VECTORS
        built = []
        for item, base in self._pending:
            revision = revisions.get((item.knowledge_item_id, item.current_revision_id or ""))
            if revision is None:
                continue
            try:
                built.append(
                    build_indexed_item(
                        chunker=self._chunker,
                        embedder=embedder,
                        tenant_id=item.tenant_id,
                        knowledge_base_id=base.knowledge_base_id,
                        knowledge_item_id=item.knowledge_item_id,
                        knowledge_revision_id=revision.knowledge_revision_id,
                        version=item.version,
                        owner_id=base.owner_id,
                        team_id=base.team_id,
                        scope=base.scope.value,
                        title=revision.title,
                        content=self._store.read_all_content(revision),
                    )
                )
            except DependencyUnavailableError as error:
                if not semantic:
                    raise
                raise DependencyUnavailableError(
                    "The embedding model could not embed the revisions not indexed yet.",
                    {"leg": Leg.SEMANTIC.value},
                ) from error
        return built


class _NoVectors:
    """An ``Embedder`` stand-in for a lexical-only ranking of pending revisions: no vectors."""

    model_id = "none"
    dimension = 0

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [[] for _ in texts]

    def forget(self, texts: Sequence[str]) -> None:
        return None


_NO_VECTORS = _NoVectors()


def _utc_now() -> datetime:
    return datetime.now(UTC)


def _check_bounds(arguments: SearchKnowledgeArguments) -> None:
    """Bounds apply whatever the mode (DESIGN §5: out-of-mode parameters are still checked)."""
    problems = []
    if not 0 <= arguments.offset <= OFFSET_MAX:
        problems.append({"field": "offset", "problem": f"must be between 0 and {OFFSET_MAX}"})
    if not 0 <= arguments.page <= INTEGER_MAX:
        problems.append({"field": "page", "problem": f"must be between 0 and {INTEGER_MAX}"})
    if not LIMIT_CHARS_MIN <= arguments.limit_chars <= LIMIT_CHARS_MAX:
        problems.append(
            {"field": "limit_chars", "problem": f"must be between {LIMIT_CHARS_MIN} and {LIMIT_CHARS_MAX}"}
        )
    if not MAX_RESULTS_MIN <= arguments.max_results <= MAX_RESULTS_MAX:
        problems.append(
            {"field": "max_results", "problem": f"must be between {MAX_RESULTS_MIN} and {MAX_RESULTS_MAX}"}
        )
    if problems:
        raise InvalidRequestError("A parameter is out of bounds.", {"fields": problems})


def _legs_for(mode: SearchMode, *, has_terms: bool) -> frozenset[Leg]:
    """The legs to run: the mode's, without the lexical leg when the query has no term to match."""
    legs = legs_for(mode)
    return legs if has_terms else legs - {Leg.LEXICAL}


def _leg_reports(mode: SearchMode, terms: int, hits: LegHits) -> LegReports:
    """What each leg of the mode had to work with: a leg the mode does not use is ``None``."""
    legs = legs_for(mode)
    lexical = LexicalLegReport(terms=terms, candidates=_items(hits.lexical))
    semantic = SemanticLegReport(candidates=_items(hits.semantic))
    return LegReports(
        lexical=lexical if Leg.LEXICAL in legs else None,
        semantic=semantic if Leg.SEMANTIC in legs else None,
    )


def _items_of_history(hits: LegHits) -> LegHits:
    """History hits with their item ids in place of their history keys (``{item}@{state}``): at one
    moment an item has at most one valid state, so an item id stays unique among a leg's items."""

    def mapped(found: Sequence[ChunkHit]) -> list[ChunkHit]:
        return [hit._replace(knowledge_item_id=item_of_history_key(hit.knowledge_item_id)) for hit in found]

    return LegHits(lexical=mapped(hits.lexical), semantic=mapped(hits.semantic), failed=hits.failed)


def _items(hits: Sequence[ChunkHit]) -> int:
    return len({hit.knowledge_item_id for hit in hits})


def _result(entry: Accepted, query: str) -> SearchResult:
    hit, revision = entry.hit, entry.revision
    excerpt = make_excerpt(hit.chunk.text, hit.chunk.start, query, max_chars=EXCERPT_MAX_CHARS)
    return SearchResult(
        knowledge_base_id=hit.knowledge_base_id,
        knowledge_item_id=hit.knowledge_item_id,
        knowledge_revision_id=hit.knowledge_revision_id,
        title=revision.title,
        excerpt=excerpt.text,
        locator=Locator.within(
            revision.segments, excerpt.start, excerpt.end - excerpt.start, focus=excerpt.focus
        ),
        source=SourceRef(uri=revision.source.uri, title=revision.source.title),
        citation=citation(
            revision.title,
            revision.source.title,
            revision.source.uri,
            revision.knowledge_revision_id,
            revision.published_at,
        ),
        reference=reference(
            hit.knowledge_base_id,
            hit.knowledge_item_id,
            hit.knowledge_revision_id,
            excerpt.start,
            excerpt.end,
        ),
        published_at=revision.published_at,
        duplicate_item_ids=list(entry.duplicates),
        scores=scores_of(hit.final, hit.lexical, hit.semantic),
    )
