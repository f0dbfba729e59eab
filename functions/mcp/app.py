"""McpFunction: ``POST /mcp`` (``GET``/``DELETE`` answer 405), the MCP Streamable HTTP endpoint.

API Gateway HTTP API v2 event → Mangum → the MCP ASGI app (``knowledge.api.mcp``) → v2 response.
The app and the Mangum adapter are built per invocation: the SDK's session manager runs once per
app, and Mangum binds to the calling thread's event loop. Both are cheap (no I/O); the container
with its clients is built once per process by ``get_container``.
"""

from __future__ import annotations

from typing import Any

from mangum import Mangum

# The MCP SDK's own import makes this function's init phase long whatever else it loads, so the
# DynamoDB store's module (with boto3) is imported at init too, where AWS advises SDK clients be
# set up: the first call then builds the store instead of importing it (docs/benchmarks.md).
import knowledge.adapters.dynamodb.knowledge_store  # noqa: F401
from knowledge.api.mcp import create_app
from knowledge.observability import logger, metrics, tracer


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics(capture_cold_start_metric=True)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return Mangum(create_app(), lifespan="auto")(event, context)
