"""The local gateway's cache of authorizer answers
(``knowledge_local.emulator.api_gateway.authorizer_cache``)."""

from __future__ import annotations

import pytest

from knowledge_local.emulator.api_gateway.authorizer_cache import AuthorizerCache


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_authorizer_cache_answers_a_kept_decision_until_its_ttl_ends() -> None:
    clock = Clock()
    cache = AuthorizerCache(clock=clock)
    cache.put(("auth", "Bearer a"), (True, {"tenant_id": "t1"}), ttl_seconds=300)

    clock.now += 299.9
    assert cache.get(("auth", "Bearer a")) == (True, {"tenant_id": "t1"})
    assert cache.get(("auth", "Bearer b")) is None
    clock.now += 0.1
    assert cache.get(("auth", "Bearer a")) is None
    assert len(cache) == 0


def test_authorizer_cache_keeps_nothing_for_a_ttl_of_zero() -> None:
    cache = AuthorizerCache(clock=Clock())
    cache.put(("auth", "Bearer a"), (False, {}), ttl_seconds=0)

    assert cache.get(("auth", "Bearer a")) is None


def test_authorizer_cache_answers_are_copies_no_two_requests_share() -> None:
    cache = AuthorizerCache(clock=Clock())
    context = {"scopes": ["knowledge:read"]}
    cache.put(("auth", "Bearer a"), (True, context), ttl_seconds=60)
    context["scopes"].append("platform:admin")

    first = cache.get(("auth", "Bearer a"))
    assert first is not None
    first[1]["scopes"].append("memory:write")
    assert cache.get(("auth", "Bearer a")) == (True, {"scopes": ["knowledge:read"]})


def test_authorizer_cache_is_bounded_and_drops_the_oldest_first() -> None:
    cache = AuthorizerCache(max_entries=3, clock=Clock())
    for token in ("a", "b", "c", "d"):
        cache.put(("auth", token), (True, {"token": token}), ttl_seconds=60)

    assert len(cache) == 3
    assert cache.get(("auth", "a")) is None
    assert [cache.get(("auth", token)) for token in ("b", "c", "d")] == [
        (True, {"token": "b"}),
        (True, {"token": "c"}),
        (True, {"token": "d"}),
    ]


def test_authorizer_cache_needs_room_for_one_entry() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        AuthorizerCache(max_entries=0)
