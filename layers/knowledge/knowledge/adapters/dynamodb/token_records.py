"""Bearer token records on the table (``TOKEN#{sha256}`` / ``META``): only the token's hash is
stored, with ``expiration`` (epoch seconds) for DynamoDB TTL to purge expired records."""

from __future__ import annotations

from knowledge.adapters.dynamodb import codec
from knowledge.adapters.dynamodb.table import EXISTS, TableRecords
from knowledge.domain import keys
from knowledge.domain.models import TokenRecord
from knowledge.observability import logger


class DynamoDBTokenStore(TableRecords):
    """The ``TokenStore`` port."""

    def put_token(self, record: TokenRecord) -> None:
        """Store a token record (never the token). Raises ``ConflictError`` if the hash is already stored."""
        self._table.put_new(codec.encode_token(record))
        logger.info("token created", extra={"tenant_id": record.tenant_id, "subject_id": record.subject_id})

    def get_token(self, token_hash: str) -> TokenRecord | None:
        """The record even when expired or revoked; ``TokenRecord.is_valid_at`` decides validity."""
        record = self._table.get(keys.token_key(token_hash))
        return codec.decode_token(record) if record is not None else None

    def revoke_token(self, token_hash: str) -> None:
        """Mark the token revoked. Raises ``ResourceUnavailableError`` when it is not stored."""
        change = codec.update({"revoked": True})
        self._table.update(
            {
                "TableName": self._table.name,
                "Key": codec.key(keys.token_key(token_hash)),
                "UpdateExpression": change.expression,
                "ConditionExpression": EXISTS,
                "ExpressionAttributeNames": change.names,
                "ExpressionAttributeValues": change.values,
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            }
        )
        logger.info("token revoked", extra={"token_hash_prefix": token_hash[:8]})
