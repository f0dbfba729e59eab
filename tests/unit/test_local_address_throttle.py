"""``AddressThrottle``: failed authentications per client address, as a GCRA rate in memory."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from knowledge_local.emulator.api_gateway import address_throttle
from knowledge_local.emulator.api_gateway.address_throttle import KNOWN_SECONDS, AddressThrottle


class _Clock:
    def __init__(self) -> None:
        self.now = 50.0

    def __call__(self) -> float:
        return self.now


def _try(throttle: AddressThrottle, address: str, token: str = "unknown") -> bool:
    """One request that fails authentication unless throttled; whether it reached the authorizer."""
    if throttle.retry_after(address, [token]) is not None:
        return False
    throttle.failed(address)
    return True


@given(
    limit=st.integers(min_value=1, max_value=50),
    gaps=st.lists(st.floats(min_value=0, max_value=0.5, allow_nan=False), min_size=1, max_size=200),
)
def test_address_throttle_lets_at_most_the_burst_plus_the_rate_through(limit: int, gaps: list[float]) -> None:
    clock = _Clock()
    throttle = AddressThrottle(limit, clock=clock)
    started = clock.now
    through = 0
    for gap in gaps:
        clock.now += gap
        through += _try(throttle, "192.0.2.1")

    assert through <= limit + (clock.now - started) * limit + 1


@given(limit=st.integers(min_value=1, max_value=50))
def test_address_throttle_lets_a_burst_of_the_limit_through_then_says_when_to_retry(limit: int) -> None:
    clock = _Clock()
    throttle = AddressThrottle(limit, clock=clock)

    burst = [_try(throttle, "192.0.2.1") for _ in range(limit + 1)]

    assert burst == [True] * limit + [False]
    assert throttle.retry_after("192.0.2.1", ["unknown"]) == 1
    assert throttle.retry_after("192.0.2.2", ["unknown"]) is None


def test_address_throttle_known_identity_passes_until_it_expires() -> None:
    clock = _Clock()
    throttle = AddressThrottle(1, clock=clock)
    throttle.accepted(["Bearer good"])
    throttle.failed("192.0.2.1")
    throttle.failed("192.0.2.1")

    passes = throttle.retry_after("192.0.2.1", ["Bearer good"])
    clock.now += KNOWN_SECONDS
    for _ in range(2 * KNOWN_SECONDS):  # keep the address throttled meanwhile
        throttle.failed("192.0.2.1")
    expired = throttle.retry_after("192.0.2.1", ["Bearer good"])

    assert passes is None
    assert expired is not None


def test_address_throttle_remembers_at_most_max_entries_addresses(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(address_throttle, "MAX_ENTRIES", 3)
    clock = _Clock()
    throttle = AddressThrottle(1, clock=clock)
    for number in range(5):
        throttle.failed(f"192.0.2.{number}")
        throttle.failed(f"192.0.2.{number}")

    throttled = [throttle.retry_after(f"192.0.2.{number}", ["x"]) is not None for number in range(5)]

    assert throttled == [False, False, True, True, True]  # the oldest were dropped
