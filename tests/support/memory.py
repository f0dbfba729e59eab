"""The memory functions under test: HTTP API v2 events for their routes, run through the authorizer
and the real handlers, and the table's stream drained into the real indexer."""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlencode

from tests.support.events import lambda_context, load_event, with_authorization, with_body
from tests.support.rest import Reply, SearchWorld, authorize, load_handler

FUNCTION_OF = {
    ("POST", "/v1/tools/remember"): "remember",
    ("POST", "/v1/tools/search_memory"): "search_memory",
    ("POST", "/v1/tools/forget_memory"): "forget_memory",
    ("POST", "/v1/tools/recall_context"): "recall_context",
    ("POST", "/v1/tools/pin_memory"): "pin_memory",
    ("GET", "/v1/pins"): "pin_memory",
    ("POST", "/v1/tools/unpin_memory"): "unpin_memory",
}
MEMORY = ("memory:read", "memory:write")
SHARING = (*MEMORY, "memory:share")
"""Also writes notes others see (team and tenant scope) and pins them."""


def _function(method: str, path: str) -> str:
    if (method, path) in FUNCTION_OF:
        return FUNCTION_OF[method, path]
    return "forget_memory" if path.endswith("/restore") else "search_memory"


def memory_event(
    method: str,
    path: str,
    body: Any,
    authorization: str | None,
    *,
    query: Mapping[str, str] | None = None,
    headers: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """An event for ``method path`` as API Gateway hands it on after the authorizer ran."""
    event = load_event("search_knowledge_query")
    route = f"{method} {path}"
    event.update(routeKey=route, rawPath=path, rawQueryString=urlencode(query or {}))
    event["requestContext"].update(routeKey=route)
    event["requestContext"]["http"].update(method=method, path=path)
    if query:
        event["queryStringParameters"] = dict(query)
    if body is None:
        event.pop("body", None)
    else:
        with_body(event, body)
    event["headers"].update(headers or {})
    with_authorization(event, authorization)
    answer = authorize(authorization)
    if answer["isAuthorized"]:
        event["requestContext"]["authorizer"] = {"lambda": answer["context"]}
    return event


def call(method: str, path: str, body: Any, authorization: str | None, **kwargs: Any) -> Reply:
    """The authorizer, then the function serving ``method path``."""
    event = memory_event(method, path, body, authorization, **kwargs)
    response = load_handler(_function(method, path))(event, lambda_context())
    text = response.get("body") or ""
    if response.get("isBase64Encoded"):
        text = base64.b64decode(text).decode("utf-8")
    return Reply(status=response["statusCode"], headers=dict(response.get("headers") or {}), text=text)


def memory_token(world: SearchWorld, subject_id: str = "agent-7", **kwargs: Any) -> str:
    """A token holding both memory scopes unless ``scopes`` says otherwise."""
    kwargs.setdefault("scopes", MEMORY)
    return world.token(subject_id=subject_id, **kwargs)


def remember(authorization: str, content: str, **arguments: Any) -> Reply:
    return call("POST", "/v1/tools/remember", {"content": content, **arguments}, authorization)


def search_memory(authorization: str, query: str, **arguments: Any) -> Reply:
    return call("POST", "/v1/tools/search_memory", {"query": query, **arguments}, authorization)


def forget(authorization: str, note_id: str, mode: str = "soft") -> Reply:
    return call("POST", "/v1/tools/forget_memory", {"note_id": note_id, "mode": mode}, authorization)


def found(authorization: str, query: str, **arguments: Any) -> list[str]:
    reply = search_memory(authorization, query, **arguments)
    assert reply.status == 200, reply.text
    return [result["content"] for result in reply.body["results"]]


def recall_context(authorization: str, query: str | None = None, **arguments: Any) -> Reply:
    body = {"query": query, **arguments} if query is not None else arguments
    return call("POST", "/v1/tools/recall_context", body, authorization)


def pin_memory(authorization: str, note_id: str, **arguments: Any) -> Reply:
    return call("POST", "/v1/tools/pin_memory", {"note_id": note_id, **arguments}, authorization)


def unpin_memory(authorization: str, note_id: str) -> Reply:
    return call("POST", "/v1/tools/unpin_memory", {"note_id": note_id}, authorization)
