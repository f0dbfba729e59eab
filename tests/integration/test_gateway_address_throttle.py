"""The local gateway's throttle of failed authentications per client address, over real HTTP on the
gateway's fixture template (tests/fixtures/gateway): its authorizer lets ``Bearer unknown...``
through unauthenticated, as the service's authorizer does with a token it does not know, refuses
``Bearer deny``, raises on ``Bearer boom`` and accepts any other token."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from knowledge_local.emulator.api_gateway.address_throttle import AddressThrottle
from knowledge_local.emulator.api_gateway.gateway import Gateway

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "gateway"
LIMIT = 3


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> _Clock:
    return _Clock()


@pytest.fixture
def gateway(clock: _Clock) -> Iterator[Gateway]:
    with Gateway(FIXTURES / "template.yaml", address_throttle=AddressThrottle(LIMIT, clock=clock)) as running:
        yield running


def _client(gateway: Gateway, address: str = "127.0.0.1") -> httpx2.Client:
    transport = httpx2.HTTPTransport(local_address=address)
    return httpx2.Client(base_url=gateway.url, timeout=10, transport=transport)


def _get(client: httpx2.Client, token: str | None) -> httpx2.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return client.get("/items/x", headers=headers)


def _error(response: httpx2.Response) -> dict[str, Any]:
    error: dict[str, Any] = response.json()["error"]
    return error


def test_gateway_throttle_flood_of_unknown_tokens_answers_rate_limited_with_retry_after(
    gateway: Gateway,
) -> None:
    with _client(gateway) as client:
        statuses = [_get(client, f"unknown-{number}").status_code for number in range(LIMIT)]
        refused = _get(client, f"unknown-{LIMIT}")

    assert statuses == [200] * LIMIT  # the authorizer's answers: let through, unauthenticated
    assert refused.status_code == 429
    assert refused.headers["retry-after"] == "1"
    assert _error(refused) == {
        "code": "rate_limited",
        "message": "Too many requests without a valid token from this address (over 3 per second); "
        "retry after 1 s.",
        "retryable": True,
        "details": {
            "quota": "failed_authentications_per_second",
            "limit": LIMIT,
            "window_seconds": 1,
            "retry_after_seconds": 1,
        },
    }


def test_gateway_throttle_refuses_before_the_authorizer_runs(gateway: Gateway) -> None:
    with _client(gateway) as client:
        for number in range(LIMIT):
            _get(client, f"unknown-{number}")
        failing_authorizer = _get(client, "boom")  # 500 when the authorizer runs

    assert failing_authorizer.status_code == 429


@pytest.mark.parametrize("failure", [None, "deny"], ids=["no token", "denied"])
def test_gateway_throttle_counts_missing_and_denied_tokens(gateway: Gateway, failure: str | None) -> None:
    with _client(gateway) as client:
        statuses = [_get(client, failure).status_code for _ in range(LIMIT + 1)]

    assert statuses == [401 if failure is None else 403] * LIMIT + [429]


def test_gateway_throttle_lets_a_token_that_works_through_a_flood_from_its_address(gateway: Gateway) -> None:
    with _client(gateway) as client:
        before = _get(client, "alice")
        flood = [_get(client, f"unknown-{number}").status_code for number in range(3 * LIMIT)]
        during = _get(client, "alice")
        new_token = _get(client, "bob")

    assert before.status_code == 200
    assert flood.count(429) == 2 * LIMIT
    assert during.status_code == 200
    assert during.json()["event"]["requestContext"]["authorizer"]["lambda"]["subject"] == "alice"
    assert new_token.status_code == 429  # never accepted yet: its address is throttled


def test_gateway_throttle_leaves_other_addresses_alone(gateway: Gateway) -> None:
    with _client(gateway) as flooding, _client(gateway, "127.0.0.2") as other:
        flood = [_get(flooding, f"unknown-{number}").status_code for number in range(2 * LIMIT)]
        elsewhere = _get(other, "unknown-elsewhere")

    assert flood[-1] == 429
    assert elsewhere.status_code == 200


def test_gateway_throttle_admits_an_address_again_as_time_passes(gateway: Gateway, clock: _Clock) -> None:
    with _client(gateway) as client:
        for number in range(LIMIT + 1):
            _get(client, f"unknown-{number}")
        clock.now += 1 / LIMIT
        one_more = [_get(client, f"unknown-again-{number}").status_code for number in range(2)]

    assert one_more == [200, 429]  # one failure per 1/LIMIT s, evenly spread
