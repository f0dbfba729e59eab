"""The answers of DynamoDB's item operations and of Streams' ``GetRecords`` written as JSON directly.

moto 5.2 renders answers through its generic response serializer, which walks the operation's
output shape value by value, looking up aliases for every member. For the requests the local
runtime sends most (a ``remember`` is a claim read and a ``TransactWriteItems``; the stream poller
reads every write back with ``GetRecords``; the indexer reads notes with ``BatchGetItem``) that
walk cost about half of the runtime process's time under a stream of writes (py-spy,
``docs/benchmarks.md``), more than applying the writes.

The answers of these operations are plain maps already in the wire format: items and stream
images come from ``Item.to_json`` or moto's ``dynamo_to_dict``. ``install()`` makes them answer with
moto's ``dynamo_json_dump`` of the same value (``ApproximateCreationDateTime`` as epoch seconds, the
JSON protocol's timestamp, which botocore parses back into a ``datetime``; absent members as
``null``, which botocore reads as absent, as it does for DynamoDB). Control-plane operations
(tables, streams, TTL) and every error (raised before an answer exists: a cancelled transaction,
an expired stream iterator) go through moto's serializer as before. Once per process; idempotent.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any

from moto.core.responses import ActionResult, BaseResponse
from moto.dynamodb.models.utilities import dynamo_json_dump
from moto.dynamodb.responses import DynamoHandler
from moto.dynamodbstreams.responses import DynamoDBStreamsHandler

OPERATIONS: tuple[tuple[type[BaseResponse], str], ...] = (
    (DynamoDBStreamsHandler, "get_records"),
    *(
        (DynamoHandler, name)
        for name in (
            "get_item",
            "put_item",
            "update_item",
            "delete_item",
            "query",
            "scan",
            "batch_get_item",
            "batch_write_item",
            "transact_get_items",
            "transact_write_items",
        )
    ),
)
"""The handler methods whose answers are dumped directly."""
_install_lock = threading.Lock()
_installed = False


def as_json(operation: Callable[[Any], object]) -> Callable[[Any], object]:
    """``operation`` answering the JSON of its ``ActionResult``'s value (other answers unchanged)."""

    @functools.wraps(operation)
    def answer(handler: Any) -> object:
        result = operation(handler)
        if isinstance(result, ActionResult) and isinstance(result.result, dict):
            return dynamo_json_dump(result.result)
        return result

    return answer


def install() -> None:
    """Answer ``OPERATIONS`` with ``as_json`` for the rest of the process; idempotent."""
    global _installed
    with _install_lock:
        if _installed:
            return
        for handler, name in OPERATIONS:
            setattr(handler, name, as_json(getattr(handler, name)))
        _installed = True
