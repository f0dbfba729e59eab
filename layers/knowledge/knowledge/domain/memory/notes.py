"""Notes: the durable facts an agent was asked to keep (DESIGN §9), and the rules every store and
service applies to them.

A note has immutable versions (every change is a new version, conditioned on the one read). Its
``path`` is a ``/``-separated topic: surrounding spaces and empty segments are dropped, so
``"projects//alpha/ "`` is ``/projects/alpha`` and the empty path is ``/``. A note is *current*
while it is active, not expired and not superseded: only current notes take part in search,
deduplication and claims.

Claims make two things unique among current notes, each a record held by one note at a time:

- the **key claim**: a ``semantic_key`` per tenant, owner and scope;
- the **content claim**: the same content (spaces collapsed, NFC) under the same scope, path and
  audience (the owner of a private note, the team of a team note, the whole tenant), which is how
  ``remember`` finds a duplicate of a new note that the caller can see.

A claim whose note expired may be taken over by another note (the claim records the expiry).
"""

from __future__ import annotations

import hashlib
import json
import math
import unicodedata
from datetime import datetime
from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from knowledge.domain.models import Principal, Scope

CONTENT_MAX_CHARS = 8_000
PATH_MAX_CHARS = 512
LABEL_MAX_CHARS = 128
"""Team, agent and key labels."""
SEMANTIC_KEY_MAX_CHARS = 256
DEFAULT_IMPORTANCE = 0.5
VERSIONS_LIMIT_DEFAULT, VERSIONS_LIMIT_MAX = 20, 100
"""Page size of a note's version list."""
REDACTED = "[redacted]"
"""What ``forget_memory`` with ``mode: "redact"`` leaves of every version's content."""
ROOT_PATH = "/"


class MemoryType(StrEnum):
    FACT = "fact"
    PREFERENCE = "preference"
    DECISION = "decision"
    EVENT = "event"
    WORKING = "working"
    IDENTITY = "identity"


class NoteStatus(StrEnum):
    ACTIVE = "active"
    FORGOTTEN = "forgotten"


class ForgetMode(StrEnum):
    """``soft`` hides a note (restorable), ``redact`` also replaces every version's content with
    ``[redacted]``, ``hard`` deletes the note and everything of it."""

    SOFT = "soft"
    REDACT = "redact"
    HARD = "hard"


class Note(BaseModel):
    """One version of a note. ``owner_id`` is the subject that first wrote it; ``team_id`` is set
    for ``team`` scope only. ``forgotten_mode`` says how a forgotten note was forgotten;
    ``indexed_version`` is the version the search index holds (written by the indexer, never part of
    a version record). Timestamps are aware UTC datetimes."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tenant_id: str
    note_id: str
    version: int = Field(ge=1)
    owner_id: str
    agent_id: str | None = None
    team_id: str | None = None
    scope: Scope = Scope.PRIVATE
    path: str = ROOT_PATH
    memory_type: MemoryType = MemoryType.FACT
    content: str
    importance: float = Field(default=DEFAULT_IMPORTANCE, ge=0.0, le=1.0)
    semantic_key: str | None = None
    expires_at: datetime | None = None
    supersedes: tuple[str, ...] = ()
    superseded_by: str | None = None
    status: NoteStatus = NoteStatus.ACTIVE
    forgotten_mode: ForgetMode | None = None
    pinned: bool = False
    indexed_version: int | None = None
    created_at: datetime
    updated_at: datetime

    def is_expired(self, now: datetime) -> bool:
        return self.expires_at is not None and self.expires_at <= now

    def is_current(self, now: datetime) -> bool:
        """Active, unexpired and not superseded: what search, recall and deduplication consider."""
        return self.status is NoteStatus.ACTIVE and self.superseded_by is None and not self.is_expired(now)

    def is_readable(self, now: datetime) -> bool:
        """Active and unexpired (superseded notes stay readable by id)."""
        return self.status is NoteStatus.ACTIVE and not self.is_expired(now)


def can_see_note(principal: Principal, note: Note) -> bool:
    """DESIGN §5's rule for notes: the tenants match, and the note is the principal's own,
    ``tenant``-scoped, or ``team``-scoped with a team the principal belongs to. (A token's knowledge
    base allow-list narrows knowledge only.)"""
    return can_see_note_of(principal.tenant_id, principal.subject_id, principal.team_ids, note)


def can_see_note_of(tenant_id: str, subject_id: str, team_ids: frozenset[str], note: Note) -> bool:
    """``can_see_note`` for a caller given by its tenant, subject and teams."""
    if note.tenant_id != tenant_id:
        return False
    if note.owner_id == subject_id or note.scope is Scope.TENANT:
        return True
    return note.scope is Scope.TEAM and note.team_id is not None and note.team_id in team_ids


def normalize_path(path: str) -> str:
    """``path`` as stored: ``/``-joined non-empty segments with surrounding spaces removed, with one
    leading ``/`` and none trailing; ``/`` for no segment at all."""
    segments = [segment.strip() for segment in path.split("/")]
    return ROOT_PATH + "/".join(segment for segment in segments if segment)


def path_ancestors(path: str) -> list[str]:
    """Every prefix a ``path_prefix`` filter may name, the path itself included:
    ``/a/b`` → ``["/", "/a", "/a/b"]`` (``path`` is normalized)."""
    segments = [segment for segment in path.split("/") if segment]
    return [ROOT_PATH] + ["/" + "/".join(segments[: depth + 1]) for depth in range(len(segments))]


def normalized_content(content: str) -> str:
    """The form two contents share when they are the same fact: NFC, runs of white space as one
    space, no space at either end. Case is kept (``ID`` and ``id`` may differ)."""
    return " ".join(unicodedata.normalize("NFC", content).split())


ClaimKind = Literal["key", "content"]


class NoteClaim(BaseModel):
    """A claim (see the module docs): ``digest`` is the hex SHA-256 naming its record."""

    model_config = ConfigDict(frozen=True)

    kind: ClaimKind
    digest: str


def _claim(kind: ClaimKind, *parts: str) -> NoteClaim:
    material = json.dumps([kind, *parts], ensure_ascii=False)
    return NoteClaim(kind=kind, digest=hashlib.sha256(material.encode("utf-8")).hexdigest())


def key_claim(owner_id: str, scope: Scope, semantic_key: str) -> NoteClaim:
    """The claim making ``semantic_key`` unique per tenant (the record's key), owner and scope."""
    return _claim("key", owner_id, scope.value, semantic_key)


def content_claim(note: Note) -> NoteClaim:
    """The claim of ``note``'s content among notes of its scope, path and audience."""
    audience = {Scope.PRIVATE: note.owner_id, Scope.TEAM: note.team_id or "", Scope.TENANT: ""}[note.scope]
    return _claim("content", note.scope.value, audience, note.path, normalized_content(note.content))


def claims_of(note: Note) -> list[NoteClaim]:
    """The claims ``note`` can hold: its key claim (when it has a ``semantic_key``) and its content
    claim."""
    claims = [content_claim(note)]
    if note.semantic_key is not None:
        claims.insert(0, key_claim(note.owner_id, note.scope, note.semantic_key))
    return claims


def expiration(moment: datetime | None) -> int | None:
    """``moment`` in epoch seconds rounded up, as DynamoDB TTL reads it (``None``: never)."""
    return None if moment is None else math.ceil(moment.timestamp())
