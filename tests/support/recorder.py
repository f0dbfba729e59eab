"""A stand-in Lambda function for the local pollers' tests: it keeps every event it is invoked
with and fails the records a test names (``batchItemFailures``), or raises, on demand."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

Record = dict[str, Any]


@dataclass
class Recorder:
    batches: list[tuple[str, list[Record]]] = field(default_factory=list)
    fails: Callable[[str, Record], bool] = lambda function, record: False
    """Whether a record fails (reported in ``batchItemFailures``)."""
    raises: Callable[[str, list[Record]], bool] = lambda function, records: False
    """Whether the whole invocation raises."""
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def reset(self) -> None:
        with self._lock:
            self.batches.clear()
            self.fails = lambda function, record: False
            self.raises = lambda function, records: False

    def handle(self, event: dict[str, Any], function: str) -> dict[str, Any]:
        records: list[Record] = event["Records"]
        with self._lock:
            self.batches.append((function, records))
        if self.raises(function, records):
            raise RuntimeError("injected failure")
        return {
            "batchItemFailures": [
                {"itemIdentifier": identifier(record)} for record in records if self.fails(function, record)
            ]
        }

    def records(self, function: str) -> list[Record]:
        with self._lock:
            return [record for name, batch in self.batches if name == function for record in batch]


def identifier(record: Record) -> str:
    """What ``batchItemFailures`` names: a stream record's sequence number, a message's id."""
    if "dynamodb" in record:
        return str(record["dynamodb"]["SequenceNumber"])
    return str(record["messageId"])


RECORDER = Recorder()
