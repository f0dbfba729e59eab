"""An SQS event source mapping, locally: a queue polled into a function as Lambda SQS events
(``{"Records": [...]}``, ``eventSource: "aws:sqs"``).

As Lambda does (AWS Lambda developer guide, "Using Lambda with Amazon SQS"): messages are received
in batches of at most ``BatchSize`` (and SQS's 10 per receive); messages that do not match the
``FilterCriteria`` are deleted without an invocation; after an invocation, succeeded messages are
deleted: all of them when it returns, none when it fails (an exception or a timeout), and all but
the reported ``batchItemFailures`` (message ids) with ``ReportBatchItemFailures`` (an unknown id
fails the whole batch). Messages left undeleted become visible again after the queue's visibility
timeout, and the queue's redrive policy moves them to its dead-letter queue after
``maxReceiveCount`` receives.

Lambda polls a queue with several pollers and runs up to the mapping's ``MaximumConcurrency``
invocations at once, so one slow batch does not hold up the messages behind it. Locally each
``QueuePoller`` delivers one batch at a time, and the runtime starts ``pollers_for(source)`` of them
per mapping: ``MaximumConcurrency``, at most ``LOCAL_CONCURRENCY``.
"""

from __future__ import annotations

import base64
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from knowledge_local.account import REGION
from knowledge_local.emulator.lambda_runtime.invoker import Invocations, InvokerClosedError
from knowledge_local.emulator.pollers.event_filter import EventFilter
from knowledge_local.emulator.pollers.poller import Poller, failed_item_identifiers
from knowledge_local.emulator.template.resources import EventSourceSpec

log = logging.getLogger(__name__)

IDLE_INTERVAL_SECONDS = 0.2
"""Pause after an empty receive. Receives are short polls: a long poll would hold the queue's
visibility timeout from its start, so a change of it (tests shorten it) would not apply at once."""
MAX_IDLE_INTERVAL_SECONDS = 1.0
"""The pause doubles after each further empty receive, up to this, and is back to none as soon as
a receive holds messages: an idle queue costs a receive a second per poller, not five (every
receive is a request the runtime's one process serves, beside the writes being measured)."""
MAX_MESSAGES_PER_RECEIVE = 10
LOCAL_CONCURRENCY = 2
"""Pollers per queue mapping at most, locally: two cores' worth. Two are enough for a small
document's index work to run while a large revision's part takes the other."""


def pollers_for(source: EventSourceSpec) -> int:
    """How many ``QueuePoller`` the runtime starts for the queue mapping ``source``."""
    return max(1, min(source.maximum_concurrency or LOCAL_CONCURRENCY, LOCAL_CONCURRENCY))


class QueuePoller(Poller):
    """Polls ``queue_url`` (ARN ``queue_arn``) with ``sqs`` (a boto3 client) into
    ``source.function`` through ``invoker``; ``number`` tells the pollers of one mapping apart."""

    def __init__(
        self,
        source: EventSourceSpec,
        queue_url: str,
        queue_arn: str,
        sqs: Any,
        invoker: Invocations,
        *,
        number: int = 0,
    ) -> None:
        super().__init__(f"queue-{source.function.logical_id}-{number}")
        self._source = source
        self._queue_url = queue_url
        self._queue_arn = queue_arn
        self._sqs = sqs
        self._invoker = invoker
        self._filter = EventFilter(source.filter_patterns)
        self._idle = 0.0

    def poll_once(self) -> float:
        messages = self._sqs.receive_message(
            QueueUrl=self._queue_url,
            MaxNumberOfMessages=min(self._source.batch_size, MAX_MESSAGES_PER_RECEIVE),
            WaitTimeSeconds=0,
            MessageSystemAttributeNames=["All"],
            MessageAttributeNames=["All"],
        ).get("Messages", [])
        if not messages:
            self._idle = min(MAX_IDLE_INTERVAL_SECONDS, 2 * self._idle or IDLE_INTERVAL_SECONDS)
            return self._idle
        self._idle = 0.0
        records = [self._event_record(message) for message in messages]
        delivered = [record for record in records if self._filter.admits(record)]
        failed = set(self._deliver(delivered)) if delivered else set()
        self._delete([record for record in records if record["messageId"] not in failed])
        return 0.0

    def _deliver(self, records: list[dict[str, Any]]) -> list[str]:
        """Invoke the function with ``records``; the message ids that failed."""
        message_ids = [str(record["messageId"]) for record in records]
        try:
            answer = self._invoker.invoke(self._source.function, {"Records": records})
        except InvokerClosedError:  # the runtime is stopping: the batch is not done, nothing failed
            log.info(
                "queue batch left for the next start", extra={"function": self._source.function.logical_id}
            )
            return message_ids
        except Exception:
            log.exception("queue batch failed", extra={"function": self._source.function.logical_id})
            return message_ids
        if not self._source.report_batch_item_failures:
            return []
        failed = failed_item_identifiers(answer, message_ids)
        if failed is None:
            log.error("invalid batchItemFailures; the batch failed", extra={"answer": repr(answer)[:200]})
            return message_ids
        return failed

    def _delete(self, records: Sequence[Mapping[str, Any]]) -> None:
        for start in range(0, len(records), MAX_MESSAGES_PER_RECEIVE):
            entries = [
                {"Id": str(number), "ReceiptHandle": record["receiptHandle"]}
                for number, record in enumerate(records[start : start + MAX_MESSAGES_PER_RECEIVE])
            ]
            answer = self._sqs.delete_message_batch(QueueUrl=self._queue_url, Entries=entries)
            for failure in answer.get("Failed", []):
                log.warning("message not deleted", extra={"code": failure.get("Code")})

    def _event_record(self, message: Mapping[str, Any]) -> dict[str, Any]:
        """A received message as Lambda delivers it."""
        return {
            "messageId": message["MessageId"],
            "receiptHandle": message["ReceiptHandle"],
            "body": message.get("Body", ""),
            "attributes": dict(message.get("Attributes", {})),
            "messageAttributes": {
                name: _message_attribute(value)
                for name, value in message.get("MessageAttributes", {}).items()
            },
            "md5OfBody": message.get("MD5OfBody", ""),
            "eventSource": "aws:sqs",
            "eventSourceARN": self._queue_arn,
            "awsRegion": REGION,
        }


def _message_attribute(value: Mapping[str, Any]) -> dict[str, Any]:
    """``{"StringValue", "BinaryValue", "DataType"}`` → Lambda's ``{"stringValue", "binaryValue",
    "stringListValues", "binaryListValues", "dataType"}`` (binary as base64)."""
    converted: dict[str, Any] = {
        "stringListValues": [],
        "binaryListValues": [],
        "dataType": value["DataType"],
    }
    if "StringValue" in value:
        converted["stringValue"] = value["StringValue"]
    if "BinaryValue" in value:
        converted["binaryValue"] = base64.b64encode(value["BinaryValue"]).decode("ascii")
    return converted
