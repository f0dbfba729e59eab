"""The ``search_knowledge`` use case: ranked query over current published revisions, or an addressed
read of one item/revision in bounded windows (spec + DESIGN §4–§5).

Errors (``knowledge.errors``): ``RuntimeDisabledError`` (switch off), ``InsufficientScopeError``
(no ``knowledge:read``), ``InvalidRequestError`` / ``QueryRequiredError`` / ``ItemRequiredError``
(request shape), ``ResourceUnavailableError`` (absent, unauthorized, inactive or unpublished — one
answer for all), ``DependencyUnavailableError`` (store, index or embedder down).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from knowledge.domain import ids
from knowledge.domain.contract import (
    LIMIT_CHARS_MAX,
    LIMIT_CHARS_MIN,
    MAX_RESULTS_MAX,
    MAX_RESULTS_MIN,
    MODES,
    KnowledgeReadResponse,
    KnowledgeSearchResponse,
    Locator,
    Scores,
    SearchKnowledgeArguments,
    SearchResult,
    SourceRef,
)
from knowledge.domain.excerpts import EXCERPT_MAX_CHARS, citation, make_excerpt, reference
from knowledge.domain.fusion import FusedHit, fuse
from knowledge.domain.models import (
    ItemStatus,
    KnowledgeBase,
    KnowledgeItem,
    Permission,
    Principal,
    Revision,
)
from knowledge.domain.retrieval import IndexQuery, Leg, SearchMode
from knowledge.domain.visibility import VisibilityFilter, can_see
from knowledge.errors import (
    InsufficientScopeError,
    InvalidRequestError,
    ItemRequiredError,
    QueryRequiredError,
    ResourceUnavailableError,
    RuntimeDisabledError,
)
from knowledge.observability import logger
from knowledge.ports import CorpusStore, Embedder, RuntimeSwitch, SearchIndex
from knowledge.services.access import find_base

MIN_CANDIDATES = 50
"""Each leg returns at least this many chunk candidates, and at least 4 × max_results (DESIGN §4)."""
MAX_CANDIDATES = 1_000
"""Over-fetch stops here: past it, a query is answered with the results found so far."""


@dataclass(frozen=True)
class _Accepted:
    hit: FusedHit
    item: KnowledgeItem
    base: KnowledgeBase


class SearchService:
    """Runs the tool for an authenticated principal. Thread-safe if its ports are."""

    def __init__(
        self, store: CorpusStore, index: SearchIndex, embedder: Embedder, runtime_switch: RuntimeSwitch
    ) -> None:
        self._store = store
        self._index = index
        self._embedder = embedder
        self._switch = runtime_switch

    def search_knowledge(
        self, principal: Principal, arguments: SearchKnowledgeArguments
    ) -> KnowledgeSearchResponse | KnowledgeReadResponse:
        """Answer one call: query mode when ``query`` is set, addressed read when an item id is."""
        if not self._switch.is_enabled():
            raise RuntimeDisabledError("The knowledge runtime is disabled; try again later.")
        if not principal.has_scope(Permission.READ):
            raise InsufficientScopeError(
                "The token lacks the knowledge:read scope.", {"required_scope": Permission.READ.value}
            )
        _check_bounds(arguments)
        query = arguments.query.strip()
        if query and (arguments.knowledge_item_id or arguments.knowledge_revision_id):
            raise InvalidRequestError(
                "query is mutually exclusive with knowledge_item_id and knowledge_revision_id."
            )
        if query:
            return self._query(principal, arguments, query)
        if arguments.knowledge_revision_id and not arguments.knowledge_item_id:
            raise ItemRequiredError("knowledge_revision_id requires knowledge_item_id.")
        if not arguments.knowledge_item_id:
            raise QueryRequiredError("Provide a query for ranked search or a knowledge_item_id to read.")
        return self._read(principal, arguments)

    # -- query mode -------------------------------------------------------------------------------

    def _query(
        self, principal: Principal, arguments: SearchKnowledgeArguments, query: str
    ) -> KnowledgeSearchResponse:
        mode = normalize_mode(arguments.mode)
        alpha = min(1.0, max(0.0, arguments.alpha))
        narrow_to = arguments.knowledge_base_id or None
        if narrow_to is not None:
            self._visible_base(principal, narrow_to)
        legs = _legs_for(mode)
        vector = self._embedder.embed([query])[0] if Leg.SEMANTIC in legs else None
        visibility = VisibilityFilter.for_principal(principal, narrow_to=narrow_to)
        accepted = self._ranked_candidates(
            principal, query, vector, visibility, legs, mode, alpha, arguments.max_results
        )
        revisions = self._store.get_revisions(
            principal.tenant_id,
            [(entry.item.knowledge_item_id, entry.hit.knowledge_revision_id) for entry in accepted],
        )
        results = [
            _result(entry, revisions[(entry.item.knowledge_item_id, entry.hit.knowledge_revision_id)], query)
            for entry in accepted
            if (entry.item.knowledge_item_id, entry.hit.knowledge_revision_id) in revisions
        ]
        logger.info(
            "knowledge searched",
            extra={"mode": mode.value, "results": len(results), "tenant_id": principal.tenant_id},
        )
        return KnowledgeSearchResponse(query=arguments.query, mode=mode.value, alpha=alpha, results=results)

    def _ranked_candidates(
        self,
        principal: Principal,
        query: str,
        vector: list[float] | None,
        visibility: VisibilityFilter,
        legs: frozenset[Leg],
        mode: SearchMode,
        alpha: float,
        wanted: int,
    ) -> list[_Accepted]:
        """Fused hits that pass the read-time truth check, best first, at most ``wanted``.

        Each round asks the index for ``k`` chunks per leg; when stale hits leave the list short and
        a leg came back full (more candidates may exist), ``k`` grows fourfold up to MAX_CANDIDATES.
        """
        k = max(MIN_CANDIDATES, 4 * wanted)
        while True:
            hits = self._index.search(
                IndexQuery(text=query, vector=vector, visibility=visibility, k=k, legs=legs)
            )
            fused = fuse(hits, mode, alpha)
            accepted = self._truth_check(principal, fused, wanted)
            exhausted = len(hits.lexical) < k and len(hits.semantic) < k
            if len(accepted) >= wanted or exhausted or k >= MAX_CANDIDATES:
                return accepted[:wanted]
            k = min(MAX_CANDIDATES, k * 4)

    def _truth_check(self, principal: Principal, fused: Sequence[FusedHit], wanted: int) -> list[_Accepted]:
        """Keep hits whose base is visible and active, whose item is published, and whose revision is
        the item's current one (DESIGN §4, read-time truth). Reads the store in batches."""
        accepted: list[_Accepted] = []
        batch_size = max(wanted, 25)
        for start in range(0, len(fused), batch_size):
            batch = fused[start : start + batch_size]
            items = self._store.get_items(principal.tenant_id, [hit.knowledge_item_id for hit in batch])
            bases = self._store.get_bases(
                principal.tenant_id, sorted({item.knowledge_base_id for item in items.values()})
            )
            for hit in batch:
                item = items.get(hit.knowledge_item_id)
                base = bases.get(item.knowledge_base_id) if item else None
                if item is None or base is None or not _is_current_hit(principal, hit, item, base):
                    continue
                accepted.append(_Accepted(hit=hit, item=item, base=base))
                if len(accepted) >= wanted:
                    return accepted
        return accepted

    # -- addressed read ---------------------------------------------------------------------------

    def _read(self, principal: Principal, arguments: SearchKnowledgeArguments) -> KnowledgeReadResponse:
        item_id = arguments.knowledge_item_id
        revision_id = arguments.knowledge_revision_id or None
        if not ids.is_well_formed(item_id, ids.ITEM_PREFIX) or (
            revision_id is not None and not ids.is_well_formed(revision_id, ids.REVISION_PREFIX)
        ):
            raise ResourceUnavailableError()
        item = self._store.get_item(principal.tenant_id, item_id)
        if item is None or item.status is not ItemStatus.PUBLISHED or item.current_revision_id is None:
            raise ResourceUnavailableError()
        if arguments.knowledge_base_id and arguments.knowledge_base_id != item.knowledge_base_id:
            raise ResourceUnavailableError()
        base = self._visible_base(principal, item.knowledge_base_id)
        revision = self._store.get_revision(
            principal.tenant_id, item_id, revision_id or item.current_revision_id
        )
        if revision is None or not revision.is_published:
            raise ResourceUnavailableError()
        if arguments.offset > revision.total_chars:
            raise InvalidRequestError(
                "offset is beyond the end of the revision.",
                {"offset": arguments.offset, "content_total_chars": revision.total_chars},
            )
        window = self._store.read_content(revision, offset=arguments.offset, limit=arguments.limit_chars)
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
            locator=Locator(offset=window.offset, length=len(window.text)),
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
            is_current=revision.knowledge_revision_id == item.current_revision_id,
            current_revision_id=item.current_revision_id,
        )

    def _visible_base(self, principal: Principal, knowledge_base_id: str) -> KnowledgeBase:
        return find_base(self._store, principal, knowledge_base_id)


def normalize_mode(mode: str) -> SearchMode:
    """One of the four modes (case and surrounding space ignored); anything else is ``hybrid``."""
    cleaned = mode.strip().lower()
    return SearchMode(cleaned) if cleaned in MODES else SearchMode.HYBRID


def _check_bounds(arguments: SearchKnowledgeArguments) -> None:
    """Bounds apply whatever the mode (DESIGN §5: out-of-mode parameters are still checked)."""
    problems = []
    if arguments.offset < 0:
        problems.append({"field": "offset", "problem": "must be 0 or more"})
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


def _legs_for(mode: SearchMode) -> frozenset[Leg]:
    if mode is SearchMode.LEXICAL:
        return frozenset({Leg.LEXICAL})
    if mode is SearchMode.SEMANTIC:
        return frozenset({Leg.SEMANTIC})
    return frozenset({Leg.LEXICAL, Leg.SEMANTIC})


def _is_current_hit(principal: Principal, hit: FusedHit, item: KnowledgeItem, base: KnowledgeBase) -> bool:
    return (
        item.status is ItemStatus.PUBLISHED
        and item.current_revision_id == hit.knowledge_revision_id
        and item.knowledge_base_id == hit.knowledge_base_id
        and can_see(principal, base)
    )


def _result(entry: _Accepted, revision: Revision, query: str) -> SearchResult:
    hit = entry.hit
    excerpt = make_excerpt(hit.chunk.text, hit.chunk.start, query, max_chars=EXCERPT_MAX_CHARS)
    lexical, semantic = hit.lexical, hit.semantic
    return SearchResult(
        knowledge_base_id=hit.knowledge_base_id,
        knowledge_item_id=hit.knowledge_item_id,
        knowledge_revision_id=hit.knowledge_revision_id,
        title=revision.title,
        excerpt=excerpt.text,
        locator=Locator(offset=excerpt.start, length=excerpt.end - excerpt.start),
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
        scores=Scores(
            final=hit.final,
            lexical=lexical.raw if lexical else None,
            lexical_normalized=lexical.normalized if lexical else None,
            lexical_rank=lexical.rank if lexical else None,
            semantic=semantic.raw if semantic else None,
            semantic_normalized=semantic.normalized if semantic else None,
            semantic_rank=semantic.rank if semantic else None,
        ),
    )
