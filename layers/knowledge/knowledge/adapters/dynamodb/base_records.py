"""Knowledge bases on the table (``T#{tenant}#KB#{kb}`` / ``META``), listed per tenant through GSI1.

A new base is written once (``attribute_not_exists``); every change is an ``UpdateItem`` conditioned
on ``version = :expected`` that moves ``version`` by one, and a lost race is ``ConflictError``
carrying the stored version, read from the refused record itself.
"""

from __future__ import annotations

from collections.abc import Sequence

from knowledge.adapters.dynamodb import codec, keys
from knowledge.adapters.dynamodb.paging import INDEX_KEY, Listing
from knowledge.adapters.dynamodb.table import EXISTS, VERSION_IS_EXPECTED, TableRecords, all_of
from knowledge.domain import lifecycle
from knowledge.domain.models import BaseStatus, KnowledgeBase, Page, Scope
from knowledge.errors import ResourceUnavailableError
from knowledge.observability import logger


class DynamoDBBaseStore(TableRecords):
    """The ``BaseStore`` port. Single reads are strongly consistent; ``list_bases`` reads GSI1
    (eventually consistent)."""

    def create_base(
        self, tenant_id: str, *, name: str, owner_id: str, scope: Scope, team_id: str | None
    ) -> KnowledgeBase:
        base = lifecycle.new_base(
            tenant_id, name=name, owner_id=owner_id, scope=scope, team_id=team_id, now=self._clock()
        )
        self._table.put_new(codec.encode_base(base))
        logger.info(
            "knowledge base created",
            extra={"tenant_id": tenant_id, "knowledge_base_id": base.knowledge_base_id},
        )
        return base

    def update_base(
        self,
        tenant_id: str,
        knowledge_base_id: str,
        *,
        expected_version: int,
        status: BaseStatus | None = None,
        name: str | None = None,
    ) -> KnowledgeBase:
        """Change ``status`` and/or ``name``; the version moves even when neither is given.

        Raises ``ConflictError`` (stale ``expected_version``) or ``ResourceUnavailableError`` (no such base).
        """
        assign = {"version": expected_version + 1, "updated_at": self._clock()}
        assign.update(
            {field: value for field, value in (("status", status), ("name", name)) if value is not None}
        )
        change = codec.update(assign)
        stored = self._table.update(
            {
                "TableName": self._table.name,
                "Key": codec.key(keys.base_key(tenant_id, knowledge_base_id)),
                "UpdateExpression": change.expression,
                "ConditionExpression": all_of(EXISTS, VERSION_IS_EXPECTED),
                "ExpressionAttributeNames": change.names,
                "ExpressionAttributeValues": {
                    **change.values,
                    **codec.serialize({":expected": expected_version}),
                },
                "ReturnValues": "ALL_NEW",
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            }
        )
        base = codec.decode_base(stored)
        logger.info(
            "knowledge base updated",
            extra={"tenant_id": tenant_id, "knowledge_base_id": knowledge_base_id, "version": base.version},
        )
        return base

    def delete_base(self, tenant_id: str, knowledge_base_id: str, *, expected_version: int) -> None:
        """Delete the base record on its version (its GSI1 listing key goes with it).

        Raises ``ConflictError`` (stale ``expected_version``) or ``ResourceUnavailableError`` (no such base).
        """
        if self._table.get(keys.base_key(tenant_id, knowledge_base_id)) is None:
            raise ResourceUnavailableError()
        self._table.transact(
            [
                {
                    "Delete": {
                        "TableName": self._table.name,
                        "Key": codec.key(keys.base_key(tenant_id, knowledge_base_id)),
                        "ConditionExpression": all_of(EXISTS, VERSION_IS_EXPECTED),
                        "ExpressionAttributeNames": {"#version": "version"},
                        "ExpressionAttributeValues": codec.serialize({":expected": expected_version}),
                        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                    }
                }
            ]
        )
        logger.info(
            "knowledge base deleted", extra={"tenant_id": tenant_id, "knowledge_base_id": knowledge_base_id}
        )

    def get_base(self, tenant_id: str, knowledge_base_id: str) -> KnowledgeBase | None:
        record = self._table.get(keys.base_key(tenant_id, knowledge_base_id))
        return codec.decode_base(record) if record is not None else None

    def get_bases(self, tenant_id: str, knowledge_base_ids: Sequence[str]) -> dict[str, KnowledgeBase]:
        records = self._table.batch_get(keys.base_key(tenant_id, base_id) for base_id in knowledge_base_ids)
        bases = (codec.decode_base(record) for record in records)
        return {base.knowledge_base_id: base for base in bases}

    def list_bases(self, tenant_id: str, *, limit: int, next_token: str | None) -> Page[KnowledgeBase]:
        listing = Listing("bases", "GSI1PK", keys.bases_partition(tenant_id), INDEX_KEY)
        records, token = self._table.query_listing(
            listing, keys.BASE_INDEX_PREFIX, limit=limit, next_token=next_token
        )
        return Page[KnowledgeBase](
            entries=[codec.decode_base(record) for record in records], next_token=token
        )
