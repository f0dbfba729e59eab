"""Progress of the ``knowledge`` command's long steps, told as it is: how many of how many, how fast,
how long still, and what it waits for.

``Tally`` counts one phase (documents sent, documents searchable) on a clock in seconds. Its
``rate`` is what the phase itself did per second since it started (what was done before, such as
items the index already held, is left out); its ``eta`` divides the work left by the rate of work
done, where a unit may weigh more than one (a document of 9 index parts takes about nine times as
long to embed as one of 1); ``idle`` is how long nothing was added. Both are ``None`` while fewer
than ``MIN_RATE_SECONDS`` have passed, or, for ``eta``, while nothing was done.

``StatusLine`` shows a phase's line on a stream (stderr): redrawn in place on a terminal, otherwise
printed as whole lines, the first after ``LINE_EVERY_SECONDS`` (a short phase prints nothing), then
every ``LINE_EVERY_SECONDS`` while the count moves and every ``QUIET_LINE_EVERY_SECONDS`` while it
does not: a log gets a line a minute or a few, never a flood. ``duration`` and ``per_time`` format
seconds and rates for people.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TextIO

MIN_RATE_SECONDS = 3.0
"""A rate measured over less time than this is noise, and not shown."""
LINE_EVERY_SECONDS = 10.0
"""Without a terminal: the first line after this long, then a line this often while the count moves."""
QUIET_LINE_EVERY_SECONDS = 30.0
"""Without a terminal: a line this often while the count stands still."""


@dataclass
class Tally:
    """``done`` of ``total`` units since ``started`` (seconds of a monotonic clock); ``weight`` is
    the work of the units done, out of ``weight_total`` (the unit count when not given).
    ``already`` and ``already_weight`` are the part of ``done`` and ``weight`` that was done before
    the phase (``exclude``), left out of the rates."""

    total: int
    started: float
    weight_total: float = -1.0
    done: int = 0
    weight: float = 0.0
    already: int = 0
    already_weight: float = 0.0
    changed: float = field(default=-1.0)
    """When ``done`` last grew (``started`` until it does)."""

    def __post_init__(self) -> None:
        if self.weight_total < 0:
            self.weight_total = float(self.total)
        if self.changed < 0:
            self.changed = self.started

    def add(self, now: float, count: int = 1, weight: float | None = None) -> None:
        """``count`` more units done at ``now``, of ``weight`` work (``count`` when not given)."""
        if count <= 0:
            return
        self.done += count
        self.weight += float(count) if weight is None else weight
        self.changed = now

    def worked(self, weight: float) -> None:
        """The work done so far is at least ``weight``: units under way count in part."""
        self.weight = min(self.weight_total, max(self.weight, weight))

    def exclude(self, count: int, weight: float | None = None) -> None:
        """Of the units done so far, ``count`` (of ``weight`` work) were done before the phase."""
        self.already += count
        self.already_weight += float(count) if weight is None else weight

    @property
    def left(self) -> int:
        return self.total - self.done

    def elapsed(self, now: float) -> float:
        return max(0.0, now - self.started)

    def idle(self, now: float) -> float:
        """Seconds since ``done`` last grew (or since the start)."""
        return max(0.0, now - self.changed)

    def rate(self, now: float) -> float | None:
        """Units per second the phase did; ``None`` before ``MIN_RATE_SECONDS``."""
        elapsed = self.elapsed(now)
        return None if elapsed < MIN_RATE_SECONDS else (self.done - self.already) / elapsed

    def eta(self, now: float) -> float | None:
        """Seconds until ``weight_total`` at the phase's rate of work so far: ``0.0`` when nothing
        is left, ``None`` while the rate is unknown or nothing was done yet."""
        remaining = self.weight_total - self.weight
        if self.left <= 0 or remaining <= 0:
            return 0.0
        elapsed = self.elapsed(now)
        worked = self.weight - self.already_weight
        if elapsed < MIN_RATE_SECONDS or worked <= 0:
            return None
        return remaining * elapsed / worked


def duration(seconds: float) -> str:
    """``"45 s"``, ``"3 min"``, ``"1 h 05 min"``: seconds rounded to what a person can use."""
    seconds = max(0.0, seconds)
    if seconds < 59.5:
        return f"{seconds:.0f} s"
    minutes = round(seconds / 60)
    if minutes < 60:
        return f"{minutes} min"
    return f"{minutes // 60} h {minutes % 60:02d} min"


def per_time(rate: float) -> str:
    """A rate in units per second as ``"2.5/s"``, ``"12/s"``, or per minute below 0.1/s
    (``"1.5/min"``)."""
    if rate <= 0:
        return "0/s"
    if rate < 0.1:
        return f"{rate * 60:.1f}/min"
    return f"{rate:.1f}/s" if rate < 10 else f"{rate:.0f}/s"


def rate_and_eta(tally: Tally, now: float) -> str:
    """``"2.5/s, ETA 30 s"``, ``"0/s, ETA not known yet"``, or ``"measuring the rate"`` early on."""
    rate = tally.rate(now)
    if rate is None:
        return "measuring the rate"
    eta = tally.eta(now)
    return f"{per_time(rate)}, ETA {'not known yet' if eta is None else duration(eta)}"


class StatusLine:
    """One phase's status on ``stream``: redrawn in place when ``redraw``, else whole lines now and
    then (module docs). ``clock`` gives seconds (``time.monotonic``)."""

    def __init__(self, stream: TextIO, *, redraw: bool, clock: Callable[[], float]) -> None:
        self._stream = stream
        self._redraw = redraw
        self._clock = clock
        self._started = clock()
        self._last_line: float | None = None
        self._last_key: object = None
        self._drawn = False

    @property
    def printed(self) -> bool:
        """Whether a line was shown (drawn or printed)."""
        return self._drawn or self._last_line is not None

    def update(self, text: str, *, key: object = None) -> None:
        """Show ``text``, the phase's state; ``key`` (such as the count done) tells whether it moved
        since the last line printed."""
        if self._redraw:
            self._draw(text)
            return
        now = self._clock()
        if self._last_line is None:
            due = now - self._started >= LINE_EVERY_SECONDS
        else:
            since = now - self._last_line
            due = since >= QUIET_LINE_EVERY_SECONDS or (key != self._last_key and since >= LINE_EVERY_SECONDS)
        if due:
            self._stream.write(text + "\n")
            self._stream.flush()
            self._last_line, self._last_key = now, key

    def close(self, text: str | None = None) -> None:
        """End the phase with ``text``: drawn for good when redrawing; printed without a terminal
        only if a line was printed before (a short phase stays silent)."""
        if self._redraw:
            if text is not None:
                self._draw(text)
            if self._drawn:
                self._stream.write("\n")
                self._stream.flush()
            self._drawn = False
        elif text is not None and self._last_line is not None:
            self._stream.write(text + "\n")
            self._stream.flush()

    def _draw(self, text: str) -> None:
        width = shutil.get_terminal_size((120, 24)).columns
        self._stream.write("\r" + text[: max(20, width - 1)] + "\x1b[K")
        self._stream.flush()
        self._drawn = True
