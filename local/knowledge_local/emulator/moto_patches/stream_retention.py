"""DynamoDB Streams retention for moto: records every reader has passed are dropped, shard
iterators expire.

moto keeps every stream record of a table for the life of the process (``StreamShard.items`` only
grows: each write adds a record with its old and new images) and every shard iterator it ever
handed out (each ``GetRecords`` answer adds one). DynamoDB keeps records for 24 hours and an
iterator for 15 minutes. Locally the stream's only reader is usually the stream poller, reading
a few times a second, so the records it has passed are of no further use while they cost memory
in proportion to everything ever written.

Rules (``install()`` wraps moto's ``get_shard_iterator`` and ``get_records``):

- An iterator is *open* from the moment it is handed out until the iterator its ``GetRecords``
  answered (its successor) is itself read, or until it expires. So the records of a batch stay
  while its reader works on them: a reader that fails a batch can still ask for an iterator at a
  sequence number inside it and read the batch again, as the local stream poller does.
- After each ``GetRecords`` the shard drops its records before the oldest open iterator's
  position; with no open iterator at all (nobody reads the stream) nothing is dropped. Sequence
  numbers continue: ``TRIM_HORIZON`` then starts at the oldest record kept.
- An iterator expires 15 minutes after it was handed out (``ExpiredIteratorException``); reading
  at a position whose records were dropped is ``TrimmedDataAccessException``, both as DynamoDB
  Streams answers them.

An abandoned iterator (handed out but never read) holds records back until it expires, so what a
shard keeps is bounded by what its readers have not passed, plus at most 15 minutes of writes after
a reader gave up an iterator.

Callers serialize every DynamoDB and Streams request (``aws_server``).
"""

from __future__ import annotations

import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from moto.core.exceptions import JsonRESTError
from moto.dynamodb.models.table import StreamShard
from moto.dynamodbstreams.models import DynamoDBStreamsBackend, ShardIterator

ITERATOR_LIFETIME_SECONDS = 15 * 60.0
"""How long a shard iterator stays valid after it is handed out (DynamoDB Streams: 15 minutes)."""

_MOTO_GET_SHARD_ITERATOR: Callable[..., ShardIterator] = DynamoDBStreamsBackend.get_shard_iterator
_MOTO_GET_RECORDS: Callable[..., dict[str, Any]] = DynamoDBStreamsBackend.get_records
_install_lock = threading.Lock()


class ExpiredIteratorError(JsonRESTError):
    def __init__(self) -> None:
        super().__init__("ExpiredIteratorException", "The shard iterator has expired or is unknown.")


class TrimmedDataAccessError(JsonRESTError):
    def __init__(self) -> None:
        super().__init__(
            "TrimmedDataAccessException",
            "The shard iterator points at stream records that are no longer retained.",
        )


@dataclass
class _Opened:
    """One iterator handed out: when, and the iterator whose read answered it (if any)."""

    iterator: ShardIterator
    handed_out_at: float
    predecessor: str | None = None


class _Retention:
    """The iterators of one Streams backend: every one handed out in the last
    ``ITERATOR_LIFETIME_SECONDS``, oldest first, and among them the open ones, by shard."""

    def __init__(self) -> None:
        self.iterators: OrderedDict[str, _Opened] = OrderedDict()
        self.open: dict[StreamShard, dict[str, ShardIterator]] = {}
        """The open iterators of each shard, by ARN."""

    def handed_out(self, iterator: ShardIterator, predecessor: str | None = None) -> None:
        self.iterators[iterator.arn] = _Opened(iterator, time.monotonic(), predecessor)
        self.open.setdefault(iterator.stream_shard, {})[iterator.arn] = iterator

    def read(self, arn: str) -> None:
        """``arn`` was read: its predecessor, if any, is passed."""
        opened = self.iterators.get(arn)
        if opened is not None and opened.predecessor is not None:
            self._close(opened.predecessor)

    def expire(self, backend: DynamoDBStreamsBackend, now: float) -> None:
        while self.iterators:
            arn, opened = next(iter(self.iterators.items()))
            if now - opened.handed_out_at < ITERATOR_LIFETIME_SECONDS:
                return
            self._close(arn)
            del self.iterators[arn]
            backend.shard_iterators.pop(arn, None)

    def trim(self, shard: StreamShard) -> None:
        positions = [iterator.sequence_number for iterator in self.open.get(shard, {}).values()]
        if not positions:
            return
        passed = min(positions) - shard.starting_sequence_number
        if passed > 0:
            del shard.items[:passed]
            shard.starting_sequence_number += passed

    def _close(self, arn: str) -> None:
        opened = self.iterators.get(arn)
        if opened is not None:
            self.open.get(opened.iterator.stream_shard, {}).pop(arn, None)


_retention: weakref.WeakKeyDictionary[DynamoDBStreamsBackend, _Retention] = weakref.WeakKeyDictionary()


def _of(backend: DynamoDBStreamsBackend) -> _Retention:
    retention = _retention.get(backend)
    if retention is None:
        retention = _retention[backend] = _Retention()
    return retention


def get_shard_iterator(
    backend: DynamoDBStreamsBackend,
    arn: str,
    shard_id: str,
    shard_iterator_type: str,
    sequence_number: str | None = None,
) -> ShardIterator:
    """moto's ``GetShardIterator``, remembered as open."""
    retention = _of(backend)
    retention.expire(backend, time.monotonic())
    iterator = _MOTO_GET_SHARD_ITERATOR(backend, arn, shard_id, shard_iterator_type, sequence_number)
    retention.handed_out(iterator)
    return iterator


def get_records(backend: DynamoDBStreamsBackend, iterator_arn: str, limit: int) -> dict[str, Any]:
    """moto's ``GetRecords`` under the rules of the module docs."""
    retention = _of(backend)
    retention.expire(backend, time.monotonic())
    iterator = backend.shard_iterators.get(iterator_arn)
    if iterator is None:
        raise ExpiredIteratorError()
    if iterator.sequence_number < iterator.stream_shard.starting_sequence_number:
        raise TrimmedDataAccessError()
    answer = _MOTO_GET_RECORDS(backend, iterator_arn, limit)
    retention.read(iterator_arn)
    successor = backend.shard_iterators[answer["NextShardIterator"]]
    retention.handed_out(successor, predecessor=iterator_arn)
    retention.trim(iterator.stream_shard)
    return answer


def install() -> None:
    """Apply the retention rules to every moto Streams backend of this process; idempotent."""
    with _install_lock:
        DynamoDBStreamsBackend.get_shard_iterator = get_shard_iterator  # type: ignore[method-assign, assignment]
        DynamoDBStreamsBackend.get_records = get_records  # type: ignore[method-assign, assignment]
