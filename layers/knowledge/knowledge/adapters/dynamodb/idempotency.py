"""The write API's idempotency records on the knowledge table: Powertools' DynamoDB persistence
layer, with ``PK`` the static ``IDEMPOTENCY_PARTITION``, ``SK`` the hashed key and ``expiration``
(epoch seconds) the table's TTL attribute."""

from __future__ import annotations

from typing import TYPE_CHECKING

import boto3
from aws_lambda_powertools.utilities.idempotency import DynamoDBPersistenceLayer
from botocore.config import Config

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from knowledge.settings import Settings

IDEMPOTENCY_PARTITION = "IDEMPOTENCY"
"""The static ``PK`` of the write API's idempotency records in the knowledge table (``SK`` is the
hashed key; ``expiration`` is the table's TTL attribute)."""


def build(settings: Settings, *, dynamodb_client: DynamoDBClient | None = None) -> DynamoDBPersistenceLayer:
    """The persistence layer on ``settings.table_name``; ``dynamodb_client`` defaults to a new
    client with standard retries."""
    client = dynamodb_client or boto3.client("dynamodb", config=Config(retries={"mode": "standard"}))
    return DynamoDBPersistenceLayer(
        table_name=settings.table_name,
        key_attr="PK",
        sort_key_attr="SK",
        static_pk_value=IDEMPOTENCY_PARTITION,
        expiry_attr="expiration",
        boto3_client=client,
    )
