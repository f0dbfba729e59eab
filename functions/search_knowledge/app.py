"""``SearchKnowledgeFunction``: ``POST /v1/tools/search_knowledge`` and ``GET /v1/openapi.json``.

Routes and error mapping live in the layer (``knowledge.api.routes.search_knowledge``,
``knowledge.api.openapi``, ``knowledge.api.http``).
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext

from knowledge.api import openapi
from knowledge.api.http import build_resolver
from knowledge.api.routes import search_knowledge
from knowledge.observability import logger, metrics, tracer

app = build_resolver(search_knowledge.router, openapi.router)


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP, clear_state=True)
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics(capture_cold_start_metric=True)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return app.resolve(event, context)
