"""Answers as of a moment (``as_of``, DESIGN §10 "Time"): which moments a read may name, and the
history rules every store and index applies to find what was current then.

A moment is an aware datetime not later than the service's clock. Records are valid over half-open
intervals ``[valid_from, valid_to)``: a note version from its ``updated_at`` until the next
version's ``updated_at``, an item state from its change until the next change, a pin state from
its write until the next pin write or unpin. ``None`` as ``valid_to`` means "still current".
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from pydantic import BaseModel, ConfigDict

from knowledge.domain.memory.notes import ForgetMode, Note, NoteStatus, can_see_note_of
from knowledge.domain.memory.retrieval import NoteFilter, admits
from knowledge.domain.models import ItemStatus, KnowledgeItem
from knowledge.errors import AsOfInvalidError


def resolve_as_of(as_of: datetime | None, now: datetime) -> datetime | None:
    """``as_of`` in UTC, checked against ``now`` (aware). ``AsOfInvalidError`` for a time without a
    zone or a time after ``now``; ``None`` stays ``None`` (answer as of now)."""
    if as_of is None:
        return None
    if as_of.tzinfo is None or as_of.utcoffset() is None:
        raise AsOfInvalidError(
            "as_of must carry a time zone (ISO-8601 with Z or an offset).", {"as_of": as_of.isoformat()}
        )
    if as_of > now:
        raise AsOfInvalidError(
            "as_of is in the future; it must name a moment up to now.",
            {"as_of": as_of.isoformat(), "now": now.isoformat()},
        )
    return as_of.astimezone(now.tzinfo)


def valid_at(moment: datetime, valid_from: datetime, valid_to: datetime | None) -> bool:
    """True when ``moment`` falls in ``[valid_from, valid_to)`` (``valid_to`` ``None``: open)."""
    return valid_from <= moment and (valid_to is None or moment < valid_to)


def note_history(versions: Sequence[Note]) -> list[tuple[Note, datetime, datetime | None]]:
    """Each version of a note that was active, with its validity interval, oldest first: from its
    ``updated_at`` until the next version's (``None`` for the last). Forgotten versions are left out
    (a forgotten note is in no answer), and a redacted note has no history at all: its content is
    gone for good, as a hard-forgotten note's."""
    ordered = sorted(versions, key=lambda version: version.version)
    if any(version.forgotten_mode is ForgetMode.REDACT for version in ordered):
        return []
    intervals: list[tuple[Note, datetime, datetime | None]] = []
    for position, version in enumerate(ordered):
        if version.status is not NoteStatus.ACTIVE:
            continue
        following = ordered[position + 1].updated_at if position + 1 < len(ordered) else None
        intervals.append((version, version.updated_at, following))
    return intervals


def version_at(versions: Sequence[Note], moment: datetime) -> Note | None:
    """The version of a note that was its version at ``moment`` (the last written at or before it),
    ``None`` when the note did not exist yet."""
    written = [version for version in versions if version.updated_at <= moment]
    return max(written, key=lambda version: version.version) if written else None


def held_at(
    note_filter: NoteFilter, current: Note | None, version: Note | None, following: Note | None
) -> bool:
    """The read-time truth of a note version a history search found for ``note_filter.as_of``:

    - the note still exists and was not redacted (content deleted for good stays gone), and the
      caller may see it today (``can_see_note_of`` on its current state: never more than now);
    - ``version`` was its version at that moment (written at or before it, and ``following``, the
      next version, absent or written after it);
    - and the filter admits that version then (visible and narrowed by its fields then, active,
      unexpired and not superseded at that moment, ``note_filter.now`` being the moment).
    """
    moment = note_filter.as_of
    if moment is None or current is None or version is None:
        return False
    if current.forgotten_mode is ForgetMode.REDACT:
        return False
    if not can_see_note_of(note_filter.tenant_id, note_filter.subject_id, note_filter.team_ids, current):
        return False
    if version.updated_at > moment or (following is not None and following.updated_at <= moment):
        return False
    return admits(note_filter, version)


class ItemState(BaseModel):
    """One state of an item's history (``version`` of the item, from ``at``): its status and the
    revision current then. Every item write records one, immutable, beside the item."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tenant_id: str
    knowledge_item_id: str
    version: int
    status: ItemStatus
    current_revision_id: str | None = None
    at: datetime


def item_state(item: KnowledgeItem) -> ItemState:
    """The state ``item`` records at its version."""
    return ItemState(
        tenant_id=item.tenant_id,
        knowledge_item_id=item.knowledge_item_id,
        version=item.version,
        status=item.status,
        current_revision_id=item.current_revision_id,
        at=item.updated_at,
    )


def item_state_at(item: KnowledgeItem, states: Sequence[ItemState], moment: datetime) -> ItemState | None:
    """The item's state at ``moment``: its last recorded state written at or before it; the item's
    own state when it has not changed since (an item written before states were recorded has only
    that); ``None`` when it did not exist yet or its state then is unknown."""
    if item.updated_at <= moment:
        return item_state(item)
    written = [state for state in states if state.at <= moment]
    return max(written, key=lambda state: state.version) if written else None
