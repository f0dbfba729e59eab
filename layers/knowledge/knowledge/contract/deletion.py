"""What a delete removes, per store (DESIGN §9 "Deletes with a preview and a receipt").

A delete called with ``dry_run: true`` answers a ``DeletionReceipt`` with ``dry_run: true`` listing
what the real call would remove, and writes nothing; the real call answers the same shape with
``dry_run: false`` listing what it removed. For the same state of the stores the two lists are
equal. Each store is a list of ``DeletedRecords`` (one per kind of record):

- ``table``: records of the knowledge table (``note`` records, ``note_version`` records named
  ``<note_id>@<version>``, ``note_claim`` records named by their digest);
- ``index``: documents of the search indexes (``note`` documents of the note index, named by
  note id, and ``note_history`` documents of the history index, named ``<note_id>@<version>``);
- ``pins``: ``pin`` records, named by pin id;
- ``embedding_cache``: ``cached_vector`` rows, named by the hex SHA-256 of the text they embed (a
  text that was never cached is counted too: its row is deleted if present);
- ``queued_messages``: messages still waiting in a queue (none for a note).

An item archive lists ``table``: the ``item`` record ``archived`` (kept, out of search and reads for
good) and its ``external_id`` ``purged`` (released for another item), and ``index``: the
``item_passages`` of its current revision (named by revision id) ``scheduled``.

``state`` says what happened (or would) to the records: ``purged`` (deleted by the call),
``redacted`` (kept, content replaced), ``hidden`` (kept, restorable), ``archived`` (kept, never
searchable again) or ``scheduled`` (the stream-fed
indexer removes them after the call: the receipt names them, the call did not see them go).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

DeletionState = Literal["purged", "redacted", "hidden", "archived", "scheduled"]


class DeletedRecords(BaseModel):
    """One kind of record in one store: ``ids`` (sorted), their ``count`` and their ``state``."""

    kind: str
    ids: list[str]
    count: int = Field(ge=0)
    state: DeletionState


class DeletionReceipt(BaseModel):
    """What a delete removed (``dry_run: false``) or would remove (``dry_run: true``), per store."""

    dry_run: bool
    table: list[DeletedRecords] = Field(default_factory=list)
    index: list[DeletedRecords] = Field(default_factory=list)
    pins: list[DeletedRecords] = Field(default_factory=list)
    embedding_cache: list[DeletedRecords] = Field(default_factory=list)
    queued_messages: list[DeletedRecords] = Field(default_factory=list)

    def stores(self) -> dict[str, list[DeletedRecords]]:
        """The lists by store name, without ``dry_run``: equal for a dry run and its real call."""
        return {
            "table": self.table,
            "index": self.index,
            "pins": self.pins,
            "embedding_cache": self.embedding_cache,
            "queued_messages": self.queued_messages,
        }


def merged(receipts: list[DeletionReceipt], *, dry_run: bool) -> DeletionReceipt:
    """One receipt of several deletes: per store, the records of each ``(kind, state)`` together
    (ids sorted and deduplicated), in the order each first appears."""
    stores: dict[str, dict[tuple[str, DeletionState], list[str]]] = {}
    for receipt in receipts:
        for store, entries in receipt.stores().items():
            for entry in entries:
                stores.setdefault(store, {}).setdefault((entry.kind, entry.state), []).extend(entry.ids)
    return DeletionReceipt(
        dry_run=dry_run,
        **{
            store: [record for (kind, state), ids in kinds.items() for record in records(kind, ids, state)]
            for store, kinds in stores.items()
        },
    )


def records(kind: str, ids: list[str], state: DeletionState) -> list[DeletedRecords]:
    """``[DeletedRecords]`` of ``ids`` (sorted, deduplicated), or ``[]`` when there are none."""
    unique = sorted(set(ids))
    return [DeletedRecords(kind=kind, ids=unique, count=len(unique), state=state)] if unique else []
