"""The knowledge table's DynamoDB stream, read with boto3 ``dynamodbstreams`` and shaped as Lambda events.

``StreamReader`` reads every shard from ``TRIM_HORIZON`` with continuing iterators, as Lambda's event
source mapping does, and turns each record into the Lambda record shape (``eventSourceARN`` added,
``ApproximateCreationDateTime`` in epoch seconds, binary values in base64). ``apply_to_table``
writes the images of recorded changes into a table, so a stream event saved under ``events/`` can
be replayed onto an empty one. ``ttl_sweep`` does what DynamoDB's TTL does (moto has no TTL): it
deletes the records whose ``expiration`` has passed, and their ``REMOVE`` records carry the
service's ``userIdentity`` (``as_ttl_removal``).
"""

from __future__ import annotations

import base64
import copy
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

import boto3

from knowledge.domain.access.visibility import VisibilityFilter
from knowledge.domain.retrieval.hits import IndexQuery, Leg
from knowledge.ports import SearchIndex
from tests.conftest import TABLE_NAME
from tests.support.events import lambda_context
from tests.support.rest import load_handler
from tests.support.store import REGION


class StreamReader:
    """New records of the table's stream since the last ``read``, oldest first."""

    def __init__(self, table_name: str = TABLE_NAME) -> None:
        self._client = boto3.client("dynamodbstreams", region_name=REGION)
        description = boto3.client("dynamodb", region_name=REGION).describe_table(TableName=table_name)
        self.arn: str = description["Table"]["LatestStreamArn"]
        self._iterators: dict[str, str] = {}

    def read(self) -> list[dict[str, Any]]:
        shards = self._client.describe_stream(StreamArn=self.arn)["StreamDescription"]["Shards"]
        records: list[dict[str, Any]] = []
        for shard in shards:
            shard_id = shard["ShardId"]
            iterator = (
                self._iterators.get(shard_id)
                or self._client.get_shard_iterator(
                    StreamArn=self.arn, ShardId=shard_id, ShardIteratorType="TRIM_HORIZON"
                )["ShardIterator"]
            )
            while True:
                answer = self._client.get_records(ShardIterator=iterator, Limit=1000)
                iterator = answer["NextShardIterator"]
                records.extend(self._lambda_record(record) for record in answer["Records"])
                if not answer["Records"]:
                    break
            self._iterators[shard_id] = iterator
        return records

    def _lambda_record(self, record: Mapping[str, Any]) -> dict[str, Any]:
        shaped: dict[str, Any] = _as_json(copy.deepcopy(dict(record)))
        created = shaped["dynamodb"].get("ApproximateCreationDateTime")
        if isinstance(created, datetime):
            shaped["dynamodb"]["ApproximateCreationDateTime"] = int(created.timestamp())
        shaped["eventSourceARN"] = self.arn
        return shaped


def _as_json(value: Any) -> Any:
    """Binary attribute values as Lambda delivers them: base64 text."""
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, dict):
        return {key: _as_json(entry) for key, entry in value.items()}
    if isinstance(value, list):
        return [_as_json(entry) for entry in value]
    return value


def stream_event(records: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """A Lambda DynamoDB Streams event holding ``records``."""
    return {"Records": [copy.deepcopy(dict(record)) for record in records]}


def run_indexer(records: Sequence[Mapping[str, Any]], batch_size: int = 100) -> list[str]:
    """Feed ``records`` to the indexer's handler in batches; the failed sequence numbers, in order."""
    failures: list[str] = []
    for start in range(0, len(records), batch_size):
        answer = load_handler("indexer")(stream_event(records[start : start + batch_size]), lambda_context())
        failures.extend(entry["itemIdentifier"] for entry in answer["batchItemFailures"])
    return failures


def drain(reader: StreamReader, rounds: int = 5) -> int:
    """Index everything the stream holds until it is quiet (the indexer's own marks produce records
    too); returns how many records were fed. Fails when a record fails or the stream never settles."""
    fed = 0
    for _ in range(rounds):
        records = reader.read()
        if not records:
            return fed
        assert run_indexer(records) == []
        fed += len(records)
    raise AssertionError("the stream did not settle: the indexer keeps producing changes")


TTL_IDENTITY = {"type": "Service", "principalId": "dynamodb.amazonaws.com"}
"""The ``userIdentity`` DynamoDB gives the stream record of a TTL deletion."""


def as_ttl_removal(record: Mapping[str, Any]) -> dict[str, Any]:
    """``record`` (a ``REMOVE``) as DynamoDB delivers it when its TTL deleted the item."""
    assert record["eventName"] == "REMOVE"
    return {**copy.deepcopy(dict(record)), "userIdentity": dict(TTL_IDENTITY)}


def ttl_sweep(reader: StreamReader, *, now: float, table_name: str = TABLE_NAME) -> list[dict[str, Any]]:
    """Delete every record whose ``expiration`` (epoch seconds) is at or before ``now``, as the TTL
    sweep does, and return the stream's new records with every ``REMOVE`` as the sweep's (drain the
    stream first, so that only the sweep's records are new)."""
    client = boto3.client("dynamodb", region_name=REGION)
    pages = client.get_paginator("scan").paginate(
        TableName=table_name,
        FilterExpression="#expiration <= :now",
        ExpressionAttributeNames={"#expiration": "expiration"},
        ExpressionAttributeValues={":now": {"N": str(int(now))}},
        ProjectionExpression="PK, SK",
    )
    for page in pages:
        for key in page["Items"]:
            client.delete_item(TableName=table_name, Key=key)
    return [as_ttl_removal(record) if record["eventName"] == "REMOVE" else record for record in reader.read()]


def apply_to_table(records: Iterable[Mapping[str, Any]], table_name: str = TABLE_NAME) -> None:
    """Write recorded changes into a table: new images are put, removed keys deleted."""
    client = boto3.client("dynamodb", region_name=REGION)
    for record in records:
        change = record["dynamodb"]
        if record["eventName"] == "REMOVE":
            client.delete_item(TableName=table_name, Key=change["Keys"])
        else:
            client.put_item(TableName=table_name, Item=change["NewImage"])


def indexed_revisions(index: SearchIndex, tenant_id: str, dimension: int = 64) -> dict[str, str]:
    """``{item id: revision id}`` of every chunk the index holds in ``tenant_id``'s tenant-scoped bases
    (a semantic query with ``k`` beyond the number of chunks returns them all)."""
    vector = [1.0] + [0.0] * (dimension - 1)
    visibility = VisibilityFilter(tenant_id=tenant_id, subject_id="index-inspector")
    hits = index.search(
        IndexQuery(text="", vector=vector, visibility=visibility, k=10_000, legs=frozenset({Leg.SEMANTIC}))
    )
    return {hit.knowledge_item_id: hit.knowledge_revision_id for hit in hits.semantic}
