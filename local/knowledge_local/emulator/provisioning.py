"""Creating a template's tables and queues on the local AWS endpoint.

Clients come from ``knowledge_local.account.aws_client``: fixed local credentials, so nothing the
runtime does can reach a real account.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from knowledge_local.account import aws_client
from knowledge_local.emulator.template.resources import StackSpec


@dataclass(frozen=True)
class ProvisionedTable:
    name: str
    arn: str
    stream_arn: str | None


@dataclass(frozen=True)
class ProvisionedQueue:
    name: str
    url: str
    arn: str


@dataclass(frozen=True)
class Provisioned:
    """Physical names, URLs and ARNs by logical id."""

    tables: dict[str, ProvisionedTable]
    queues: dict[str, ProvisionedQueue]


def provision(stack: StackSpec, endpoint_url: str) -> Provisioned:
    """Create every table and queue of ``stack`` (dead-letter queues first) and wait until the
    tables are active. Raises botocore's ``ClientError`` if one already exists."""
    dynamodb = aws_client("dynamodb", endpoint_url)
    tables: dict[str, ProvisionedTable] = {}
    for spec in stack.tables.values():
        dynamodb.create_table(**spec.create_table_arguments)
        dynamodb.get_waiter("table_exists").wait(TableName=spec.name, WaiterConfig={"Delay": 1})
        described = dynamodb.describe_table(TableName=spec.name)["Table"]
        tables[spec.logical_id] = ProvisionedTable(
            name=spec.name, arn=described["TableArn"], stream_arn=described.get("LatestStreamArn")
        )
    sqs = aws_client("sqs", endpoint_url)
    queues: dict[str, ProvisionedQueue] = {}
    for queue in stack.queues_in_creation_order():
        attributes = dict(queue.attributes)
        if queue.dead_letter_queue is not None:
            attributes["RedrivePolicy"] = json.dumps(
                {
                    "deadLetterTargetArn": queues[queue.dead_letter_queue].arn,
                    "maxReceiveCount": queue.max_receive_count,
                }
            )
        url = sqs.create_queue(QueueName=queue.name, Attributes=attributes)["QueueUrl"]
        arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        queues[queue.logical_id] = ProvisionedQueue(name=queue.name, url=url, arn=arn)
    return Provisioned(tables=tables, queues=queues)


DOCUMENTS_BUCKET = "knowledge-local-documents"
"""The local bucket data sources read (``documents_bucket`` in ``endpoints.json``)."""
BUNDLES_BUCKET = "knowledge-local-bundles"
"""The local bucket of export and import bundles (``BundleBucket``; ``BUNDLE_BUCKET`` of the
functions): apart from the documents bucket, so no data source ever syncs a bundle."""
NOTIFIED_EVENTS = ("s3:ObjectCreated:*", "s3:ObjectRemoved:*")


def provision_bucket(endpoint_url: str, name: str) -> None:
    """Create the bucket ``name``."""
    aws_client("s3", endpoint_url).create_bucket(Bucket=name)


def notify_queue(endpoint_url: str, bucket: str, queue_arn: str) -> None:
    """Send ``bucket``'s object events (created, removed) to the queue ``queue_arn``, as
    docs/deployment.md sets a deployment's buckets up."""
    aws_client("s3", endpoint_url).put_bucket_notification_configuration(
        Bucket=bucket,
        NotificationConfiguration={
            "QueueConfigurations": [{"QueueArn": queue_arn, "Events": list(NOTIFIED_EVENTS)}]
        },
    )
