"""Arrival signals: a callback when moto adds a message to a queue or a record to a table's stream.

Lambda's pollers learn of new messages and stream records by polling; the local pollers poll too,
but between empty polls they wait (a queue poller up to ``MAX_IDLE_INTERVAL_SECONDS``, a stream
poller ``IDLE_INTERVAL_SECONDS``), and every hop of a write's path to the index (stream → indexer →
index work queue → index worker) could wait that long. Since moto runs in the runtime's own
process, the runtime can be told at once: ``on_message(queue_name, callback)`` and
``on_stream_record(table_name, callback)`` register callbacks that run, in moto's request thread,
each time a message is added to that queue (sent, or put back by a restore) or a record is added to
that table's stream. A callback must be quick and must not call moto (it runs under the DynamoDB
lock for stream records): the pollers' ``wake`` only sets an event.

``install()`` wraps moto's ``Queue.add_message`` and ``StreamShard.add`` (once per process;
idempotent; other wrappers of the same methods, such as ``queue_journal``'s, keep working). Each
registration returns the function that removes it (a runtime that stops).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from moto.dynamodb.models.table import StreamShard
from moto.sqs.models import Queue

Callback = Callable[[], None]

_queues: dict[str, list[Callback]] = {}
_tables: dict[str, list[Callback]] = {}
_install_lock = threading.Lock()
_installed = False


def on_message(queue_name: str, callback: Callback) -> Callback:
    """Call ``callback()`` whenever a message is added to the queue named ``queue_name``; returns
    the function that stops it."""
    return _register(_queues, queue_name, callback)


def on_stream_record(table_name: str, callback: Callback) -> Callback:
    """Call ``callback()`` whenever a record is added to the stream of the table ``table_name``;
    returns the function that stops it."""
    return _register(_tables, table_name, callback)


def _register(registry: dict[str, list[Callback]], name: str, callback: Callback) -> Callback:
    with _install_lock:
        registry[name] = [*registry.get(name, []), callback]

    def remove() -> None:
        with _install_lock:
            left = [registered for registered in registry.get(name, []) if registered is not callback]
            if left:
                registry[name] = left
            else:
                registry.pop(name, None)

    return remove


def _signal(callbacks: list[Callback] | None) -> None:
    for callback in callbacks or ():
        callback()


def install() -> None:
    """Wrap moto's ``Queue.add_message`` and ``StreamShard.add`` to signal arrivals; idempotent."""
    global _installed
    with _install_lock:
        if _installed:
            return
        original_add_message, original_add_record = Queue.add_message, StreamShard.add

        def add_message(self: Queue, message: Any) -> None:
            original_add_message(self, message)
            _signal(_queues.get(self.name))

        def add_record(self: StreamShard, old: Any, new: Any) -> None:
            original_add_record(self, old, new)
            _signal(_tables.get(self.table.name))

        Queue.add_message = add_message  # type: ignore[method-assign]
        StreamShard.add = add_record  # type: ignore[method-assign]
        _installed = True
