"""Rate quotas and the stored items count on the table (``T#{tenant}#QUOTA``).

Each rate quota of a tenant is one item, ``RATE#{quota}``, holding its theoretical arrival time
``tat`` (GCRA, ``knowledge.domain.access.rates``; epoch microseconds) and an ``expiration`` (epoch
seconds) for DynamoDB's TTL to purge it once idle. ``rate.decide`` has two admitting cases, each one
conditional ``UpdateItem``, so no use needs a read:

- steady (``now ≤ tat ≤ now + τ``): ``SET tat = tat + T`` under ``tat BETWEEN :now AND :ceiling``;
- idle (no ``tat``, or ``tat < now``): ``SET tat = :now + T`` under
  ``attribute_not_exists(tat) OR tat < :now``.

The write the caller expects (``expect_idle``) goes first; when its condition fails, the stored
item it returns (``ALL_OLD``) says which case holds: ``tat > now + τ`` is the refusal, otherwise the
other write is sent. A use costs one write capacity unit and one round trip when the guess is
right (a failed condition is still a write), two when it is wrong; a concurrent writer that moves
``tat`` between the two is answered by deciding again, at most ``ATTEMPTS`` writes in all.

The stored items count (``STORED_ITEMS``, no TTL) is one ``Update`` inside the transaction that
creates or removes items (``stored_items_write``), or that marks a note removed by its expiry as
counted out (``stored_items_release``). The same record counts the notes among them (``notes``,
moved by the same updates), so ``GET /v1/usage`` tells items from notes with one read. It keeps
the tenant's stored content bytes too (``content_bytes``): an ``ADD`` in the same update when the
count moves (``stored_items_write``, ``stored_items_release``), else one ``Update`` of its own in
the writing transaction (``stored_bytes_write``: a revision added, a note revised), never two
operations on the record in one transaction.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from knowledge.adapters.dynamodb import codec, keys
from knowledge.adapters.dynamodb.table import DynamoDBTable, TableRecords
from knowledge.domain.access.rates import QuotaCounters, Rate, RateDecision
from knowledge.errors import StoredItemsQuotaError

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import (
        AttributeValueTypeDef,
        TransactWriteItemTypeDef,
        UpdateTypeDef,
    )

ATTEMPTS = 4
"""Conditional writes per use at most; past them a use is refused (a tenant whose arrival time
moves under every attempt is sending hard enough to be told to slow down)."""


class DynamoDBQuotaStore(TableRecords):
    """The ``QuotaStore`` port: GCRA arrival times moved by conditional writes (module doc)."""

    def consume_rate(
        self, tenant_id: str, quota: str, rate: Rate, *, now: int, expires_at: int, expect_idle: bool
    ) -> RateDecision:
        def number(value: int) -> AttributeValueTypeDef:
            return {"N": str(value)}

        steady = (
            "SET #tat = #tat + :interval",
            "#tat BETWEEN :now AND :ceiling",
            {
                ":interval": number(rate.interval),
                ":now": number(now),
                ":ceiling": number(now + rate.tolerance),
            },
        )
        idle = (
            "SET #tat = :next",
            "attribute_not_exists(#tat) OR #tat < :now",
            {":next": number(now + rate.interval), ":now": number(now)},
        )
        case = idle if expect_idle else steady
        for _ in range(ATTEMPTS):
            update, condition, values = case
            applied, item = self._table.update_if(
                {
                    "TableName": self._table.name,
                    "Key": codec.key(keys.quota_key(tenant_id, quota)),
                    "UpdateExpression": f"{update}, #entity = :entity, #expiration = :expiration",
                    "ConditionExpression": condition,
                    "ExpressionAttributeNames": {
                        "#tat": "tat",
                        "#entity": "entity",
                        "#expiration": "expiration",
                    },
                    "ExpressionAttributeValues": {
                        **values,
                        ":entity": {"S": codec.Entity.QUOTA.value},
                        ":expiration": number(expires_at),
                    },
                    "ReturnValues": "UPDATED_NEW",
                    "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                }
            )
            if applied:
                return RateDecision(admitted=True, tat=int(item["tat"]["N"]))
            stored = int(item["tat"]["N"]) if "tat" in item else None
            decision = rate.decide(stored, now)
            if not decision.admitted:
                return decision
            case = idle if stored is None or stored < now else steady
        # Every attempt lost a race with another writer: refused, and admitted again at once.
        return RateDecision(admitted=False, tat=now + rate.tolerance + 1)

    def read_counters(self, tenant_id: str) -> QuotaCounters:
        """One strongly consistent Query of ``T#{tenant}#QUOTA`` from ``RATE#`` to ``STORED_ITEMS``:
        every rate record and the stored items count (its ``notes`` clamped to ``0..count``)."""
        arrivals: dict[str, int] = {}
        stored = notes = stored_bytes = 0
        partition = keys.stored_items_key(tenant_id).pk
        for record in self._table.query_range(partition, keys.RATE_PREFIX, keys.STORED_ITEMS):
            sort_key = record["SK"]["S"]
            if sort_key == keys.STORED_ITEMS:
                stored = max(0, int(record.get("count", {}).get("N", "0")))
                notes = min(stored, max(0, int(record.get("notes", {}).get("N", "0"))))
                stored_bytes = max(0, int(record.get("content_bytes", {}).get("N", "0")))
            elif sort_key.startswith(keys.RATE_PREFIX) and "tat" in record:
                arrivals[sort_key.removeprefix(keys.RATE_PREFIX)] = int(record["tat"]["N"])
        return QuotaCounters(arrivals=arrivals, stored=stored, notes=notes, content_bytes=stored_bytes)


def stored_items_write(
    table: DynamoDBTable,
    tenant_id: str,
    delta: int,
    limit: int,
    *,
    notes: bool = False,
    content_bytes: int = 0,
) -> TransactWriteItemTypeDef:
    """The change of ``tenant_id``'s stored items count by ``delta``, as one write of the transaction
    that creates (``delta > 0``) or removes (``delta < 0``) the items, so the count moves exactly
    when they do; with ``notes``, the items are notes and the notes count moves too; the stored
    content bytes move by ``content_bytes``. A growth is conditioned on leaving the count at most
    ``limit`` (0: no limit); the transaction is then refused with ``CounterFullError``.
    """
    values: dict[str, AttributeValueTypeDef] = {
        ":delta": {"N": str(delta)},
        ":entity": {"S": codec.Entity.QUOTA.value},
    }
    names = {"#count": "count", "#entity": "entity"}
    added = "#count :delta"
    if notes:
        names["#notes"] = "notes"
        added += ", #notes :delta"
    if content_bytes:
        names["#content_bytes"] = "content_bytes"
        values[":content_bytes"] = {"N": str(content_bytes)}
        added += ", #content_bytes :content_bytes"
    update: UpdateTypeDef = {
        "TableName": table.name,
        "Key": codec.key(keys.stored_items_key(tenant_id)),
        "UpdateExpression": f"ADD {added} SET #entity = :entity",
        "ExpressionAttributeNames": names,
        "ExpressionAttributeValues": values,
        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
    }
    if delta > 0 and limit > 0:
        update["ConditionExpression"] = "attribute_not_exists(#count) OR #count <= :most"
        values[":most"] = {"N": str(limit - delta)}
    return {"Update": update}


def stored_items_release(
    table: DynamoDBTable, tenant_id: str, *, content_bytes: int = 0
) -> TransactWriteItemTypeDef:
    """One note off ``tenant_id``'s stored items count (and its notes count) and its
    ``content_bytes`` off the stored bytes, conditioned on the count being above 0, so it never
    goes below (a record stored before the counter existed is not in it)."""
    return {
        "Update": {
            "TableName": table.name,
            "Key": codec.key(keys.stored_items_key(tenant_id)),
            "UpdateExpression": "ADD #count :minus_one, #notes :minus_one, #content_bytes :content_bytes",
            "ConditionExpression": "#count > :zero",
            "ExpressionAttributeNames": {
                "#count": "count",
                "#notes": "notes",
                "#content_bytes": "content_bytes",
            },
            "ExpressionAttributeValues": {
                ":minus_one": {"N": "-1"},
                ":zero": {"N": "0"},
                ":content_bytes": {"N": str(-content_bytes)},
            },
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }
    }


def stored_bytes_write(table: DynamoDBTable, tenant_id: str, delta: int) -> TransactWriteItemTypeDef:
    """The change of ``tenant_id``'s stored content bytes by ``delta`` alone (the count unmoved), as
    one write of the transaction that stores or replaces the content."""
    return {
        "Update": {
            "TableName": table.name,
            "Key": codec.key(keys.stored_items_key(tenant_id)),
            "UpdateExpression": "ADD #content_bytes :delta SET #entity = :entity",
            "ExpressionAttributeNames": {"#content_bytes": "content_bytes", "#entity": "entity"},
            "ExpressionAttributeValues": {
                ":delta": {"N": str(delta)},
                ":entity": {"S": codec.Entity.QUOTA.value},
            },
        }
    }


def refuse_over_limit(delta: int, limit: int) -> None:
    """``StoredItemsQuotaError`` for a commit that alone creates more items than ``limit`` allows
    (the counter's condition cannot see it while the counter is absent)."""
    if 0 < limit < delta:
        raise StoredItemsQuotaError(limit)
