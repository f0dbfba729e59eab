"""Write routes: each registered with its permission check, and run at most once per
``Idempotency-Key`` (``knowledge.api.idempotency``).

``write_route(router, method, rule, check=..., ...)`` registers a route behind a route middleware
(Powertools' ``middlewares=``) that, after request validation and before the route:

1. resolves the caller (401 ``authentication_required`` without one);
2. runs ``check``, the service's read-only authorization of the write (scope, and visibility of its
   target), which raises ``InsufficientScopeError`` or ``ResourceUnavailableError``, then counts the
   write against the tenant's writes-per-second quota (429 ``rate_limited`` when it is used up);
3. with an ``Idempotency-Key`` header on an idempotent route, runs the rest of the request once per
   key: a repeat answers the stored answer with ``Idempotent-Replayed: true``, after the route's
   ``on_replay`` check (if any) of the stored answer against the current state (a memory write's
   replay is refused once its note can no longer be read, so forgotten content never comes back).

So no write can be registered without its check, and a stored answer is never replayed to a caller
who may not make the write now. Routes declare the header as an ``IdempotencyKey`` parameter so that
it is validated (1..255 characters) and documented; the middleware reads it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Request, Response, content_types
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.middlewares import NextMiddleware
from aws_lambda_powertools.event_handler.openapi.params import Header
from pydantic import BaseModel

from knowledge.api.http import RouteFunction
from knowledge.api.idempotency import (
    IDEMPOTENCY_KEY_HEADER,
    KEY_MAX_CHARS,
    REPLAYED_HEADER,
    Answer,
    IdempotentWrites,
)
from knowledge.api.principal import current_principal
from knowledge.bootstrap import get_container
from knowledge.domain.models import Principal

IdempotencyKey = Annotated[
    str | None,
    Header(
        alias=IDEMPOTENCY_KEY_HEADER,
        min_length=1,
        max_length=KEY_MAX_CHARS,
        description=(
            "Makes the write safe to retry: a repeat within an hour answers the first answer (with "
            "`Idempotent-Replayed: true`) and changes nothing; the same key with another body is a 400."
        ),
    ),
]


ReplayCheck = Callable[[Principal, Answer], object]
"""Checks a stored answer before it is replayed; raises (``MemoryUnavailableError``, say) when the
state it shows may no longer be shown."""
WriteCheck = Callable[[Principal, Request], object]
"""The read-only authorization of one write from the caller and the request (path parameters,
body); it raises ``InsufficientScopeError`` or ``ResourceUnavailableError``."""

Middleware = Callable[[APIGatewayHttpResolver, NextMiddleware], Response[Any]]


def write_route(
    router: Router,
    method: str,
    rule: str,
    *,
    check: WriteCheck,
    body: type[BaseModel] | None = None,
    idempotent: bool = True,
    secret: bool = False,
    on_replay: ReplayCheck | None = None,
    **openapi: Any,
) -> Callable[[RouteFunction], RouteFunction]:
    """``router.route(rule, method, **openapi)`` behind the middleware of the module docs.

    ``body`` is the route's body model: the validated body is the payload a repeated key is
    compared with (another body is 400 ``validation_error``). A ``secret`` answer (a new token) is
    never stored: its repeat is 409 ``knowledge_conflict``. ``idempotent=False`` ignores the header.
    ``on_replay`` runs before a stored answer is replayed and may refuse it by raising.
    """
    guard = _guarded(check, body, idempotent, secret, on_replay)
    return router.route(rule, method, middlewares=[guard], **openapi)


def _guarded(
    check: WriteCheck,
    body: type[BaseModel] | None,
    idempotent: bool,
    secret: bool,
    on_replay: ReplayCheck | None,
) -> Middleware:
    def guard(app: APIGatewayHttpResolver, next_middleware: NextMiddleware) -> Response[Any]:
        principal = current_principal(app.request)
        check(principal, app.request)
        get_container().quotas.admit_write(principal.tenant_id)
        event = app.current_event
        key = event.headers.get(IDEMPOTENCY_KEY_HEADER) if idempotent else None
        if key is None:
            return next_middleware(app)
        container = get_container()
        payload = body.model_validate(event.json_body).model_dump(mode="json") if body is not None else None
        answer = IdempotentWrites(container.idempotency(), container.settings.idempotency_ttl_seconds).run(
            lambda: _answer_of(next_middleware(app), secret=secret),
            principal=principal,
            route=f"{event.http_method} {event.path}",
            key=key,
            payload=payload,
            context=app.lambda_context,
        )
        if answer.replayed and on_replay is not None:
            on_replay(principal, answer)
        return Response(
            status_code=answer.status,
            content_type=content_types.APPLICATION_JSON,
            body=dict(answer.body),
            headers={REPLAYED_HEADER: "true"} if answer.replayed else None,
        )

    return guard


def _answer_of(response: Response[Any], *, secret: bool) -> Answer:
    return Answer(status=response.status_code, body=dict(response.body or {}), secret=secret)
