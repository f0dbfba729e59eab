"""The write-ahead journal (``knowledge_local.emulator.journal``): records come back in the order they were
appended, across segments; a torn last frame is dropped; damage before the end is an error."""

from __future__ import annotations

import stat
import threading
from pathlib import Path

import pytest

from knowledge_local.emulator.journal import (
    FRAME,
    Journal,
    JournalError,
    Record,
    encode,
    read_segment,
    segment_path,
    segments,
)


def _records(count: int, tag: str = "r") -> list[Record]:
    return [
        Record({"kind": tag, "n": number}, f"body {number}\n\x00bytes".encode()) for number in range(count)
    ]


def test_journal_records_come_back_in_append_order_across_rotations(tmp_path: Path) -> None:
    journal = Journal(tmp_path, 1)
    written = _records(7)
    for record in written[:3]:
        journal.sync(journal.append(record))
    closed = journal.rotate()
    for record in written[3:]:
        journal.sync(journal.append(record))
    journal.close()

    read = [record for _, path in segments(tmp_path) for record in read_segment(path).records]

    assert closed == 1
    assert [generation for generation, _ in segments(tmp_path)] == [1, 2]
    assert read == written


def test_journal_segments_are_readable_by_their_owner_only(tmp_path: Path) -> None:
    journal = Journal(tmp_path, 3)
    journal.sync(journal.append(Record({"kind": "x"})))
    journal.close()

    assert stat.S_IMODE(segment_path(tmp_path, 3).stat().st_mode) == 0o600


@pytest.mark.parametrize("cut", [1, FRAME.size - 1, FRAME.size + 3, -1])
def test_journal_torn_last_frame_is_dropped(tmp_path: Path, cut: int) -> None:
    journal = Journal(tmp_path, 1)
    whole = _records(3)
    for record in whole:
        journal.sync(journal.append(record))
    journal.close()
    torn = encode(Record({"kind": "torn"}, b"never acknowledged"))
    path = segment_path(tmp_path, 1)
    with path.open("ab") as segment:
        segment.write(torn[:cut])

    contents = read_segment(path)

    assert contents.records == whole
    assert contents.torn_tail


def test_journal_last_frame_with_a_bad_checksum_is_a_torn_tail(tmp_path: Path) -> None:
    path = tmp_path / "journal-0000000001.log"
    frames = [encode(record) for record in _records(2)]
    damaged = bytearray(frames[1])
    damaged[-1] ^= 0xFF
    path.write_bytes(frames[0] + bytes(damaged))

    contents = read_segment(path)

    assert contents.records == _records(1)
    assert contents.torn_tail


def test_journal_damage_before_the_last_frame_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "journal-0000000001.log"
    frames = [encode(record) for record in _records(3)]
    damaged = bytearray(frames[1])
    damaged[FRAME.size + 2] ^= 0xFF
    path.write_bytes(frames[0] + bytes(damaged) + frames[2])

    with pytest.raises(JournalError, match="damaged at byte"):
        read_segment(path)


def test_journal_concurrent_writers_each_get_their_record_durably_in_one_order(tmp_path: Path) -> None:
    journal = Journal(tmp_path, 1)
    tickets: dict[tuple[int, int], object] = {}

    def write(writer: int) -> None:
        for number in range(50):
            ticket = journal.append(Record({"writer": writer, "n": number}))
            journal.sync(ticket)
            tickets[(writer, number)] = ticket

    threads = [threading.Thread(target=write, args=(writer,)) for writer in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    journal.close()
    read = read_segment(segment_path(tmp_path, 1))

    assert not read.torn_tail
    assert len(read.records) == 200
    for writer in range(4):
        assert [record.meta["n"] for record in read.records if record.meta["writer"] == writer] == list(
            range(50)
        )
    assert len(set(tickets.values())) == 200


def test_journal_segments_lists_only_segment_files_oldest_first(tmp_path: Path) -> None:
    for generation in (12, 3, 7):
        segment_path(tmp_path, generation).write_bytes(b"")
    (tmp_path / "journal-12.log").write_bytes(b"")
    (tmp_path / "table.jsonl").write_text("")

    assert [generation for generation, _ in segments(tmp_path)] == [3, 7, 12]
