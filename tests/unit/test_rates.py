"""GCRA rate quotas (``knowledge.domain.access.rates``): the burst, the even spacing of a sustained flood,
and the bound on any one second, by example and by property."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from knowledge.domain.access.rates import MICROS, Rate

START = 1_800_000_000 * MICROS


def _admitted(rate: Rate, arrivals: list[int]) -> list[int]:
    """The arrivals ``rate`` admits, deciding each in order on the arrival time the last left."""
    tat: int | None = None
    admitted = []
    for now in arrivals:
        decision = rate.decide(tat, now)
        if decision.admitted:
            tat = decision.tat
            admitted.append(now)
    return admitted


def test_rate_admits_a_burst_of_its_limit_then_refuses_until_one_interval_passes() -> None:
    rate = Rate(5)
    burst = _admitted(rate, [START] * 7)

    assert burst == [START] * 5
    tat = START + 5 * rate.interval
    assert rate.decide(tat, rate.admitted_from(tat) - 1).admitted is False
    assert rate.decide(tat, rate.admitted_from(tat)).admitted is True
    assert rate.admitted_from(tat) == START + rate.interval


def test_rate_spreads_a_sustained_flood_evenly_after_the_burst() -> None:
    rate = Rate(6)
    flood = [START + n * MICROS // 100 for n in range(1000)]  # 100 a second for 10 s

    admitted = _admitted(rate, flood)

    assert len(admitted) in range(6 * 10, 6 * 10 + 6 + 1)
    gaps = [later - earlier for earlier, later in itertools.pairwise(admitted[6:])]
    assert min(gaps) >= rate.interval - MICROS // 100
    assert max(gaps) <= rate.interval + MICROS // 100


def test_rate_after_idle_grants_one_burst_not_the_credit_of_the_idle_time() -> None:
    rate = Rate(4)
    _admitted(rate, [START])

    assert _admitted(rate, [START + 60 * MICROS] * 10) == [START + 60 * MICROS] * 4


@pytest.mark.parametrize("limit", [0, -1])
def test_rate_needs_at_least_one_use_per_second(limit: int) -> None:
    with pytest.raises(ValueError, match="at least one use per second"):
        Rate(limit)


@given(
    limit=st.integers(min_value=1, max_value=50),
    steps=st.lists(st.integers(min_value=0, max_value=MICROS // 2), min_size=1, max_size=300),
)
def test_rate_never_admits_more_than_a_burst_plus_the_rate_over_any_span(
    limit: int, steps: list[int]
) -> None:
    rate = Rate(limit)
    arrivals = []
    now = START
    for step in steps:
        now += step
        arrivals.append(now)

    admitted = _admitted(rate, arrivals)

    for first, begin in enumerate(admitted):
        for last in range(first, len(admitted)):
            span = admitted[last] - begin
            assert last - first + 1 <= limit + span // rate.interval
