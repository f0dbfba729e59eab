"""Pins: marks on notes that must always reach an agent's context (DESIGN §9).

A note has at most one pin, a record beside it (``T#{tenant}#NOTE#{note}`` / ``PIN``), listed in the
tenant's pin order: ``order`` ascending (0 first), then pin time (``pin_id`` is a ULID, so it sorts
by creation). A pin applies to every caller who can see its note and follows its note: a note that
is forgotten, expired or superseded is not recalled, and neither is its pin; a hard delete removes
the pin. A pin with an ``expires_at`` stops applying at that moment (DynamoDB TTL only sweeps).
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

ORDER_MAX = 999_999
"""Pin orders are 0..999,999 (zero-padded to six digits in the listing's sort key)."""
REASON_MAX_CHARS = 500
PINS_LIMIT_DEFAULT, PINS_LIMIT_MAX = 20, 100
"""Page size of a pin list."""


class Pin(BaseModel):
    """The pin of one note. ``created_by`` is the subject that pinned it; timestamps are aware UTC."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tenant_id: str
    pin_id: str
    note_id: str
    reason: str | None = None
    order: int = Field(default=0, ge=0, le=ORDER_MAX)
    expires_at: datetime | None = None
    created_by: str
    created_at: datetime
    updated_at: datetime

    def is_active(self, now: datetime) -> bool:
        """Not expired at ``now``."""
        return self.expires_at is None or self.expires_at > now

    def sort_key(self) -> tuple[int, str]:
        """The recall and listing order: ``order``, then pin time (the ULID ``pin_id``)."""
        return self.order, self.pin_id


class PinChange(BaseModel):
    """One pin write of a note's pin history (DESIGN §10 "Time"): at ``at`` the note's pin became
    ``pin``, or was removed (``pin`` is ``None``). A hard forget deletes a note's changes with it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tenant_id: str
    note_id: str
    at: datetime
    pin: Pin | None = None


def pins_at(changes: list[PinChange], moment: datetime) -> list[Pin]:
    """The pins as they stood at ``moment``: each note's last change at or before it, when that was
    a pin that had not expired then, in pin order (``Pin.sort_key``)."""
    last: dict[str, PinChange] = {}
    for change in sorted(changes, key=lambda change: change.at):
        if change.at <= moment:
            last[change.note_id] = change
    standing = [
        change.pin for change in last.values() if change.pin is not None and change.pin.is_active(moment)
    ]
    return sorted(standing, key=Pin.sort_key)
