"""A tenant-wide erasure's progress (DESIGN §12 "Tenant erasure"): where the job stands and what it
has removed so far (or, for a dry run, would remove).

An erasure walks the tenant in phases: ``bases`` (for each base, its live items, its archived
items, then its record), then ``notes`` (every note, forgotten ones too), then ``done``. Work
goes in batches; each batch's receipt is added to the ``tally`` and stored with the batch's ids as
``pending`` before anything of it is deleted, so a run that stops midway neither loses nor counts
twice what it removed: the next run first finishes the pending records, then goes on.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

IDS_KEPT = 100
"""A tally entry keeps the first this many ids (sorted) of its kind; ``count`` counts them all."""


class ErasurePhase(StrEnum):
    BASES = "bases"
    NOTES = "notes"
    DONE = "done"


class TallyEntry(BaseModel):
    """The records of one ``kind`` in one ``store`` with one ``state``: ``count`` in all, ``ids``
    the first ``IDS_KEPT`` of them (sorted)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    store: str
    kind: str
    state: str
    count: int = Field(ge=0)
    ids: tuple[str, ...] = ()


class ErasureProgress(BaseModel):
    """Where an erasure stands. ``base_ids`` are the bases the ``bases`` phase walks (read when
    the job starts, sorted); ``base_index`` the one it is at and ``stage`` where in it (its
    ``live`` items, its ``archived`` items, its ``record``); ``next_token`` the listing's next page
    (the stores' tokens name the last id listed, so a page goes on after it whether or not what
    came before was deleted); ``pending`` the ``item:<id>``/``note:<id>``/``base:<id>`` records
    whose receipts are in ``tally`` but which may not be deleted yet."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    dry_run: bool = False
    chosen_bases: bool = False
    """Only the bases of ``base_ids`` (chosen by the request), and no notes: ``done`` after them."""
    phase: ErasurePhase = ErasurePhase.BASES
    base_ids: tuple[str, ...] | None = None
    base_index: int = Field(default=0, ge=0)
    stage: Literal["live", "archived", "record"] = "live"
    next_token: str | None = None
    pending: tuple[str, ...] = ()
    tally: tuple[TallyEntry, ...] = ()
    records: dict[str, int] = Field(default_factory=dict)
    """Records erased so far by kind (``item``, ``knowledge_base``, ``note``)."""


def added(tally: tuple[TallyEntry, ...], entries: list[TallyEntry]) -> tuple[TallyEntry, ...]:
    """``tally`` with ``entries`` added: counts summed per ``(store, kind, state)``, ids merged and
    cut to the first ``IDS_KEPT``; entries keep the order they first appeared in."""
    merged: dict[tuple[str, str, str], TallyEntry] = {(e.store, e.kind, e.state): e for e in tally}
    for entry in entries:
        key = (entry.store, entry.kind, entry.state)
        old = merged.get(key)
        if old is None:
            merged[key] = entry.model_copy(update={"ids": tuple(sorted(set(entry.ids))[:IDS_KEPT])})
        else:
            kept = tuple(sorted(set(old.ids) | set(entry.ids))[:IDS_KEPT])
            merged[key] = old.model_copy(update={"count": old.count + entry.count, "ids": kept})
    return tuple(merged.values())
