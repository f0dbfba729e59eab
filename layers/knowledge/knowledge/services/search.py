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
    KnowledgeReadResponse,
    KnowledgeSearchResponse,
    LegReports,
    LexicalLegReport,
    Locator,
    SearchKnowledgeArguments,
    SearchResult,
    SemanticLegReport,
    SourceRef,
)
from knowledge.domain import ids
from knowledge.domain.access.visibility import VisibilityFilter
from knowledge.domain.as_of import item_state_at, resolve_as_of
from knowledge.domain.bounds import INTEGER_MAX, OFFSET_MAX
from knowledge.domain.models import ItemStatus, KnowledgeBase, Permission, Principal, Revision
from knowledge.domain.retrieval.analysis import query_terms
from knowledge.domain.retrieval.excerpts import EXCERPT_MAX_CHARS, citation, make_excerpt, reference
from knowledge.domain.retrieval.hits import (
    ChunkHit,
    IndexQuery,
    Leg,
    LegHits,
    SearchMode,
    item_of_history_key,
)
from knowledge.domain.segments import page_offset
from knowledge.domain.text import is_blank
from knowledge.errors import (
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
    ) -> None:
        """``history`` opens the knowledge history index on the first ranked query with ``as_of``
        (``None``: such a query is refused)."""
        self._history = history
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

        def search(round_: Round) -> LegHits:
            hits = index.search(
                IndexQuery(
                    text=query,
                    vector=round_.vector,
                    visibility=visibility,
                    k=round_.k,
                    legs=round_.legs,
                    tolerate=round_.tolerate,
                    as_of=as_of,
                )
            )
            return hits if as_of is None else _items_of_history(hits)

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
        )

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
