"""The tools MCP lists (DESIGN §5 and §9): each with its name, description, ``inputSchema``
(its arguments model's JSON Schema reduced to plain keywords), annotations and the one service
call REST makes for it, so both boundaries answer the same JSON.

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

from knowledge.bootstrap import get_container
from knowledge.contract.memory import (
    ForgetMemoryArguments,
    PinMemoryArguments,
    RecallContextArguments,
    RememberArguments,
    SearchMemoryArguments,
    UnpinMemoryArguments,
)
from knowledge.contract.search import SearchKnowledgeArguments
from knowledge.domain.models import Principal
from knowledge.errors import InvalidRequestError, KnowledgeError, MemoryInvalidRequestError

SEARCH_KNOWLEDGE_DESCRIPTION = (
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


REMEMBER_DESCRIPTION = (
    "Persist a durable fact the user explicitly asked you to remember (a note, never a knowledge "
    "revision). Without memory_id or semantic_key it creates a note, unless a visible current note "
    "with the same scope, path and content exists (result duplicate). With semantic_key (a stable "
    "name for the fact) or memory_id it writes a new version of that note (updated, or unchanged). "
    "supersedes retires older notes from search; expires_at or ttl_seconds makes a note expire; "
    "pin true also pins it. Your own private notes need memory:write; a team or tenant note (one "
    "others see) also needs memory:share, and another principal's note memory:admin. "
    'Returns JSON text {"type":"memory","result":"created|updated|unchanged|duplicate","note":{...}}.'
)
SEARCH_MEMORY_DESCRIPTION = (
    "Strict, targeted retrieval over your own visible notes (never knowledge): hybrid BM25 and "
    "vector search with filters by scope, team_id, agent_id, memory_type and path_prefix. Expired, "
    "forgotten and (unless include_superseded) superseded notes never appear. Returns JSON text "
    '{"type":"memory_search","results":[{note_id, version, content, path, ..., score}]}.'
)
FORGET_MEMORY_DESCRIPTION = (
    "Forget one note: soft hides it (restorable), redact replaces the content of every version with "
    "[redacted], hard deletes it with its versions and index entries. A team or tenant note also "
    "needs memory:share, and another principal's note memory:admin. Returns JSON text "
    '{"type":"memory_forgotten","note_id","mode"}.'
)

RECALL_CONTEXT_DESCRIPTION = (
    "Build a context pack from your notes (never knowledge) to paste into your prompt: pinned notes "
    "first (within half of max_tokens), then the notes most relevant to query (without a query: the "
    "most important, then the most recent), whole notes only, near-duplicates dropped, never above "
    "max_tokens (cl100k_base tokens). Each block's header says whose note it is: own, or shared by "
    "its owner (weigh shared text accordingly). Returns JSON text "
    '{"type":"memory_context","text","items":[{note_id, version, path, memory_type, scope, owner_id, '
    'own, pinned, tokens, score}],"budget":{max_tokens, used_tokens, tokenizer, max_items},'
    '"coverage":{candidates, included, dropped:[{note_id, reason}]}}.'
)
PIN_MEMORY_DESCRIPTION = (
    "Pin a note so recall_context always brings it first, for everyone who can see the note; order "
    "(0 first) then pin time decide among pins. Pinning again returns the same pin. A team or tenant "
    "note also needs memory:share, and another principal's note memory:admin. Returns JSON "
    'text {"type":"pin","pin_id","note_id","reason","order","expires_at","created_at"}.'
)
UNPIN_MEMORY_DESCRIPTION = (
    "Remove a note's pin (a team or tenant note also needs memory:share, and another principal's note "
    'memory:admin). Returns JSON text {"type":"unpinned","note_id","removed"} (removed is '
    "false when the note had no pin)."
)


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


def _remember(principal: Principal, arguments: RememberArguments) -> BaseModel:
    return get_container().pins.remember(principal, arguments).response


def _pin(principal: Principal, arguments: PinMemoryArguments) -> BaseModel:
    return get_container().pins.pin(principal, arguments).pin


TOOLS: dict[str, McpTool] = {
    tool.name: tool
    for tool in (
        McpTool(
            name="search_knowledge",
            title="Search knowledge",
            description=SEARCH_KNOWLEDGE_DESCRIPTION,
            arguments=SearchKnowledgeArguments,
            run=lambda principal, arguments: get_container().search.search_knowledge(principal, arguments),
            annotations=types.ToolAnnotations(
                read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
            ),
            invalid_request=InvalidRequestError,
        ),
        McpTool(
            name="remember",
            title="Remember a fact",
            description=REMEMBER_DESCRIPTION,
            arguments=RememberArguments,
            run=_remember,
            annotations=types.ToolAnnotations(
                read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
            ),
            invalid_request=MemoryInvalidRequestError,
        ),
        McpTool(
            name="search_memory",
            title="Search memory",
            description=SEARCH_MEMORY_DESCRIPTION,
            arguments=SearchMemoryArguments,
            run=lambda principal, arguments: get_container().memory_search.search_memory(
                principal, arguments
            ),
            annotations=types.ToolAnnotations(
                read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
            ),
            invalid_request=MemoryInvalidRequestError,
        ),
        McpTool(
            name="recall_context",
            title="Recall context",
            description=RECALL_CONTEXT_DESCRIPTION,
            arguments=RecallContextArguments,
            run=lambda principal, arguments: get_container().recall.recall_context(principal, arguments),
            annotations=types.ToolAnnotations(
                read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
            ),
            invalid_request=MemoryInvalidRequestError,
        ),
        McpTool(
            name="pin_memory",
            title="Pin a memory",
            description=PIN_MEMORY_DESCRIPTION,
            arguments=PinMemoryArguments,
            run=_pin,
            annotations=types.ToolAnnotations(
                read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
            ),
            invalid_request=MemoryInvalidRequestError,
        ),
        McpTool(
            name="unpin_memory",
            title="Unpin a memory",
            description=UNPIN_MEMORY_DESCRIPTION,
            arguments=UnpinMemoryArguments,
            run=lambda principal, arguments: get_container().pins.unpin(principal, arguments),
            annotations=types.ToolAnnotations(
                read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
            ),
            invalid_request=MemoryInvalidRequestError,
        ),
        McpTool(
            name="forget_memory",
            title="Forget a memory",
            description=FORGET_MEMORY_DESCRIPTION,
            arguments=ForgetMemoryArguments,
            run=lambda principal, arguments: get_container().notes.forget(principal, arguments),
            annotations=types.ToolAnnotations(
                read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=False
            ),
            invalid_request=MemoryInvalidRequestError,
        ),
    )
}
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
