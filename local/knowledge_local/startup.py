"""Where the runtime's start goes: the seconds of each phase, as ``make run`` prints them when ready.

``StartTimings`` adds up named phases on a monotonic clock (``phase`` as a context manager, or
``record``), in the order they first ran; ``describe(total)`` renders them for the banner, with
whatever the phases do not cover as ``other``. A phase that ran beside the others (the embedding
model's load, on a thread of its own) is ``record``-ed with ``overlapped=True``: it is shown apart and
not counted in the sum. ``process_age`` tells how long the process ran before the runtime's clock
started (the interpreter and the imports).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path


class StartTimings:
    """Seconds per phase of a start; thread-safe."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self.phases: dict[str, float] = {}
        """Sequential phases, seconds each, in the order they first ran."""
        self.overlapped: dict[str, float] = {}
        """Phases that ran beside the sequential ones."""

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """Time the body as phase ``name`` (added to it when it ran before), also when it raises."""
        started = self._clock()
        try:
            yield
        finally:
            self.record(name, self._clock() - started)

    def record(self, name: str, seconds: float, *, overlapped: bool = False) -> None:
        with self._lock:
            target = self.overlapped if overlapped else self.phases
            target[name] = target.get(name, 0.0) + max(0.0, seconds)

    def describe(self, total: float) -> str:
        """``"imports 1.9 s, AWS endpoint 0.4 s, ..., other 0.2 s; beside them: model load 1.0 s"``:
        the phases of a start of ``total`` seconds."""
        with self._lock:
            phases, overlapped = dict(self.phases), dict(self.overlapped)
        parts = [f"{name} {seconds:.1f} s" for name, seconds in phases.items()]
        other = total - sum(phases.values())
        if other >= 0.05:
            parts.append(f"other {other:.1f} s")
        text = ", ".join(parts)
        if overlapped:
            beside = ", ".join(f"{name} {seconds:.1f} s" for name, seconds in overlapped.items())
            text += f"; beside them: {beside}"
        return text


def process_age(proc: Path = Path("/proc")) -> float | None:
    """Seconds since this process started (Linux: ``/proc/self/stat`` against ``/proc/uptime``),
    the interpreter's own start and every import included; ``None`` where ``proc`` does not tell."""
    try:
        stat = (proc / "self" / "stat").read_text(encoding="ascii")
        uptime = float((proc / "uptime").read_text(encoding="ascii").split()[0])
        # Field 22 (starttime, clock ticks after boot) counts from the one after the command name,
        # which may hold spaces and parentheses: split after its closing parenthesis.
        ticks = int(stat.rsplit(")", 1)[1].split()[19])
        return max(0.0, uptime - ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return None
