"""One declaration per agent tool: ``Tool`` holds everything both boundaries publish and run, so the
REST route (``tool_route``), its OpenAPI operation and the MCP tool (``knowledge.api.mcp_tools``)
come from one place and carry one description.

A tool is declared in its routes module (``knowledge.api.routes.search_knowledge``,
``knowledge.api.routes.memory``) and registered there with ``tool_route(router, TOOL)``; the module
lists its tools in ``TOOLS`` (in the order ``tools/list`` publishes them). Both boundaries make the
same one service call, ``run(service, principal, arguments)``, on the service ``service()`` answers
(a dependency of ``knowledge.api.services``), and answer ``answer(outcome)`` as JSON.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.depends import Depends
from aws_lambda_powertools.event_handler.openapi.params import Body
from aws_lambda_powertools.metrics import MetricUnit
from pydantic import BaseModel

from knowledge.api.http import openapi_error_responses
from knowledge.api.principal import CallerPrincipal
from knowledge.api.writes import IdempotencyKey, ReplayCheck, WriteCheck, write_route
from knowledge.domain.models import Principal
from knowledge.errors import KnowledgeError
from knowledge.observability import metrics


def _same(outcome: Any) -> Any:
    return outcome


@dataclass(frozen=True)
class Write:
    """What makes a tool a write on REST (``knowledge.api.writes.write_route``): ``check`` runs before
    any ``Idempotency-Key`` record is read, ``on_replay`` before a stored answer is replayed."""

    check: WriteCheck
    on_replay: ReplayCheck | None = None


@dataclass(frozen=True)
class Tool:
    """One agent tool.

    ``name`` is the MCP tool name and the REST ``operation_id``; ``path`` its REST route (``POST``).
    ``arguments`` is the request model (REST body, MCP ``inputSchema``), ``response`` the answer's
    model (or a union of models), ``description`` the one text both publish (MCP tool description,
    OpenAPI operation description); ``title`` is MCP's display name, ``summary`` OpenAPI's.
    ``run(service, principal, arguments)`` is the one service call, ``answer(outcome)`` the JSON
    body of its outcome; ``created(outcome)`` (writes only) answers REST 201 instead of 200.
    ``write`` is ``None`` for a read-only tool; ``destructive`` and ``idempotent`` are MCP hints.
    ``invalid_request`` is the error class of unknown argument fields. ``metric`` (a count) is
    published by the REST route once it answers.
    """

    name: str
    title: str
    path: str
    arguments: type[BaseModel]
    response: Any
    summary: str
    description: str
    service: Callable[[], Any]
    run: Callable[[Any, Principal, Any], Any]
    invalid_request: type[KnowledgeError]
    tag: str
    success: str
    errors: tuple[int, ...]
    answer: Callable[[Any], BaseModel] = _same
    created: Callable[[Any], bool] | None = None
    write: Write | None = None
    destructive: bool = False
    idempotent: bool = True
    metric: str | None = None

    @property
    def read_only(self) -> bool:
        return self.write is None

    @property
    def status_code(self) -> int:
        """The REST status of a new result (201 for a tool that creates), as OpenAPI documents it."""
        return 201 if self.created is not None else 200

    def call(self, principal: Principal, arguments: Any) -> BaseModel:
        """The tool's answer to ``principal``, ``arguments`` already validated (the MCP path)."""
        return self.answer(self.run(self.service(), principal, arguments))


def tool_route(router: Router, tool: Tool) -> Callable[..., Any]:
    """Register ``tool``'s REST route on ``router`` (``POST tool.path``, a ``write_route`` for a
    write) and answer its handler: body ``tool.arguments``, the caller, and the service as a
    ``Depends(tool.service)`` parameter (overridable per resolver with ``dependency_overrides``)."""
    openapi: dict[str, Any] = {
        "operation_id": tool.name,
        "summary": tool.summary,
        "description": tool.description,
        "tags": [tool.tag],
        "responses": {
            tool.status_code: {"description": tool.success},
            **openapi_error_responses(*tool.errors),
        },
    }
    annotations: dict[str, Any] = {
        "arguments": Annotated[tool.arguments, Body()],
        "principal": CallerPrincipal,
        "service": Annotated[Any, Depends(tool.service)],
    }
    if tool.write is None:

        def read(arguments: Any, principal: Any, service: Any) -> Any:
            answer = tool.answer(tool.run(service, principal, arguments))
            _count(tool)
            return answer

        read.__annotations__ = {**annotations, "return": tool.response}
        route: Callable[..., Any] = router.route(tool.path, "POST", **openapi)(_named(read, tool))
        return route

    def write(arguments: Any, principal: Any, service: Any, idempotency_key: Any = None) -> Response[Any]:
        outcome = tool.run(service, principal, arguments)
        _count(tool)
        status = 201 if tool.created is not None and tool.created(outcome) else 200
        body = tool.answer(outcome).model_dump(mode="json")
        return Response(status_code=status, content_type=content_types.APPLICATION_JSON, body=body)

    write.__annotations__ = {
        **annotations,
        "idempotency_key": IdempotencyKey,
        "return": Response[tool.response],  # type: ignore[name-defined]  # a model chosen at run time
    }
    if tool.status_code != 200:
        openapi["status_code"] = tool.status_code
    route = write_route(
        router,
        "POST",
        tool.path,
        check=tool.write.check,
        body=tool.arguments,
        on_replay=tool.write.on_replay,
        **openapi,
    )(_named(write, tool))
    return route


def _named(handler: Callable[..., Any], tool: Tool) -> Callable[..., Any]:
    handler.__name__ = handler.__qualname__ = tool.name
    return handler


def _count(tool: Tool) -> None:
    if tool.metric is not None:
        metrics.add_metric(name=tool.metric, unit=MetricUnit.Count, value=1)
