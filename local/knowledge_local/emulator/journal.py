"""The write-ahead journal of the local runtime's state: framed, checksummed records appended to
numbered segment files and made durable by group commit.

A segment is ``journal-<generation>.log`` (ten digits) in the state folder, mode 0600. Each record
is one frame: an 8-byte header (big-endian payload length and CRC-32 of the payload) then the
payload, the record's ``meta`` as one line of JSON, a newline, and its ``blob`` (raw bytes: a
DynamoDB request body, a queue message). A crash can leave the last frame of a segment torn
(shorter than its header says, or with a checksum that does not match and nothing after it);
``read_segment`` drops it, since its write was never acknowledged. A bad frame with whole frames
after it is damage, not a crash: ``JournalError``.

``Journal.append`` writes a frame (in the order of the calls) and returns a ``Ticket``;
``Journal.sync(ticket)`` returns once that frame is on disk. One ``fdatasync`` covers every frame
written before it started, so writers waiting at the same time share one (group commit).
``rotate()`` closes the segment (synced) and starts the next generation; the caller compacts the
closed ones away (``durable_state``).
"""

from __future__ import annotations

import json
import os
import re
import struct
import threading
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FRAME = struct.Struct(">II")
"""Header of a frame: payload length in bytes, CRC-32 of the payload."""
SEGMENT_PATTERN = re.compile(r"^journal-(\d{10})\.log$")
FILE_MODE = 0o600
_datasync = getattr(os, "fdatasync", os.fsync)
"""``fdatasync`` where there is one (Linux), ``fsync`` elsewhere (macOS has no ``fdatasync``)."""


class JournalError(RuntimeError):
    """A journal segment is damaged before its end; the message names the file and the offset."""


@dataclass(frozen=True)
class Record:
    """One journaled change: ``meta`` (JSON-able, says what it is) and ``blob`` (its bytes)."""

    meta: dict[str, Any]
    blob: bytes = b""


@dataclass(frozen=True, order=True)
class Ticket:
    """Where a frame ends: ``(generation, offset)``; tickets order as the frames were written."""

    generation: int
    offset: int


@dataclass
class SegmentContents:
    """The whole records of one segment and whether its tail was torn (and dropped)."""

    records: list[Record] = field(default_factory=list)
    torn_tail: bool = False


def encode(record: Record) -> bytes:
    """``record`` as one frame."""
    payload = json.dumps(record.meta, separators=(",", ":")).encode("utf-8") + b"\n" + record.blob
    return FRAME.pack(len(payload), zlib.crc32(payload)) + payload


def segment_path(directory: Path, generation: int) -> Path:
    return directory / f"journal-{generation:010d}.log"


def segments(directory: Path) -> list[tuple[int, Path]]:
    """``(generation, path)`` of every segment in ``directory``, oldest first."""
    found = []
    if directory.is_dir():
        for path in directory.iterdir():
            match = SEGMENT_PATTERN.match(path.name)
            if match is not None:
                found.append((int(match.group(1)), path))
    return sorted(found)


def read_segment(path: Path) -> SegmentContents:
    """The records of the segment at ``path``, in order. A torn last frame is dropped
    (``torn_tail``); ``JournalError`` when a frame that is not the last one is damaged."""
    data = path.read_bytes()
    contents = SegmentContents()
    position = 0
    while position < len(data):
        end_of_header = position + FRAME.size
        if end_of_header > len(data):
            contents.torn_tail = True
            break
        length, checksum = FRAME.unpack_from(data, position)
        end = end_of_header + length
        if end > len(data):
            contents.torn_tail = True
            break
        payload = data[end_of_header:end]
        if zlib.crc32(payload) != checksum:
            if end == len(data):
                contents.torn_tail = True
                break
            raise JournalError(
                f"{path} is damaged at byte {position} (checksum mismatch before its end); "
                "move the state folder away to start empty."
            )
        meta, _, blob = payload.partition(b"\n")
        try:
            decoded = json.loads(meta)
        except ValueError:
            raise JournalError(f"{path} has an unreadable record at byte {position}.") from None
        contents.records.append(Record(decoded, blob))
        position = end
    return contents


def fsync_directory(directory: Path) -> None:
    """Make the directory's entries (a created, renamed or removed file) durable."""
    descriptor = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


class Journal:
    """Appends to the segment ``generation`` of ``directory`` (created, mode 0600), then to the
    next ones after each ``rotate()``. Thread-safe."""

    def __init__(self, directory: Path, generation: int) -> None:
        self.directory = directory
        self._lock = threading.Lock()
        self._sync_lock = threading.Lock()
        self._generation = generation
        self._descriptor = self._open(generation)
        self._written = 0
        self._durable = Ticket(generation, 0)

    @property
    def generation(self) -> int:
        """The generation appended to now."""
        return self._generation

    @property
    def size(self) -> int:
        """Bytes written to the current segment."""
        return self._written

    def append(self, record: Record) -> Ticket:
        """Write ``record`` after every record appended before; its ticket for ``sync``. Not yet
        durable: call ``sync`` before acknowledging what it records."""
        frame = encode(record)
        with self._lock:
            view = memoryview(frame)
            while view:
                view = view[os.write(self._descriptor, view) :]
            self._written += len(frame)
            return Ticket(self._generation, self._written)

    def sync(self, ticket: Ticket) -> None:
        """Return once the frame of ``ticket`` (and every one before it) is on disk."""
        with self._sync_lock:
            if ticket <= self._durable:
                return
            with self._lock:
                descriptor, reached = self._descriptor, Ticket(self._generation, self._written)
            _datasync(descriptor)
            self._durable = reached

    def rotate(self) -> int:
        """Sync and close the current segment and start the next generation; the generation
        closed. Every ticket handed out before is durable when this returns."""
        with self._sync_lock, self._lock:
            closed = self._generation
            _datasync(self._descriptor)
            os.close(self._descriptor)
            self._durable = Ticket(closed, self._written)
            self._generation = closed + 1
            self._descriptor = self._open(self._generation)
            self._written = 0
            return closed

    def close(self) -> None:
        """Sync and close; appending afterwards is an error."""
        with self._sync_lock, self._lock:
            if self._descriptor >= 0:
                _datasync(self._descriptor)
                os.close(self._descriptor)
                self._descriptor = -1

    def _open(self, generation: int) -> int:
        path = segment_path(self.directory, generation)
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, FILE_MODE)
        os.fchmod(descriptor, FILE_MODE)
        fsync_directory(self.directory)
        return descriptor
