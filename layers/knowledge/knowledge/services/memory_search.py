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

With ``as_of`` (DESIGN §10 "Time") the legs run on the note history index instead (every version
with its validity interval, ``NoteFilter.as_of``), expiry is judged at that moment, and the truth
check reads the versions themselves (``domain.as_of.held_at``): the version was the note's then and
admitted then, the note still exists unredacted, and the caller may see it today.

Read-your-own-writes: the caller's notes written but not indexed yet (``NoteStore.
list_unindexed_notes``, up to ``PENDING_INDEX_LIMIT``) are counted in every answer
(``pending_index``); with ``consistent: true`` those the filter admits also join each round, scored
by the index's own rules (``NoteIndex.score_notes``: its analysis and BM25 statistics, the cosine of
their embeddings, which are computed for them) and merged into each leg in place of whatever older
version the index holds, before fusion and the same truth check.

A hybrid search whose semantic leg fails (the embedder, or the index's k-NN leg) is answered by its
lexical leg alone with ``degraded: true``, as ``search_knowledge`` is.

Errors: ``RuntimeDisabledError``, ``InsufficientScopeError`` (``memory:read``),
``MemoryInvalidRequestError`` (blank query, ``limit`` outside 1–50), ``AsOfInvalidError`` (an
``as_of`` without a zone or in the future), ``DependencyUnavailableError``.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from datetime import datetime

from knowledge.contract.memory import (
    NOTES_LIMIT_MAX,
    MemorySearchResponse,
    MemorySearchResult,
    NoteListResponse,
    SearchMemoryArguments,
)
from knowledge.contract.search import MAX_RESULTS_MAX, MAX_RESULTS_MIN, PENDING_INDEX_LIMIT, PendingIndex
from knowledge.domain.as_of import held_at, resolve_as_of
from knowledge.domain.memory.notes import MemoryType, Note, normalize_path
from knowledge.domain.memory.pins import pins_at
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
from knowledge.ports import Clock, Embedder, MemoryStore, NoteIndex, RuntimeSwitch
from knowledge.services.access import require_scope
from knowledge.services.note_indexing import indexed_note
from knowledge.services.notes import view
from knowledge.services.retrieval import Round, legs_for, normalize_mode, retrieve, scores_of


class MemorySearchService:
    """Runs ``search_memory`` for an authenticated principal. Thread-safe if its ports are."""

    def __init__(
        self,
        store: MemoryStore,
        index: NoteIndex,
        embedder: Embedder,
        runtime_switch: RuntimeSwitch,
        clock: Clock,
        history: Callable[[], NoteIndex] | None = None,
    ) -> None:
        """``history`` gives the note history index on first use (only ``as_of`` reads need it, so
        a cold start without one never opens it)."""
        self._store = store
        self._index = index
        self._history = history
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
        now = self._clock()
        as_of = resolve_as_of(arguments.as_of, now)
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
            now=now,
            as_of=as_of,
        )
        pending = self.unindexed(principal)
        # As of a past moment, notes not indexed yet are newer than it: consistent adds nothing.
        included = arguments.consistent and as_of is None
        accepted, degraded = self.ranked(
            query, note_filter, mode, alpha, arguments.limit, pending if included else ()
        )
        if as_of is not None:
            pinned = self.pinned_at(principal.tenant_id, as_of)
            accepted = [
                (hit, note.model_copy(update={"pinned": note.note_id in pinned})) for hit, note in accepted
            ]
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
            as_of=as_of,
            pending_index=PendingIndex(writes=len(pending), included=included),
        )

    def list_notes(
        self,
        principal: Principal,
        *,
        path_prefix: str | None = None,
        memory_type: str | None = None,
        scope: str | None = None,
        include_superseded: bool = False,
        limit: int = NOTES_LIMIT_MAX,
    ) -> NoteListResponse:
        """Up to ``limit`` (1–200) of the caller's visible notes under the filters, as the note index
        holds them (``NoteIndex.browse``: importance, then recency, then id), each checked against
        the store at its current version as a search's results are. Raises ``RuntimeDisabledError``,
        ``InsufficientScopeError`` (``memory:read``), ``MemoryInvalidRequestError`` (``limit``)."""
        if not self._switch.is_enabled():
            raise RuntimeDisabledError()
        require_scope(principal, Permission.MEMORY_READ)
        if not 1 <= limit <= NOTES_LIMIT_MAX:
            raise MemoryInvalidRequestError(
                "A notes listing argument is out of bounds.",
                {"fields": [{"field": "limit", "problem": f"must be between 1 and {NOTES_LIMIT_MAX}"}]},
            )
        note_filter = note_filter_for(
            principal,
            scope=scope,
            team_id=None,
            agent_id=None,
            memory_type=memory_type,
            path_prefix=path_prefix,
            include_superseded=include_superseded,
            now=self._clock(),
        )
        return NoteListResponse(notes=[view(note) for note in self.browsed(note_filter, limit)])

    def browsed(self, note_filter: NoteFilter, k: int, *, skip: Collection[str] = ()) -> list[Note]:
        """Up to ``k`` notes of the note index's browse order (``NoteIndex.browse``) but those in
        ``skip``, each as stored now and kept only while the filter admits it and the index held
        its current version (``holds``)."""
        hits = [hit for hit in self._index.browse(note_filter, k) if hit.note_id not in skip]
        notes = self._store.get_notes(note_filter.tenant_id, [hit.note_id for hit in hits])
        return [
            note
            for hit in hits
            if (note := notes.get(hit.note_id)) is not None and holds(note_filter, note, hit.version)
        ]

    def unindexed(self, principal: Principal) -> list[Note]:
        """The caller's own notes the index has not taken at their current version yet, as stored
        now (up to ``PENDING_INDEX_LIMIT``)."""
        return self._store.list_unindexed_notes(
            principal.tenant_id, principal.subject_id, limit=PENDING_INDEX_LIMIT
        )

    def pinned_at(self, tenant_id: str, moment: datetime) -> set[str]:
        """The ids of the tenant's notes that carried a pin at ``moment``."""
        return {pin.note_id for pin in pins_at(self._store.pin_changes(tenant_id, moment), moment)}

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
        With ``note_filter.as_of``, the notes are the versions current then (the history index).
        ``unindexed`` notes (stored, not indexed yet) that the filter admits are ranked with the
        indexed ones (see the module docs)."""
        index = self.index_for(note_filter)
        page_type = NotePage if note_filter.as_of is None else AsOfNotePage
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
            lambda: page_type(self._store, note_filter, mode, alpha, wanted),
        )
        if retrieval.degraded:
            logger.warning("memory search degraded to its lexical leg", extra={"mode": mode.value})
        return retrieval.page.accepted[:wanted], retrieval.degraded

    def index_for(self, note_filter: NoteFilter) -> NoteIndex:
        """The index a read of ``note_filter`` searches: the history index for an ``as_of``."""
        if note_filter.as_of is None:
            return self._index
        if self._history is None:
            raise ValueError("answers as of a moment need a note history index")
        return self._history()

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
        self, store: MemoryStore, note_filter: NoteFilter, mode: SearchMode, alpha: float, wanted: int
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


class AsOfNotePage(NotePage):
    """``NotePage`` for a search as of ``note_filter.as_of``: each hit is the version the history
    index held, checked by ``domain.as_of.held_at`` against the note now and its versions (one
    batched read of the notes, one of the versions found and the versions after them)."""

    def _truth_check(self, fused: Sequence[FusedNote]) -> list[tuple[FusedNote, Note]]:
        accepted: list[tuple[FusedNote, Note]] = []
        batch_size = max(self._wanted, 25)
        for start in range(0, len(fused), batch_size):
            batch = fused[start : start + batch_size]
            held = held_versions(self._store, self._filter, [(hit.note_id, hit.version) for hit in batch])
            for hit in batch:
                version = held.get(hit.note_id)
                if version is not None and version.version == hit.version:
                    accepted.append((hit, version))
                    if len(accepted) >= self._wanted:
                        return accepted
        return accepted


def held_versions(
    store: MemoryStore, note_filter: NoteFilter, found: Sequence[tuple[str, int]]
) -> dict[str, Note]:
    """The versions among ``found`` (``(note_id, version)`` a history index held) that hold as of
    ``note_filter.as_of`` (``domain.as_of.held_at``), by note id: one batched read of the notes and
    one of those versions and the versions after them."""
    if not found:
        return {}
    tenant_id = note_filter.tenant_id
    notes = store.get_notes(tenant_id, [note_id for note_id, _ in found])
    versions = store.get_note_versions(
        tenant_id, [(note_id, version + step) for note_id, version in found for step in (0, 1)]
    )
    held: dict[str, Note] = {}
    for note_id, number in found:
        version = versions.get((note_id, number))
        following = versions.get((note_id, number + 1))
        if version is not None and held_at(note_filter, notes.get(note_id), version, following):
            held[note_id] = version
    return held


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
    as_of: datetime | None = None,
) -> NoteFilter:
    """The ``NoteFilter`` of a memory read's arguments (``path_prefix`` normalized); with ``as_of``,
    as of that moment (``now`` is then the moment too, for expiry)."""
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
        now=as_of or now,
        as_of=as_of,
    )


def _result(hit: FusedNote, note: Note, explain: bool) -> MemorySearchResult:
    shared = view(note).model_dump(include=set(MemorySearchResult.model_fields))
    return MemorySearchResult(
        **shared,
        score=hit.final,
        scores=scores_of(hit.final, hit.lexical, hit.semantic) if explain else None,
    )
