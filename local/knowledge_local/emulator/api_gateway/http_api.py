"""API Gateway HTTP API shapes for the local gateway: the payload 2.0 request event, the Lambda
authorizer's REQUEST event and its answer, and the function's response.

Sources: API Gateway developer guide, "Create AWS Lambda proxy integrations for HTTP APIs"
(payload format 2.0, response format inference) and "Working with AWS Lambda authorizers for HTTP
APIs" (payload 2.0, simple and IAM-policy responses). Header names are lower-cased; repeated
headers and query parameters are joined with commas; ``Cookie`` headers become ``cookies`` and
``Set-Cookie`` answers come from ``cookies``; bodies that are not text are base64-encoded (HTTP APIs
also encode form posts).
"""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qsl

from knowledge.contract.search import ErrorDetail, ErrorResponse
from knowledge_local.account import ACCOUNT_ID, REGION

API_ID = "local"
STAGE = "$default"
_TEXT_TYPES = ("text/", "application/json", "+json", "application/xml", "+xml", "application/javascript")


class InvalidResponseError(ValueError):
    """A function or authorizer answered something API Gateway cannot turn into a response."""


@dataclass(frozen=True)
class HttpRequest:
    """One HTTP request as the gateway received it; ``raw_path`` and ``raw_query`` are not decoded."""

    method: str
    raw_path: str
    raw_query: str
    headers: Sequence[tuple[str, str]]
    body: bytes
    source_ip: str
    request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    received_at: datetime = field(default_factory=lambda: datetime.now(UTC))

    def header_map(self) -> dict[str, str]:
        """Lower-cased names; repeats joined with commas; ``cookie`` left out (see ``cookies``)."""
        merged: dict[str, str] = {}
        for name, value in self.headers:
            key = name.lower()
            if key != "cookie":
                merged[key] = f"{merged[key]},{value}" if key in merged else value
        return merged

    def cookies(self) -> list[str]:
        return [
            cookie.strip()
            for name, value in self.headers
            if name.lower() == "cookie"
            for cookie in value.split(";")
            if cookie.strip()
        ]

    def query_parameters(self) -> dict[str, str]:
        merged: dict[str, str] = {}
        for name, value in parse_qsl(self.raw_query, keep_blank_values=True):
            merged[name] = f"{merged[name]},{value}" if name in merged else value
        return merged


def request_event(
    request: HttpRequest,
    *,
    route_key: str,
    path_parameters: Mapping[str, str],
    authorizer_context: Mapping[str, Any] | None,
    port: int,
) -> dict[str, Any]:
    """The payload format 2.0 event for a function integration."""
    event = _common_event(request, route_key, path_parameters, port)
    event["isBase64Encoded"] = False
    if request.body:
        text = _as_text(request.body, event["headers"].get("content-type", ""))
        event["body"] = text if text is not None else base64.b64encode(request.body).decode("ascii")
        event["isBase64Encoded"] = text is None
    if authorizer_context is not None:
        event["requestContext"]["authorizer"] = {"lambda": dict(authorizer_context)}
    return event


def authorizer_event(
    request: HttpRequest,
    *,
    route_key: str,
    path_parameters: Mapping[str, str],
    identity_source: Sequence[str],
    port: int,
) -> dict[str, Any]:
    """The payload format 2.0 REQUEST event for a Lambda authorizer (no body)."""
    event = _common_event(request, route_key, path_parameters, port)
    method, _, path = route_key.partition(" ")
    route = f"{method}{path}" if path else route_key
    event.update(
        type="REQUEST",
        routeArn=f"arn:aws:execute-api:{REGION}:{ACCOUNT_ID}:{API_ID}/{STAGE}/{route}",
        identitySource=list(identity_source),
    )
    return event


def authorization(answer: Any, *, simple_responses: bool) -> tuple[bool, dict[str, Any]]:
    """``(allowed, context)`` from an authorizer's answer: ``{"isAuthorized", "context"}`` with
    simple responses, else an IAM policy (allowed when a statement's ``Effect`` is ``Allow``)."""
    if not isinstance(answer, Mapping):
        raise InvalidResponseError("The authorizer did not answer an object.")
    context = answer.get("context") or {}
    if not isinstance(context, Mapping):
        raise InvalidResponseError("The authorizer's context is not an object.")
    if simple_responses:
        allowed = answer.get("isAuthorized")
        if not isinstance(allowed, bool):
            raise InvalidResponseError("A simple authorizer response needs a boolean isAuthorized.")
        return allowed, dict(context)
    statements = (answer.get("policyDocument") or {}).get("Statement") or []
    allowed = any(str(statement.get("Effect", "")).lower() == "allow" for statement in statements)
    return allowed, dict(context)


@dataclass(frozen=True)
class HttpResponse:
    status: int
    headers: list[tuple[str, str]]
    body: bytes


def function_response(answer: Any) -> HttpResponse:
    """The HTTP response for a payload 2.0 function answer. An object with ``statusCode`` is used
    as is (``headers``, ``cookies`` → ``Set-Cookie``, ``body``, ``isBase64Encoded``); any other JSON
    value is a 200 ``application/json`` response whose body is that value."""
    if not isinstance(answer, Mapping) or "statusCode" not in answer:
        body = json.dumps(answer).encode()
        return HttpResponse(200, [("content-type", "application/json")], body)
    try:
        status = int(answer["statusCode"])
    except (TypeError, ValueError) as error:
        raise InvalidResponseError("statusCode is not an integer.") from error
    headers = [(str(name), str(value)) for name, value in (answer.get("headers") or {}).items()]
    headers.extend(("set-cookie", str(cookie)) for cookie in answer.get("cookies") or ())
    raw = answer.get("body")
    if raw is None:
        body = b""
    elif answer.get("isBase64Encoded"):
        body = base64.b64decode(str(raw))
    else:
        body = (raw if isinstance(raw, str) else json.dumps(raw)).encode()
    return HttpResponse(status, headers, body)


def gateway_error(
    status: int,
    code: str,
    message: str,
    *,
    retryable: bool = False,
    details: Mapping[str, Any] | None = None,
) -> HttpResponse:
    """An answer of the gateway itself, in the service's error envelope
    (``{"type": "error", "error": {"code", "message", "retryable", "details"}}``)."""
    envelope = ErrorResponse(
        error=ErrorDetail(code=code, message=message, retryable=retryable, details=dict(details or {}))
    )
    return HttpResponse(status, [("content-type", "application/json")], envelope.model_dump_json().encode())


def _common_event(
    request: HttpRequest, route_key: str, path_parameters: Mapping[str, str], port: int
) -> dict[str, Any]:
    headers = request.header_map()
    headers.setdefault("x-forwarded-for", request.source_ip)
    headers.setdefault("x-forwarded-port", str(port))
    headers.setdefault("x-forwarded-proto", "http")
    domain = headers.get("host", "localhost").rpartition(":")[0] or headers.get("host", "localhost")
    event: dict[str, Any] = {
        "version": "2.0",
        "routeKey": route_key,
        "rawPath": request.raw_path,
        "rawQueryString": request.raw_query,
        "headers": headers,
        "requestContext": {
            "accountId": ACCOUNT_ID,
            "apiId": API_ID,
            "domainName": domain,
            "domainPrefix": domain.split(".")[0],
            "http": {
                "method": request.method,
                "path": request.raw_path,
                "protocol": "HTTP/1.1",
                "sourceIp": request.source_ip,
                "userAgent": headers.get("user-agent", ""),
            },
            "requestId": request.request_id,
            "routeKey": route_key,
            "stage": STAGE,
            "time": request.received_at.strftime("%d/%b/%Y:%H:%M:%S +0000"),
            "timeEpoch": int(request.received_at.timestamp() * 1000),
        },
    }
    if cookies := request.cookies():
        event["cookies"] = cookies
    if query := request.query_parameters():
        event["queryStringParameters"] = query
    if path_parameters:
        event["pathParameters"] = dict(path_parameters)
    return event


def _as_text(body: bytes, content_type: str) -> str | None:
    media_type = content_type.split(";")[0].strip().lower()
    if not any(marker in media_type for marker in _TEXT_TYPES):
        return None
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError:
        return None
