"""The ``search_memory`` use case (DESIGN §9): the knowledge search's legs, filters, fusion and
read-time truth over the caller's notes, never over knowledge.

The rounds are ``retrieval.retrieve``'s, as ``search_knowledge``'s: each leg returns
``CANDIDATE_DEPTH`` (200) notes whatever ``limit`` is, already filtered (``NoteFilter``: visible,
narrowed by the arguments, unexpired, not superseded unless asked); ``fuse_notes`` ranks them as
``fusion.fuse`` ranks items; then every candidate is checked against the store (batched, the one
note truth rule ``domain.memory.retrieval.holds``): the note exists, is admitted by the filter now,
and the index held its current version. Stale candidates are dropped; when the answer is short and
a leg came back full, the legs are asked once more at ``retrieval.REFILL_DEPTH`` (1,000), and the
deeper round's page replaces the first's.

Read-your-own-writes: the caller's notes written but not indexed yet (``NoteStore.
list_unindexed_notes``, up to ``PENDING_INDEX_LIMIT``) are counted in every answer
(``pending_index``); with ``consistent: true`` those the filter admits also join each round, scored
by the index's own rules (``NoteIndex.score_notes``: its analysis and BM25 statistics, the cosine of
their embeddings, which are computed for them) and merged into each leg in place of whatever older
version the index holds, before fusion and the same truth check.

A hybrid search whose semantic leg fails (the embedder, or the index's k-NN leg) is answered by its
lexical leg alone with ``degraded: true``, as ``search_knowledge`` is.

Errors: ``RuntimeDisabledError``, ``InsufficientScopeError`` (``memory:read``),
``MemoryInvalidRequestError`` (blank query, ``limit`` outside 1–50), ``DependencyUnavailableError``.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from knowledge.contract.memory import MemorySearchResponse, MemorySearchResult, SearchMemoryArguments
from knowledge.contract.search import MAX_RESULTS_MAX, MAX_RESULTS_MIN, PENDING_INDEX_LIMIT, PendingIndex
from knowledge.domain.memory.notes import MemoryType, Note, normalize_path
from knowledge.domain.memory.retrieval import (
    FusedNote,
    NoteFilter,
    NoteLegHits,
    NoteQuery,
    admits,
    fuse_notes,
    holds,
    with_unindexed,
)
from knowledge.domain.models import Permission, Principal, Scope
from knowledge.domain.retrieval.hits import Leg, SearchMode
from knowledge.errors import DependencyUnavailableError, MemoryInvalidRequestError, RuntimeDisabledError
from knowledge.observability import logger
from knowledge.ports import Clock, Embedder, NoteIndex, NoteStore, RuntimeSwitch
from knowledge.services.access import require_scope
from knowledge.services.note_indexing import indexed_note
from knowledge.services.notes import view
from knowledge.services.retrieval import Round, legs_for, normalize_mode, retrieve, scores_of


class MemorySearchService:
    """Runs ``search_memory`` for an authenticated principal. Thread-safe if its ports are."""

    def __init__(
        self,
        store: NoteStore,
        index: NoteIndex,
        embedder: Embedder,
        runtime_switch: RuntimeSwitch,
        clock: Clock,
    ) -> None:
        self._store = store
        self._index = index
        self._embedder = embedder
        self._switch = runtime_switch
        self._clock = clock

    def search_memory(self, principal: Principal, arguments: SearchMemoryArguments) -> MemorySearchResponse:
        if not self._switch.is_enabled():
            raise RuntimeDisabledError()
        require_scope(principal, Permission.MEMORY_READ)
        query = arguments.query.strip()
        problems = []
        if not query:
            problems.append({"field": "query", "problem": "must not be blank"})
        if not MAX_RESULTS_MIN <= arguments.limit <= MAX_RESULTS_MAX:
            problems.append(
                {"field": "limit", "problem": f"must be between {MAX_RESULTS_MIN} and {MAX_RESULTS_MAX}"}
            )
        if problems:
            raise MemoryInvalidRequestError(
                "A search_memory argument is out of bounds.", {"fields": problems}
            )
        mode = normalize_mode(arguments.mode)
        alpha = min(1.0, max(0.0, arguments.alpha))
        note_filter = note_filter_for(
            principal,
            scope=arguments.scope,
            team_id=arguments.team_id,
            agent_id=arguments.agent_id,
            memory_type=arguments.memory_type,
            path_prefix=arguments.path_prefix,
            include_superseded=arguments.include_superseded,
            now=self._clock(),
        )
        pending = self.unindexed(principal)
        accepted, degraded = self.ranked(
            query, note_filter, mode, alpha, arguments.limit, pending if arguments.consistent else ()
        )
        results = [_result(hit, note, arguments.explain) for hit, note in accepted]
        logger.info(
            "memory searched",
            extra={"mode": mode.value, "results": len(results), "tenant_id": principal.tenant_id},
        )
        return MemorySearchResponse(
            query=arguments.query,
            mode=mode.value,
            alpha=alpha,
            results=results,
            degraded=degraded,
            pending_index=PendingIndex(writes=len(pending), included=arguments.consistent),
        )

    def unindexed(self, principal: Principal) -> list[Note]:
        """The caller's own notes the index has not taken at their current version yet, as stored
        now (up to ``PENDING_INDEX_LIMIT``)."""
        return self._store.list_unindexed_notes(
            principal.tenant_id, principal.subject_id, limit=PENDING_INDEX_LIMIT
        )

    def ranked(
        self,
        query: str,
        note_filter: NoteFilter,
        mode: SearchMode,
        alpha: float,
        wanted: int,
        unindexed: Sequence[Note] = (),
    ) -> tuple[list[tuple[FusedNote, Note]], bool]:
        """The best ``wanted`` notes for ``query`` (non-blank) under ``note_filter`` (whose caller it
        names), truth-checked against the store, with their fused scores, best first; and whether
        the search degraded: a hybrid search whose semantic leg failed (the embedder, or the index's
        k-NN leg) is answered by its lexical leg alone, ``(notes, True)`` (``retrieval.retrieve``).
        ``unindexed`` notes (stored, not indexed yet) that the filter admits are ranked with the
        indexed ones (see the module docs)."""
        index = self._index
        pending = [note for note in unindexed if admits(note_filter, note)]
        vectors: dict[str, list[float]] = {}

        def search(round_: Round) -> NoteLegHits:
            note_query = NoteQuery(
                text=query,
                vector=round_.vector,
                filter=note_filter,
                k=round_.k,
                legs=round_.legs,
                tolerate=round_.tolerate,
            )
            hits = index.search(note_query)
            if not pending:
                return hits
            legs = note_query.legs - {hits.failed} if hits.failed is not None else note_query.legs
            if Leg.SEMANTIC in legs and not vectors:
                vectors.update(self._embedded(pending))
            scored = index.score_notes(
                note_query.model_copy(update={"legs": legs}),
                [indexed_note(note, vectors.get(note.note_id, [])) for note in pending],
            )
            return with_unindexed(hits, scored, {note.note_id for note in pending}, note_query.k)

        retrieval = retrieve(
            self._embedder,
            query,
            legs_for(mode),
            wanted,
            search,
            lambda: NotePage(self._store, note_filter, mode, alpha, wanted),
        )
        if retrieval.degraded:
            logger.warning("memory search degraded to its lexical leg", extra={"mode": mode.value})
        return retrieval.page.accepted[:wanted], retrieval.degraded

    def _embedded(self, notes: Sequence[Note]) -> dict[str, list[float]]:
        """The embeddings of ``notes``' contents by note id; an embedder failure is the semantic
        leg's (``details.leg``), so a hybrid search degrades to its lexical leg."""
        try:
            vectors = self._embedder.embed([note.content for note in notes])
        except DependencyUnavailableError as error:
            raise DependencyUnavailableError(
                "The embedding model could not embed the unindexed notes.", {"leg": Leg.SEMANTIC.value}
            ) from error
        return {note.note_id: vector for note, vector in zip(notes, vectors, strict=True)}


class NotePage:
    """The page of a note search being filled (``retrieval.Page``): each round's hits are fused by
    ``mode`` and ``alpha`` and truth-checked in batches (``domain.memory.retrieval.holds``: stored,
    admitted by ``note_filter``, at the version the index held); a deeper round replaces the page."""

    def __init__(
        self, store: NoteStore, note_filter: NoteFilter, mode: SearchMode, alpha: float, wanted: int
    ) -> None:
        self._store = store
        self._filter = note_filter
        self._mode = mode
        self._alpha = alpha
        self._wanted = wanted
        self.accepted: list[tuple[FusedNote, Note]] = []

    def add(self, hits: NoteLegHits) -> int:
        """Fuse one round and keep its true notes, up to ``wanted``; returns how many are kept."""
        self.accepted = self._truth_check(fuse_notes(hits, self._mode, self._alpha))
        return len(self.accepted)

    def _truth_check(self, fused: Sequence[FusedNote]) -> list[tuple[FusedNote, Note]]:
        accepted: list[tuple[FusedNote, Note]] = []
        batch_size = max(self._wanted, 25)
        for start in range(0, len(fused), batch_size):
            batch = fused[start : start + batch_size]
            notes = self._store.get_notes(self._filter.tenant_id, [hit.note_id for hit in batch])
            for hit in batch:
                note = notes.get(hit.note_id)
                if note is not None and holds(self._filter, note, hit.version):
                    accepted.append((hit, note))
                    if len(accepted) >= self._wanted:
                        return accepted
        return accepted


def note_filter_for(
    principal: Principal,
    *,
    scope: str | None,
    team_id: str | None,
    agent_id: str | None,
    memory_type: str | None,
    path_prefix: str | None,
    include_superseded: bool,
    now: datetime,
) -> NoteFilter:
    """The ``NoteFilter`` of a memory read's arguments (``path_prefix`` normalized)."""
    return NoteFilter(
        tenant_id=principal.tenant_id,
        subject_id=principal.subject_id,
        team_ids=principal.team_ids,
        scope=Scope(scope) if scope else None,
        team_id=team_id,
        agent_id=agent_id,
        memory_type=MemoryType(memory_type) if memory_type else None,
        path_prefix=normalize_path(path_prefix) if path_prefix is not None else None,
        include_superseded=include_superseded,
        now=now,
    )


def _result(hit: FusedNote, note: Note, explain: bool) -> MemorySearchResult:
    shared = view(note).model_dump(include=set(MemorySearchResult.model_fields))
    return MemorySearchResult(
        **shared,
        score=hit.final,
        scores=scores_of(hit.final, hit.lexical, hit.semantic) if explain else None,
    )
