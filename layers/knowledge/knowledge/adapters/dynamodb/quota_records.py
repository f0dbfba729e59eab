"""Quota counters on the table (``T#{tenant}#QUOTA`` / ``{quota}#{window}``): one item per tenant,
quota and fixed window, counted by one conditional ``UpdateItem`` (``ADD`` under ``count < limit``)
and purged by DynamoDB TTL through ``expiration`` (epoch seconds).

A request costs one write capacity unit whether it is counted or refused (a failed condition is
still a write), and one round trip; the counter is shared by every execution environment.

The stored items count (``T#{tenant}#QUOTA`` / ``STORED_ITEMS``, no TTL) is not a window: it is one
``Update`` inside the transaction that creates or removes items (``stored_items_write``), or that
marks a note removed by its expiry as counted out (``stored_items_release``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from knowledge.adapters.dynamodb import codec
from knowledge.adapters.dynamodb.table import DynamoDBTable, TableRecords
from knowledge.domain import keys
from knowledge.errors import ConflictError, StoredItemsQuotaError

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import (
        AttributeValueTypeDef,
        TransactWriteItemTypeDef,
        UpdateTypeDef,
    )

_UNDER_LIMIT = "attribute_not_exists(#count) OR #count < :limit"


class DynamoDBQuotaStore(TableRecords):
    """The ``QuotaStore`` port: fixed-window counters updated atomically with a condition."""

    def consume_quota(self, tenant_id: str, quota: str, *, window: int, limit: int, expires_at: int) -> bool:
        try:
            self._table.update(
                {
                    "TableName": self._table.name,
                    "Key": codec.key(keys.quota_key(tenant_id, quota, window)),
                    "UpdateExpression": "ADD #count :one SET #entity = :entity, #expiration = :expiration",
                    "ConditionExpression": _UNDER_LIMIT,
                    "ExpressionAttributeNames": {
                        "#count": "count",
                        "#entity": "entity",
                        "#expiration": "expiration",
                    },
                    "ExpressionAttributeValues": {
                        ":one": {"N": "1"},
                        ":limit": {"N": str(limit)},
                        ":entity": {"S": codec.Entity.QUOTA.value},
                        ":expiration": {"N": str(expires_at)},
                    },
                    "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                }
            )
        except ConflictError:
            # The condition failed on a stored counter (``failures._refusal`` of a versionless record).
            return False
        return True


def stored_items_write(
    table: DynamoDBTable, tenant_id: str, delta: int, limit: int
) -> TransactWriteItemTypeDef:
    """The change of ``tenant_id``'s stored items count by ``delta``, as one write of the transaction
    that creates (``delta > 0``) or removes (``delta < 0``) the items, so the count moves exactly
    when they do. A growth is conditioned on leaving the count at most ``limit`` (0: no limit); the
    transaction is then refused with ``CounterFullError``.
    """
    values: dict[str, AttributeValueTypeDef] = {
        ":delta": {"N": str(delta)},
        ":entity": {"S": codec.Entity.QUOTA.value},
    }
    update: UpdateTypeDef = {
        "TableName": table.name,
        "Key": codec.key(keys.stored_items_key(tenant_id)),
        "UpdateExpression": "ADD #count :delta SET #entity = :entity",
        "ExpressionAttributeNames": {"#count": "count", "#entity": "entity"},
        "ExpressionAttributeValues": values,
        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
    }
    if delta > 0 and limit > 0:
        update["ConditionExpression"] = "attribute_not_exists(#count) OR #count <= :most"
        values[":most"] = {"N": str(limit - delta)}
    return {"Update": update}


def stored_items_release(table: DynamoDBTable, tenant_id: str) -> TransactWriteItemTypeDef:
    """One off ``tenant_id``'s stored items count, conditioned on the count being above 0, so it
    never goes below (a record stored before the counter existed is not in it)."""
    return {
        "Update": {
            "TableName": table.name,
            "Key": codec.key(keys.stored_items_key(tenant_id)),
            "UpdateExpression": "ADD #count :minus_one",
            "ConditionExpression": "#count > :zero",
            "ExpressionAttributeNames": {"#count": "count"},
            "ExpressionAttributeValues": {":minus_one": {"N": "-1"}, ":zero": {"N": "0"}},
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }
    }


def refuse_over_limit(delta: int, limit: int) -> None:
    """``StoredItemsQuotaError`` for a commit that alone creates more items than ``limit`` allows
    (the counter's condition cannot see it while the counter is absent)."""
    if 0 < limit < delta:
        raise StoredItemsQuotaError(limit)
