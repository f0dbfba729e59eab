"""The tools MCP lists (DESIGN §5 and §9), derived from their declarations (``knowledge.api.tools.Tool``
in ``knowledge.api.routes.search_knowledge.TOOLS`` and ``knowledge.api.routes.memory.TOOLS``): each
with its name, title, the one description its REST operation also carries, ``inputSchema`` (its
arguments model's JSON Schema reduced to plain keywords), annotations and the one service call REST
makes for it, so both boundaries answer the same JSON.

``search_knowledge`` reads knowledge; ``remember``, ``search_memory``, ``recall_context``,
``forget_memory``, ``pin_memory`` and ``unpin_memory`` work on the caller's notes. Unknown argument
fields answer the tool's own invalid-request code (``knowledge_invalid_request`` or
``memory_invalid_request``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

import mcp.types as types
from pydantic import BaseModel

from knowledge.api.routes import memory, search_knowledge
from knowledge.api.tools import Tool
from knowledge.domain.models import Principal
from knowledge.errors import KnowledgeError


@dataclass(frozen=True)
class McpTool:
    """One listed tool: ``run`` is the service call REST makes, on arguments already validated by
    ``arguments``; unknown fields answer ``invalid_request``."""

    name: str
    title: str
    description: str
    arguments: type[BaseModel]
    run: Callable[[Principal, Any], BaseModel]
    annotations: types.ToolAnnotations
    invalid_request: type[KnowledgeError]

    @property
    def definition(self) -> types.Tool:
        return _definition(self.name)


def mcp_tool(tool: Tool) -> McpTool:
    """The MCP face of ``tool``: its hints say whether it writes, destroys or repeats safely."""
    return McpTool(
        name=tool.name,
        title=tool.title,
        description=tool.description,
        arguments=tool.arguments,
        run=tool.call,
        annotations=types.ToolAnnotations(
            read_only_hint=tool.read_only,
            destructive_hint=tool.destructive,
            idempotent_hint=tool.idempotent,
            open_world_hint=False,
        ),
        invalid_request=tool.invalid_request,
    )


TOOLS: dict[str, McpTool] = {tool.name: mcp_tool(tool) for tool in (*search_knowledge.TOOLS, *memory.TOOLS)}
"""Every tool ``tools/list`` publishes, by name."""


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


def input_schema(arguments: type[BaseModel]) -> dict[str, Any]:
    """A tool's ``inputSchema``: ``arguments``' JSON Schema (descriptions, defaults, bounds,
    ``additionalProperties: false``) reduced to plain JSON Schema keywords: no generated titles, no
    ``examples``, no model docstring."""
    schema = _clean_schema(arguments.model_json_schema())
    schema.pop("description", None)
    return schema


@cache
def _definition(name: str) -> types.Tool:
    tool = TOOLS[name]
    return types.Tool(
        name=tool.name,
        title=tool.title,
        description=tool.description,
        input_schema=input_schema(tool.arguments),
        annotations=tool.annotations,
    )


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
