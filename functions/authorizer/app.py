"""``AuthorizerFunction``: the HTTP API Lambda authorizer (payload 2.0, simple responses).

It always authorizes and hands the function the resolved token in ``context``
(``knowledge.api.principal.authorizer_context``): ``authenticated: "false"`` with ``reason``
(``missing``, ``unknown``, ``expired`` or ``revoked``; a token with a revoked, expired or deleted
ancestor is ``revoked``) for a request without a valid token (``TokenService.authenticate``: one
``GetItem``, plus one ``BatchGetItem`` of the ancestors of a minted token), so that the function
answers 401 ``authentication_required`` with that ``details.reason`` in the service's own envelope
(an HTTP API cannot customize the gateway's 401/403 bodies). A store outage raises, which API
Gateway answers with 500 and does not cache.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.data_classes import event_source
from aws_lambda_powertools.utilities.data_classes.api_gateway_authorizer_event import (
    APIGatewayAuthorizerEventV2,
    APIGatewayAuthorizerResponseV2,
)
from aws_lambda_powertools.utilities.typing import LambdaContext

from knowledge.api.principal import authorizer_context
from knowledge.bootstrap import get_container
from knowledge.domain.models import TokenRecord
from knowledge.observability import logger, metrics, tracer


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics(capture_cold_start_metric=True)
@event_source(data_class=APIGatewayAuthorizerEventV2)
def handler(event: APIGatewayAuthorizerEventV2, context: LambdaContext) -> dict[str, Any]:
    outcome = get_container().tokens.authenticate(event.headers.get("authorization"))
    record = outcome if isinstance(outcome, TokenRecord) else None
    metrics.add_metric(
        name="TokensAccepted" if record is not None else "TokensRejected", unit=MetricUnit.Count, value=1
    )
    logger.info(
        "request authorized",
        extra={
            "authenticated": record is not None,
            "tenant_id": record.tenant_id if record else None,
            "reason": None if record else str(outcome),
            "route_key": event.route_key,
        },
    )
    return APIGatewayAuthorizerResponseV2(authorize=True, context=authorizer_context(outcome)).asdict()
