"""bench.phases: how a load's samples become the failover benchmark's figures."""

from __future__ import annotations

import pytest

from bench.phases import (
    Health,
    Outcome,
    Sample,
    changes,
    classify,
    in_flight,
    last_before,
    longest_gap,
    per_second,
    percentile,
    recovered_at,
    summarise,
)


def _answered(ended: float, seconds: float = 0.1) -> Sample:
    return Sample(ended, seconds, Outcome.SAME)


def test_percentile_is_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]

    assert percentile(values, 0.5) == 50.0
    assert percentile(values, 0.99) == 99.0
    assert percentile([7.0], 0.99) == 7.0
    assert percentile([3.0, 1.0, 2.0], 1.0) == 3.0


def test_longest_gap_counts_the_phase_edges() -> None:
    assert longest_gap([1.0, 1.5, 4.0], 0.0, 5.0) == pytest.approx(2.5)
    assert longest_gap([4.5], 0.0, 5.0) == pytest.approx(4.5)
    assert longest_gap([], 2.0, 3.0) == pytest.approx(1.0)


def test_longest_gap_ignores_answers_outside_the_phase() -> None:
    assert longest_gap([-1.0, 0.5, 9.0], 0.0, 1.0) == pytest.approx(0.5)


def test_summarise_puts_a_search_in_the_phase_it_ended_in() -> None:
    samples = [
        _answered(1.0),
        _answered(1.5),
        Sample(2.5, 1.0, Outcome.FAILED),  # started before the fault at 2.0, ended after
        Sample(2.8, 0.9, Outcome.SAME),
        Sample(3.5, 0.2, Outcome.OTHER_COPY),
        Sample(3.9, 0.3, Outcome.DIFFERENT),
    ]

    before, failover = summarise(samples, [("before", 0.0, 2.0), ("failover", 2.0, 4.0)])

    assert (before.same, before.failed, before.answered) == (2, 0, 2)
    assert before.answered_per_second == pytest.approx(1.0)
    assert (failover.same, failover.other_copy, failover.different, failover.failed) == (1, 1, 1, 1)
    assert failover.answered == 3
    assert failover.failed_per_second == pytest.approx(0.5)
    assert failover.max_ms == pytest.approx(900.0)
    assert failover.p50_ms == pytest.approx(300.0)
    assert failover.longest_gap == pytest.approx(0.8)  # from 2.0 to the first answer at 2.8


def test_summarise_phase_without_answers_has_no_latency() -> None:
    (row,) = summarise([Sample(1.0, 0.5, Outcome.FAILED)], [("failover", 0.0, 2.0)])

    assert (row.answered, row.failed) == (0, 1)
    assert row.p50_ms is row.p99_ms is row.max_ms is None
    assert row.longest_gap == pytest.approx(2.0)


def test_per_second_counts_relative_to_the_origin() -> None:
    samples = [_answered(9.5, 0.2), Sample(10.2, 3.0, Outcome.FAILED), _answered(10.7, 0.4), _answered(12.1)]

    rows = per_second(samples, 10.0, -1, 2)

    assert [(r.second, r.answered, r.failed) for r in rows] == [(-1, 1, 0), (0, 1, 1), (1, 0, 0), (2, 1, 0)]
    assert rows[1].max_ms == pytest.approx(400.0)
    assert rows[2].max_ms is None


def test_classify_against_both_copies() -> None:
    assert classify(("a",), ("a",), ("a",)) is Outcome.SAME
    assert classify(("b",), ("a",), ("b",)) is Outcome.OTHER_COPY
    assert classify(("c",), ("a",), ("b",)) is Outcome.DIFFERENT


def test_recovered_at_needs_one_node_every_primary_and_no_red() -> None:
    polls = [
        Health(0.9, "green", 2, 2, 0),
        Health(1.1, "green", 2, 2, 0),
        Health(1.2, "503 cluster_manager_not_discovered_exception"),
        Health(1.3, "red", 1, 1, 3),
        Health(1.4, "yellow", 1, 2, 2),
    ]

    assert recovered_at(polls, 1.0, shards=2) == pytest.approx(1.4)
    assert recovered_at(polls, 1.5, shards=2) is None
    assert recovered_at(polls[:4], 1.0, shards=2) is None


def test_changes_keep_the_first_poll_of_each_state() -> None:
    polls = [
        Health(0.0, "green", 2, 2, 0),
        Health(0.1, "green", 2, 2, 0),
        Health(0.2, "yellow", 1, 2, 2),
        Health(0.3, "yellow", 1, 2, 2),
        Health(0.4, "timeout"),
    ]

    assert [poll.at for poll in changes(polls)] == [0.0, 0.2, 0.4]


def test_in_flight_counts_searches_spanning_the_moment() -> None:
    samples = [
        Sample(5.0, 1.0, Outcome.SAME),  # 4.0 to 5.0: over before 5.5
        Sample(6.0, 1.0, Outcome.SAME),  # 5.0 to 6.0
        Sample(8.0, 3.0, Outcome.FAILED),  # 5.0 to 8.0
        Sample(7.0, 1.0, Outcome.SAME),  # starts after
    ]

    assert in_flight(samples, 5.5) == (2, 1)


def test_last_before_brackets_a_change() -> None:
    polls = [Health(1.0, "green", 2, 2, 0), Health(1.05, "green", 2, 2, 0), Health(1.1, "yellow", 1, 2, 2)]

    previous = last_before(polls, 1.1)

    assert previous is not None
    assert previous.at == pytest.approx(1.05)
    assert last_before(polls, 0.5) is None
