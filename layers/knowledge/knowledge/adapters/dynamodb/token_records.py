"""Bearer token records on the table (``TOKEN#{sha256}`` / ``META``): only the token's hash is
stored, with ``expiration`` (epoch seconds) for DynamoDB TTL to purge expired records.

Each record also carries GSI1 keys (``T#{tenant}#TOKENS`` / ``TOKEN#{created_at}#{sha256}``), so a
tenant's tokens are listed with one Query in creation order, and its lineage
(``ancestor_token_ids``), which the authorizer checks with one strongly consistent ``BatchGetItem``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from knowledge.adapters.dynamodb import codec, keys
from knowledge.adapters.dynamodb.codec import RawItem
from knowledge.adapters.dynamodb.paging import INDEX_KEY, Listing
from knowledge.adapters.dynamodb.table import EXISTS, TableRecords
from knowledge.domain.models import Page, TokenRecord
from knowledge.observability import logger


class DynamoDBTokenStore(TableRecords):
    """The ``TokenStore`` port. Reads by hash are strongly consistent; ``list_tokens`` reads GSI1
    (eventually consistent: a token issued a moment ago may be missing from it)."""

    def put_token(self, record: TokenRecord) -> None:
        """Store a token record (never the token). Raises ``ConflictError`` if the hash is already stored."""
        self._table.put_new(codec.encode_token(record))
        logger.info("token created", extra={"tenant_id": record.tenant_id, "subject_id": record.subject_id})

    def get_token(self, token_hash: str) -> TokenRecord | None:
        """The record even when expired or revoked; ``TokenRecord.is_valid_at`` decides validity."""
        record = self._table.get(keys.token_key(token_hash))
        return codec.decode_token(record) if record is not None else None

    def get_tokens(self, token_hashes: Sequence[str]) -> dict[str, TokenRecord]:
        records = self._table.batch_get(keys.token_key(token_hash) for token_hash in token_hashes)
        tokens = (codec.decode_token(record) for record in records)
        return {token.token_hash: token for token in tokens}

    def list_tokens(
        self,
        tenant_id: str,
        *,
        limit: int,
        next_token: str | None,
        admits: Callable[[TokenRecord], bool] | None = None,
    ) -> Page[TokenRecord]:
        listing = Listing("tokens", "GSI1PK", keys.tokens_partition(tenant_id), INDEX_KEY)
        keep: Callable[[RawItem], bool] | None = None
        if admits is not None:
            predicate = admits

            def keep(record: RawItem) -> bool:
                return predicate(codec.decode_token(record))

        records, token = self._table.query_listing(
            listing, keys.TOKEN_INDEX_PREFIX, limit=limit, next_token=next_token, keep=keep
        )
        return Page[TokenRecord](entries=[codec.decode_token(record) for record in records], next_token=token)

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
