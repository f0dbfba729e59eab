"""``Rate.state``: what a GCRA quota has left, as ``GET /v1/usage`` and the ``RateLimit-*`` fields
report it."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from knowledge.domain.access.rates import MICROS, Rate, RateState

NOW = 1_800_000_000 * MICROS


def test_rate_state_never_used_is_a_full_burst() -> None:
    assert Rate(5).state(None, NOW) == RateState(limit=5, remaining=5, used=0, reset_seconds=0)


def test_rate_state_after_each_use_of_a_burst_counts_down_to_zero() -> None:
    rate, tat = Rate(4), None
    remaining = []
    for _ in range(5):
        decision = rate.decide(tat, NOW)
        if decision.admitted:
            tat = decision.tat
        remaining.append(rate.state(tat, NOW).remaining)

    assert remaining == [3, 2, 1, 0, 0]
    assert rate.state(tat, NOW).reset_seconds == 1


def test_rate_state_refills_one_use_per_interval() -> None:
    rate = Rate(4)
    tat = NOW + MICROS  # the whole burst spent at NOW

    assert rate.state(tat, NOW + rate.interval).remaining == 1
    assert rate.state(tat, NOW + MICROS) == RateState(limit=4, remaining=4, used=0, reset_seconds=0)


@given(limit=st.integers(1, 500), uses=st.integers(0, 600), elapsed=st.integers(0, 2 * MICROS))
def test_rate_state_remaining_is_exactly_the_uses_admitted_at_once(
    limit: int, uses: int, elapsed: int
) -> None:
    rate, tat = Rate(limit), None
    for _ in range(uses):
        decision = rate.decide(tat, NOW)
        tat = decision.tat if decision.admitted else tat
    now = NOW + elapsed
    state = rate.state(tat, now)

    admitted = 0
    probe = tat
    while admitted <= limit:
        decision = rate.decide(probe, now)
        if not decision.admitted:
            break
        admitted, probe = admitted + 1, decision.tat
    assert state.remaining == admitted
    assert state.used == limit - admitted
