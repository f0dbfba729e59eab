"""Every integer every boundary takes declares both bounds in its published schema, and no bound lets
through a number DynamoDB cannot hold (docs/reliability.md). The schemas walked are the ones callers
see: the OpenAPI document (REST bodies, query and path parameters), the MCP tools' ``inputSchema``
and the queue messages' JSON Schema. Enforcement is tested per surface in
``tests/integration/test_integer_bounds.py``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from knowledge.api.mcp_tools import TOOLS, input_schema
from knowledge.api.openapi import openapi_document
from knowledge.contract.ingest_messages import INGEST_MESSAGE
from knowledge.domain.bounds import INTEGER_MAX

_BOUND_KEYWORDS = frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})
DYNAMODB_MAX = 10**38 - 1
"""The largest integer a DynamoDB number holds (38 significant digits)."""


def _integers(schema: Any, definitions: dict[str, Any], where: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """``(path, schema)`` of every integer schema reachable from ``schema``, ``$ref``s followed."""
    if isinstance(schema, list):
        for index, entry in enumerate(schema):
            yield from _integers(entry, definitions, f"{where}[{index}]")
        return
    if not isinstance(schema, dict):
        return
    if "$ref" in schema:
        name = str(schema["$ref"]).rsplit("/", 1)[-1]
        yield from _integers(definitions[name], definitions, f"{where}->{name}")
        return
    if schema.get("type") == "integer":
        yield where, schema
    for name, child in (schema.get("properties") or {}).items():
        yield from _integers(child, definitions, f"{where}.{name}")
    for key in ("items", "additionalProperties"):
        yield from _integers(schema.get(key), definitions, f"{where}.{key}")
    # ``int | None`` publishes its bounds beside the ``anyOf`` rather than in its integer branch.
    bounds = {key: value for key, value in schema.items() if key in _BOUND_KEYWORDS}
    for key in ("anyOf", "oneOf", "allOf"):
        for branch in schema.get(key) or []:
            yield from _integers({**bounds, **branch} if bounds else branch, definitions, where)


def _rest_inputs() -> Iterator[tuple[str, dict[str, Any]]]:
    document = openapi_document()
    definitions = document["components"]["schemas"]
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            where = f"{method.upper()} {path}"
            for parameter in operation.get("parameters", []):
                yield from _integers(parameter["schema"], definitions, f"{where} {parameter['name']}")
            for content in (operation.get("requestBody") or {}).get("content", {}).values():
                yield from _integers(content["schema"], definitions, f"{where} body")


def _mcp_inputs() -> Iterator[tuple[str, dict[str, Any]]]:
    for name, tool in TOOLS.items():
        schema = input_schema(tool.arguments)
        yield from _integers(schema, schema.get("$defs", {}), f"mcp {name}")


def _queue_inputs() -> Iterator[tuple[str, dict[str, Any]]]:
    schema = INGEST_MESSAGE.json_schema()
    yield from _integers(schema, schema.get("$defs", {}), "queue message")


INPUTS = [*_rest_inputs(), *_mcp_inputs(), *_queue_inputs()]


def test_boundary_schemas_have_integer_fields_to_check() -> None:
    where = {path.split(" ")[0] for path, _ in INPUTS}

    assert {"PATCH", "GET", "POST", "mcp", "queue"} <= where
    assert any("expected_version" in path for path, _ in INPUTS)


@pytest.mark.parametrize(("where", "schema"), INPUTS, ids=[path for path, _ in INPUTS])
def test_boundary_integer_declares_both_bounds_within_what_dynamodb_holds(
    where: str, schema: dict[str, Any]
) -> None:
    assert "minimum" in schema or "exclusiveMinimum" in schema, where
    assert "maximum" in schema or "exclusiveMaximum" in schema, where
    maximum = schema.get("maximum", schema.get("exclusiveMaximum"))
    minimum = schema.get("minimum", schema.get("exclusiveMinimum"))
    assert -INTEGER_MAX <= minimum <= maximum <= INTEGER_MAX < DYNAMODB_MAX
