"""``DynamoDBDataSourceStore``: the ``DataSourceStore`` port on the knowledge table (keys in ``keys``).

Each record holds its model as JSON (``doc``) beside the table's keys and, for jobs, a ``version``
attribute the conditional writes test. A data source is written with its bucket record in one
transaction, so an S3 event finds every data source that exists. Errors as in ``table``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import boto3
from botocore.config import Config
from pydantic import BaseModel

from knowledge.adapters.dynamodb import keys
from knowledge.adapters.dynamodb.codec import RawItem, key, serialize
from knowledge.adapters.dynamodb.failures import translated_errors
from knowledge.adapters.dynamodb.table import INDEX_NAME, VERSION_IS_EXPECTED, DynamoDBTable
from knowledge.domain.data_sources import DataSource, SyncedObject, SyncJob

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import QueryInputTypeDef

    from knowledge.settings import Settings

_AFTER_LAST_SYNCED = "OBJ$"
"""Sorts after every ``OBJ#...`` sort key and before nothing else of the partition."""


def _record(table_key: keys.TableKey, entity: str, model: BaseModel, **extra: Any) -> RawItem:
    return serialize(
        {"PK": table_key.pk, "SK": table_key.sk, "entity": entity, "doc": model.model_dump_json(), **extra}
    )


def _doc(item: RawItem) -> str:
    return str(item["doc"]["S"])


class DynamoDBDataSourceStore:
    """Data sources, sync jobs and synced objects in the table ``table``."""

    def __init__(self, table: DynamoDBTable, client: DynamoDBClient) -> None:
        self._table = table
        self._client = client

    # -- data sources ------------------------------------------------------------------------------

    def create_data_source(self, source: DataSource) -> None:
        index = keys.data_source_index_key(source.tenant_id, source.knowledge_base_id, source.data_source_id)
        main = _record(
            keys.data_source_key(source.tenant_id, source.data_source_id),
            "data_source",
            source,
            GSI1PK=index.pk,
            GSI1SK=index.sk,
        )
        by_bucket = _record(
            keys.bucket_source_key(source.bucket, source.tenant_id, source.data_source_id),
            "bucket_source",
            source,
        )
        self._table.transact([self._table.put_new_write(main), self._table.put_new_write(by_bucket)])

    def get_data_source(self, tenant_id: str, data_source_id: str) -> DataSource | None:
        item = self._table.get(keys.data_source_key(tenant_id, data_source_id))
        return DataSource.model_validate_json(_doc(item)) if item else None

    def list_data_sources(self, tenant_id: str, knowledge_base_id: str) -> list[DataSource]:
        partition = keys.base_partition(tenant_id, knowledge_base_id)
        query: QueryInputTypeDef = {
            "TableName": self._table.name,
            "IndexName": INDEX_NAME,
            "KeyConditionExpression": "GSI1PK = :pk AND begins_with(GSI1SK, :prefix)",
            "ExpressionAttributeValues": serialize(
                {":pk": partition, ":prefix": keys.DATA_SOURCE_INDEX_PREFIX}
            ),
        }
        return [DataSource.model_validate_json(_doc(item)) for item in self._query(query)]

    def data_sources_of_bucket(self, bucket: str) -> list[DataSource]:
        partition = keys.bucket_source_key(bucket, "t", "d").pk
        query: QueryInputTypeDef = {
            "TableName": self._table.name,
            "KeyConditionExpression": "PK = :pk",
            "ExpressionAttributeValues": serialize({":pk": partition}),
            "ConsistentRead": True,
        }
        return [DataSource.model_validate_json(_doc(item)) for item in self._query(query)]

    def delete_data_source(self, tenant_id: str, data_source_id: str) -> None:
        source = self.get_data_source(tenant_id, data_source_id)
        if source is None:
            return
        partition = keys.data_source_partition(tenant_id, data_source_id)
        query: QueryInputTypeDef = {
            "TableName": self._table.name,
            "KeyConditionExpression": "PK = :pk",
            "ExpressionAttributeValues": serialize({":pk": partition}),
            "ProjectionExpression": "PK, SK",
            "ConsistentRead": True,
        }
        # The bucket record first: once it is gone, events no longer reach the data source.
        self._table.delete_quietly([keys.bucket_source_key(source.bucket, tenant_id, data_source_id)])
        records = [
            keys.TableKey(item["PK"]["S"], item["SK"]["S"])
            for item in self._query(query)
            if item["SK"]["S"] != keys.META
        ]
        self._table.delete_quietly(records)
        self._table.delete_quietly([keys.data_source_key(tenant_id, data_source_id)])

    # -- jobs --------------------------------------------------------------------------------------

    def create_job(self, job: SyncJob) -> None:
        table_key = keys.job_key(job.tenant_id, job.data_source_id, job.sync_job_id)
        self._table.put_new(_record(table_key, "sync_job", job, version=job.version))

    def get_job(self, tenant_id: str, data_source_id: str, sync_job_id: str) -> SyncJob | None:
        item = self._table.get(keys.job_key(tenant_id, data_source_id, sync_job_id))
        return SyncJob.model_validate_json(_doc(item)) if item else None

    def put_job(self, job: SyncJob, *, expected_version: int) -> SyncJob:
        stored = job.model_copy(update={"version": expected_version + 1})
        table_key = keys.job_key(job.tenant_id, job.data_source_id, job.sync_job_id)
        with translated_errors():
            self._client.put_item(
                TableName=self._table.name,
                Item=_record(table_key, "sync_job", stored, version=stored.version),
                ConditionExpression=VERSION_IS_EXPECTED,
                ExpressionAttributeNames={"#version": "version"},
                ExpressionAttributeValues=serialize({":expected": expected_version}),
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        return stored

    # -- synced objects ----------------------------------------------------------------------------

    def get_synced(self, tenant_id: str, data_source_id: str, key_: str) -> SyncedObject | None:
        item = self._table.get(keys.synced_key(tenant_id, data_source_id, key_))
        return SyncedObject.model_validate_json(_doc(item)) if item else None

    def synced_between(
        self, tenant_id: str, data_source_id: str, *, after: str | None, through: str | None, limit: int
    ) -> list[SyncedObject]:
        if limit < 1:
            raise ValueError("limit must be at least 1")
        # ``key + "\0"`` is the least string above ``key``: the bound is exclusive.
        first = keys.synced_sort_key(after + "\0") if after is not None else keys.SYNCED_PREFIX
        last = keys.synced_sort_key(through) if through is not None else _AFTER_LAST_SYNCED
        if first > last:
            return []
        query: QueryInputTypeDef = {
            "TableName": self._table.name,
            "KeyConditionExpression": "PK = :pk AND SK BETWEEN :first AND :last",
            "ExpressionAttributeValues": serialize(
                {":pk": keys.data_source_partition(tenant_id, data_source_id), ":first": first, ":last": last}
            ),
            "ConsistentRead": True,
        }
        return [SyncedObject.model_validate_json(_doc(item)) for item in self._query(query, limit=limit)]

    def put_synced(self, tenant_id: str, data_source_id: str, record: SyncedObject) -> None:
        self._table.put(_record(keys.synced_key(tenant_id, data_source_id, record.key), "synced", record))

    def delete_synced(self, tenant_id: str, data_source_id: str, key_: str) -> None:
        with translated_errors():
            self._client.delete_item(
                TableName=self._table.name, Key=key(keys.synced_key(tenant_id, data_source_id, key_))
            )

    def _query(self, query: QueryInputTypeDef, *, limit: int | None = None) -> list[RawItem]:
        found: list[RawItem] = []
        while True:
            if limit is not None:
                query["Limit"] = limit - len(found)
            with translated_errors():
                response = self._client.query(**query)
            found.extend(response.get("Items", []))
            start = response.get("LastEvaluatedKey")
            if start is None or (limit is not None and len(found) >= limit):
                return found
            query["ExclusiveStartKey"] = start


def build(settings: Settings, *, dynamodb_client: DynamoDBClient | None = None) -> DynamoDBDataSourceStore:
    """The store on ``settings.table_name``; a boto3 client with standard retries by default."""
    client = dynamodb_client or boto3.client("dynamodb", config=Config(retries={"mode": "standard"}))
    return DynamoDBDataSourceStore(DynamoDBTable(settings.table_name, client), client)
