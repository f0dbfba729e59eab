"""The runtime's start-up timings (``knowledge_local.startup``): phases on a fake clock, the banner
line, and the process's age as ``/proc`` tells it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from knowledge_local.startup import StartTimings, process_age


def test_start_timings_add_phases_in_order_and_name_the_rest_other() -> None:
    now = [0.0]
    timings = StartTimings(clock=lambda: now[0])

    with timings.phase("AWS endpoint"):
        now[0] += 0.4
    with timings.phase("functions"):
        now[0] += 5.0
    with timings.phase("AWS endpoint"):  # a phase that runs again adds up
        now[0] += 0.1
    timings.record("model load", 1.04, overlapped=True)

    assert timings.phases == {"AWS endpoint": pytest.approx(0.5), "functions": pytest.approx(5.0)}
    assert timings.describe(6.0) == (
        "AWS endpoint 0.5 s, functions 5.0 s, other 0.5 s; beside them: model load 1.0 s"
    )
    assert timings.describe(5.5) == "AWS endpoint 0.5 s, functions 5.0 s; beside them: model load 1.0 s"


def test_start_timings_phase_is_recorded_when_it_raises() -> None:
    now = [0.0]
    timings = StartTimings(clock=lambda: now[0])

    def provision() -> None:
        with timings.phase("tables and queues"):
            now[0] += 2.0
            raise OSError("port taken")

    with pytest.raises(OSError, match="port taken"):
        provision()

    assert timings.phases == {"tables and queues": 2.0}


def test_process_age_reads_the_start_tick_after_a_command_name_with_spaces(tmp_path: Path) -> None:
    (tmp_path / "self").mkdir()
    ticks = os.sysconf("SC_CLK_TCK")
    fields = ["S", *["0"] * 18, str(100 * ticks)]  # state, fields 4-21, then starttime (field 22)
    (tmp_path / "self" / "stat").write_text(f"4242 (python (x) y) {' '.join(fields)} 0 0\n")
    (tmp_path / "uptime").write_text("112.50 200.00\n")

    assert process_age(tmp_path) == pytest.approx(12.5)


def test_process_age_is_none_where_proc_does_not_tell(tmp_path: Path) -> None:
    assert process_age(tmp_path) is None


def test_process_age_of_this_process_is_its_run_time_so_far() -> None:
    age = process_age()

    assert age is None or 0.0 < age < 24 * 3600
