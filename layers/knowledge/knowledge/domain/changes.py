"""Changes of the source of truth as the table's stream reports them (DESIGN §6: the stream is the outbox).

A change names what a record was before (``old``) and after (``new``) one write, decoded into domain
models. Records the domain does not model (pages, external-id guards, embedding-cache and
idempotency records) decode to ``None``, so a change may carry no model at all.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import TypeVar

from knowledge.domain.memory.notes import Note
from knowledge.domain.models import KnowledgeBase, KnowledgeItem, Revision, TokenRecord

StoredRecord = KnowledgeBase | KnowledgeItem | Revision | TokenRecord | Note
RecordT = TypeVar("RecordT", KnowledgeBase, KnowledgeItem, Note)


class ChangeKind(StrEnum):
    """DynamoDB Streams ``eventName``."""

    INSERT = "INSERT"
    MODIFY = "MODIFY"
    REMOVE = "REMOVE"


class IndexAction(StrEnum):
    """What applying one change did."""

    INDEXED = "indexed"
    """The index now holds the item's current revision."""
    REMOVED = "removed"
    """The item (or base) is out of the index."""
    SUPERSEDED = "superseded"
    """The index already held a newer version; nothing to do."""
    SKIPPED = "skipped"
    """The item's base is inactive or missing; the base's own change governs its chunks."""
    IGNORED = "ignored"
    """Not a change the index depends on."""
    REINDEXED = "reindexed"
    """A base was (re)activated and every item of it re-synced."""
    QUEUED = "queued"
    """The item's parts were sent to the work queue."""
    PARTIAL = "partial"
    """One part of the item's revision is in the index; others are still to come."""


@dataclass(frozen=True)
class StoreChange:
    """One write: ``old`` is ``None`` for an insert, ``new`` is ``None`` for a removal (or when the
    record is not a domain record). ``expired`` marks a removal made by the table's own expiry
    sweep (DynamoDB TTL) rather than by a writer."""

    kind: ChangeKind
    old: StoredRecord | None
    new: StoredRecord | None
    expired: bool = False

    @property
    def item(self) -> tuple[KnowledgeItem | None, KnowledgeItem | None] | None:
        """``(old, new)`` when the record is an item, else ``None``."""
        if isinstance(self.old, KnowledgeItem) or isinstance(self.new, KnowledgeItem):
            return _as(self.old, KnowledgeItem), _as(self.new, KnowledgeItem)
        return None

    @property
    def base(self) -> tuple[KnowledgeBase | None, KnowledgeBase | None] | None:
        """``(old, new)`` when the record is a knowledge base, else ``None``."""
        if isinstance(self.old, KnowledgeBase) or isinstance(self.new, KnowledgeBase):
            return _as(self.old, KnowledgeBase), _as(self.new, KnowledgeBase)
        return None

    @property
    def note(self) -> tuple[Note | None, Note | None] | None:
        """``(old, new)`` when the record is a note's ``META``, else ``None``."""
        if isinstance(self.old, Note) or isinstance(self.new, Note):
            return _as(self.old, Note), _as(self.new, Note)
        return None


def _as(record: StoredRecord | None, kind: type[RecordT]) -> RecordT | None:
    return record if isinstance(record, kind) else None
