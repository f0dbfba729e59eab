"""SQS events for the ingest consumer: synthetic records, and a moto queue polled like Lambda's mapping.

``QueuePoller.poll`` receives up to ten messages, invokes the consumer with them as a Lambda SQS event
and deletes exactly the ones not listed in ``batchItemFailures``; failed ones become visible again at
once (visibility timeout 0), so redrive to a dead-letter queue happens after ``maxReceiveCount``
receives, as on AWS.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import boto3

from tests.support.events import lambda_context
from tests.support.rest import load_handler
from tests.support.store import REGION

ACCOUNT = "123456789012"


def sqs_record(
    body: Any, *, queue: str = "knowledge-ingest", message_id: str | None = None
) -> dict[str, Any]:
    """One Lambda SQS record whose body is ``body`` (a string as is, anything else as JSON)."""
    text = body if isinstance(body, str) else json.dumps(body)
    return {
        "messageId": message_id or str(uuid.uuid4()),
        "receiptHandle": f"AQEB{uuid.uuid4().hex}",
        "body": text,
        "attributes": {
            "ApproximateReceiveCount": "1",
            "SentTimestamp": "1795992668123",
            "SenderId": "AIDAIENQZJOLO23YVJ4VO",
            "ApproximateFirstReceiveTimestamp": "1795992668125",
        },
        "messageAttributes": {},
        "md5OfBody": hashlib.md5(text.encode("utf-8")).hexdigest(),
        "eventSource": "aws:sqs",
        "eventSourceARN": f"arn:aws:sqs:{REGION}:{ACCOUNT}:{queue}",
        "awsRegion": REGION,
    }


def sqs_event(records: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    return {"Records": [dict(record) for record in records]}


def run_ingest(event: Mapping[str, Any]) -> list[str]:
    """Invoke the ingest consumer; the ids of the messages it reports failed."""
    answer = load_handler("ingest_queue")(dict(event), lambda_context())
    return [entry["itemIdentifier"] for entry in answer["batchItemFailures"]]


@dataclass
class QueuePoller:
    """A queue URL polled into the ingest consumer."""

    queue_url: str

    def __post_init__(self) -> None:
        self._client = boto3.client("sqs", region_name=REGION)
        self._arn = self._client.get_queue_attributes(QueueUrl=self.queue_url, AttributeNames=["QueueArn"])[
            "Attributes"
        ]["QueueArn"]

    def poll(self) -> int:
        """One receive → invoke → delete round; the number of messages received."""
        messages = self._client.receive_message(
            QueueUrl=self.queue_url,
            MaxNumberOfMessages=10,
            VisibilityTimeout=0,
            AttributeNames=["All"],
        ).get("Messages", [])
        if not messages:
            return 0
        failed = set(run_ingest(sqs_event(self._record(message) for message in messages)))
        done = [message for message in messages if message["MessageId"] not in failed]
        for message in done:
            self._client.delete_message(QueueUrl=self.queue_url, ReceiptHandle=message["ReceiptHandle"])
        return len(messages)

    def drain(self, rounds: int = 20) -> None:
        """Poll until a receive comes back empty."""
        for _ in range(rounds):
            if self.poll() == 0:
                return
        raise AssertionError("the queue did not drain")

    def _record(self, message: Mapping[str, Any]) -> dict[str, Any]:
        return {
            "messageId": message["MessageId"],
            "receiptHandle": message["ReceiptHandle"],
            "body": message["Body"],
            "attributes": dict(message.get("Attributes", {})),
            "messageAttributes": dict(message.get("MessageAttributes", {})),
            "md5OfBody": message["MD5OfBody"],
            "eventSource": "aws:sqs",
            "eventSourceARN": self._arn,
            "awsRegion": REGION,
        }
