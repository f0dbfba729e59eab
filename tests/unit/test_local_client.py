"""``KnowledgeClient`` answers: a retryable 429 is sent again after its ``Retry-After``, anything
else is raised as ``ApiError`` at once."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest

from knowledge_local.cli.client import RATE_LIMIT_ATTEMPTS, ApiError, KnowledgeClient


def _error(code: str, *, retryable: bool, details: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "type": "error",
        "error": {
            "code": code,
            "message": f"{code} message",
            "retryable": retryable,
            "details": details or {},
        },
    }


RATE_LIMITED = httpx2.Response(
    429, headers={"Retry-After": "1"}, json=_error("rate_limited", retryable=True, details={"limit": 3})
)
STORED_ITEMS_FULL = httpx2.Response(429, json=_error("rate_limited", retryable=False))
CREATED = httpx2.Response(201, json={"knowledge_base_id": "kb_1"})


class _Server:
    """Answers each request with the next of ``answers``; records what was sent."""

    def __init__(self, *answers: httpx2.Response) -> None:
        self.answers = list(answers)
        self.bodies: list[Any] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.bodies.append(json.loads(request.content or b"null"))
        return self.answers.pop(0)


def _client(server: _Server, slept: list[float]) -> KnowledgeClient:
    return KnowledgeClient(
        "http://api.test", "kn_token", transport=httpx2.MockTransport(server), sleep=slept.append
    )


def test_client_sends_a_write_again_after_retry_after_while_the_quota_refuses_it() -> None:
    server, slept = _Server(RATE_LIMITED, RATE_LIMITED, CREATED), []

    answer = _client(server, slept).request("POST", "/v1/knowledge-bases", json={"name": "Runbooks"})

    assert answer == {"knowledge_base_id": "kb_1"}
    assert slept == [1.0, 1.0]
    assert server.bodies == [{"name": "Runbooks"}] * 3


def test_client_gives_up_after_its_attempts_with_the_last_answer() -> None:
    server, slept = _Server(*[RATE_LIMITED] * RATE_LIMIT_ATTEMPTS), []

    with pytest.raises(ApiError) as raised:
        _client(server, slept).request("GET", "/v1/knowledge-bases")

    assert (raised.value.status, raised.value.code, raised.value.details) == (
        429,
        "rate_limited",
        {"limit": 3},
    )
    assert len(server.bodies) == RATE_LIMIT_ATTEMPTS
    assert slept == [1.0] * (RATE_LIMIT_ATTEMPTS - 1)


@pytest.mark.parametrize(
    "answer",
    [
        STORED_ITEMS_FULL,
        httpx2.Response(429, headers={"Retry-After": "3600"}, json=_error("rate_limited", retryable=True)),
        httpx2.Response(
            503, headers={"Retry-After": "1"}, json=_error("service_unavailable", retryable=True)
        ),
    ],
    ids=["not-retryable", "retry-after-too-long", "not-a-429"],
)
def test_client_raises_other_refusals_at_once(answer: httpx2.Response) -> None:
    server, slept = _Server(answer, CREATED), []

    with pytest.raises(ApiError) as raised:
        _client(server, slept).request("POST", "/v1/knowledge-bases", json={"name": "Runbooks"})

    assert raised.value.status == answer.status_code
    assert (len(server.bodies), slept) == (1, [])
