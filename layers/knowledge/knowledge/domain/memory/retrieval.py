"""Value types of note retrieval (DESIGN §9), shared by the note index adapters and ``search_memory``.

A note is indexed whole, one document at its current version; superseded notes stay in the index
(``include_superseded`` finds them) and forgotten ones leave it. A note history index (DESIGN §11)
holds one document per active version with its validity interval, for ``NoteFilter.as_of``. Every
filter of ``NoteFilter`` applies inside each leg, before ranking, so hidden notes never take a top-k
slot.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from knowledge.domain.memory.notes import MemoryType, Note, can_see_note_of, path_ancestors
from knowledge.domain.models import Scope
from knowledge.domain.retrieval.fusion import LegScore, fuse_hits
from knowledge.domain.retrieval.hits import Hit, Leg, SearchMode


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class IndexedNote(_Frozen):
    """What a note index stores of one note version: its filters, its text and its embedding
    (L2-normalized). ``version`` is the note's version; an index never lets a lower one replace a
    higher one."""

    tenant_id: str
    note_id: str
    version: int = Field(ge=1)
    owner_id: str
    team_id: str | None = None
    scope: Scope
    agent_id: str | None = None
    memory_type: MemoryType
    path: str
    content: str
    importance: float = Field(default=0.5, ge=0.0, le=1.0)
    updated_at: datetime | None = None
    """When this version was written (``browse`` orders by it)."""
    superseded: bool = False
    expires_at: datetime | None = None
    vector: list[float]
    valid_from: datetime | None = None
    """In a history index: when this version became the note's version (``None``: always)."""
    valid_to: datetime | None = None
    """In a history index: when the next version replaced it (``None``: it is still current)."""


class NoteFilter(_Frozen):
    """Which notes a search may return: the caller's visible notes (``can_see_note``: tenant, then
    own, ``tenant``-scoped, or ``team``-scoped with one of ``team_ids``), narrowed by the optional
    filters (each equal to the note's field), unexpired at ``now``, and not superseded unless
    ``include_superseded``. ``path_prefix`` (normalized) matches the path itself and every path
    below it (``notes.path_ancestors``). Each note index evaluates it inside both legs."""

    tenant_id: str
    subject_id: str
    team_ids: frozenset[str] = frozenset()
    scope: Scope | None = None
    team_id: str | None = None
    agent_id: str | None = None
    memory_type: MemoryType | None = None
    path_prefix: str | None = None
    include_superseded: bool = False
    now: datetime
    as_of: datetime | None = None
    """Answer as of this moment (a history index admits the versions valid then, and ``now`` is
    this moment too, for expiry); ``None``: now."""


def admits(note_filter: NoteFilter, note: Note) -> bool:
    """``note_filter``'s rule applied to a stored note (the note indexes apply it inside each leg):
    visible, narrowed by every given filter, active and unexpired at ``now``, and not superseded
    unless ``include_superseded``."""
    current = note.is_current(note_filter.now) or (
        note_filter.include_superseded and note.is_readable(note_filter.now)
    )
    narrowed = all(
        wanted is None or wanted == actual
        for wanted, actual in (
            (note_filter.scope, note.scope),
            (note_filter.team_id, note.team_id),
            (note_filter.agent_id, note.agent_id),
            (note_filter.memory_type, note.memory_type),
        )
    )
    under = note_filter.path_prefix is None or note_filter.path_prefix in path_ancestors(note.path)
    visible = can_see_note_of(note_filter.tenant_id, note_filter.subject_id, note_filter.team_ids, note)
    return current and narrowed and under and visible


def holds(note_filter: NoteFilter, note: Note, version: int | None = None) -> bool:
    """The read-time truth of a stored note a read found (search, recall, pins): admitted by
    ``note_filter`` now (``admits``: visible, narrowed, current or, when asked, superseded) and,
    when ``version`` is given (the version an index held), still at that version."""
    return (version is None or note.version == version) and admits(note_filter, note)


class NoteQuery(_Frozen):
    """One search of notes over both legs; ``k`` is the number of notes each leg returns."""

    text: str
    vector: list[float] | None = None
    filter: NoteFilter
    k: int = Field(ge=1)
    legs: frozenset[Leg] = frozenset({Leg.LEXICAL, Leg.SEMANTIC})
    tolerate: frozenset[Leg] = frozenset()
    """Legs whose failure by the engine is reported in ``NoteLegHits.failed`` rather than raised."""


class NoteHit(_Frozen):
    """A note returned by one leg at the version the index holds; ``score`` is BM25 (lexical) or
    cosine similarity in [-1, 1] (semantic)."""

    note_id: str
    version: int
    score: float


class NoteLegHits(_Frozen):
    """Each leg's hits, best first (ties by note id); a leg that was not run is empty. ``failed`` is
    the leg the engine failed (its list empty), when the query tolerated it (``NoteQuery.tolerate``)."""

    lexical: list[NoteHit] = []
    semantic: list[NoteHit] = []
    failed: Leg | None = None


def with_unindexed(hits: NoteLegHits, scored: NoteLegHits, unindexed: set[str], k: int) -> NoteLegHits:
    """One round's ``hits`` with ``scored`` (the hits of stored notes the index has not taken yet,
    ``NoteIndex.score_notes``) merged into each leg: any hit of a note among ``unindexed`` (an
    older version) gives way, the leg is ordered by score, then note id, and cut at ``k``."""

    def merged(held: Sequence[NoteHit], added: Sequence[NoteHit]) -> list[NoteHit]:
        kept = [hit for hit in held if hit.note_id not in unindexed] + list(added)
        return sorted(kept, key=lambda hit: (-hit.score, hit.note_id))[:k]

    return NoteLegHits(
        lexical=merged(hits.lexical, scored.lexical),
        semantic=merged(hits.semantic, scored.semantic),
        failed=hits.failed,
    )


class FusedNote(_Frozen):
    """One note after fusion: ``final`` and each leg's score (``None`` for a leg that did not return
    it), exactly as ``fusion.fuse`` scores an item."""

    note_id: str
    version: int
    final: float
    lexical: LegScore | None = None
    semantic: LegScore | None = None


def fuse_notes(legs: NoteLegHits, mode: SearchMode, alpha: float) -> list[FusedNote]:
    """Notes ranked by ``mode`` with the knowledge search's own fusion (``fusion.fuse_hits``: the same
    modes, min–max normalization, RRF k = 60 and tie-break by id), a note one document with one hit
    per leg; ``ValueError`` when ``alpha`` is NaN."""
    lexical = [Hit(hit.note_id, 0, hit.score) for hit in legs.lexical]
    semantic = [Hit(hit.note_id, 0, hit.score) for hit in legs.semantic]
    versions = {hit.note_id: hit.version for hit in [*legs.lexical, *legs.semantic]}
    return [
        FusedNote(
            note_id=fused.id,
            version=versions[fused.id],
            final=fused.final,
            lexical=fused.lexical,
            semantic=fused.semantic,
        )
        for fused in fuse_hits(lexical, semantic, mode, alpha)
    ]
