"""The DynamoDB calls of the knowledge store: reads, conditional writes, transactions, paged queries.

Every call runs inside ``translated_errors``, so callers see domain errors only. Single-record reads
and range queries are strongly consistent; GSI queries cannot be.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from knowledge.adapters.dynamodb.codec import RawItem, key, serialize
from knowledge.adapters.dynamodb.failures import (
    TransactionRaceError,
    backoff,
    translated_errors,
    unavailable,
)
from knowledge.adapters.dynamodb.keys import TableKey
from knowledge.adapters.dynamodb.paging import Listing
from knowledge.domain.lifecycle import check_page_size
from knowledge.errors import ConflictError, DependencyUnavailableError
from knowledge.observability import logger
from knowledge.ports import Clock

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import (
        DeleteItemInputTypeDef,
        QueryInputTypeDef,
        TransactWriteItemTypeDef,
        UpdateItemInputTypeDef,
    )

IS_NEW = "attribute_not_exists(PK)"
"""Condition clause: no record has this key yet (write-once records)."""

EXISTS = "attribute_exists(PK)"
"""Condition clause: the record exists (an update must never create one)."""

VERSION_IS_EXPECTED = "#version = :expected"
"""Condition clause of versioned records (bases, items): the version the writer read."""

BATCH_GET_LIMIT = 100
BATCH_WRITE_LIMIT = 25
RETRY_ATTEMPTS = 6
INDEX_NAME = "GSI1"


class DynamoDBTable:
    """One table reached through a low-level boto3 client."""

    def __init__(self, name: str, client: DynamoDBClient) -> None:
        self.name = name
        self._client = client

    def get(self, table_key: TableKey) -> RawItem | None:
        """The record under ``table_key`` (strongly consistent), or ``None``."""
        with translated_errors():
            response = self._client.get_item(TableName=self.name, Key=key(table_key), ConsistentRead=True)
        return response.get("Item")

    def batch_get(self, table_keys: Iterable[TableKey]) -> list[RawItem]:
        """Every stored record among ``table_keys``, in no particular order.

        ``BatchGetItem`` with 100 keys per request (duplicates removed); unprocessed keys are retried
        with backoff, and ``DependencyUnavailableError`` is raised if they stay unprocessed.
        """
        unique = list(dict.fromkeys(table_keys))
        found: list[RawItem] = []
        for start in range(0, len(unique), BATCH_GET_LIMIT):
            pending: list[Any] = [key(table_key) for table_key in unique[start : start + BATCH_GET_LIMIT]]
            for attempt in range(1, RETRY_ATTEMPTS + 2):
                with translated_errors():
                    response = self._client.batch_get_item(
                        RequestItems={self.name: {"Keys": pending, "ConsistentRead": True}}
                    )
                found.extend(response.get("Responses", {}).get(self.name, []))
                unprocessed = response.get("UnprocessedKeys", {}).get(self.name)
                pending = list(unprocessed["Keys"]) if unprocessed else []
                if not pending:
                    break
                if attempt > RETRY_ATTEMPTS:
                    raise unavailable("UnprocessedKeys")
                time.sleep(backoff(attempt))
        return found

    def put_new(self, item: RawItem) -> None:
        """Create a write-once record; ``ConflictError`` if another record holds its key.

        Finding an identical record is success: botocore may retry a put whose first attempt was
        applied but whose answer was lost, and that retry meets its own record.
        """
        try:
            with translated_errors():
                self._client.put_item(
                    TableName=self.name,
                    Item=item,
                    ConditionExpression=IS_NEW,
                    ReturnValuesOnConditionCheckFailure="ALL_OLD",
                )
        except ConflictError:
            if self.get(TableKey(item["PK"]["S"], item["SK"]["S"])) != item:
                raise

    def put_new_write(self, item: RawItem) -> TransactWriteItemTypeDef:
        """``put_new`` as one write of a transaction."""
        return {
            "Put": {
                "TableName": self.name,
                "Item": item,
                "ConditionExpression": IS_NEW,
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            }
        }

    def put(self, item: RawItem) -> None:
        """Replace the record under ``item``'s key unconditionally (a rewrite of a record's own content)."""
        with translated_errors():
            self._client.put_item(TableName=self.name, Item=item)

    def delete(self, request: DeleteItemInputTypeDef) -> None:
        """One conditional ``DeleteItem``."""
        with translated_errors():
            self._client.delete_item(**request)

    def update(self, request: UpdateItemInputTypeDef) -> RawItem:
        """One ``UpdateItem``; returns its ``Attributes`` (empty unless ``ReturnValues`` asks for them)."""
        with translated_errors():
            response = self._client.update_item(**request)
        return dict(response.get("Attributes", {}))

    def update_if(self, request: UpdateItemInputTypeDef) -> tuple[bool, RawItem]:
        """One conditional ``UpdateItem`` whose refusal is an answer, not an error: ``(True,
        Attributes)`` when it applied, ``(False, the stored item)`` when its condition failed (the
        request should ask for ``ReturnValuesOnConditionCheckFailure: ALL_OLD``; an absent item is
        ``{}``). Other failures raise as ``update``."""
        try:
            response = self._client.update_item(**request)
        except (ClientError, BotoCoreError) as error:
            failure: Mapping[str, Any] = error.response if isinstance(error, ClientError) else {}
            if failure.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
                return False, dict(failure.get("Item", {}))
            with translated_errors():
                raise
        return True, dict(response.get("Attributes", {}))

    def transact(self, writes: list[TransactWriteItemTypeDef]) -> None:
        """One ``TransactWriteItems``, retried while another transaction holds one of its items.

        botocore's own retries reuse one ``ClientRequestToken``, so a retried commit applies once.
        """
        for attempt in range(1, RETRY_ATTEMPTS + 1):
            try:
                with translated_errors():
                    self._client.transact_write_items(TransactItems=writes)
                return
            except TransactionRaceError:
                if attempt == RETRY_ATTEMPTS:
                    raise
                time.sleep(backoff(attempt))

    def query_range(self, partition: str, first: str, last: str) -> list[RawItem]:
        """Records of ``partition`` with ``first <= SK <= last``, ascending; one Query per MB of results."""
        query: QueryInputTypeDef = {
            "TableName": self.name,
            "KeyConditionExpression": "PK = :pk AND SK BETWEEN :first AND :last",
            "ExpressionAttributeValues": serialize({":pk": partition, ":first": first, ":last": last}),
            "ConsistentRead": True,
        }
        records: list[RawItem] = []
        while True:
            with translated_errors():
                response = self._client.query(**query)
            records.extend(response.get("Items", []))
            if "LastEvaluatedKey" not in response:
                return records
            query["ExclusiveStartKey"] = response["LastEvaluatedKey"]

    def query_index_until(self, partition: str, last: str) -> list[RawItem]:
        """Records of GSI1 ``partition`` with ``GSI1SK <= last``, ascending (eventually consistent,
        as every GSI read)."""
        query: QueryInputTypeDef = {
            "TableName": self.name,
            "IndexName": INDEX_NAME,
            "KeyConditionExpression": "GSI1PK = :pk AND GSI1SK <= :last",
            "ExpressionAttributeValues": serialize({":pk": partition, ":last": last}),
        }
        records: list[RawItem] = []
        while True:
            with translated_errors():
                response = self._client.query(**query)
            records.extend(response.get("Items", []))
            if "LastEvaluatedKey" not in response:
                return records
            query["ExclusiveStartKey"] = response["LastEvaluatedKey"]

    def query_first(
        self, partition: str, sort_prefix: str, limit: int, *, newest_first: bool = False
    ) -> list[RawItem]:
        """The first ``limit`` records of ``partition`` whose sort keys start ``sort_prefix``,
        ascending (descending with ``newest_first``), strongly consistent; one Query (at most 1 MB
        of results)."""
        query: QueryInputTypeDef = {
            "TableName": self.name,
            "KeyConditionExpression": "PK = :pk AND begins_with(SK, :prefix)",
            "ExpressionAttributeValues": serialize({":pk": partition, ":prefix": sort_prefix}),
            "ConsistentRead": True,
            "Limit": limit,
            "ScanIndexForward": not newest_first,
        }
        with translated_errors():
            response = self._client.query(**query)
        return list(response.get("Items", []))

    def query_listing(
        self,
        listing: Listing,
        sort_prefix: str,
        *,
        limit: int,
        next_token: str | None,
        newest_first: bool = False,
        keep: Callable[[RawItem], bool] | None = None,
    ) -> tuple[list[RawItem], str | None]:
        """Up to ``limit`` records of a listing with sort keys starting ``sort_prefix``, and the next token.

        One record beyond ``limit`` is fetched, so ``next_token`` is ``None`` exactly on the last page.
        With ``keep``, only records it accepts count: queries go on until ``limit`` of them are found,
        and ``next_token`` names the last one returned, so pages stay full.
        Raises ``ValueError`` for ``limit < 1`` and ``RequestValidationError`` for a foreign token.
        """
        if limit < 1:
            raise ValueError("limit must be at least 1")
        on_index = listing.partition_attribute == "GSI1PK"
        query: QueryInputTypeDef = {
            "TableName": self.name,
            "KeyConditionExpression": "#pk = :pk AND begins_with(#sk, :prefix)",
            "ExpressionAttributeNames": {
                "#pk": listing.partition_attribute,
                "#sk": "GSI1SK" if on_index else "SK",
            },
            "ExpressionAttributeValues": serialize({":pk": listing.partition, ":prefix": sort_prefix}),
            "ScanIndexForward": not newest_first,
        }
        if on_index:
            query["IndexName"] = INDEX_NAME
        start = listing.decode(next_token) if next_token is not None else None
        records: list[RawItem] = []
        while True:
            query["Limit"] = limit + 1 - len(records)
            if start is not None:
                query["ExclusiveStartKey"] = start
            with translated_errors():
                response = self._client.query(**query)
            found = response.get("Items", [])
            records.extend(found if keep is None else [record for record in found if keep(record)])
            start = response.get("LastEvaluatedKey")
            if len(records) > limit or start is None:
                break
        if len(records) <= limit:
            return records, None
        return records[:limit], listing.encode(listing.start_key(records[limit - 1]))

    def delete_quietly(self, table_keys: Iterable[TableKey]) -> bool:
        """Delete records with ``BatchWriteItem``, 25 per request; ``False`` (logged) if some remain."""
        requests: list[Any] = [{"DeleteRequest": {"Key": key(table_key)}} for table_key in table_keys]
        try:
            for start in range(0, len(requests), BATCH_WRITE_LIMIT):
                pending: Any = {self.name: requests[start : start + BATCH_WRITE_LIMIT]}
                for attempt in range(1, RETRY_ATTEMPTS + 1):
                    with translated_errors():
                        pending = self._client.batch_write_item(RequestItems=pending).get("UnprocessedItems")
                    if not pending:
                        break
                    time.sleep(backoff(attempt))
                if pending:
                    raise unavailable("UnprocessedItems")
        except DependencyUnavailableError:
            logger.warning("records left behind", extra={"records": len(requests)})
            return False
        return True


class TableRecords:
    """What the aggregates of the store share: the table, the clock of every timestamp (aware UTC
    datetimes), the page size of new revisions (1..90,000 code points, else ``ValueError``) and the
    stored items quota of each tenant (0: counted, never refused)."""

    def __init__(
        self, table: DynamoDBTable, *, clock: Clock, page_size_chars: int, stored_items_limit: int = 0
    ) -> None:
        if stored_items_limit < 0:
            raise ValueError("stored_items_limit must be 0 (no limit) or more")
        self._table = table
        self._clock = clock
        self._page_size = check_page_size(page_size_chars)
        self._stored_items_limit = stored_items_limit


def all_of(*clauses: str) -> str:
    """Condition clauses combined with ``AND``, each in parentheses."""
    return " AND ".join(f"({clause})" for clause in clauses)
