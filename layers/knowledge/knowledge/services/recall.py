"""The ``recall_context`` use case (DESIGN §9): a context pack of the caller's notes inside a token
budget, never knowledge.

Read-your-own-writes: ``pending_index`` counts the caller's notes the index has not taken yet; with
``consistent: true`` they join the ranked candidates by ``search_memory``'s rules (with a query) or
by importance and recency (without one).

Candidates: every pin that applies to the caller under the arguments' filters (``PinService.
pinned_notes``, in pin order), then the best ``RECALL_CANDIDATES`` (50) other notes: with a
``query``, by ``search_memory``'s hybrid ranking (same legs, fusion and truth check); without one,
by importance, then recency (``NoteIndex.browse``, truth-checked the same way and ordered by the
stored values). Packing, rendering (each block names whose note it is: ``own`` or ``shared by`` its
owner) and token counting are ``domain.context_pack``'s; near-duplicates
are found on the embeddings of the notes' content (the vectors the note index was built from, read
through the embedder's cache).

The same state and arguments give the same pack: every order breaks ties by note id.

With ``as_of`` (DESIGN §10 "Time") the pack is the one the caller would have got then: the pins as
they stood (the pin history, ``domain.memory.pins.pins_at``) on the versions current then, and the
ranked or browsed notes from the note history index, truth-checked as ``search_memory`` does
(``memory_search.held_versions``), with today's authorization.

Errors: ``RuntimeDisabledError``, ``InsufficientScopeError`` (``memory:read``),
``MemoryInvalidRequestError`` (``max_tokens`` outside 64–8,000, ``max_items`` outside 1–50),
``AsOfInvalidError``, ``DependencyUnavailableError``.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from knowledge.contract.memory import (
    ContextBudget,
    ContextCoverage,
    ContextItem,
    DroppedNote,
    MemoryContextResponse,
    RecallContextArguments,
    recall_problems,
)
from knowledge.contract.search import PendingIndex
from knowledge.domain.as_of import held_at, resolve_as_of, version_at
from knowledge.domain.memory.context_pack import TOKENIZER, Candidate, TokenCounter, pack
from knowledge.domain.memory.notes import VERSIONS_LIMIT_MAX, Note
from knowledge.domain.memory.pins import pins_at
from knowledge.domain.memory.retrieval import NoteFilter, holds
from knowledge.domain.models import Permission, Principal
from knowledge.domain.retrieval.hits import SearchMode
from knowledge.errors import MemoryInvalidRequestError
from knowledge.observability import logger
from knowledge.ports import Clock, Embedder, MemoryStore, NoteIndex
from knowledge.services.memory_search import MemorySearchService, held_versions, note_filter_for
from knowledge.services.notes import NoteService
from knowledge.services.pins import PinService

RECALL_CANDIDATES = 50
"""Ranked notes considered after the pins (the most ``max_items`` may ask for)."""
HYBRID_ALPHA = 0.5


class RecallService:
    """Runs ``recall_context`` for an authenticated principal; ``count_tokens`` is tiktoken's
    ``cl100k_base`` count of a text. Thread-safe if its ports are."""

    def __init__(
        self,
        store: MemoryStore,
        index: NoteIndex,
        embedder: Embedder,
        notes: NoteService,
        pins: PinService,
        memory_search: MemorySearchService,
        count_tokens: TokenCounter,
        clock: Clock,
    ) -> None:
        self._store = store
        self._index = index
        self._embedder = embedder
        self._notes = notes
        self._pins = pins
        self._search = memory_search
        self._count = count_tokens
        self._clock = clock

    def recall_context(
        self, principal: Principal, arguments: RecallContextArguments
    ) -> MemoryContextResponse:
        self._notes.authorize(principal, Permission.MEMORY_READ)
        problems = recall_problems(arguments)
        if problems:
            raise MemoryInvalidRequestError(
                "A recall_context argument is out of bounds.", {"fields": problems}
            )
        now = self._clock()
        as_of = resolve_as_of(arguments.as_of, now)
        note_filter = note_filter_for(
            principal,
            scope=arguments.scope,
            team_id=arguments.team_id,
            agent_id=arguments.agent_id,
            memory_type=arguments.memory_type,
            path_prefix=arguments.path_prefix,
            include_superseded=False,
            now=now,
            as_of=as_of,
        )
        if as_of is None:
            pinned = [note for _, note in self._pins.pinned_notes(note_filter)]
        else:
            pinned = self._pinned_at(note_filter)
        query = (arguments.query or "").strip()
        unindexed = self._search.unindexed(principal)
        # As of a past moment, notes not indexed yet are newer than it: consistent adds nothing.
        included = arguments.consistent and as_of is None
        ranked = self._ranked(
            query,
            note_filter,
            exclude={note.note_id for note in pinned},
            unindexed=unindexed if included else (),
        )
        vectors = self._embedder.embed(
            [note.content for note in pinned] + [note.content for note, _ in ranked]
        )
        pins = [Candidate(note, True, None, vector) for note, vector in zip(pinned, vectors, strict=False)]
        others = [
            Candidate(note, False, score, vector)
            for (note, score), vector in zip(ranked, vectors[len(pinned) :], strict=True)
        ]
        result = pack(
            pins,
            others,
            max_tokens=arguments.max_tokens,
            max_items=arguments.max_items,
            count=self._count,
            viewer=principal.subject_id,
        )
        logger.info(
            "context recalled",
            extra={
                "tenant_id": principal.tenant_id,
                "candidates": len(pins) + len(others),
                "included": len(result.included),
                "used_tokens": result.used_tokens,
            },
        )
        return MemoryContextResponse(
            text=result.text,
            items=[
                ContextItem(
                    note_id=packed.candidate.note.note_id,
                    version=packed.candidate.note.version,
                    path=packed.candidate.note.path,
                    memory_type=packed.candidate.note.memory_type.value,
                    scope=packed.candidate.note.scope.value,
                    owner_id=packed.candidate.note.owner_id,
                    own=packed.candidate.note.owner_id == principal.subject_id,
                    pinned=packed.candidate.pinned,
                    tokens=packed.tokens,
                    score=packed.candidate.score,
                )
                for packed in result.included
            ],
            budget=ContextBudget(
                max_tokens=arguments.max_tokens,
                used_tokens=result.used_tokens,
                tokenizer=TOKENIZER,
                max_items=arguments.max_items,
            ),
            coverage=ContextCoverage(
                candidates=len(pins) + len(others),
                included=len(result.included),
                dropped=[DroppedNote(note_id=note_id, reason=reason) for note_id, reason in result.dropped],
            ),
            as_of=as_of,
            pending_index=PendingIndex(writes=len(unindexed), included=included),
        )

    def _pinned_at(self, note_filter: NoteFilter) -> list[Note]:
        """The notes pinned as of ``note_filter.as_of`` that apply to its caller, in pin order, each
        at its version then (``held_at``)."""
        moment = note_filter.as_of
        assert moment is not None
        pins = pins_at(self._store.pin_changes(note_filter.tenant_id, moment), moment)
        if not pins:
            return []
        current = self._store.get_notes(note_filter.tenant_id, [pin.note_id for pin in pins])
        kept: list[Note] = []
        for pin in pins:
            versions = self._versions(note_filter.tenant_id, pin.note_id)
            version = version_at(versions, moment)
            if version is None:
                continue
            following = next((other for other in versions if other.version == version.version + 1), None)
            if held_at(note_filter, current.get(pin.note_id), version, following):
                kept.append(version.model_copy(update={"pinned": True}))
        return kept

    def _versions(self, tenant_id: str, note_id: str) -> list[Note]:
        versions: list[Note] = []
        next_token: str | None = None
        while True:
            page = self._store.list_note_versions(
                tenant_id, note_id, limit=VERSIONS_LIMIT_MAX, next_token=next_token
            )
            versions.extend(page.entries)
            next_token = page.next_token
            if next_token is None:
                return versions

    def _ranked(
        self, query: str, note_filter: NoteFilter, exclude: set[str], unindexed: Sequence[Note]
    ) -> list[tuple[Note, float]]:
        """The best ``RECALL_CANDIDATES`` notes that are not among ``exclude``, with their scores;
        ``unindexed`` notes (stored, not indexed yet) join the candidates by the same rules."""
        wanted = RECALL_CANDIDATES + len(exclude)
        if query:
            hits, _ = self._search.ranked(
                query, note_filter, SearchMode.HYBRID, HYBRID_ALPHA, wanted, unindexed
            )
            ranked = [(note, hit.final) for hit, note in hits]
        else:
            ranked = self._browsed(note_filter, wanted, unindexed)
        return [(note, score) for note, score in ranked if note.note_id not in exclude][:RECALL_CANDIDATES]

    def _browsed(
        self, note_filter: NoteFilter, wanted: int, unindexed: Sequence[Note]
    ) -> list[tuple[Note, float]]:
        """Without a query: admitted notes by importance, then recency, then id, as stored now (the
        index held their current version, or they are among ``unindexed`` and admitted)."""
        if note_filter.as_of is not None:
            hits = self._search.index_for(note_filter).browse(note_filter, wanted)
            held_then = held_versions(self._store, note_filter, [(hit.note_id, hit.version) for hit in hits])
            found = [version for hit in hits if (version := held_then.get(hit.note_id)) is not None]
            found.sort(key=_importance_then_recency)
            return [(version, version.importance) for version in found]
        pending = {note.note_id: note for note in unindexed if holds(note_filter, note)}
        kept = self._search.browsed(note_filter, wanted + len(pending), skip=pending.keys())
        kept.extend(pending.values())
        kept.sort(key=_importance_then_recency)
        del kept[wanted:]
        return [(note, note.importance) for note in kept]


def _importance_then_recency(note: Note) -> tuple[float, float, str]:
    return -note.importance, -_epoch(note.updated_at), note.note_id


def _epoch(moment: datetime) -> float:
    return moment.timestamp()
