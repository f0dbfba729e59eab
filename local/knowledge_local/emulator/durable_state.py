"""The local runtime's state on disk (``KNOWLEDGE_PERSIST``, the default): nothing acknowledged is
lost, whenever the process dies.

Two kinds of file in the state folder, both mode 0600:

- ``journal-<generation>.log`` (``journal``): every successful DynamoDB write (its request, in the
  order moto applied it; a transaction or a batch is one record) and every message added to or
  removed from a kept queue (``queue_journal``), each on disk before the request that made it is
  answered;
- ``table.jsonl`` (``snapshot``): the tables' items and the kept queues' messages as they were
  after the journal up to some generation.

``restore`` (on start, before the event sources are polled) loads the snapshot into the fresh
moto, replays the later journal records in order, puts the kept messages back, then attaches
itself as the journal of every later write and compacts. ``compact`` (on start, on a clean stop,
and in the background whenever the open segment passes ``compact_bytes``) closes the open segment,
copies the tables and messages between two requests, writes them as the new snapshot and removes
the segments it covers. A crash at any point leaves either the old snapshot with its segments or
the new one: nothing is applied twice or half.

Kept queues are the producers' ones (the ingest queue and its dead-letter queue), whose messages
are acknowledged work found nowhere else. The index work queue and the indexer's failure queue are
not kept: a start writes the whole table back, so its stream gives the indexer every item again.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from botocore.exceptions import ClientError

from knowledge_local.account import aws_client
from knowledge_local.emulator import snapshot
from knowledge_local.emulator.aws_server import AwsServer
from knowledge_local.emulator.journal import Journal, Record, Ticket, fsync_directory, read_segment, segments
from knowledge_local.emulator.moto_patches import queue_journal

log = logging.getLogger(__name__)

COMPACT_BYTES = 64 * 1024 * 1024
"""Size of the open journal segment past which it is compacted into a new snapshot."""


@dataclass(frozen=True)
class Restored:
    """What a start found: ``items`` from the snapshot, ``writes`` replayed from the journal
    (``failed`` of them refused by moto), ``messages`` put back into the kept queues, and whether a
    torn last record (never acknowledged) was dropped."""

    items: int = 0
    writes: int = 0
    failed: int = 0
    messages: int = 0
    torn_tail: bool = False

    @property
    def anything(self) -> bool:
        return bool(self.items or self.writes or self.messages)


class DurableState:
    """The state kept in ``directory`` (see the module docs). ``restore`` once, then it journals
    until ``close``."""

    def __init__(self, directory: Path, *, compact_bytes: int = COMPACT_BYTES) -> None:
        self.directory = directory
        self.compact_bytes = compact_bytes
        self._lock = threading.Lock()
        """Orders appends to the journal with the changes of the kept messages."""
        self._compacting = threading.Lock()
        self._compaction: threading.Thread | None = None
        self._journal: Journal | None = None
        self._aws: AwsServer | None = None
        self._tables: list[str] = []
        self._messages: dict[str, dict[str, Any]] = {}

    @property
    def attached(self) -> bool:
        """Whether it journals (``restore`` done, ``close`` not yet)."""
        return self._journal is not None

    # -- start ------------------------------------------------------------------------------------

    def restore(self, aws: AwsServer, *, tables: list[str], kept_queues: Iterable[str]) -> Restored:
        """Load the snapshot and replay the journal into ``aws`` (fresh: the template's ``tables``
        and queues exist, nothing else), then journal every later write and kept-queue change, and
        compact. ``SnapshotError``/``JournalError`` when a file is damaged (nothing is changed on
        disk then)."""
        saved = snapshot.load(self.directory, legacy_table=tables[0])
        dynamodb = aws_client("dynamodb", aws.url)
        items = 0
        for table, table_items in saved.items.items():
            try:
                items += snapshot.restore_items(dynamodb, table, table_items)
            except ClientError as error:
                log.warning("a saved table is not in the template", extra={"table": table, "error": error})
        self._messages = {entry["message"]["id"]: entry for entry in saved.messages}
        writes = failed = 0
        torn = False
        for generation, path in segments(self.directory):
            if generation <= saved.journal_through:
                continue  # already in the snapshot (a compaction stopped before removing it)
            contents = read_segment(path)
            torn = torn or contents.torn_tail
            for record in contents.records:
                if record.meta.get("kind") == "dynamodb":
                    writes += 1
                    target = str(record.meta["target"])
                    status = aws.replay(target, str(record.meta["region"]), record.blob)
                    if not 200 <= status < 300:
                        failed += 1
                        log.warning("journaled write refused", extra={"target": target, "status": status})
                else:
                    self._apply(record)
        queue_journal.install()
        messages = queue_journal.put_back(self._messages.values())
        newest = max([saved.journal_through, *(generation for generation, _ in segments(self.directory))])
        self._journal = Journal(self.directory, newest + 1)
        self._aws, self._tables = aws, tables
        aws.attach_journal(self)
        queue_journal.observe(self, kept_queues)
        self.compact()
        return Restored(items=items, writes=writes, failed=failed, messages=messages, torn_tail=torn)

    # -- journaling (aws_server.DynamoDBJournal, queue_journal.QueueObserver) ----------------------

    def dynamodb_written(self, target: str, region: str, body: bytes) -> Ticket:
        """Journal a DynamoDB write just applied; ``sync`` its ticket before answering."""
        with self._lock:
            return self._open().append(Record({"kind": "dynamodb", "target": target, "region": region}, body))

    def sync(self, ticket: Ticket) -> None:
        """Return once ``ticket``'s record is on disk."""
        self._open().sync(ticket)
        self._compact_when_large()

    def message_added(self, entry: dict[str, Any]) -> None:
        blob = json.dumps(entry, separators=(",", ":")).encode("utf-8")
        self._record(Record({"kind": "message_added"}, blob))

    def messages_removed(self, queue: dict[str, str], message_ids: list[str]) -> None:
        self._record(Record({"kind": "messages_removed", "queue": queue, "ids": message_ids}))

    def queue_purged(self, queue: dict[str, str]) -> None:
        self._record(Record({"kind": "queue_purged", "queue": queue}))

    def _record(self, record: Record) -> None:
        journal = self._open()
        with self._lock:
            ticket = journal.append(record)
            self._apply(record)
        self.sync(ticket)

    def _apply(self, record: Record) -> None:
        """Change the kept messages as a queue record says."""
        kind = record.meta.get("kind")
        if kind == "message_added":
            entry = json.loads(record.blob)
            self._messages.pop(entry["message"]["id"], None)  # a move to the dead-letter queue
            self._messages[entry["message"]["id"]] = entry
        elif kind == "messages_removed":
            queue = queue_journal.queue_key(record.meta["queue"])
            for message_id in record.meta["ids"]:
                entry = self._messages.get(message_id)
                if entry is not None and queue_journal.queue_key(entry["queue"]) == queue:
                    del self._messages[message_id]
        elif kind == "queue_purged":
            queue = queue_journal.queue_key(record.meta["queue"])
            self._messages = {
                message_id: entry
                for message_id, entry in self._messages.items()
                if queue_journal.queue_key(entry["queue"]) != queue
            }

    def _open(self) -> Journal:
        if self._journal is None:
            raise RuntimeError("The state is not restored, or already closed.")
        return self._journal

    # -- compaction and stop ----------------------------------------------------------------------

    def compact(self) -> int:
        """Write a snapshot of everything journaled so far and remove the segments it covers; the
        number of items saved."""
        aws, journal = self._aws, self._open()
        if aws is None:
            raise RuntimeError("The state is not restored.")
        with self._compacting:
            with aws.serialized:
                with self._lock:
                    through = journal.rotate()
                    messages = list(self._messages.values())
                items = {table: aws.export_table(table) for table in self._tables}
            saved = snapshot.save(self.directory, journal_through=through, items=items, messages=messages)
            for generation, path in segments(self.directory):
                if generation <= through:
                    path.unlink()
            fsync_directory(self.directory)
        log.info("state compacted", extra={"items": saved, "messages": len(messages), "through": through})
        return saved

    def _compact_when_large(self) -> None:
        journal = self._journal
        if journal is None or journal.size < self.compact_bytes:
            return
        with self._lock:
            if self._compaction is not None and self._compaction.is_alive():
                return
            self._compaction = threading.Thread(target=self._compact_quietly, name="compaction", daemon=True)
            self._compaction.start()

    def _compact_quietly(self) -> None:
        try:
            self.compact()
        except (OSError, RuntimeError, KeyError) as error:
            log.error("compaction failed; the journal keeps everything", extra={"error": str(error)})

    def close(self) -> None:
        """Stop journaling (after the AWS server stopped: nothing writes any more)."""
        compaction = self._compaction
        if compaction is not None:
            compaction.join()
        queue_journal.observe(None, ())
        if self._aws is not None:
            with contextlib.suppress(RuntimeError):  # the server is stopped already
                self._aws.attach_journal(None)
        journal, self._journal = self._journal, None
        if journal is not None:
            journal.close()
