"""Routes take their services as Powertools dependencies (``knowledge.api.services``): a resolver's
``dependency_overrides`` replaces a service for its routes, a declared tool's route (``tool_route``)
and a hand-written one alike, and the route answers what the replacement answered."""

from __future__ import annotations

import json
from typing import Any

import pytest

from knowledge.api.http import build_resolver
from knowledge.api.routes.memory import pin_memory_router, search_memory_router
from knowledge.api.services import memory_search_service, pin_service
from knowledge.bootstrap import use_container
from knowledge.contract.memory import MemorySearchResponse, PinsResponse, SearchMemoryArguments
from knowledge.domain.models import Principal
from knowledge.errors import MemoryInvalidRequestError
from tests.conftest import TABLE_NAME
from tests.support.events import lambda_context, load_event, with_body


class _OneAnswerSearch:
    """A memory search service that answers every search with no results, naming the caller."""

    def __init__(self) -> None:
        self.callers: list[tuple[str, str]] = []

    def search_memory(self, principal: Principal, arguments: SearchMemoryArguments) -> MemorySearchResponse:
        self.callers.append((principal.tenant_id, arguments.query))
        return MemorySearchResponse(
            query=f"answered for {principal.subject_id}", mode="lexical", alpha=0.25, results=[]
        )


class _NoPins:
    def list_pins(self, principal: Principal, *, limit: int | None, next_token: str | None) -> PinsResponse:
        return PinsResponse(pins=[], next_token=f"page-after-{limit}")


@pytest.fixture(autouse=True)
def _settings(monkeypatch: pytest.MonkeyPatch) -> None:
    """The resolver reads the settings for the tenant quotas (off in the tests' environment)."""
    monkeypatch.setenv("TABLE_NAME", TABLE_NAME)
    use_container(None)


def _event(method: str, path: str, body: Any = None, query: str = "") -> dict[str, Any]:
    event = load_event(
        "search_knowledge_query",
        rawPath=path,
        rawQueryString=query,
        requestContext={"http": {"method": method, "path": path}},
    )
    event["requestContext"]["authorizer"]["lambda"]["scopes"] = "memory:read"
    if body is not None:
        with_body(event, body)
    else:
        event.pop("body", None)
    return event


def test_tool_route_answers_from_the_overriding_service() -> None:
    app = build_resolver(search_memory_router, invalid_request=MemoryInvalidRequestError)
    search = _OneAnswerSearch()
    app.dependency_overrides[memory_search_service] = lambda: search

    response = app.resolve(
        _event("POST", "/v1/tools/search_memory", {"query": "deploy window"}), lambda_context()
    )

    assert response["statusCode"] == 200
    assert json.loads(response["body"]) == {
        "type": "memory_search",
        "query": "answered for agent-7",
        "mode": "lexical",
        "alpha": 0.25,
        "results": [],
        "pending_index": {"writes": 0, "included": False},
    }
    assert search.callers == [("acme", "deploy window")]


def test_hand_written_route_answers_from_the_overriding_service() -> None:
    app = build_resolver(pin_memory_router, invalid_request=MemoryInvalidRequestError)
    app.dependency_overrides[pin_service] = _NoPins

    response = app.resolve(
        {**_event("GET", "/v1/pins", query="limit=3"), "queryStringParameters": {"limit": "3"}},
        lambda_context(),
    )

    assert response["statusCode"] == 200
    assert json.loads(response["body"]) == {"pins": [], "next_token": "page-after-3"}
