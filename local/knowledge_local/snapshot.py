"""The knowledge table kept across restarts (``KNOWLEDGE_PERSIST=true``), in the state folder.

A clean stop saves every item of the table to ``table.jsonl`` (one item per line in DynamoDB's
JSON, binary values base64), read from moto directly (its ``Scan`` sorts the whole table for every
page), written to a temporary file and renamed, so the file is always one whole stop's table. The
next start writes those items back into the fresh table before the stream poller starts: the
indexer then reads them from the table's stream (``TRIM_HORIZON``) like any write and rebuilds the
search index from the table, which stays the one source of truth, so the index can never hold what
the table does not. The runtime serves only once the indexer has caught up.

Not kept: SQS messages (the queues start empty), and whatever was written after the last clean
stop when the process was killed instead (the snapshot of the stop before stays).
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

SNAPSHOT_FILE = "table.jsonl"
RESTORE_INDEX_TIMEOUT_SECONDS = 3600.0
"""How long a start waits for the indexer to take in a restored table before serving anyway."""


class SnapshotError(RuntimeError):
    """The saved table cannot be read; the message names the file and what to do."""


BATCH_WRITE_ITEMS = 25
"""DynamoDB's limit of items per BatchWriteItem."""


def _from_json(value: Any) -> Any:
    """A DynamoDB attribute value in its JSON form (binary values base64) as boto3 takes it."""
    ((kind, inner),) = value.items()
    if kind == "B":
        return {"B": base64.b64decode(inner)}
    if kind == "BS":
        return {"BS": [base64.b64decode(member) for member in inner]}
    if kind == "L":
        return {"L": [_from_json(member) for member in inner]}
    if kind == "M":
        return {"M": {name: _from_json(member) for name, member in inner.items()}}
    return value


def save(items: Iterable[str], directory: Path) -> int:
    """Write ``items`` (each one item in DynamoDB's JSON, ``AwsServer.export_table``) to
    ``directory/table.jsonl``, replacing it whole and readable by its owner only (mode 0600, as the
    dev token: the table holds every item and note); the number of items."""
    path = directory / SNAPSHOT_FILE
    partial = path.with_suffix(".jsonl.partial")
    partial.unlink(missing_ok=True)
    count = 0
    descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as out:
        for item in items:
            out.write(item + "\n")
            count += 1
        out.flush()
        os.fsync(out.fileno())
    partial.replace(path)
    return count


def _items(path: Path) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            if line.strip():
                yield {name: _from_json(value) for name, value in json.loads(line).items()}


def restore(dynamodb: Any, table_name: str, directory: Path) -> int:
    """Write the items of ``directory/table.jsonl`` (if any) into ``table_name``; the number of
    items. ``SnapshotError`` when the file is not a saved table."""
    path = directory / SNAPSHOT_FILE
    if not path.exists():
        return 0
    count = 0
    batch: list[dict[str, Any]] = []
    try:
        for item in _items(path):
            batch.append({"PutRequest": {"Item": item}})
            if len(batch) == BATCH_WRITE_ITEMS:
                _write(dynamodb, table_name, batch)
                count, batch = count + len(batch), []
    except (ValueError, AttributeError, TypeError) as error:
        raise SnapshotError(f"{path} is not a saved table ({error}); move it away to start empty.") from None
    if batch:
        _write(dynamodb, table_name, batch)
        count += len(batch)
    return count


def _write(dynamodb: Any, table_name: str, requests: list[dict[str, Any]]) -> None:
    pending: dict[str, list[dict[str, Any]]] = {table_name: requests}
    while pending:
        pending = dynamodb.batch_write_item(RequestItems=pending).get("UnprocessedItems") or {}
