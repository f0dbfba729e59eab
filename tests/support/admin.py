"""Calls of the write API through the real handlers: the authorizer, then ``KnowledgeAdminFunction``.

``AdminClient.call`` builds an HTTP API v2 event from ``events/knowledge_admin_create_base.json``
(authenticated) or ``events/knowledge_admin_health.json`` (no authorizer), with the route key and path
parameters API Gateway would set for the concrete path, and answers the function's ``Reply``.
"""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from tests.support.events import lambda_context, load_event, with_body
from tests.support.rest import Reply, authorize, load_handler

_PARAMETERS = (
    (re.compile(r"/v1/knowledge-bases/([^/]+)"), "knowledge_base_id"),
    (re.compile(r"/v1/knowledge-items/([^/]+)"), "knowledge_item_id"),
    (re.compile(r"/v1/tokens/([^/]+)"), "token_id"),
)


def _route(path: str) -> tuple[str, dict[str, str]]:
    """The route key's path (``{name}`` for parameters) and the path parameters of a concrete path."""
    template, parameters = path, {}
    for pattern, name in _PARAMETERS:
        match = pattern.match(path)
        if match:
            parameters[name] = match.group(1)
            template = template.replace(match.group(1), "{" + name + "}", 1)
    return template, parameters


def admin_event(
    method: str,
    path: str,
    *,
    body: Any = None,
    authorization: str | None = None,
    headers: dict[str, str] | None = None,
    query: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """An HTTP API v2 event for the write API; with ``authorization``, the authorizer's real answer
    is in its request context, without it no authorizer ran."""
    template, parameters = _route(path)
    if authorization is None:
        event = load_event("knowledge_admin_health")
    else:
        event = load_event("knowledge_admin_create_base")
        event["headers"]["authorization"] = authorization
        answer = authorize(authorization)
        assert answer["isAuthorized"] is True
        event["requestContext"]["authorizer"] = {"lambda": answer["context"]}
    event["headers"].pop("idempotency-key", None)
    event["headers"].update({name.lower(): value for name, value in (headers or {}).items()})
    event["routeKey"] = event["requestContext"]["routeKey"] = f"{method} {template}"
    event["rawPath"] = event["requestContext"]["http"]["path"] = path
    event["requestContext"]["http"]["method"] = method
    if parameters:
        event["pathParameters"] = parameters
    query = {name: value for name, value in (query or {}).items() if value is not None}
    event["rawQueryString"] = urlencode(query)
    if query:
        event["queryStringParameters"] = {name: str(value) for name, value in query.items()}
    if body is None:
        event.pop("body", None)
        event["headers"]["content-length"] = "0"
        return event
    return with_body(event, body)


def invoke_admin(event: dict[str, Any]) -> Reply:
    response = load_handler("knowledge_admin")(event, lambda_context())
    text = response.get("body") or ""  # no body (a 204) is an empty one, as API Gateway sends it
    if response.get("isBase64Encoded"):
        text = base64.b64decode(text).decode("utf-8")
    return Reply(status=response["statusCode"], headers=dict(response.get("headers") or {}), text=text)


@dataclass
class AdminClient:
    """One caller of the write API (``authorization`` is the ``Authorization`` header value)."""

    authorization: str | None

    def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        headers: dict[str, str] | None = None,
        **query: Any,
    ) -> Reply:
        return invoke_admin(
            admin_event(
                method, path, body=body, authorization=self.authorization, headers=headers, query=query
            )
        )

    def ok(self, method: str, path: str, body: Any = None, *, status: int = 200, **query: Any) -> Any:
        """The JSON of a call that must answer ``status``."""
        reply = self.call(method, path, body, **query)
        assert reply.status == status, reply.text
        return reply.body
