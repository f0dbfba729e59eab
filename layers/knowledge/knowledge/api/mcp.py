"""The MCP boundary: the tools of ``knowledge.api.mcp_tools`` over stateless Streamable HTTP with JSON
responses.

Protocol: the MCP SDK's low-level ``Server`` serves ``initialize``, ``ping``, ``tools/list`` and
``tools/call`` (plus the SDK's own ``server/discover`` for 2026-07-28 clients) through its
Streamable HTTP transport in stateless mode with JSON responses: one POST in, one JSON-RPC answer
out, no session id, no SSE stream. ``GET`` and ``DELETE`` answer 405 with ``Allow: POST`` (a
stateless server has no stream to open and no session to end; the spec's answer for "no GET
stream" is 405, and the SDK would otherwise hold a GET open until the Lambda timeout).

HTTP answers before MCP. Authentication comes first: the app reads the API Gateway HTTP API v2
event that Mangum puts at ``scope["aws.event"]`` and resolves the caller with
``principal_from_event`` (the authorizer's context). No caller (no, bad, expired or revoked token)
is an HTTP 401 with the project's error envelope (``authentication_required``) and
``WWW-Authenticate: Bearer``: the standard HTTP signal MCP clients act on, rather than a tool
result an agent might retry forever.
Then the tenant's requests-per-second quota (``knowledge.services.quotas``): a full window is an
HTTP 429 ``rate_limited`` with ``Retry-After``; a write tool's call (``remember``, ``pin_memory``,
``unpin_memory``, ``forget_memory``) also counts against the writes quota, and a full one is a
``rate_limited`` tool error.
The principal then rides the ASGI scope (``scope[PRINCIPAL_SCOPE_KEY]``) to the tool handler,
which finds it on the SDK's request context (``ctx.request.scope``).

Then the body, before the SDK sees it (its transport would answer a malformed body with the
parser's or pydantic's text, input echo and documentation links included):

- over ``MAX_BODY_BYTES`` (1 MiB, the REST limit): HTTP 413 in the project's envelope,
  ``payload_too_large`` with ``details.max_body_bytes``, like the 401 and 405 above (an HTTP-level
  refusal, not a JSON-RPC message);
- not JSON, or JSON the SDK's parser refuses (a lone surrogate escape, an integer of thousands of
  digits): HTTP 400, JSON-RPC ``{"code": -32700, "message": "Parse error"}``;
- JSON that is not one JSON-RPC message (a batch array, an object without ``jsonrpc``/``method``,
  an ``id`` that is neither a string nor an integer: ``null``, ``true``, ``1.5``, an object):
  HTTP 400, JSON-RPC ``{"code": -32600, "message": "Invalid Request"}``. A notification has no
  ``id`` at all (and gets the transport's 202).

Headers, before the SDK sees them (it would answer in its own words, some of it plain text):

- an ``MCP-Protocol-Version`` header naming a version the SDK does not know: HTTP 400, JSON-RPC
  ``{"code": -32600, "message": "Unsupported protocol version", "data": {"supported_versions":
  [...]}}`` (the value sent is not echoed);
- an ``Accept`` header that admits no JSON (``text/html``): HTTP 406, JSON-RPC
  ``{"code": -32600, "message": "Not Acceptable"}``; no ``Accept`` header means any type;
- ``Content-Type`` is not checked: like the REST routes, every body is read as JSON, so
  ``curl -d`` (``application/x-www-form-urlencoded``) works; the SDK is handed
  ``application/json``.

These JSON-RPC errors have ``"id": null`` and no ``data`` unless said. The body is then handed
on unchanged. From the SDK's answers, a ``Method not found`` error (-32601) loses its ``data``, the
method name the caller sent (of any length); nothing else is changed.

Tool calls: arguments are validated by the tool's arguments model (the SDK does not validate
them), so malformed input carries the project's codes (``validation_error``,
``knowledge_invalid_request`` or ``memory_invalid_request``). Success is one text content item
holding the response model's JSON (contract field names, the same JSON as REST). Every error is
the error envelope's JSON as text with
``isError: true`` (``{"type":"knowledge_unavailable"}`` when the runtime switch is off); an unknown
tool name is a ``not_found`` envelope with a fixed message (the name is not echoed) and
``details.available_tools``. The service is synchronous (boto3), so it runs in a worker
thread (``anyio.to_thread``) and never blocks the event loop.

DNS-rebinding protection is off: it guards servers on localhost or private networks that a browser
can be tricked into calling. Behind API Gateway the function only sees requests that API Gateway
routed by its own host name (execute-api or a custom domain, so the Host header is not ours to
list), and every request must carry a bearer token that the authorizer checks; a rebinding page has
no token to send. The same holds for the local gateway.
"""

from __future__ import annotations

from typing import Any

import anyio.to_thread
import mcp.types as types
import pydantic_core
from aws_lambda_powertools.metrics import MetricUnit
from mcp.server import Server, ServerRequestContext
from mcp.server.transport_security import TransportSecuritySettings
from mcp_types import INVALID_REQUEST, METHOD_NOT_FOUND, PARSE_ERROR, jsonrpc_message_adapter
from mcp_types.version import KNOWN_PROTOCOL_VERSIONS
from pydantic import ValidationError
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from knowledge import __version__
from knowledge.api.error_envelopes import (
    MethodNotAllowedError,
    PayloadTooLargeError,
    RouteNotFoundError,
    error_envelope,
    from_validation_errors,
    unexpected_error_envelope,
)
from knowledge.api.http import MAX_BODY_BYTES, retry_after_headers
from knowledge.api.mcp_tools import TOOLS
from knowledge.api.principal import principal_from_event, unauthenticated
from knowledge.bootstrap import get_container
from knowledge.contract.search import ErrorResponse
from knowledge.domain.access.bearer_tokens import TokenRejection
from knowledge.domain.models import Principal
from knowledge.errors import AuthenticationRequiredError, KnowledgeError, RateLimitedError
from knowledge.observability import logger, metrics

SERVER_NAME = "knowledge"
MCP_PATH = "/mcp"
EVENT_SCOPE_KEY = "aws.event"
"""Where Mangum puts the Lambda event in the ASGI scope."""
PROTOCOL_VERSION_HEADER = b"mcp-protocol-version"
PRINCIPAL_SCOPE_KEY = "knowledge.principal"
"""Where the authenticated ``Principal`` travels from the HTTP layer to the tool handler."""

SERVER_INSTRUCTIONS = (
    "Knowledge Base search and agent memory. Call search_knowledge with a query for ranked results "
    "over published knowledge, or with knowledge_item_id to read one item in bounded windows. Call "
    "remember to keep a fact you were asked to keep, search_memory to find your notes, and "
    "forget_memory to drop one. Knowledge and memory never mix."
)


def build_server() -> Server[Any]:
    """The MCP server: ``tools/list`` lists every tool of ``mcp_tools.TOOLS``; ``tools/call`` runs one
    for the principal found at ``ctx.request.scope[PRINCIPAL_SCOPE_KEY]``; ``ping`` is the SDK's."""
    return Server(
        SERVER_NAME,
        version=__version__,
        title="Knowledge service",
        instructions=SERVER_INSTRUCTIONS,
        get_tool_input_schema=_input_schema_for,
        on_list_tools=_list_tools,
        on_call_tool=_call_tool,
    )


def create_app() -> McpApp:
    """A fresh ASGI app serving ``POST /mcp``; build one per Lambda invocation, because the SDK's
    session manager (entered by the app's lifespan) runs only once per app.

    HTTP answers before MCP (see the module docs): 401 ``authentication_required`` when
    ``scope["aws.event"]`` holds no authenticated principal; 405 ``method_not_allowed``
    (``Allow: POST``) for any method but POST; 413 ``payload_too_large`` over 1 MiB; 400 with a
    fixed JSON-RPC error for a body that is not one JSON-RPC message.
    """
    server = build_server()
    app = server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        json_response=True,
        stateless_http=True,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    return McpApp(app)


class McpApp:
    """The ASGI app ``create_app`` returns: resolves the principal from the API Gateway event in the
    scope, admits only POST with a body of at most ``max_body_bytes`` holding one JSON-RPC message,
    then hands the request to the SDK's Streamable HTTP app."""

    def __init__(self, app: ASGIApp, *, max_body_bytes: int = MAX_BODY_BYTES) -> None:
        self._app = app
        self._max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        metrics.add_metric(name="McpRequests", unit=MetricUnit.Count, value=1)
        try:
            principal = principal_from_event(scope.get(EVENT_SCOPE_KEY) or {})
        except AuthenticationRequiredError as error:
            await _error_response(error, {"WWW-Authenticate": "Bearer"})(scope, receive, send)
            return
        try:
            get_container().quotas.admit_request(principal.tenant_id)
        except RateLimitedError as limited:
            await _error_response(limited, retry_after_headers(limited) or {})(scope, receive, send)
            return
        if scope["method"] != "POST":
            refusal = MethodNotAllowedError("The MCP endpoint is stateless: use POST.")
            await _error_response(refusal, {"Allow": "POST"})(scope, receive, send)
            return
        body = await _read_body(receive, self._max_body_bytes)
        if body is None:
            too_large = PayloadTooLargeError(
                "The request body is too large.", {"max_body_bytes": self._max_body_bytes}
            )
            await _error_response(too_large, {})(scope, receive, send)
            return
        malformed = _header_refusal(scope) or _jsonrpc_refusal(body)
        if malformed is not None:
            await malformed(scope, receive, send)
            return
        scope["headers"] = _as_json_request(scope["headers"])
        scope[PRINCIPAL_SCOPE_KEY] = principal
        await self._app(scope, _replay(body, receive), _without_method_echo(send))


async def _read_body(receive: Receive, limit: int) -> bytes | None:
    """The whole request body, or ``None`` as soon as it grows past ``limit`` bytes."""
    body = bytearray()
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return bytes(body)
        body.extend(message.get("body", b""))
        if len(body) > limit:
            return None
        if not message.get("more_body", False):
            return bytes(body)


def _replay(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that hands out ``body`` once, then whatever the connection sends next."""
    pending = [body]

    async def replayed() -> Message:
        if pending:
            return {"type": "http.request", "body": pending.pop(), "more_body": False}
        return await receive()

    return replayed


def _without_method_echo(send: Send) -> Send:
    """``send`` for the SDK's answer, with the ``data`` of a ``Method not found`` error dropped: the
    SDK puts the method name the caller sent there, of any length. Every other answer, and every
    answer in more than one body message, goes out unchanged."""
    held: list[Message] = []

    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            held.append(message)
            return
        if held and message["type"] == "http.response.body":
            start = held.pop()
            body = message.get("body", b"")
            if not message.get("more_body", False):
                body = _without_echo(body)
                headers = [
                    (key, value) for key, value in start["headers"] if key.lower() != b"content-length"
                ]
                start = {**start, "headers": [*headers, (b"content-length", str(len(body)).encode())]}
                message = {**message, "body": body}
            await send(start)
        await send(message)

    return sending


def _without_echo(body: bytes) -> bytes:
    try:
        answer = pydantic_core.from_json(body)
    except ValueError:
        return body
    error = answer.get("error") if isinstance(answer, dict) else None
    if not isinstance(error, dict) or error.get("code") != METHOD_NOT_FOUND or "data" not in error:
        return body
    error.pop("data")
    return pydantic_core.to_json(answer)


def _header(scope: Scope, name: bytes) -> str | None:
    return next((value.decode("latin-1") for key, value in scope["headers"] if key.lower() == name), None)


def _header_refusal(scope: Scope) -> JSONResponse | None:
    """A fixed JSON-RPC error for headers the SDK would answer in its own words: an
    ``MCP-Protocol-Version`` it does not know (400, ``Unsupported protocol version``, with the
    versions it knows in ``data``), or an ``Accept`` header that admits no JSON (406,
    ``Not Acceptable``); ``None`` otherwise."""
    version = _header(scope, PROTOCOL_VERSION_HEADER)
    if version is not None and version not in KNOWN_PROTOCOL_VERSIONS:
        return _jsonrpc_error(
            INVALID_REQUEST,
            "Unsupported protocol version",
            data={"supported_versions": list(KNOWN_PROTOCOL_VERSIONS)},
        )
    accept = _header(scope, b"accept")
    if accept and not _accepts_json(accept):
        return _jsonrpc_error(INVALID_REQUEST, "Not Acceptable", status=406)
    return None


def _accepts_json(accept: str) -> bool:
    types_ = {part.split(";")[0].strip().lower() for part in accept.split(",")}
    return bool(types_ & {"*/*", "application/*", "application/json"})


def _as_json_request(headers: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """``headers`` with ``Content-Type: application/json`` and, when there was none,
    ``Accept: application/json``: the body was already checked to be one JSON-RPC message,
    whatever type it was sent as (``curl -d`` says ``application/x-www-form-urlencoded``), as the
    REST routes read every body as JSON."""
    kept = [(key, value) for key, value in headers if key.lower() != b"content-type"]
    if not any(key.lower() == b"accept" and value.strip() for key, value in kept):
        kept = [(key, value) for key, value in kept if key.lower() != b"accept"]
        kept.append((b"accept", b"application/json"))
    return [*kept, (b"content-type", b"application/json")]


def _jsonrpc_refusal(body: bytes) -> JSONResponse | None:
    """A fixed JSON-RPC error for a body the SDK's transport would refuse, parsed and validated as
    the SDK does (``pydantic_core.from_json``, ``jsonrpc_message_adapter``); ``None`` when it is
    one JSON-RPC message."""
    try:
        message = pydantic_core.from_json(body)
    except ValueError:
        return _jsonrpc_error(PARSE_ERROR, "Parse error")
    try:
        jsonrpc_message_adapter.validate_python(message, by_name=False)
    except ValidationError:
        return _jsonrpc_error(INVALID_REQUEST, "Invalid Request")
    if isinstance(message, dict) and "id" in message and not _is_request_id(message["id"]):
        return _jsonrpc_error(INVALID_REQUEST, "Invalid Request")
    return None


def _is_request_id(value: object) -> bool:
    """A JSON-RPC id as MCP allows it: a string or an integer (not a boolean, a fraction, ``null``
    or a structure). The SDK's adapter lets a message with another id through as a notification
    (whose extra fields it keeps), which the transport would accept with an empty 202."""
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _jsonrpc_error(
    code: int, message: str, *, data: dict[str, Any] | None = None, status: int = 400
) -> JSONResponse:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return JSONResponse({"jsonrpc": "2.0", "id": None, "error": error}, status_code=status)


def _error_response(error: KnowledgeError, headers: dict[str, str]) -> JSONResponse:
    status, body = error_envelope(error)
    return JSONResponse(body.model_dump(mode="json"), status_code=status, headers=headers)


def _input_schema_for(name: str) -> dict[str, Any] | None:
    tool = TOOLS.get(name)
    return tool.definition.input_schema if tool is not None else None


async def _list_tools(
    ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    return types.ListToolsResult(tools=[tool.definition for tool in TOOLS.values()])


async def _call_tool(
    ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
) -> types.CallToolResult:
    tool = TOOLS.get(params.name)
    if tool is None:
        # A fixed text: the name the caller sent is never echoed back.
        unknown = RouteNotFoundError(
            f"Unknown tool; this server offers {', '.join(TOOLS)}.", {"available_tools": list(TOOLS)}
        )
        return _error_result(error_envelope(unknown)[1])
    try:
        principal = _principal(ctx)
        arguments = tool.arguments.model_validate(params.arguments or {})
        if not tool.annotations.read_only_hint:
            get_container().quotas.admit_write(principal.tenant_id)
        response = await anyio.to_thread.run_sync(tool.run, principal, arguments)
    except ValidationError as error:
        return _error_result(error_envelope(from_validation_errors(error.errors(), tool.invalid_request))[1])
    except KnowledgeError as error:
        logger.info("mcp tool call refused", extra={"tool": tool.name, "code": error.code})
        return _error_result(error_envelope(error)[1])
    except Exception as error:
        return _error_result(unexpected_error_envelope(error)[1])
    return types.CallToolResult(content=[types.TextContent(text=response.model_dump_json())])


def _principal(ctx: ServerRequestContext[Any, Any]) -> Principal:
    request = ctx.request
    principal = request.scope.get(PRINCIPAL_SCOPE_KEY) if request is not None else None
    if not isinstance(principal, Principal):
        raise unauthenticated(TokenRejection.MISSING)
    return principal


def _error_result(body: ErrorResponse) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=body.model_dump_json())], is_error=True)
