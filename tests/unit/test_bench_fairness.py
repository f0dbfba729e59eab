"""bench.fairness without a runtime: its text, its schedule and its report lines."""

from __future__ import annotations

import random
import time

from bench.fairness import Watched, pause_until, prose, summary, vocabulary


def test_prose_is_as_long_as_asked_in_sentences_and_new_for_each_call() -> None:
    words = vocabulary()
    rng = random.Random(1)

    first, second = prose(rng, 5_000, words), prose(rng, 5_000, words)

    assert len(first) == len(second) == 5_000
    assert first != second
    assert ". " in first
    assert "\n\n" in first
    assert len(words) > 1_000


def test_summary_gives_count_median_and_maximum_of_the_latencies() -> None:
    documents = [
        Watched("ki_1", "kr_1", "same", acknowledged=10.0, indexed=11.0),
        Watched("ki_2", "kr_2", "same", acknowledged=20.0, indexed=23.5),
        Watched("ki_3", "kr_3", "same", acknowledged=30.0, indexed=32.0),
    ]

    assert summary("baseline, same tenant", documents) == "| baseline, same tenant | 3 | 2.0 | 3.5 |"
    assert summary("baseline, other tenant", []) == "| baseline, other tenant | 0 | | |"


def test_pause_until_waits_for_a_future_moment_and_not_for_a_past_one() -> None:
    started = time.monotonic()
    pause_until(started - 5.0)
    assert time.monotonic() - started < 2.0  # far less than the 5 s a wrong sign would sleep

    pause_until(started + 0.1)
    assert time.monotonic() - started >= 0.1
