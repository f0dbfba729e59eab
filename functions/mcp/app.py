"""McpFunction: ``POST /mcp`` (``GET``/``DELETE`` answer 405), the MCP Streamable HTTP endpoint.

API Gateway HTTP API v2 event → Mangum → the MCP ASGI app (``knowledge.api.mcp``) → v2 response.
The app and the Mangum adapter are built per invocation: the SDK's session manager runs once per
app, and Mangum binds to the calling thread's event loop. Both are cheap (no I/O); the container
with its clients is built once per process by ``get_container``.

The function runs with Lambda SnapStart (``template.yaml``): its init (the MCP SDK's import, most of
a cold start) and ``warm_up`` run once per published version, before the snapshot; every restored
environment then runs ``knowledge.snapstart.refresh_after_restore``, so no client, credential,
cached answer or random state is shared between environments (docs/deployment.md).
"""

from __future__ import annotations

from typing import Any

from mangum import Mangum

# The MCP SDK's own import makes this function's init phase long whatever else it loads, so the
# DynamoDB store's module (with boto3) is imported at init too, where AWS advises SDK clients be
# set up: the first call then builds the store instead of importing it (docs/benchmarks.md).
import knowledge.adapters.dynamodb.knowledge_store  # noqa: F401
from knowledge import snapstart
from knowledge.api.mcp import create_app
from knowledge.api.mcp_tools import TOOLS
from knowledge.observability import logger, metrics, tracer
from knowledge.settings import get_settings


def warm_up() -> None:
    """Before the snapshot: what every first request would otherwise build and what needs neither
    the network nor credentials: the settings (read from the environment, fixed per version), every
    tool's definition with its JSON schema, and one app with its Mangum adapter (the SDK's server
    and Starlette routes). No request runs: it would count in the metrics and mark the cold start
    as past before any environment is restored."""
    get_settings()
    tuple(tool.definition for tool in TOOLS.values())  # each definition is built once and kept
    Mangum(create_app(), lifespan="auto")


snapstart.before_snapshot(warm_up)
snapstart.after_restore(snapstart.refresh_after_restore)


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics(capture_cold_start_metric=True)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return Mangum(create_app(), lifespan="auto")(event, context)
