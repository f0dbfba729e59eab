"""The snapshot of the local runtime's state: ``table.jsonl`` in the state folder.

One JSON object per line. The first line is the header, ``{"snapshot": 1, "journal_through": N}``:
the snapshot holds the effect of every journal segment up to generation ``N`` (``journal``), so a
start restores it and replays only the later segments. Then one line per table item,
``{"table": name, "item": {...}}`` (DynamoDB's JSON, binary values base64), and one per kept queue
message, ``{"queue": {...}, "message": {...}}`` (``queue_journal``). A file without the header is
a table saved by an earlier version on a clean stop: every line an item of the knowledge table,
journal generation 0.

``save`` writes a temporary file, syncs it, renames it over ``table.jsonl`` and syncs the folder, so
the file is always one whole snapshot, readable by its owner only (mode 0600). ``restore_items``
writes the items back into the fresh tables before the stream poller starts: the indexer then reads
them from the table's stream (``TRIM_HORIZON``) like any write and rebuilds the search index from
the table, the one source of truth, with embeddings from the embedding cache (nothing is embedded
again).
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from knowledge_local.emulator.journal import FILE_MODE, fsync_directory

SNAPSHOT_FILE = "table.jsonl"
FORMAT_VERSION = 1
RESTORE_INDEX_TIMEOUT_SECONDS = 3600.0
"""How long a start waits for the indexer to take in a restored table before serving anyway."""
BATCH_WRITE_ITEMS = 25
"""DynamoDB's limit of items per BatchWriteItem."""


class SnapshotError(RuntimeError):
    """The snapshot cannot be read; the message names the file and what to do."""


@dataclass
class Snapshot:
    """A loaded snapshot: the journal generation it covers, the items by table (each one item in
    DynamoDB's JSON, as ``AwsServer.export_table`` gives it) and the kept queue messages."""

    journal_through: int = 0
    items: dict[str, list[str]] = field(default_factory=dict)
    messages: list[dict[str, Any]] = field(default_factory=list)

    @property
    def item_count(self) -> int:
        return sum(len(items) for items in self.items.values())


def save(
    directory: Path,
    *,
    journal_through: int,
    items: dict[str, list[str]],
    messages: Iterable[dict[str, Any]] = (),
) -> int:
    """Replace ``directory/table.jsonl`` whole with a snapshot of ``items`` (by table) and
    ``messages`` covering the journal up to ``journal_through``; the number of items."""
    path = directory / SNAPSHOT_FILE
    partial = path.with_suffix(".jsonl.partial")
    partial.unlink(missing_ok=True)
    count = 0
    descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    with os.fdopen(descriptor, "w", encoding="utf-8") as out:
        out.write(json.dumps({"snapshot": FORMAT_VERSION, "journal_through": journal_through}) + "\n")
        for table, table_items in items.items():
            prefix = '{"table":' + json.dumps(table) + ',"item":'
            for item in table_items:
                out.write(prefix + item + "}\n")
                count += 1
        for message in messages:
            out.write(json.dumps(message, separators=(",", ":")) + "\n")
        out.flush()
        os.fsync(out.fileno())
    partial.replace(path)
    fsync_directory(directory)
    return count


def load(directory: Path, *, legacy_table: str) -> Snapshot:
    """The snapshot in ``directory`` (an empty one when there is none); a file saved by an earlier
    version holds items of ``legacy_table``. ``SnapshotError`` when the file is not a snapshot."""
    path = directory / SNAPSHOT_FILE
    loaded = Snapshot()
    headed = False
    if not path.exists():
        return loaded
    try:
        with path.open(encoding="utf-8") as lines:
            for number, line in enumerate(lines):
                if not line.strip():
                    continue
                entry = json.loads(line)
                if not isinstance(entry, dict):
                    raise ValueError("a line is not an object")
                if number == 0 and "snapshot" in entry:
                    loaded.journal_through = int(entry["journal_through"])
                    headed = True
                elif "table" in entry and "item" in entry:
                    loaded.items.setdefault(str(entry["table"]), []).append(json.dumps(entry["item"]))
                elif "queue" in entry and "message" in entry:
                    loaded.messages.append(entry)
                elif not headed:
                    loaded.items.setdefault(legacy_table, []).append(line.strip())
                else:
                    raise ValueError(f"line {number + 1} is neither an item nor a message")
    except (ValueError, TypeError, KeyError) as error:
        raise SnapshotError(f"{path} is not a saved table ({error}); move it away to start empty.") from None
    return loaded


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


def _decoded(items: Iterable[str]) -> Iterator[dict[str, Any]]:
    for item in items:
        yield {name: _from_json(value) for name, value in json.loads(item).items()}


def restore_items(dynamodb: Any, table_name: str, items: Iterable[str]) -> int:
    """Write ``items`` (DynamoDB's JSON, one item each) into ``table_name`` with ``dynamodb`` (a
    boto3 client); the number of items. ``SnapshotError`` when one is not an item."""
    count = 0
    batch: list[dict[str, Any]] = []
    try:
        for item in _decoded(items):
            batch.append({"PutRequest": {"Item": item}})
            if len(batch) == BATCH_WRITE_ITEMS:
                _write(dynamodb, table_name, batch)
                count, batch = count + len(batch), []
    except (ValueError, AttributeError, TypeError) as error:
        raise SnapshotError(f"the snapshot holds a record that is not an item ({error}).") from None
    if batch:
        _write(dynamodb, table_name, batch)
        count += len(batch)
    return count


def _write(dynamodb: Any, table_name: str, requests: list[dict[str, Any]]) -> None:
    pending: dict[str, list[dict[str, Any]]] = {table_name: requests}
    while pending:
        pending = dynamodb.batch_write_item(RequestItems=pending).get("UnprocessedItems") or {}
