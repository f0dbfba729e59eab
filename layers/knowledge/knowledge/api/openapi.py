"""The OpenAPI 3.1 document of every REST route of the service, generated from the pydantic models, and
``router``, which serves it publicly at ``GET /v1/openapi.json`` (``SearchKnowledgeFunction``).

``routers()`` finds the Powertools Routers of every function: each module-level ``Router`` of the
modules of ``knowledge.api.routes``, and this module's own. A new surface declares its router in a
routes module and regenerates the committed copy: ``python -m knowledge.api.openapi >
docs/openapi.json`` (a test fails when the copy and the models disagree, and another when its
operations and the template's HTTP API routes differ). The document is built by a resolver of its
own; routes read request state only through what Powertools hands them (``Request``, ``Depends``),
so a router can be part of both that resolver and the one serving requests. The other functions'
routes and Powertools' OpenAPI models are imported when the document is first built, not with this
module, so ``SearchKnowledgeFunction`` starts without them.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
import sys
from functools import cache
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver
from aws_lambda_powertools.event_handler.api_gateway import Router

from knowledge.api.http import openapi_error_responses

TITLE = "Knowledge service"
API_VERSION = "1.0.0"
BEARER_SCHEME = "bearerAuth"
DESCRIPTION = (
    "Multi-tenant knowledge search for AI agents: the search_knowledge tool, the memory tools "
    "(remember, search_memory, forget_memory) and the write API over REST. Every route but this "
    "document and the health check needs `Authorization: Bearer <token>`. Errors are "
    '`{"type":"error","error":{"code","message","retryable","details"}}`.'
)

OPENAPI_PATH = "/v1/openapi.json"

router = Router()  # type: ignore[no-untyped-call]  # Powertools leaves Router.__init__ unannotated


@router.get(
    OPENAPI_PATH,
    operation_id="openapi",
    summary="The OpenAPI document of the service.",
    tags=["meta"],
    security=[{}],
    responses={200: {"description": "An OpenAPI 3.1 document."}, **openapi_error_responses(500)},
)
def openapi_json() -> dict[str, Any]:
    return openapi_document()


def routers() -> tuple[Router, ...]:
    """Every Router of the service: those of the modules of ``knowledge.api.routes`` (by module name,
    then in the order each module defines them), then this module's."""
    from knowledge.api import routes

    found: list[Router] = []
    for module_info in sorted(pkgutil.iter_modules(routes.__path__), key=lambda info: info.name):
        module = importlib.import_module(f"{routes.__name__}.{module_info.name}")
        found.extend(
            value for value in vars(module).values() if isinstance(value, Router) and value not in found
        )
    return (*found, router)


# Powertools adds these for its own 422 answers, which this service never gives (it answers 400 and 500).
_POWERTOOLS_SCHEMAS = ("HTTPValidationError", "ResponseValidationError", "ValidationError")


def openapi_document() -> dict[str, Any]:
    """The document as a JSON-ready dict (a fresh copy on every call)."""
    document: dict[str, Any] = json.loads(_document_json())
    return document


@cache
def _document_json() -> str:
    # enable_validation=False keeps Powertools' 422 responses out; request and response models
    # are documented either way.
    from aws_lambda_powertools.event_handler.openapi.models import HTTPBearer, Tag

    resolver = APIGatewayHttpResolver(enable_validation=False)
    for included in routers():
        resolver.include_router(included)
    document = json.loads(
        resolver.get_openapi_json_schema(
            title=TITLE,
            version=API_VERSION,
            description=DESCRIPTION,
            tags=[
                Tag(name="tools", description="Agent tools."),
                Tag(name="memory", description="Notes: the agents' own durable memories (DESIGN §9)."),
                Tag(
                    name="knowledge",
                    description="Knowledge bases, items, revisions and tokens (the write API).",
                ),
                Tag(name="meta", description="About the API itself."),
            ],
            security_schemes={
                BEARER_SCHEME: HTTPBearer(
                    bearerFormat="opaque",
                    description="A token issued by POST /v1/tokens (shown once; only its hash is stored).",
                )
            },
            security=[{BEARER_SCHEME: []}],
        )
    )
    _drop_unreferenced(document, _POWERTOOLS_SCHEMAS)
    return json.dumps(document, sort_keys=True)


def _drop_unreferenced(document: dict[str, Any], names: tuple[str, ...]) -> None:
    schemas: dict[str, Any] = document.get("components", {}).get("schemas", {})
    for name in names:
        remaining = {key: value for key, value in document.items() if key != "components"}
        remaining["schemas"] = {key: value for key, value in schemas.items() if key not in names}
        if f'"#/components/schemas/{name}"' not in json.dumps(remaining):
            schemas.pop(name, None)


if __name__ == "__main__":
    sys.stdout.write(json.dumps(openapi_document(), indent=2, sort_keys=True, ensure_ascii=False) + "\n")
