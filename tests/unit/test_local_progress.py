"""The ``knowledge`` command's progress on a fake clock: counts, rates and ETAs (``progress``), the
status lines with and without a terminal, and the wait for the index (``ingestion``): what it
reads, what it says it waits for, and when it gives up (only once nothing became searchable for
the stall timeout)."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from knowledge_local.cli.client import LIST_PAGE_SIZE
from knowledge_local.cli.documents import SourceDocument
from knowledge_local.cli.ingestion import (
    POLL_SECONDS,
    Awaited,
    IndexWaitTimeoutError,
    IngestSummary,
    ingest_into,
    wait_for_index,
    wait_until_indexed,
)
from knowledge_local.cli.progress import StatusLine, Tally, duration, per_time, rate_and_eta


class FakeClock:
    """Seconds that move only when slept or advanced."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


# -- Tally ----------------------------------------------------------------------------------------


def test_tally_rate_and_eta_count_only_what_the_phase_did() -> None:
    tally = Tally(total=10, started=100.0, weight_total=20.0)

    early = (tally.rate(101.0), tally.eta(101.0))
    tally.add(104.0, weight=2.0)
    tally.exclude(1, 2.0)  # it was searchable before the phase began
    nothing_yet = (tally.rate(110.0), tally.eta(110.0))
    tally.add(120.0, count=2, weight=6.0)

    assert early == (None, None)
    assert nothing_yet == (0.0, None)
    assert tally.rate(120.0) == pytest.approx(2 / 20)
    assert tally.eta(120.0) == pytest.approx((20.0 - 8.0) * 20 / 6.0)  # work left at the rate of work
    assert (tally.done, tally.left, tally.idle(150.0)) == (3, 7, 30.0)


def test_tally_eta_is_zero_when_nothing_is_left() -> None:
    tally = Tally(total=2, started=0.0)
    tally.add(1.0, count=2)

    assert tally.eta(1.0) == 0.0
    assert tally.eta(10.0) == 0.0


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [(0.4, "0 s"), (45.2, "45 s"), (59.4, "59 s"), (59.6, "1 min"), (170, "3 min"), (3_900, "1 h 05 min")],
)
def test_duration_rounds_to_what_a_person_can_use(seconds: float, shown: str) -> None:
    assert duration(seconds) == shown


@pytest.mark.parametrize(
    ("rate", "shown"), [(0.0, "0/s"), (0.025, "1.5/min"), (0.3, "0.3/s"), (2.46, "2.5/s"), (12.4, "12/s")]
)
def test_per_time_switches_to_minutes_below_a_tenth_per_second(rate: float, shown: str) -> None:
    assert per_time(rate) == shown


def test_rate_and_eta_says_when_it_does_not_know_yet() -> None:
    tally = Tally(total=4, started=0.0)

    assert rate_and_eta(tally, 1.0) == "measuring the rate"
    assert rate_and_eta(tally, 10.0) == "0/s, ETA not known yet"
    tally.add(10.0)
    assert rate_and_eta(tally, 10.0) == "0.1/s, ETA 30 s"


# -- StatusLine -----------------------------------------------------------------------------------


def test_status_line_without_a_terminal_prints_now_and_then_never_a_flood() -> None:
    clock, stream = FakeClock(), io.StringIO()
    line = StatusLine(stream, redraw=False, clock=clock)

    for second in range(0, 121):
        clock.now = float(second)
        count = second // 2 if second < 40 else 20  # moves for 40 s, then stands still
        line.update(f"at {second} s: {count}", key=count)
    line.close("done")

    printed = stream.getvalue().splitlines()
    assert printed == [
        "at 10 s: 5",  # none before 10 s
        "at 20 s: 10",  # every 10 s while the count moves
        "at 30 s: 15",
        "at 40 s: 20",
        "at 70 s: 20",  # every 30 s while it stands still
        "at 100 s: 20",
        "done",
    ]


def test_status_line_without_a_terminal_is_silent_for_a_short_phase() -> None:
    clock, stream = FakeClock(), io.StringIO()
    line = StatusLine(stream, redraw=False, clock=clock)

    line.update("1 of 2", key=1)
    clock.now = 5.0
    line.close("2 of 2")

    assert stream.getvalue() == ""
    assert not line.printed


def test_status_line_on_a_terminal_redraws_one_line_and_ends_it() -> None:
    clock, stream = FakeClock(), io.StringIO()
    line = StatusLine(stream, redraw=True, clock=clock)

    line.update("1 of 2", key=1)
    line.update("2 of 2", key=2)
    line.close("done")

    assert stream.getvalue() == "\r1 of 2\x1b[K\r2 of 2\x1b[K\rdone\x1b[K\n"


# -- the wait for the index -----------------------------------------------------------------------


class Index:
    """A base's items as the API shows them; ``indexed_at[id]`` is when the index holds each (by
    the fake clock), and every request is counted."""

    def __init__(self, clock: FakeClock, indexed_at: dict[str, float], *, lists_tell: bool = True) -> None:
        self.clock, self.indexed_at, self.lists_tell = clock, indexed_at, lists_tell
        self.list_requests = 0
        self.item_requests: list[str] = []

    def _item(self, knowledge_item_id: str) -> dict[str, Any]:
        indexed = self.clock() >= self.indexed_at[knowledge_item_id]
        item = {
            "knowledge_item_id": knowledge_item_id,
            "knowledge_base_id": "kb_1",
            "current_revision_id": f"kr_{knowledge_item_id}",
        }
        if self.lists_tell:
            item["indexed_revision_id"] = f"kr_{knowledge_item_id}" if indexed else None
        return item

    def items(self, knowledge_base_id: str) -> Iterator[dict[str, Any]]:
        assert knowledge_base_id == "kb_1"
        ids = list(self.indexed_at)
        for start in range(0, len(ids), LIST_PAGE_SIZE):
            self.list_requests += 1
            yield from (
                self._item(knowledge_item_id) for knowledge_item_id in ids[start : start + LIST_PAGE_SIZE]
            )

    def item(self, knowledge_item_id: str) -> dict[str, Any]:
        self.item_requests.append(knowledge_item_id)
        item = self._item(knowledge_item_id)
        indexed = self.clock() >= self.indexed_at[knowledge_item_id]
        return {**item, "indexed_revision_id": f"kr_{knowledge_item_id}" if indexed else None}


def _awaited(count: int, parts: int = 1) -> list[Awaited]:
    return [Awaited(f"ki_{number}", f"doc{number}.md", parts) for number in range(count)]


def test_wait_counts_every_searchable_item_not_just_those_in_write_order(
    capsys: pytest.CaptureFixture[str],
) -> None:
    clock = FakeClock()
    # The first document is large and becomes searchable last; the others early, one every 5 s.
    indexed_at = {"ki_0": 100.0, **{f"ki_{number}": 5.0 * number for number in range(1, 75)}}
    index = Index(clock, indexed_at)
    awaited = [Awaited("ki_0", "big.md", 9), *_awaited(75)[1:]]

    tally = wait_until_indexed(
        index,  # type: ignore[arg-type]
        awaited,
        knowledge_base_ids=["kb_1"],
        progress=False,
        clock=clock,
        sleep=clock.sleep,
    )

    lines = capsys.readouterr().err.splitlines()
    assert tally.done == 75
    assert lines[0] == (
        "waiting for the index: 2 of 75 searchable, 0.2/s, ETA 4 min; "
        "left 73 documents, about 80 parts to embed"
    )
    assert (
        "waiting for the index: 14 of 75 searchable, 0.2/s, ETA 5 min; "
        "left 61 documents, about 68 parts to embed"
    ) in lines
    assert lines[-1] == "index: 75 of 75 searchable after 6 min (0.2/s)"
    assert index.item_requests == []  # one page of the list a look: the 75 items fit in it
    assert index.list_requests == 1 + 370 / POLL_SECONDS


def test_wait_names_what_it_still_waits_for_when_nothing_moves_for_a_minute(
    capsys: pytest.CaptureFixture[str],
) -> None:
    clock = FakeClock()
    index = Index(clock, {"ki_0": 1.0, "ki_1": 200.0})

    wait_until_indexed(
        index,  # type: ignore[arg-type]
        _awaited(2),
        knowledge_base_ids=["kb_1"],
        progress=False,
        clock=clock,
        sleep=clock.sleep,
    )

    lines = capsys.readouterr().err.splitlines()
    assert (
        "waiting for the index: 1 of 2 searchable, 0.1/s, ETA 10 s; left 1 document, 1 part to embed" in lines
    )
    assert lines[2] == (
        "waiting for the index: 1 of 2 searchable, 0.9/min, ETA 1 min; left 1 document, 1 part to embed; "
        "none new for 1 min (gives up after 10 min without one)"
    )


def test_wait_goes_on_while_items_become_searchable_past_the_stall_timeout() -> None:
    clock = FakeClock()
    # One item every 50 s: the wait takes 500 s in all, ten times the stall timeout.
    index = Index(clock, {f"ki_{number}": 50.0 * (number + 1) for number in range(10)})

    tally = wait_until_indexed(
        index,  # type: ignore[arg-type]
        _awaited(10),
        knowledge_base_ids=["kb_1"],
        stall_timeout=60.0,
        progress=False,
        clock=clock,
        sleep=clock.sleep,
    )

    assert tally.done == 10
    assert clock.now >= 500.0


def test_wait_gives_up_when_nothing_became_searchable_for_the_stall_timeout() -> None:
    clock = FakeClock()
    index = Index(clock, {"ki_0": 10.0, "ki_1": 10_000.0, "ki_2": 10_000.0, "ki_3": 10_000.0, "ki_4": 1e9})

    with pytest.raises(IndexWaitTimeoutError) as raised:
        wait_until_indexed(
            index,  # type: ignore[arg-type]
            _awaited(5),
            knowledge_base_ids=["kb_1"],
            stall_timeout=120.0,
            progress=False,
            clock=clock,
            sleep=clock.sleep,
        )

    error = raised.value
    assert clock.now == pytest.approx(130.0, abs=POLL_SECONDS)  # 120 s after the last one, at 10 s
    assert error.pending == ["ki_1", "ki_2", "ki_3", "ki_4"]
    assert error.stalled
    assert str(error) == (
        "4 of 5 item(s) not searchable yet (none became searchable in the last 2 min): doc1.md, doc2.md, "
        "doc3.md and 1 more. They are stored and published, and the indexer goes on with them: search "
        "finds each once it is indexed"
    )


def test_wait_allows_a_document_of_many_parts_its_parts_time() -> None:
    clock = FakeClock()
    # 200 parts of index work: longer than the stall timeout, within 6 s a part.
    index = Index(clock, {"ki_0": 900.0})

    wait_until_indexed(
        index,  # type: ignore[arg-type]
        [Awaited("ki_0", "huge.md", 200)],
        knowledge_base_ids=["kb_1"],
        progress=False,
        clock=clock,
        sleep=clock.sleep,
    )

    assert clock.now == pytest.approx(900.0, abs=POLL_SECONDS)


def test_wait_stall_timeout_given_is_kept_whatever_the_parts() -> None:
    clock = FakeClock()
    index = Index(clock, {"ki_0": 900.0})

    with pytest.raises(IndexWaitTimeoutError):
        wait_until_indexed(
            index,  # type: ignore[arg-type]
            [Awaited("ki_0", "huge.md", 200)],
            knowledge_base_ids=["kb_1"],
            stall_timeout=600.0,
            progress=False,
            clock=clock,
            sleep=clock.sleep,
        )

    assert clock.now == pytest.approx(600.0, abs=POLL_SECONDS)


def test_wait_overall_timeout_stops_it_even_while_items_become_searchable() -> None:
    clock = FakeClock()
    index = Index(clock, {f"ki_{number}": 10.0 * (number + 1) for number in range(10)})

    with pytest.raises(IndexWaitTimeoutError) as raised:
        wait_until_indexed(
            index,  # type: ignore[arg-type]
            _awaited(10),
            knowledge_base_ids=["kb_1"],
            timeout=35.0,
            progress=False,
            clock=clock,
            sleep=clock.sleep,
        )

    assert not raised.value.stalled
    assert raised.value.pending == [f"ki_{number}" for number in range(3, 10)]
    assert "the wait's limit of 35 s passed" in str(raised.value)


def test_wait_reads_few_pending_items_of_a_large_base_one_by_one() -> None:
    clock = FakeClock()
    # 450 items in the base (5 pages), of which this run waits for 3.
    indexed_at = {f"ki_{number}": 0.0 for number in range(450)}
    indexed_at.update({"ki_447": 3.0, "ki_448": 3.0, "ki_449": 3.0})
    index = Index(clock, indexed_at)
    awaited = [Awaited(f"ki_{number}", f"doc{number}.md") for number in (447, 448, 449)]

    wait_until_indexed(
        index,  # type: ignore[arg-type]
        awaited,
        knowledge_base_ids=["kb_1"],
        progress=False,
        clock=clock,
        sleep=clock.sleep,
    )

    assert index.list_requests == 5  # the first look lists the base, and learns its size
    assert len(index.item_requests) == 3 * 3  # then 3 items a look are fewer requests than 5 pages


def test_wait_without_a_base_learns_it_from_an_item_and_lists_it() -> None:
    clock = FakeClock()
    index = Index(clock, {f"ki_{number}": 5.0 for number in range(40)})

    tally = wait_until_indexed(
        index,  # type: ignore[arg-type]
        [f"ki_{number}" for number in range(40)],
        progress=False,
        clock=clock,
        sleep=clock.sleep,
    )

    assert tally.done == 40
    assert index.item_requests[:20] == [f"ki_{number}" for number in range(20)]  # the first look, capped
    assert len(index.item_requests) == 20
    assert index.list_requests >= 1  # from the second look on: one page covers them all


def test_wait_on_a_server_whose_list_lacks_the_index_mark_reads_items() -> None:
    clock = FakeClock()
    index = Index(clock, {"ki_0": 2.0, "ki_1": 2.0}, lists_tell=False)

    tally = wait_until_indexed(
        index,  # type: ignore[arg-type]
        _awaited(2),
        knowledge_base_ids=["kb_1"],
        progress=False,
        clock=clock,
        sleep=clock.sleep,
    )

    assert tally.done == 2
    assert index.list_requests == 1
    assert set(index.item_requests) == {"ki_0", "ki_1"}


def test_wait_leaves_items_searchable_before_it_began_out_of_the_rate() -> None:
    clock = FakeClock()
    index = Index(clock, {"ki_0": 0.0, "ki_1": 0.0, "ki_2": 20.0, "ki_3": 40.0})
    awaited = [Awaited("ki_0", wrote=False), Awaited("ki_1", wrote=False), *_awaited(4)[2:]]

    tally = wait_until_indexed(
        index,  # type: ignore[arg-type]
        awaited,
        knowledge_base_ids=["kb_1"],
        progress=False,
        clock=clock,
        sleep=clock.sleep,
    )

    assert tally.done == 4
    assert tally.rate(40.0) == pytest.approx(2 / 40)


class _Writes:
    """The write API for ``ingest_into``: every write takes 2 s of the fake clock."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock

    def items(self, knowledge_base_id: str) -> Iterator[dict[str, Any]]:
        return iter(())

    def put_item(self, knowledge_base_id: str, **fields: Any) -> tuple[int, dict[str, Any]]:
        self.clock.now += 2.0
        return 201, {"knowledge_item_id": f"ki_{fields['external_id']}", "version": 1}


def test_ingest_shows_the_sending_with_rate_and_eta_and_plans_the_wait() -> None:
    clock, stream = FakeClock(), io.StringIO()
    documents = [
        SourceDocument(
            path=Path(f"doc{number}.md"), external_id=f"doc{number}.md", title="T", content="x" * 9_000
        )
        for number in range(10)
    ]

    summary = ingest_into(
        _Writes(clock),  # type: ignore[arg-type]
        documents,
        {"knowledge_base_id": "kb_1", "name": "docs"},
        created=True,
        progress=False,
        clock=clock,
        stream=stream,
    )

    assert stream.getvalue().splitlines() == [
        "sending to docs: 5 of 10 documents (5 created, 0 updated, 0 unchanged), 0.5/s, ETA 10 s",
        "sent to docs: 10 of 10 documents (10 created, 0 updated, 0 unchanged) in 20 s",
    ]
    assert summary.awaited[0] == Awaited("ki_doc0.md", "doc0.md", 2, wrote=True)
    assert summary.started == 0.0


def test_wait_for_index_counts_the_rate_from_the_start_of_the_sending(
    capsys: pytest.CaptureFixture[str],
) -> None:
    clock = FakeClock()
    clock.now = 30.0
    index = Index(clock, {"ki_0": 25.0, "ki_1": 60.0})
    summary = IngestSummary(knowledge_base_id="kb_1", base_name="docs", awaited=_awaited(2), started=0.0)

    tally = wait_for_index(index, summary, progress=False, clock=clock, sleep=clock.sleep)  # type: ignore[arg-type]

    assert tally.rate(60.0) == pytest.approx(2 / 60)
    assert capsys.readouterr().err.splitlines()[-1] == "index: 2 of 2 searchable after 1 min (2.0/min)"


def _round_robin(parts: list[int], seconds_per_part: float) -> dict[str, float]:
    """When each item is searchable if one worker embeds the items' parts in turn."""
    left, done, now = list(parts), {}, 0.0
    while len(done) < len(parts):
        for number, count in enumerate(left):
            if count > 0:
                now += seconds_per_part
                left[number] -= 1
                if left[number] == 0:
                    done[f"ki_{number}"] = now
    return done


class _TimedLines(io.StringIO):
    """A stream that notes the fake clock's time of each line written."""

    def __init__(self, clock: FakeClock) -> None:
        super().__init__()
        self.clock = clock
        self.lines: list[tuple[float, str]] = []

    def write(self, text: str) -> int:
        self.lines.append((self.clock.now, text.rstrip("\n")))
        return len(text)


def _eta_seconds(line: str) -> float | None:
    shown = line.split("ETA ")[1].split(";")[0] if "ETA " in line else "not known"
    if shown.startswith("not known"):
        return None
    number, unit = shown.split()[:2]
    return float(number) * (60 if unit == "min" else 1)


def test_wait_eta_counts_the_parts_under_way_of_items_indexed_in_turn() -> None:
    clock = FakeClock()
    stream = _TimedLines(clock)
    parts = [3, 4, 9, 3, 4, 4, 2, 4, 5, 9, 3, 1, 1, 3]  # the parts of the project's README and docs
    finished = _round_robin(parts, seconds_per_part=4.0)
    awaited = [Awaited(f"ki_{number}", f"doc{number}.md", count) for number, count in enumerate(parts)]

    wait_until_indexed(
        Index(clock, finished),  # type: ignore[arg-type]
        awaited,
        knowledge_base_ids=["kb_1"],
        progress=False,
        clock=clock,
        sleep=clock.sleep,
        stream=stream,
    )

    end = max(finished.values())
    estimates = [
        (eta, end - seen_at)
        for seen_at, line in stream.lines
        if (eta := _eta_seconds(line)) is not None and end - seen_at >= 60
    ]
    assert len(estimates) >= 5
    # Counting only the parts of the items already searchable, the ETAs were 3 to 16 times the
    # time left; counting the parts under way, they are within a minute or 40 % of it.
    assert all(abs(eta - actual) <= max(60.0, 0.4 * actual) for eta, actual in estimates), estimates
