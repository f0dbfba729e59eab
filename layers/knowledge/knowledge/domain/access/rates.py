"""Per-tenant rate quotas as the generic cell rate algorithm (GCRA, ITU-T I.371's "virtual
scheduling"; the algorithm behind most token-bucket rate limiters), in integer microseconds.

A quota of ``limit`` uses per second has an emission interval ``T = 1 s / limit`` and a tolerance
``τ = 1 s − T``. Each tenant and quota keeps one number, its theoretical arrival time ``tat``: a
use at ``now`` is admitted when ``tat ≤ now + τ``, and moves ``tat`` to ``max(tat, now) + T``; a
refused use changes nothing. So an idle tenant may send ``limit`` uses at once (the burst), and a
tenant that keeps sending is admitted one use every ``T``, evenly spread, never ``limit`` at the
start of each second as with fixed windows. The next use is admitted from ``tat − τ``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

MICROS = 1_000_000
"""Microseconds per second: the unit of every time here (epoch microseconds for instants)."""


class RateDecision(NamedTuple):
    """The outcome of one use: whether it was admitted, and the theoretical arrival time after it
    (epoch microseconds; unchanged when refused)."""

    admitted: bool
    tat: int


@dataclass(frozen=True, slots=True)
class Rate:
    """``limit`` uses per second (at least 1), with a burst of ``limit``."""

    limit: int

    def __post_init__(self) -> None:
        if self.limit < 1:
            raise ValueError("a rate allows at least one use per second")

    @property
    def interval(self) -> int:
        """``T``: microseconds between uses at the sustained rate."""
        return MICROS // self.limit

    @property
    def tolerance(self) -> int:
        """``τ``: how far ahead of ``now`` ``tat`` may run when a use is admitted, in microseconds."""
        return MICROS - self.interval

    def decide(self, tat: int | None, now: int) -> RateDecision:
        """One use at ``now`` against the stored ``tat`` (``None``: never used, or purged)."""
        if tat is None or tat < now:
            return RateDecision(admitted=True, tat=now + self.interval)
        if tat <= now + self.tolerance:
            return RateDecision(admitted=True, tat=tat + self.interval)
        return RateDecision(admitted=False, tat=tat)

    def admitted_from(self, tat: int) -> int:
        """The first instant (epoch microseconds) a use is admitted, given ``tat``."""
        return tat - self.tolerance

    def state(self, tat: int | None, now: int) -> RateState:
        """What is left of the quota at ``now`` given the stored ``tat`` (``None``: never used):
        the uses admitted at once from now (the burst left, 0 to ``limit``), those spent in the
        last second (``limit`` minus the burst left), and the whole seconds until the full burst
        is back (0 when it is)."""
        if tat is None or tat <= now:
            return RateState(limit=self.limit, remaining=self.limit, used=0, reset_seconds=0)
        ahead = now + self.tolerance - tat
        remaining = max(0, min(self.limit, ahead // self.interval + 1)) if ahead >= 0 else 0
        reset = -(-(tat - now) // MICROS)
        return RateState(
            limit=self.limit, remaining=remaining, used=self.limit - remaining, reset_seconds=reset
        )


class RateState(NamedTuple):
    """A quota as a client sees it (the fields of the IETF RateLimit header draft): ``limit`` uses
    per second, ``remaining`` admitted at once, ``used`` of the burst, and ``reset_seconds`` until
    the whole burst is back."""

    limit: int
    remaining: int
    used: int
    reset_seconds: int


class QuotaCounters(NamedTuple):
    """What the store counts for one tenant: the theoretical arrival time of each rate quota that
    has one (epoch microseconds), the stored items (knowledge items and notes together) and, of
    them, the notes, and the content bytes stored (``content_bytes``)."""

    arrivals: dict[str, int]
    stored: int
    notes: int
    content_bytes: int = 0


def content_bytes(text: str) -> int:
    """The UTF-8 size of ``text`` in bytes: what a revision's or a note's content counts in the
    tenant's stored bytes."""
    return len(text.encode("utf-8"))
