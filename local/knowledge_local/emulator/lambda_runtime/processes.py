"""The local runtime as a tree of processes (the runtime, multiprocessing's fork server and
resource tracker, the functions' execution environments), and the memory they use, from Linux's
``/proc``.

``descendants(pid)`` lists the processes started by ``pid`` and by those, running now;
``memory(pids)`` sums their resident set size (RSS, shared pages counted in every process that maps
them: an upper bound) and proportional set size (PSS, shared pages split between the processes
that share them), in bytes, from ``/proc/<pid>/smaps_rollup``; ``cpu_seconds(pids)`` sums the CPU
time they have used (user and system, from ``/proc/<pid>/stat``). Processes that end while being
read are left out.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

PROC = Path("/proc")


@dataclass(frozen=True)
class Memory:
    """Memory of a set of processes, in bytes."""

    rss: int
    pss: int
    processes: int

    def describe(self) -> str:
        """``"RSS 812 MB (PSS 701 MB, 8 processes)"``, in MB of 10^6 bytes."""
        return f"RSS {self.rss / 1e6:.0f} MB (PSS {self.pss / 1e6:.0f} MB, {self.processes} processes)"


def _stat_fields(pid: int) -> list[str]:
    """The fields of ``/proc/<pid>/stat`` after ``comm`` (which may hold spaces and parentheses):
    ``state`` first, so field ``n`` of proc(5) is at index ``n - 3``."""
    return (PROC / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()


def descendants(pid: int) -> set[int]:
    """The running processes whose parent, or parent's parent..., is ``pid``."""
    parents: dict[int, int] = {}
    for entry in PROC.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            parents[int(entry.name)] = int(_stat_fields(int(entry.name))[1])
        except OSError:
            continue
    found: set[int] = set()
    frontier = {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def memory(pids: Iterable[int]) -> Memory:
    """RSS and PSS of ``pids`` together."""
    rss = pss = count = 0
    for pid in pids:
        try:
            lines = (PROC / str(pid) / "smaps_rollup").read_text().splitlines()
        except OSError:
            continue
        fields = dict(line.split()[:2] for line in lines[1:] if len(line.split()) >= 2)  # "Rss: 123 kB"
        rss += int(fields.get("Rss:", 0)) * 1024
        pss += int(fields.get("Pss:", 0)) * 1024
        count += 1
    return Memory(rss=rss, pss=pss, processes=count)


def cpu_seconds(pids: Iterable[int]) -> float:
    """User and system CPU seconds ``pids`` have used so far, together."""
    ticks = 0
    for pid in pids:
        try:
            fields = _stat_fields(pid)
        except OSError:
            continue
        ticks += int(fields[11]) + int(fields[12])  # utime, stime (proc(5) fields 14 and 15)
    return ticks / os.sysconf("SC_CLK_TCK")


def tree_memory(pid: int) -> Memory:
    """``memory`` of ``pid`` and its descendants."""
    return memory({pid, *descendants(pid)})
