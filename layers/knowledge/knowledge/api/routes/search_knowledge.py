"""REST route of the ``search_knowledge`` tool (spec + DESIGN §5), declared once (``SEARCH_KNOWLEDGE``)
for REST, OpenAPI and MCP.

``POST /v1/tools/search_knowledge``: the tool's arguments as a JSON object
(``SearchKnowledgeArguments``) → ``KnowledgeSearchResponse`` (query) or ``KnowledgeReadResponse``
(addressed read), 200; errors as in ``knowledge.api.http``.

The caller is the principal the Lambda authorizer put in the event
(``knowledge.api.principal.CallerPrincipal``); the service enforces ``knowledge:read``.
"""

from __future__ import annotations

from aws_lambda_powertools.event_handler.api_gateway import Router

from knowledge.api.services import search_service
from knowledge.api.tools import Tool, tool_route
from knowledge.contract.search import (
    KnowledgeReadResponse,
    KnowledgeSearchResponse,
    SearchKnowledgeArguments,
)
from knowledge.errors import InvalidRequestError

SEARCH_KNOWLEDGE_PATH = "/v1/tools/search_knowledge"

router = Router()  # type: ignore[no-untyped-call]  # Powertools leaves Router.__init__ unannotated

SEARCH_KNOWLEDGE = Tool(
    name="search_knowledge",
    title="Search knowledge",
    path=SEARCH_KNOWLEDGE_PATH,
    arguments=SearchKnowledgeArguments,
    response=KnowledgeSearchResponse | KnowledgeReadResponse,
    summary="Search published knowledge or read one item/revision in bounded windows.",
    description=(
        "Read authorized Knowledge Base content either by ranked query over published current revisions "
        "or by one exact item/revision with bounded content pagination. Use query for ranked search, or "
        "knowledge_item_id for an addressed read (add knowledge_revision_id only when the exact immutable "
        "revision matters); query and the addressed IDs are mutually exclusive.\n\n"
        'Query returns JSON text with {"type":"knowledge_search","results":[...]} where each result '
        "includes the current knowledge item/revision IDs, title, bounded excerpt, source/citation, "
        "reference, and scores. Addressed read returns JSON text with type='knowledge', owner/team/scope, "
        "base/item/revision IDs, title, bounded content, locator, source, reference, content_offset, "
        "content_limit, content_total_chars, and content_truncated. A result's locator.offset is a valid "
        "offset for a follow-up addressed read. With as_of (ISO-8601 with a zone, not in the future) both "
        "answer as of that moment, with today's authorization and as_of echoed: a query searches the "
        "revisions that were current and published then; an addressed read reads the revision current "
        "then (is_current and current_revision_id as of then). "
        "A query answer carries pending_index {writes, included}: how many published items you may read "
        "(under knowledge_base_id) the index has not taken yet; an item just published is searchable once "
        "the indexer takes it (seconds), and consistent true also matches those items' current revisions "
        "now, ranked by the same rules in place of any older revision the index holds (not with as_of). "
        "Errors return JSON text "
        '{"type":"error","error":{"code","message","retryable","details"}} with isError true '
        '({"type":"knowledge_unavailable"} when the knowledge runtime is switched off).'
    ),
    service=search_service,
    run=lambda search, principal, arguments: search.search_knowledge(principal, arguments),
    invalid_request=InvalidRequestError,
    tag="tools",
    success="Ranked results (knowledge_search) or one content window (knowledge).",
    errors=(400, 401, 403, 404, 500, 503),
    metric="SearchKnowledgeAnswered",
)

search_knowledge = tool_route(router, SEARCH_KNOWLEDGE)

TOOLS = (SEARCH_KNOWLEDGE,)
"""The tools this module declares, in the order MCP lists them."""
