"""A DynamoDB stream event source mapping, locally: the table's stream polled into a function as
Lambda DynamoDB stream events (``{"Records": [...]}``, ``eventSource: "aws:dynamodb"``).

As Lambda does (AWS Lambda developer guide, "Using AWS Lambda with Amazon DynamoDB"):

- every shard is read in order with continuing iterators; shards that appear later are found by
  describing the stream again and read from their start; a closed shard is dropped once drained;
- a batch holds at most ``BatchSize`` records of one shard; records that do not match the
  ``FilterCriteria`` are skipped without an invocation;
- a failed invocation (an exception or a timeout) retries the whole batch; with
  ``ReportBatchItemFailures`` the function's ``batchItemFailures`` (sequence numbers) retry from the
  earliest failed record, and an unknown identifier fails the whole batch;
- retries wait (capped exponential backoff) and go on until the batch succeeds, or at most
  ``MaximumRetryAttempts`` times, after which the rest of the batch is discarded: logged, and
  described to the ``OnFailure`` destination as Lambda does (``DDBStreamBatchInfo`` with the shard
  and sequence numbers; "Retaining records of discarded batches").

``MaximumBatchingWindowInSeconds``, ``BisectBatchOnFunctionError`` and ``ParallelizationFactor``
are not applied: records are delivered as soon as they are read, one batch at a time per shard.
"""

from __future__ import annotations

import base64
import logging
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from knowledge_local.account import ACCOUNT_ID, REGION
from knowledge_local.emulator.lambda_runtime.invoker import Invocations, InvokerClosedError
from knowledge_local.emulator.pollers.event_filter import EventFilter
from knowledge_local.emulator.pollers.poller import Poller, failed_item_identifiers
from knowledge_local.emulator.template.resources import EventSourceSpec

log = logging.getLogger(__name__)

IDLE_INTERVAL_SECONDS = 0.25
"""Lambda polls each shard four times per second."""
SHARD_REFRESH_SECONDS = 10.0
MAX_RETRY_BACKOFF_SECONDS = 5.0


@dataclass
class _Shard:
    shard_id: str
    iterator: str | None
    attempts: int = 0
    not_before: float = 0.0


class StreamPoller(Poller):
    """Polls ``stream_arn`` with ``streams`` (a boto3 ``dynamodbstreams`` client) into
    ``source.function`` through ``invoker``; ``on_failure`` receives the invocation record of every
    discarded batch (the mapping's ``DestinationConfig.OnFailure``)."""

    def __init__(
        self,
        source: EventSourceSpec,
        stream_arn: str,
        streams: Any,
        invoker: Invocations,
        *,
        on_failure: Callable[[dict[str, Any]], None] | None = None,
    ) -> None:
        super().__init__(f"stream-{source.function.logical_id}")
        self._source = source
        self._stream_arn = stream_arn
        self._streams = streams
        self._invoker = invoker
        self._on_failure = on_failure
        self._filter = EventFilter(source.filter_patterns)
        self._shards: dict[str, _Shard] = {}
        self._refreshed_at: float | None = None
        self._rounds = threading.Condition()
        self._started = self._idle = 0
        """Rounds of reads started, and the last one that found nothing to deliver."""

    def poll_once(self) -> float:
        with self._rounds:
            self._started += 1
            round_number = self._started
        now = time.monotonic()
        if self._refreshed_at is None or now - self._refreshed_at >= SHARD_REFRESH_SECONDS:
            self._refresh_shards()
            self._refreshed_at = now
        busy = False
        for shard in list(self._shards.values()):
            if shard.iterator is not None and shard.not_before <= time.monotonic() and not self.stopping:
                busy = self._poll_shard(shard) or busy
        if not busy and not any(shard.attempts for shard in self._shards.values()):
            with self._rounds:
                self._idle = round_number
                self._rounds.notify_all()
        return 0.0 if busy else IDLE_INTERVAL_SECONDS

    def wait_until_caught_up(self, timeout: float) -> bool:
        """Wait until a round of reads that started after this call found no record in any shard
        and no batch waiting for a retry: every record written before the call has been delivered
        (or discarded after its retries). False when ``timeout`` seconds pass first."""
        with self._rounds:
            after = self._started
            return self._rounds.wait_for(lambda: self._idle > after, timeout=timeout)

    def _refresh_shards(self) -> None:
        first = self._refreshed_at is None
        arguments: dict[str, Any] = {"StreamArn": self._stream_arn}
        while True:
            description = self._streams.describe_stream(**arguments)["StreamDescription"]
            for shard in description.get("Shards", []):
                shard_id = shard["ShardId"]
                if shard_id not in self._shards:
                    position = self._source.starting_position if first else "TRIM_HORIZON"
                    self._shards[shard_id] = _Shard(shard_id, self._iterator(shard_id, position))
            last = description.get("LastEvaluatedShardId")
            if not last:
                return
            arguments["ExclusiveStartShardId"] = last

    def _iterator(self, shard_id: str, iterator_type: str, sequence_number: str | None = None) -> str:
        arguments = {"StreamArn": self._stream_arn, "ShardId": shard_id, "ShardIteratorType": iterator_type}
        if sequence_number is not None:
            arguments["SequenceNumber"] = sequence_number
        return str(self._streams.get_shard_iterator(**arguments)["ShardIterator"])

    def _poll_shard(self, shard: _Shard) -> bool:
        """Read and deliver one batch of ``shard``; True when it held records."""
        response = self._streams.get_records(ShardIterator=shard.iterator, Limit=self._source.batch_size)
        records = [self._event_record(record) for record in response.get("Records", [])]
        next_iterator = response.get("NextShardIterator")
        delivered = [record for record in records if self._filter.admits(record)]
        retry_from = self._deliver(delivered) if delivered else None
        if retry_from is not None:
            shard.attempts += 1
            retries = self._source.maximum_retry_attempts
            if retries is None or shard.attempts <= retries:
                shard.iterator = self._iterator(shard.shard_id, "AT_SEQUENCE_NUMBER", retry_from)
                shard.not_before = time.monotonic() + min(MAX_RETRY_BACKOFF_SECONDS, 0.1 * 2**shard.attempts)
                return True
            self._discard(shard, [record for record in delivered if _sequence(record) >= int(retry_from)])
        shard.attempts = 0
        shard.iterator = next_iterator
        if next_iterator is None:
            log.info("stream shard closed", extra={"shard_id": shard.shard_id})
        return bool(records)

    def _discard(self, shard: _Shard, records: list[dict[str, Any]]) -> None:
        """Give up on ``records`` after their retries: log them and send the on-failure record."""
        log.error(
            "stream batch discarded after its retries",
            extra={"function": self._source.function.logical_id, "records": len(records)},
        )
        if self._on_failure is None:
            return
        arrivals = [record["dynamodb"].get("ApproximateCreationDateTime", 0) for record in records]
        function = self._source.function.logical_id
        self._on_failure(
            {
                "requestContext": {
                    "requestId": str(uuid.uuid4()),
                    "functionArn": f"arn:aws:lambda:{REGION}:{ACCOUNT_ID}:function:{function}",
                    "condition": "RetryAttemptsExhausted",
                    "approximateInvokeCount": shard.attempts,
                },
                "responseContext": {
                    "statusCode": 200,
                    "executedVersion": "$LATEST",
                    "functionError": "Unhandled",
                },
                "version": "1.0",
                "timestamp": _iso(time.time()),
                "DDBStreamBatchInfo": {
                    "shardId": shard.shard_id,
                    "startSequenceNumber": str(_sequence(records[0])),
                    "endSequenceNumber": str(_sequence(records[-1])),
                    "approximateArrivalOfFirstRecord": _iso(min(arrivals)),
                    "approximateArrivalOfLastRecord": _iso(max(arrivals)),
                    "batchSize": len(records),
                    "streamArn": self._stream_arn,
                },
            }
        )

    def _deliver(self, records: list[dict[str, Any]]) -> str | None:
        """Invoke the function with ``records``; the sequence number to retry from, or ``None``."""
        sequence_numbers = [str(record["dynamodb"]["SequenceNumber"]) for record in records]
        try:
            answer = self._invoker.invoke(self._source.function, {"Records": records})
        except InvokerClosedError:  # the runtime is stopping: the batch is not done, nothing failed
            log.info(
                "stream batch left for the next start", extra={"function": self._source.function.logical_id}
            )
            return sequence_numbers[0]
        except Exception:
            log.exception("stream batch failed", extra={"function": self._source.function.logical_id})
            return sequence_numbers[0]
        if not self._source.report_batch_item_failures:
            return None
        failed = failed_item_identifiers(answer, sequence_numbers)
        if failed is None:
            log.error("invalid batchItemFailures; retrying the batch", extra={"answer": repr(answer)[:200]})
            return sequence_numbers[0]
        return failed[0] if failed else None

    def _event_record(self, record: Mapping[str, Any]) -> dict[str, Any]:
        """A GetRecords record as Lambda delivers it: binary values base64, creation time in epoch
        seconds, the stream's ARN as ``eventSourceARN``."""
        event: dict[str, Any] = as_event_json(record)
        event["eventVersion"] = "1.1"
        event["eventSourceARN"] = self._stream_arn
        event.setdefault("awsRegion", REGION)
        return event


def _sequence(record: Mapping[str, Any]) -> int:
    return int(record["dynamodb"]["SequenceNumber"])


def _iso(epoch_seconds: float) -> str:
    return datetime.fromtimestamp(epoch_seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def as_event_json(value: Any) -> Any:
    """A DynamoDB Streams ``GetRecords`` value as Lambda delivers it in an event: binary as base64,
    sets and tuples as lists, datetimes as epoch seconds."""
    if isinstance(value, Mapping):
        return {key: as_event_json(item) for key, item in value.items()}
    if isinstance(value, list | set | tuple):
        return [as_event_json(item) for item in value]
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, datetime):
        return int(value.timestamp())
    return value
