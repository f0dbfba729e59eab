"""The OpenAPI document: generated from the models, committed as docs/openapi.json, served publicly."""

from __future__ import annotations

import json

from knowledge.api.openapi import openapi_document
from tests.support.events import load_event
from tests.support.rest import invoke
from tests.support.template import ROOT


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
        "limit_chars",
        "max_results",
        "mode",
        "alpha",
    }
    assert document["components"]["securitySchemes"]["bearerAuth"]["scheme"] == "bearer"
    assert "HTTPValidationError" not in schemas


def test_openapi_route_answers_document_without_authorizer_context() -> None:
    reply = invoke(load_event("openapi_get"))

    assert reply.status == 200
    assert reply.body == openapi_document()
