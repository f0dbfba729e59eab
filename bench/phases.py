"""The figures of a search load through a fault (``bench.failover``), from its raw samples: pure
functions, no I/O, every time in seconds on one monotonic clock.

A search belongs to the phase (or second) in which it *ended*: one in flight when the fault struck
counts after it, with the retries it took. Latency percentiles are nearest-rank over the answered
searches; failed ones are counted, never timed.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum


class Outcome(StrEnum):
    """How one search of the load ended."""

    SAME = "same"
    """Identical to the survivor's copy's reference answer."""
    OTHER_COPY = "other copy"
    """Identical to the lost node's copy's reference answer only."""
    DIFFERENT = "different"
    """Identical to neither reference answer."""
    FAILED = "failed"
    """An error (the adapter's ``DependencyUnavailableError``, or anything else raised)."""


@dataclass(frozen=True, slots=True)
class Sample:
    """One search of the load: when it ``ended``, how many ``seconds`` it took, its ``outcome``."""

    ended: float
    seconds: float
    outcome: Outcome

    @property
    def started(self) -> float:
        return self.ended - self.seconds


@dataclass(frozen=True)
class PhaseRow:
    """The searches that ended in ``[start, end)`` (seconds on the run's clock): counts by outcome,
    latency of the answered ones in milliseconds (None without any), and ``longest_gap``, the
    longest stretch in seconds without an answered search (from the phase's start to the first
    answer, between answers, from the last answer to its end)."""

    name: str
    start: float
    end: float
    same: int
    other_copy: int
    different: int
    failed: int
    p50_ms: float | None
    p99_ms: float | None
    max_ms: float | None
    longest_gap: float

    @property
    def seconds(self) -> float:
        return self.end - self.start

    @property
    def answered(self) -> int:
        return self.same + self.other_copy + self.different

    @property
    def answered_per_second(self) -> float:
        return self.answered / self.seconds if self.seconds > 0 else 0.0

    @property
    def failed_per_second(self) -> float:
        return self.failed / self.seconds if self.seconds > 0 else 0.0


def percentile(values: Sequence[float], share: float) -> float:
    """The nearest-rank percentile (``share`` in (0, 1]) of non-empty ``values``."""
    ordered = sorted(values)
    rank = max(1, math.ceil(share * len(ordered)))
    return ordered[rank - 1]


def longest_gap(answer_times: Sequence[float], start: float, end: float) -> float:
    """The longest interval of ``[start, end]`` holding none of the sorted ``answer_times``."""
    edges = [start, *(t for t in answer_times if start <= t <= end), end]
    return max(later - earlier for earlier, later in itertools.pairwise(edges))


def summarise(samples: Sequence[Sample], phases: Sequence[tuple[str, float, float]]) -> list[PhaseRow]:
    """One ``PhaseRow`` per ``(name, start, end)`` of ``phases`` (seconds on the samples' clock);
    a search belongs to the phase in which it ended."""
    rows = []
    for name, start, end in phases:
        inside = [sample for sample in samples if start <= sample.ended < end]
        counts = Counter(sample.outcome for sample in inside)
        answered = sorted(
            (sample for sample in inside if sample.outcome is not Outcome.FAILED), key=lambda s: s.ended
        )
        latencies = [1000 * sample.seconds for sample in answered]
        rows.append(
            PhaseRow(
                name=name,
                start=start,
                end=end,
                same=counts[Outcome.SAME],
                other_copy=counts[Outcome.OTHER_COPY],
                different=counts[Outcome.DIFFERENT],
                failed=counts[Outcome.FAILED],
                p50_ms=percentile(latencies, 0.5) if latencies else None,
                p99_ms=percentile(latencies, 0.99) if latencies else None,
                max_ms=max(latencies) if latencies else None,
                longest_gap=longest_gap([sample.ended for sample in answered], start, end),
            )
        )
    return rows


@dataclass(frozen=True)
class SecondRow:
    """Searches that ended in the second ``[second, second + 1)`` after ``origin``: answered,
    failed, and the slowest answered one in milliseconds (None without any)."""

    second: int
    answered: int
    failed: int
    max_ms: float | None


def per_second(samples: Sequence[Sample], origin: float, first: int, last: int) -> list[SecondRow]:
    """A ``SecondRow`` for every whole second from ``first`` to ``last`` (inclusive) relative to
    ``origin``; a second before ``origin`` is negative."""
    rows = []
    for second in range(first, last + 1):
        start = origin + second
        inside = [sample for sample in samples if start <= sample.ended < start + 1]
        answered = [1000 * s.seconds for s in inside if s.outcome is not Outcome.FAILED]
        rows.append(
            SecondRow(second, len(answered), len(inside) - len(answered), max(answered, default=None))
        )
    return rows


def classify(answer: object, survivor: object, other: object) -> Outcome:
    """``answer`` against the same query's reference answers on the survivor's copy and on the
    lost node's copy (compared with ``==``)."""
    if answer == survivor:
        return Outcome.SAME
    return Outcome.OTHER_COPY if answer == other else Outcome.DIFFERENT


@dataclass(frozen=True)
class Health:
    """One poll of a node's ``_cluster/health``: when it was sent (``at``), and the cluster's
    ``status`` (``green``, ``yellow``, ``red``), nodes, active primaries and unassigned shards; when
    the poll failed, ``status`` says how (an HTTP status and error type, or a timeout) and the
    counts are None."""

    at: float
    status: str
    nodes: int | None = None
    active_primaries: int | None = None
    unassigned: int | None = None

    def key(self) -> tuple[str, int | None, int | None, int | None]:
        return (self.status, self.nodes, self.active_primaries, self.unassigned)


def recovered_at(polls: Sequence[Health], after: float, shards: int) -> float | None:
    """The first poll at or after ``after`` reporting one node, yellow or green, with all
    ``shards`` primaries active; None when none does."""
    for poll in polls:
        if (
            poll.at >= after
            and poll.status in ("yellow", "green")
            and poll.nodes == 1
            and poll.active_primaries == shards
        ):
            return poll.at
    return None


def changes(polls: Sequence[Health]) -> list[Health]:
    """The polls whose status, nodes, active primaries or unassigned shards differ from the
    previous poll's (the first one always)."""
    kept: list[Health] = []
    for poll in polls:
        if not kept or poll.key() != kept[-1].key():
            kept.append(poll)
    return kept


def in_flight(samples: Sequence[Sample], at: float) -> tuple[int, int]:
    """How many searches were running at ``at`` (started before it, ended after it), and how
    many of those failed."""
    running = [sample for sample in samples if sample.started < at < sample.ended]
    return len(running), sum(sample.outcome is Outcome.FAILED for sample in running)


def last_before(polls: Sequence[Health], at: float) -> Health | None:
    """The last poll sent before ``at``: with the first poll that saw a change, it brackets when
    the change happened."""
    earlier = [poll for poll in polls if poll.at < at]
    return earlier[-1] if earlier else None
