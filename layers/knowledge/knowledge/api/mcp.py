"""The MCP boundary: the ``search_knowledge`` tool over stateless Streamable HTTP with JSON responses.

Protocol: the MCP SDK's low-level ``Server`` serves ``initialize``, ``ping``, ``tools/list`` and
``tools/call`` (plus the SDK's own ``server/discover`` for 2026-07-28 clients) through its
Streamable HTTP transport in stateless mode with JSON responses: one POST in, one JSON-RPC answer
out, no session id, no SSE stream. ``GET`` and ``DELETE`` answer 405 with ``Allow: POST`` (a
stateless server has no stream to open and no session to end; the spec's answer for "no GET
stream" is 405, and the SDK would otherwise hold a GET open until the Lambda timeout).

Authentication happens before the MCP layer. The app reads the API Gateway HTTP API v2 event that
Mangum puts at ``scope["aws.event"]`` and resolves the caller with ``principal_from_event`` (the
authorizer's context). No caller (no, bad, expired or revoked token) is an HTTP 401 with the
project's error envelope (``authentication_required``) and ``WWW-Authenticate: Bearer``: the
standard HTTP signal MCP clients act on, rather than a tool result an agent might retry forever.
The principal then rides the ASGI scope (``scope[PRINCIPAL_SCOPE_KEY]``) to the tool handler,
which finds it on the SDK's request context (``ctx.request.scope``).

Tool calls: arguments are validated by ``SearchKnowledgeArguments`` (the SDK does not validate
them), so malformed input carries the project's codes (``validation_error``,
``knowledge_invalid_request``). Success is one text content item holding the response model's JSON
(contract field names, the same JSON as REST). Every error is the error envelope's JSON as text with
``isError: true`` (``{"type":"knowledge_unavailable"}`` when the runtime switch is off); an unknown
tool name is a ``not_found`` envelope. The service is synchronous (boto3), so it runs in a worker
thread (``anyio.to_thread``) and never blocks the event loop.

DNS-rebinding protection is off: it guards servers on localhost or private networks that a browser
can be tricked into calling. Behind API Gateway the function only sees requests that API Gateway
routed by its own host name (execute-api or a custom domain, so the Host header is not ours to
list), and every request must carry a bearer token that the authorizer checks; a rebinding page has
no token to send. The same holds for the local gateway.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import anyio.to_thread
import mcp.types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.transport_security import TransportSecuritySettings
from pydantic import ValidationError
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from knowledge import __version__
from knowledge.api.errors import error_envelope, from_validation_errors, unexpected_error_envelope
from knowledge.api.principal import principal_from_event
from knowledge.bootstrap import get_container
from knowledge.domain.contract import (
    ErrorResponse,
    KnowledgeReadResponse,
    KnowledgeSearchResponse,
    SearchKnowledgeArguments,
)
from knowledge.domain.models import Principal
from knowledge.errors import AuthenticationRequiredError, KnowledgeError
from knowledge.observability import logger

TOOL_NAME = "search_knowledge"
SERVER_NAME = "knowledge"
MCP_PATH = "/mcp"
EVENT_SCOPE_KEY = "aws.event"
"""Where Mangum puts the Lambda event in the ASGI scope."""
PRINCIPAL_SCOPE_KEY = "knowledge.principal"
"""Where the authenticated ``Principal`` travels from the HTTP layer to the tool handler."""

TOOL_DESCRIPTION = (
    "Read authorized Knowledge Base content either by ranked query over published current revisions "
    "or by one exact item/revision with bounded content pagination. Use query for ranked search, or "
    "knowledge_item_id for an addressed read (add knowledge_revision_id only when the exact immutable "
    "revision matters); query and the addressed IDs are mutually exclusive.\n\n"
    'Query returns JSON text with {"type":"knowledge_search","results":[...]} where each result '
    "includes the current knowledge item/revision IDs, title, bounded excerpt, source/citation, "
    "reference, and scores. Addressed read returns JSON text with type='knowledge', owner/team/scope, "
    "base/item/revision IDs, title, bounded content, locator, source, reference, content_offset, "
    "content_limit, content_total_chars, and content_truncated. A result's locator.offset is a valid "
    "offset for a follow-up addressed read. Errors return JSON text "
    '{"type":"error","error":{"code","message","retryable","details"}} with isError true '
    '({"type":"knowledge_unavailable"} when the knowledge runtime is switched off).'
)

SERVER_INSTRUCTIONS = (
    "Knowledge Base search for agents. Call search_knowledge with a query for ranked results over "
    "published knowledge, or with knowledge_item_id to read one item in bounded windows."
)

# JSON Schema keywords kept in the published inputSchema; pydantic's ``title`` per field and
# ``examples`` are dropped because some MCP clients reject keywords outside this common core.
_VALUE_KEYWORDS = frozenset(
    {
        "type",
        "description",
        "default",
        "enum",
        "const",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "minLength",
        "maxLength",
        "pattern",
        "format",
        "required",
        "minItems",
        "maxItems",
        "$ref",
    }
)
_SCHEMA_MAP_KEYWORDS = frozenset({"properties", "$defs"})
_SCHEMA_KEYWORDS = frozenset({"items", "additionalProperties", "not"})
_SCHEMA_LIST_KEYWORDS = frozenset({"anyOf", "oneOf", "allOf"})


class _MethodNotAllowedError(KnowledgeError):
    code = "method_not_allowed"


class _UnknownToolError(KnowledgeError):
    code = "not_found"


def input_schema() -> dict[str, Any]:
    """The tool's ``inputSchema``: ``SearchKnowledgeArguments``' JSON Schema (descriptions,
    defaults, ``minimum``/``maximum``/``maxLength`` bounds, ``additionalProperties: false``)
    reduced to plain JSON Schema keywords: no generated titles, no ``examples``, no model docstring."""
    schema = _clean_schema(SearchKnowledgeArguments.model_json_schema())
    schema.pop("description", None)
    return schema


@cache
def tool_definition() -> types.Tool:
    """The one tool this server lists: name, description (the spec's Purpose and Returns),
    ``inputSchema`` and read-only annotations."""
    return types.Tool(
        name=TOOL_NAME,
        title="Search knowledge",
        description=TOOL_DESCRIPTION,
        input_schema=input_schema(),
        annotations=types.ToolAnnotations(
            read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
        ),
    )


def build_server() -> Server[Any]:
    """The MCP server: ``tools/list`` lists ``search_knowledge``; ``tools/call`` runs it for the
    principal found at ``ctx.request.scope[PRINCIPAL_SCOPE_KEY]``; ``ping`` is the SDK's."""
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

    HTTP answers before MCP: 401 ``authentication_required`` when ``scope["aws.event"]`` holds no
    authenticated principal; 405 ``method_not_allowed`` (``Allow: POST``) for any method but POST.
    Bodies over the SDK's 4 MiB limit answer 413.
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
    scope, admits only POST, then hands the request to the SDK's Streamable HTTP app."""

    def __init__(self, app: ASGIApp) -> None:
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        try:
            principal = principal_from_event(scope.get(EVENT_SCOPE_KEY) or {})
        except AuthenticationRequiredError as error:
            await _error_response(error, {"WWW-Authenticate": "Bearer"})(scope, receive, send)
            return
        if scope["method"] != "POST":
            refusal = _MethodNotAllowedError("The MCP endpoint is stateless: use POST.")
            await _error_response(refusal, {"Allow": "POST"})(scope, receive, send)
            return
        scope[PRINCIPAL_SCOPE_KEY] = principal
        await self._app(scope, receive, send)


def _error_response(error: KnowledgeError, headers: dict[str, str]) -> JSONResponse:
    status, body = error_envelope(error)
    return JSONResponse(body.model_dump(mode="json"), status_code=status, headers=headers)


def _input_schema_for(name: str) -> dict[str, Any] | None:
    return tool_definition().input_schema if name == TOOL_NAME else None


async def _list_tools(
    ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    return types.ListToolsResult(tools=[tool_definition()])


async def _call_tool(
    ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
) -> types.CallToolResult:
    if params.name != TOOL_NAME:
        unknown = _UnknownToolError(
            f"Unknown tool {params.name!r}; this server offers {TOOL_NAME!r}.",
            {"tool": params.name, "available_tools": [TOOL_NAME]},
        )
        return _error_result(error_envelope(unknown)[1])
    try:
        principal = _principal(ctx)
        arguments = SearchKnowledgeArguments.model_validate(params.arguments or {})
        response = await anyio.to_thread.run_sync(_search, principal, arguments)
    except ValidationError as error:
        return _error_result(error_envelope(from_validation_errors(error.errors()))[1])
    except KnowledgeError as error:
        logger.info("mcp tool call refused", extra={"tool": TOOL_NAME, "code": error.code})
        return _error_result(error_envelope(error)[1])
    except Exception as error:
        return _error_result(unexpected_error_envelope(error)[1])
    return types.CallToolResult(content=[types.TextContent(text=response.model_dump_json())])


def _search(
    principal: Principal, arguments: SearchKnowledgeArguments
) -> KnowledgeSearchResponse | KnowledgeReadResponse:
    return get_container().search.search_knowledge(principal, arguments)


def _principal(ctx: ServerRequestContext[Any, Any]) -> Principal:
    request = ctx.request
    principal = request.scope.get(PRINCIPAL_SCOPE_KEY) if request is not None else None
    if not isinstance(principal, Principal):
        raise AuthenticationRequiredError("A valid bearer token is required.")
    return principal


def _error_result(body: ErrorResponse) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=body.model_dump_json())], is_error=True)


def _clean_schema(node: dict[str, Any]) -> dict[str, Any]:
    cleaned: dict[str, Any] = {}
    for key, value in node.items():
        if key in _VALUE_KEYWORDS:
            cleaned[key] = value
        elif key in _SCHEMA_MAP_KEYWORDS:
            cleaned[key] = {name: _clean_schema(child) for name, child in value.items()}
        elif key in _SCHEMA_LIST_KEYWORDS:
            cleaned[key] = [_clean_schema(child) for child in value]
        elif key in _SCHEMA_KEYWORDS:
            cleaned[key] = _clean_schema(value) if isinstance(value, dict) else value
    return cleaned
