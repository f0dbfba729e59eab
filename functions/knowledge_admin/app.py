"""``KnowledgeAdminFunction``: the write API of DESIGN §6 (bases, items, revisions, tokens, health),
export and import (§9), tenant erasure (§12) and the console.

Routes live in ``knowledge.api.routes.knowledge_admin``, ``knowledge.api.routes.bundles`` and
``knowledge.api.routes.erasures``;
errors are mapped by ``knowledge.api.http``. Bodies
may reach Lambda's 6 MB request limit, so that 4,000,000 characters of content fit.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext

from knowledge.api import console
from knowledge.api.http import build_resolver
from knowledge.api.routes import bundles, erasures
from knowledge.api.routes.knowledge_admin import router
from knowledge.observability import logger, metrics, tracer

MAX_BODY_BYTES = 6 * 1024 * 1024
"""Lambda's synchronous request payload limit."""

app = build_resolver(router, bundles.router, erasures.router, console.router, max_body_bytes=MAX_BODY_BYTES)


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP, clear_state=True)
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics(capture_cold_start_metric=True)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return app.resolve(event, context)
