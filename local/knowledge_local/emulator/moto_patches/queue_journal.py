"""Kept queues: every message added to or removed from them in moto is told to an observer (the
journal, ``durable_state``) before the request that did it is answered, and a restart puts the
messages back with their ids.

``install()`` wraps moto's ``Queue.add_message`` (a send, one entry of a batch, a move to the
dead-letter queue), ``Queue.delete_message`` (a delete by receipt handle, one entry of a batch)
and ``SQSBackend.purge_queue``, for the life of the process; ``observe(observer, names)`` tells
``observer`` about the queues named ``names`` from then on, ``observe(None, ())`` stops. An added
message is told before it becomes visible, so its removal can never be told first.

A message is kept as ``{"queue": {"account", "region", "name"}, "message": {"id", "body",
"attributes", "system_attributes", "group_id", "deduplication_id"}}`` (bytes as
``{"base64": ...}``); ``put_back`` adds such messages to the queues of a fresh moto, visible at
once, their receive counts starting again from zero.
"""

from __future__ import annotations

import base64
import logging
import threading
from collections.abc import Iterable
from typing import Any, Protocol

from moto.sqs.exceptions import QueueDoesNotExist
from moto.sqs.models import Message, Queue, SQSBackend, sqs_backends

log = logging.getLogger(__name__)


class QueueObserver(Protocol):
    """What ``observe`` tells; each call returns once the change is durable."""

    def message_added(self, entry: dict[str, Any]) -> None:
        """A message (``{"queue", "message"}``, see the module docs) joined a kept queue."""

    def messages_removed(self, queue: dict[str, str], message_ids: list[str]) -> None:
        """The messages ``message_ids`` left the kept queue ``queue``."""

    def queue_purged(self, queue: dict[str, str]) -> None:
        """Every message of the kept queue ``queue`` was removed."""


_observer: QueueObserver | None = None
_kept: frozenset[str] = frozenset()
_install_lock = threading.Lock()
_installed = False


def observe(observer: QueueObserver | None, queue_names: Iterable[str]) -> None:
    """Tell ``observer`` every change of the queues named ``queue_names`` (``None``: nobody)."""
    global _observer, _kept
    _kept = frozenset(queue_names) if observer is not None else frozenset()
    _observer = observer


def install() -> None:
    """Wrap moto's queue methods (once per process; idempotent)."""
    global _installed
    with _install_lock:
        if _installed:
            return
        original_add, original_delete = Queue.add_message, Queue.delete_message
        original_purge = SQSBackend.purge_queue

        def add_message(self: Queue, message: Message) -> None:
            observer = _observer
            if observer is not None and self.name in _kept:
                observer.message_added({"queue": _queue_ref(self), "message": _message_entry(message)})
            original_add(self, message)

        def delete_message(self: Queue, receipt_handle: str) -> None:
            observer = _observer
            if observer is None or self.name not in _kept:
                original_delete(self, receipt_handle)
                return
            ids = [message.id for message in self._messages if message.had_receipt_handle(receipt_handle)]
            original_delete(self, receipt_handle)
            if ids:
                observer.messages_removed(_queue_ref(self), ids)

        def purge_queue(self: SQSBackend, queue_name: str) -> None:
            original_purge(self, queue_name)
            observer = _observer
            if observer is not None and queue_name in _kept:
                observer.queue_purged(_queue_ref(self.get_queue(queue_name)))

        Queue.add_message = add_message  # type: ignore[method-assign]
        Queue.delete_message = delete_message  # type: ignore[method-assign]
        SQSBackend.purge_queue = purge_queue  # type: ignore[method-assign]
        _installed = True


def put_back(entries: Iterable[dict[str, Any]]) -> int:
    """Add the kept messages ``entries`` to their queues, in order; the number added (a message
    of a queue that no longer exists is logged and left out)."""
    count = 0
    for entry in entries:
        ref, kept = entry["queue"], entry["message"]
        try:
            queue = sqs_backends[ref["account"]][ref["region"]].get_queue(ref["name"])
        except QueueDoesNotExist:
            log.warning("a kept message's queue is gone; message dropped", extra={"queue": ref["name"]})
            continue
        message = Message(str(kept["id"]), str(kept["body"]), _decoded(kept.get("system_attributes")) or {})
        message.message_attributes = _decoded(kept.get("attributes")) or {}
        message.group_id = kept.get("group_id")
        message.deduplication_id = kept.get("deduplication_id")
        message.mark_sent()
        queue.add_message(message)
        count += 1
    return count


def queue_key(ref: dict[str, str]) -> tuple[str, str, str]:
    """A hashable name of the queue ``ref``."""
    return ref["account"], ref["region"], ref["name"]


def _queue_ref(queue: Queue) -> dict[str, str]:
    return {"account": queue.account_id, "region": queue.region, "name": queue.name}


def _message_entry(message: Message) -> dict[str, Any]:
    return {
        "id": message.id,
        "body": message.body,
        "attributes": _encoded(message.message_attributes),
        "system_attributes": _encoded(message.system_attributes),
        "group_id": message.group_id,
        "deduplication_id": message.deduplication_id,
    }


def _encoded(value: Any) -> Any:
    """``value`` with every ``bytes`` as ``{"base64": ...}``, for JSON."""
    if isinstance(value, bytes):
        return {"base64": base64.b64encode(value).decode("ascii")}
    if isinstance(value, dict):
        return {str(name): _encoded(member) for name, member in value.items()}
    if isinstance(value, list | tuple):
        return [_encoded(member) for member in value]
    return value


def _decoded(value: Any) -> Any:
    if isinstance(value, dict):
        if set(value) == {"base64"} and isinstance(value["base64"], str):
            return base64.b64decode(value["base64"])
        return {name: _decoded(member) for name, member in value.items()}
    if isinstance(value, list):
        return [_decoded(member) for member in value]
    return value
