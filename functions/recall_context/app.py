"""``RecallContextFunction``: ``POST /v1/tools/recall_context`` (DESIGN §9).

Routes live in ``knowledge.api.routes.memory``; errors are mapped by ``knowledge.api.http``.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext

from knowledge.api.http import build_resolver
from knowledge.api.routes.memory import recall_context_router
from knowledge.errors import MemoryInvalidRequestError
from knowledge.observability import logger, metrics, tracer

app = build_resolver(recall_context_router, invalid_request=MemoryInvalidRequestError)


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP, clear_state=True)
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics(capture_cold_start_metric=True)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return app.resolve(event, context)
