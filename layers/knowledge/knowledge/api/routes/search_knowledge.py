"""REST route of the ``search_knowledge`` tool (spec + DESIGN §5).

``POST /v1/tools/search_knowledge``: the tool's arguments as a JSON object
(``SearchKnowledgeArguments``) → ``KnowledgeSearchResponse`` (query) or ``KnowledgeReadResponse``
(addressed read), 200; errors as in ``knowledge.api.http``.

The caller is the principal the Lambda authorizer put in the event
(``knowledge.api.principal.CallerPrincipal``); the service enforces ``knowledge:read``.
"""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Body
from aws_lambda_powertools.metrics import MetricUnit

from knowledge.api.http import openapi_error_responses
from knowledge.api.principal import CallerPrincipal
from knowledge.bootstrap import get_container
from knowledge.contract.search import (
    KnowledgeReadResponse,
    KnowledgeSearchResponse,
    SearchKnowledgeArguments,
)
from knowledge.observability import metrics

SEARCH_KNOWLEDGE_PATH = "/v1/tools/search_knowledge"

router = Router()  # type: ignore[no-untyped-call]  # Powertools leaves Router.__init__ unannotated


@router.post(
    SEARCH_KNOWLEDGE_PATH,
    operation_id="search_knowledge",
    summary="Search published knowledge or read one item/revision in bounded windows.",
    description=(
        "Query mode (`query` set) ranks the current published revisions the caller can see and answers "
        '`{"type":"knowledge_search",...}`. Addressed mode (`knowledge_item_id`, optionally '
        "`knowledge_revision_id`) answers one window of a published revision as "
        '`{"type":"knowledge",...}`. Requires a bearer token with `knowledge:read`.'
    ),
    tags=["tools"],
    responses={
        200: {"description": "Ranked results (knowledge_search) or one content window (knowledge)."},
        **openapi_error_responses(400, 401, 403, 404, 500, 503),
    },
)
def search_knowledge(
    arguments: Annotated[SearchKnowledgeArguments, Body()], principal: CallerPrincipal
) -> KnowledgeSearchResponse | KnowledgeReadResponse:
    response = get_container().search.search_knowledge(principal, arguments)
    metrics.add_metric(name="SearchKnowledgeAnswered", unit=MetricUnit.Count, value=1)
    return response
