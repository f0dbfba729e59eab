"""Quota counters on the table (``T#{tenant}#QUOTA`` / ``{quota}#{window}``): one item per tenant,
quota and fixed window, counted by one conditional ``UpdateItem`` (``ADD`` under ``count < limit``)
and purged by DynamoDB TTL through ``expiration`` (epoch seconds).

A request costs one write capacity unit whether it is counted or refused (a failed condition is
still a write), and one round trip; the counter is shared by every execution environment.
"""

from __future__ import annotations

from knowledge.adapters.dynamodb import codec
from knowledge.adapters.dynamodb.table import TableRecords
from knowledge.domain import keys
from knowledge.errors import ConflictError

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
