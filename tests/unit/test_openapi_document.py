"""The OpenAPI document: generated from the models, committed as docs/openapi.json, served publicly."""

from __future__ import annotations

import json

from knowledge.api.openapi import openapi_document
from tests.support.events import load_event
from tests.support.rest import invoke
from tests.support.template import ROOT, load_template


def test_openapi_document_equals_committed_copy() -> None:
    committed = json.loads((ROOT / "docs" / "openapi.json").read_text(encoding="utf-8"))

    # Regenerate with: python -m knowledge.api.openapi > docs/openapi.json
    assert committed == openapi_document()


def test_openapi_document_describes_search_knowledge_contract() -> None:
    document = openapi_document()
    operation = document["paths"]["/v1/tools/search_knowledge"]["post"]
    schemas = document["components"]["schemas"]

    assert operation["requestBody"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/SearchKnowledgeArguments"
    }
    assert set(operation["responses"]) == {"200", "400", "401", "403", "404", "500", "503"}
    assert set(schemas["SearchKnowledgeArguments"]["properties"]) == {
        "query",
        "knowledge_base_id",
        "knowledge_item_id",
        "knowledge_revision_id",
        "offset",
        "page",
        "limit_chars",
        "max_results",
        "mode",
        "alpha",
        "as_of",
        "consistent",
    }
    assert schemas["SearchKnowledgeArguments"]["properties"]["as_of"]["anyOf"][0]["format"] == "date-time"
    assert document["components"]["securitySchemes"]["bearerAuth"]["scheme"] == "bearer"
    assert "HTTPValidationError" not in schemas


def test_openapi_route_answers_document_without_authorizer_context() -> None:
    reply = invoke(load_event("openapi_get"))

    assert reply.status == 200
    assert reply.body == openapi_document()


def _template_http_routes() -> set[tuple[str, str]]:
    """(method, path) of every ``HttpApi`` event of ``template.yaml``, but the MCP endpoint's (it
    speaks MCP's streamable HTTP, not REST) and the console's files (a web page, not an API)."""
    routes: set[tuple[str, str]] = set()
    for logical_id, resource in load_template()["Resources"].items():
        if resource["Type"] != "AWS::Serverless::Function" or logical_id == "McpFunction":
            continue
        for event in (resource["Properties"].get("Events") or {}).values():
            if event["Type"] == "HttpApi" and not event["Properties"]["Path"].startswith("/console"):
                routes.add((event["Properties"]["Method"].upper(), event["Properties"]["Path"]))
    return routes


def test_openapi_operations_are_the_template_http_api_routes() -> None:
    document = openapi_document()
    operations = {(method.upper(), path) for path, item in document["paths"].items() for method in item}

    assert operations == _template_http_routes()
    assert len(operations) >= 27
