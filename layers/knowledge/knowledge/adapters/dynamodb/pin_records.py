"""Pins on the table (DESIGN §9): ``T#{tenant}#NOTE#{note}`` / ``PIN`` beside the note, listed in the
tenant's pin order on GSI1 (``T#{tenant}#PINS`` / ``PIN#{order:06d}#{pin}``).

A pin is written in one transaction with a condition check on the note's ``META`` record, so a pin
never outlives a note deleted at the same moment, and conditioned on the pin it replaces (its
``pin_id``), or on no pin at all. GSI1 is eventually consistent: a listing may trail a write for a
moment, while ``get_pin`` (and the note reads, which read the pin beside the note) are strongly
consistent.

Every pin write and removal also puts a pin change record beside the note in the same transaction
(``PINLOG#{at}#{id}``, listed per tenant in time order on GSI1: ``T#{tenant}#PINLOG``), the pin
history that answers ``as_of`` (``pin_changes``); a hard delete of the note removes them with it.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from knowledge.adapters.dynamodb import codec, keys
from knowledge.adapters.dynamodb.paging import INDEX_KEY, Listing
from knowledge.adapters.dynamodb.table import EXISTS, TableRecords
from knowledge.domain import ids
from knowledge.domain.memory.pins import Pin, PinChange
from knowledge.domain.models import Page
from knowledge.observability import logger

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import TransactWriteItemTypeDef

PIN_IS_EXPECTED = "#pin_id = :pin_id"
"""Condition clause of a pin write or delete: the stored pin is the one the writer read."""


class DynamoDBPinStore(TableRecords):
    """The ``PinStore`` port."""

    def get_pin(self, tenant_id: str, note_id: str) -> Pin | None:
        record = self._table.get(keys.pin_key(tenant_id, note_id))
        return codec.decode_pin(record) if record is not None else None

    def put_pin(self, pin: Pin, *, previous: Pin | None) -> None:
        note = keys.note_key(pin.tenant_id, pin.note_id)
        guard: TransactWriteItemTypeDef = {
            "ConditionCheck": {
                "TableName": self._table.name,
                "Key": codec.key(note),
                "ConditionExpression": EXISTS,
            }
        }
        if previous is None:
            put = self._table.put_new_write(codec.encode_pin(pin))
        else:
            put = {
                "Put": {
                    "TableName": self._table.name,
                    "Item": codec.encode_pin(pin),
                    "ConditionExpression": f"{EXISTS} AND {PIN_IS_EXPECTED}",
                    "ExpressionAttributeNames": {"#pin_id": "pin_id"},
                    "ExpressionAttributeValues": codec.serialize({":pin_id": previous.pin_id}),
                    "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                }
            }
        change = PinChange(tenant_id=pin.tenant_id, note_id=pin.note_id, at=pin.updated_at, pin=pin)
        logged = self._table.put_new_write(codec.encode_pin_change(change, ids.new_ulid()))
        self._table.transact([guard, put, logged])
        logger.info("note pinned", extra={"tenant_id": pin.tenant_id, "note_id": pin.note_id})

    def delete_pin(self, tenant_id: str, note_id: str, *, pin_id: str, at: datetime | None = None) -> None:
        change = PinChange(tenant_id=tenant_id, note_id=note_id, at=at or self._clock())
        self._table.transact(
            [
                {
                    "Delete": {
                        "TableName": self._table.name,
                        "Key": codec.key(keys.pin_key(tenant_id, note_id)),
                        "ConditionExpression": f"attribute_not_exists(PK) OR {PIN_IS_EXPECTED}",
                        "ExpressionAttributeNames": {"#pin_id": "pin_id"},
                        "ExpressionAttributeValues": codec.serialize({":pin_id": pin_id}),
                        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                    }
                },
                self._table.put_new_write(codec.encode_pin_change(change, ids.new_ulid())),
            ]
        )
        logger.info("note unpinned", extra={"tenant_id": tenant_id, "note_id": note_id})

    def list_pins(self, tenant_id: str, *, limit: int, next_token: str | None) -> Page[Pin]:
        listing = _listing(tenant_id)
        records, token = self._table.query_listing(
            listing, keys.PIN_INDEX_PREFIX, limit=limit, next_token=next_token
        )
        return Page[Pin](entries=[codec.decode_pin(record) for record in records], next_token=token)

    def pin_changes(self, tenant_id: str, until: datetime) -> list[PinChange]:
        # "$" sorts right after "#", so the bound takes every change at ``until`` itself
        last = codec.timestamp(until) + "$"
        records = self._table.query_index_until(keys.pin_changes_partition(tenant_id), last)
        changes = [codec.decode_pin_change(record) for record in records]
        return sorted(changes, key=lambda change: change.at)

    def resume_pins_after(self, pin: Pin) -> str:
        record = codec.encode_pin(pin)
        return _listing(pin.tenant_id).encode(_listing(pin.tenant_id).start_key(record))


def _listing(tenant_id: str) -> Listing:
    return Listing("pins", "GSI1PK", keys.pins_partition(tenant_id), INDEX_KEY)
