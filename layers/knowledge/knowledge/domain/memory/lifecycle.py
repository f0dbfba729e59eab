"""What each change does to a note (DESIGN §9), as pure functions every store and service shares.

Every change yields the next version (``version + 1``, ``updated_at = now``) and clears
``indexed_version``, since the index holds an older version until the indexer catches up. A version
is immutable once written; only redaction rewrites the content of old versions.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from knowledge.domain import ids
from knowledge.domain.memory.notes import REDACTED, ForgetMode, MemoryType, Note, NoteClaim, NoteStatus
from knowledge.domain.models import Scope

MAX_NOTE_WRITES = 20
"""Notes one commit may change (a new note and the notes it supersedes), so that a commit fits in
one DynamoDB transaction (100 items) with every version record and claim."""


@dataclass(frozen=True)
class NoteDraft:
    """The fields a writer chooses, fully resolved (defaults applied, ``path`` normalized)."""

    content: str
    scope: Scope
    team_id: str | None
    agent_id: str | None
    path: str
    memory_type: MemoryType
    importance: float
    semantic_key: str | None
    expires_at: datetime | None


@dataclass(frozen=True)
class NoteWrite:
    """One note of a commit (``NoteStore.commit_notes``): ``note`` replaces ``previous`` (``None``
    for a new note), taking or keeping the claims of ``claim`` and letting go of ``release``."""

    previous: Note | None
    note: Note
    claim: tuple[NoteClaim, ...] = ()
    release: tuple[NoteClaim, ...] = ()


def draft_of(note: Note) -> NoteDraft:
    """The writer's fields of ``note``, to merge a change into or to compare one with."""
    return NoteDraft(
        content=note.content,
        scope=note.scope,
        team_id=note.team_id,
        agent_id=note.agent_id,
        path=note.path,
        memory_type=note.memory_type,
        importance=note.importance,
        semantic_key=note.semantic_key,
        expires_at=note.expires_at,
    )


def new_note(
    tenant_id: str, owner_id: str, draft: NoteDraft, *, supersedes: Iterable[str], now: datetime
) -> Note:
    """A new active note at version 1 with a fresh ``nt_`` id."""
    return Note(
        tenant_id=tenant_id,
        note_id=ids.new_note_id(),
        version=1,
        owner_id=owner_id,
        supersedes=tuple(dict.fromkeys(supersedes)),
        created_at=now,
        updated_at=now,
        **asdict(draft),
    )


def revised_note(note: Note, draft: NoteDraft, *, supersedes: Iterable[str], now: datetime) -> Note:
    """``note`` with ``draft``'s fields and ``supersedes`` added to its own, at the next version."""
    merged = tuple(dict.fromkeys([*note.supersedes, *supersedes]))
    return _next(note, now, {**asdict(draft), "supersedes": merged})


def is_unchanged(note: Note, draft: NoteDraft, supersedes: Iterable[str]) -> bool:
    """True when writing ``draft`` (and ``supersedes``) would change nothing of ``note``."""
    return draft_of(note) == draft and set(supersedes) <= set(note.supersedes)


def superseded_note(note: Note, by: str, *, now: datetime) -> Note:
    """``note`` superseded by the note ``by``: it leaves search and recall, readable by id."""
    return _next(note, now, {"superseded_by": by})


def forgotten_note(note: Note, mode: ForgetMode, *, now: datetime) -> Note:
    """``note`` forgotten ``soft`` (restorable) or ``redact`` (its content replaced); ``hard``
    forgetting deletes instead, so it has no next version."""
    if mode is ForgetMode.HARD:
        raise ValueError("a hard forget deletes the note; it has no next version")
    changes: dict[str, Any] = {"status": NoteStatus.FORGOTTEN, "forgotten_mode": mode}
    if mode is ForgetMode.REDACT:
        changes["content"] = REDACTED
    return _next(note, now, changes)


def restored_note(note: Note, *, now: datetime) -> Note:
    """A softly forgotten ``note`` active again."""
    return _next(note, now, {"status": NoteStatus.ACTIVE, "forgotten_mode": None})


def redacted(version: Note) -> Note:
    """A stored version with its content replaced by ``[redacted]`` (its version number stays)."""
    return version.model_copy(update={"content": REDACTED})


def _next(note: Note, now: datetime, changes: dict[str, Any]) -> Note:
    return note.model_copy(
        update={**changes, "version": note.version + 1, "updated_at": now, "indexed_version": None}
    )
