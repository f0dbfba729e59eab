"""SQS events for the ingest consumer: synthetic records, and a moto queue polled like Lambda's mapping.

Every ingest message is signed with a bearer token in its ``Authorization`` message attribute
(``sqs_record(..., authorization=...)``, ``signed(...)`` for ``send_message``). The events of
``events/`` carry ``EVENTS_AUTHORIZATION``, a sample token that ``store_events_token`` puts in a store.

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
from datetime import UTC, datetime
from typing import Any

import boto3

from knowledge.domain.access.bearer_tokens import hash_token
from knowledge.domain.models import Permission, TokenRecord
from knowledge.ports import TokenStore
from tests.support.events import lambda_context
from tests.support.rest import load_handler
from tests.support.store import REGION

ACCOUNT = "123456789012"
EVENTS_TENANT = "acme"
EVENTS_SUBJECT = "ingest-pipeline"
EVENTS_TOKEN = "kn_sample-events-acme-writer"
"""The sample token the ingest events of ``events/`` are signed with (``knowledge:write`` in ``acme``)."""
EVENTS_AUTHORIZATION = f"Bearer {EVENTS_TOKEN}"


def store_events_token(store: TokenStore) -> TokenRecord:
    """Make ``EVENTS_TOKEN`` a valid token of ``EVENTS_SUBJECT`` in ``EVENTS_TENANT``, as if issued."""
    record = TokenRecord(
        token_hash=hash_token(EVENTS_TOKEN),
        tenant_id=EVENTS_TENANT,
        subject_id=EVENTS_SUBJECT,
        scopes=frozenset({Permission.WRITE.value}),
        created_at=datetime(2026, 1, 1, tzinfo=UTC),
    )
    store.put_token(record)
    return record


def signed(authorization: str) -> dict[str, Any]:
    """``send_message``'s ``MessageAttributes`` for a message signed with ``authorization``."""
    return {"Authorization": {"DataType": "String", "StringValue": authorization}}


def lambda_attributes(attributes: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """SQS ``MessageAttributes`` (``StringValue``, ``DataType``) as a Lambda record holds them."""
    return {
        name: {
            "stringValue": value["StringValue"],
            "stringListValues": [],
            "binaryListValues": [],
            "dataType": value["DataType"],
        }
        for name, value in attributes.items()
    }


def sqs_record(
    body: Any,
    *,
    authorization: str | None = None,
    queue: str = "knowledge-ingest",
    message_id: str | None = None,
) -> dict[str, Any]:
    """One Lambda SQS record whose body is ``body`` (a string as is, anything else as JSON), signed
    with ``authorization`` (``Bearer <token>``; ``None``: no ``Authorization`` attribute)."""
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
        "messageAttributes": {} if authorization is None else lambda_attributes(signed(authorization)),
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
            MessageAttributeNames=["All"],
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
            "messageAttributes": lambda_attributes(message.get("MessageAttributes", {})),
            "md5OfBody": message["MD5OfBody"],
            "eventSource": "aws:sqs",
            "eventSourceARN": self._arn,
            "awsRegion": REGION,
        }
