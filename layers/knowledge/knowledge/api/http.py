"""The REST boundary shared by every function: one resolver set-up with the errors mapped once.

``build_resolver(*routers)`` returns a Powertools ``APIGatewayHttpResolver`` (HTTP API payload 2.0)
with request and response validation on and every failure answered in the envelope of DESIGN §5,
``{"type": "error", "error": {"code", "message", "retryable", "details"}}``, with the status of
``knowledge.api.error_envelopes.STATUS_BY_CODE``:

- Powertools' request validation errors → ``from_validation_errors`` (400 ``validation_error``, or
  400 ``knowledge_invalid_request`` when the only problem is unknown fields);
- a body that is not UTF-8 JSON, is not a JSON object, or is larger than ``max_body_bytes`` → 400
  ``validation_error`` (``parse_json_body``; every parser failure is "not JSON", without the
  parser's text). Every body is read as JSON whatever its ``Content-Type`` says (``curl -d`` sends
  a form type), so a form or multipart body is "not JSON" rather than a set of odd fields;
- ``KnowledgeError`` → its own code (``error_envelope``);
- an unknown path → 404 ``not_found``; a known path with another method → 405 ``method_not_allowed``
  with an ``Allow`` header;
- anything else, a response that fails its own model included → 500 ``internal_error``, logged with
  its traceback and answered without it.

Every request with an authenticated principal counts against its tenant's requests-per-second
quota (``knowledge.services.quotas``) before its route runs: a full window answers 429
``rate_limited`` with a ``Retry-After`` header (seconds). Its answer carries the quota's state in
``RateLimit-Limit``, ``RateLimit-Remaining`` and ``RateLimit-Reset`` (draft-ietf-httpapi-ratelimit-
headers-06: uses per second, uses admitted at once, seconds until the whole burst is back); a 429
carries them for the quota it broke, ``RateLimit-Remaining: 0`` and ``RateLimit-Reset`` equal to
``Retry-After``. A request without a principal is not
counted; its route answers it (401, or a public route).

Authentication comes before validation: a request that fails validation on a route that takes a
body answers 401 ``authentication_required`` when it carries no authenticated principal, so callers
without a valid token learn nothing about the request shape. Every route with a body needs a
principal; public routes (``GET /v1/openapi.json``, health) take none.
"""

from __future__ import annotations

import binascii
import json
import re
from collections.abc import Callable, Mapping
from functools import cache
from http import HTTPStatus
from typing import Any, TypeVar
from urllib.parse import unquote_to_bytes

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response, content_types
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.exceptions import NotFoundError
from aws_lambda_powertools.event_handler.middlewares import NextMiddleware
from aws_lambda_powertools.event_handler.openapi.exceptions import (
    RequestValidationError as BodyValidationError,
)
from aws_lambda_powertools.event_handler.openapi.exceptions import ResponseValidationError
from aws_lambda_powertools.event_handler.openapi.types import OpenAPIResponse
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel

from knowledge.api.error_envelopes import (
    MethodNotAllowedError,
    RouteNotFoundError,
    error_envelope,
    from_validation_errors,
    unexpected_error_envelope,
)
from knowledge.api.principal import principal_from_event
from knowledge.bootstrap import get_container
from knowledge.contract.search import ErrorResponse
from knowledge.errors import (
    AuthenticationRequiredError,
    InvalidRequestError,
    KnowledgeError,
    RateLimitedError,
    RequestValidationError,
)
from knowledge.observability import metrics

RouteFunction = TypeVar("RouteFunction", bound=Callable[..., Any])

MAX_BODY_BYTES = 1_048_576
"""Default request body limit (1 MiB of UTF-8), checked before the body is parsed."""


_ERROR_DESCRIPTIONS = {
    400: "Malformed or contradictory arguments (validation_error, knowledge_invalid_request, "
    "knowledge_query_required, knowledge_item_required, memory_invalid_request).",
    401: "No, bad, expired or revoked bearer token (authentication_required).",
    403: "The token lacks the required scope (insufficient_scope).",
    404: "Absent, unauthorized, inactive or unpublished resource (knowledge_resource_unavailable; "
    "memory_unavailable for notes, forgotten ones included).",
    409: "A version race on a write (knowledge_conflict or memory_conflict; details.current_version).",
    429: "The tenant's requests or writes per second quota is used up (rate_limited, retryable; "
    "details.quota, details.limit; a Retry-After header in seconds), or a create finds its stored "
    "items quota full (rate_limited, not retryable, details.quota stored_items, no Retry-After).",
    500: "An unexpected error (internal_error); no internals are disclosed.",
    503: "The runtime switch is off (knowledge_runtime_disabled, in a knowledge_unavailable envelope) "
    "or a dependency is down or throttled (dependency_unavailable, retryable).",
}


def openapi_error_responses(*statuses: int) -> dict[int, OpenAPIResponse]:
    """OpenAPI ``responses`` entries for ``statuses`` (400, 401, 403, 404, 409, 429, 500, 503), each an
    ``ErrorResponse`` body, for a route's ``responses=`` next to its 200."""
    return {
        status: {
            "description": _ERROR_DESCRIPTIONS[status],
            "content": {content_types.APPLICATION_JSON: {"model": ErrorResponse}},
        }
        for status in statuses
    }


WRITE_ERRORS = (400, 401, 403, 404, 409, 500, 503)
"""The error statuses a write route documents."""
READ_ERRORS = (400, 401, 403, 404, 500, 503)
"""The error statuses a read route documents."""


def route_responses(success: int, description: str, *errors: int) -> dict[int, OpenAPIResponse]:
    """A route's OpenAPI ``responses``: ``success`` with ``description``, then ``errors``."""
    return {success: {"description": description}, **openapi_error_responses(*errors)}


def json_response(status: int, body: BaseModel) -> Response[Any]:
    """``body`` as a JSON answer with ``status`` (the model in its JSON mode)."""
    return Response(
        status_code=status, content_type=content_types.APPLICATION_JSON, body=body.model_dump(mode="json")
    )


def error_response(status: int, body: ErrorResponse, headers: dict[str, str] | None = None) -> Response[str]:
    """A Powertools ``Response`` carrying ``body`` as ``application/json``; counted in the
    ``ClientErrors`` (4xx) or ``ServerErrors`` (5xx) metric with the error code as metadata."""
    metrics.add_metric(
        name="ServerErrors" if status >= 500 else "ClientErrors", unit=MetricUnit.Count, value=1
    )
    metrics.add_metadata(key="error_code", value=body.error.code)
    return Response(
        status_code=status,
        content_type=content_types.APPLICATION_JSON,
        body=body.model_dump_json(),
        headers=headers,
    )


def parse_json_body(text: str, *, max_body_bytes: int = MAX_BODY_BYTES) -> dict[str, Any]:
    """The JSON object of a request body.

    Raises ``RequestValidationError`` (400 ``validation_error``) when the body is larger than
    ``max_body_bytes`` (UTF-8 bytes of the decoded body, 1 MiB by default; ``details.max_body_bytes``
    and ``details.body_bytes``), is not JSON (any parser failure: syntax, nesting too deep, an
    integer of more than 4,300 digits; the parser's own text is never shown), or is JSON but not an
    object (an array, a string, a number, ``null``). Both carry ``details.fields`` for ``body``.
    """
    size = len(text.encode("utf-8", errors="surrogatepass"))
    if size > max_body_bytes:
        raise RequestValidationError(
            "The request body is too large.", {"max_body_bytes": max_body_bytes, "body_bytes": size}
        )
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        # ``from None``: the parser's message quotes the body.
        raise RequestValidationError(
            "The request body is not valid JSON.", _body_problem("The body is not valid JSON.")
        ) from None
    if not isinstance(value, dict):
        raise RequestValidationError(
            "The request body must be a JSON object.", _body_problem("The body must be a JSON object.")
        )
    return value


def _body_problem(problem: str) -> dict[str, Any]:
    return {"fields": [{"field": "body", "problem": problem}]}


class ServiceResolver(APIGatewayHttpResolver):
    """An HTTP API resolver that reads every request body as JSON, whatever its ``Content-Type``,
    and knows the methods of each path it routes (``allowed_methods``), for 405 answers."""

    def __init__(self, **settings: Any) -> None:
        super().__init__(**settings)
        self._methods_by_rule: dict[str, set[str]] = {}

    def route(
        self, rule: str, method: str | list[str] | tuple[str], *args: Any, **kwargs: Any
    ) -> Callable[[RouteFunction], RouteFunction]:
        """Powertools' ``route``, remembering the rule's methods (routers are included through it)."""
        methods = [method] if isinstance(method, str) else list(method)
        self._methods_by_rule.setdefault(rule, set()).update(entry.upper() for entry in methods)
        return super().route(rule, method, *args, **kwargs)

    def allowed_methods(self, path: str) -> list[str]:
        """The methods routed for ``path``, sorted; empty when no rule matches it."""
        return sorted(
            {
                method
                for rule, methods in self._methods_by_rule.items()
                if _rule_pattern(rule).fullmatch(path)
                for method in methods
            }
        )

    def resolve(self, event: Mapping[str, Any], context: LambdaContext) -> dict[str, Any]:
        headers = {
            name: value
            for name, value in (event.get("headers") or {}).items()
            if name.lower() != "content-type"
        }
        return super().resolve({**event, "headers": headers}, context)


@cache
def _rule_pattern(rule: str) -> re.Pattern[str]:
    """A route rule (``/v1/items/<item_id>``) as a pattern: each ``<name>`` is one path segment."""
    parts = re.split(r"<\w+>", rule)
    return re.compile("[^/]+".join(re.escape(part) for part in parts))


def build_resolver(
    *routers: Router,
    max_body_bytes: int = MAX_BODY_BYTES,
    invalid_request: type[KnowledgeError] = InvalidRequestError,
) -> ServiceResolver:
    """A resolver serving ``routers`` with validation on and the error handlers of this module;
    unknown fields in a body answer ``invalid_request``'s code."""
    resolver = ServiceResolver(
        enable_validation=True,
        # A response that does not match its own model is our bug: 500, not the caller's 4xx.
        response_validation_error_http_code=HTTPStatus.INTERNAL_SERVER_ERROR,
        json_body_deserializer=lambda text: parse_json_body(text, max_body_bytes=max_body_bytes),
        # Never answer with a traceback, whatever POWERTOOLS_DEV says.
        debug=False,
    )
    for router in routers:
        resolver.include_router(router)
    resolver.use([_count_request, _admit_tenant, _require_utf8_query])
    _ErrorAnswers(resolver, invalid_request).register()
    return resolver


def _count_request(app: APIGatewayHttpResolver, next_middleware: NextMiddleware) -> Response[Any]:
    """Every routed request counts in ``Requests``, so each invocation publishes a metric."""
    metrics.add_metric(name="Requests", unit=MetricUnit.Count, value=1)
    return next_middleware(app)


def _admit_tenant(app: APIGatewayHttpResolver, next_middleware: NextMiddleware) -> Response[Any]:
    """Count the request against its tenant's requests-per-second quota (``RateLimitedError``)."""
    try:
        principal = principal_from_event(app.current_event.raw_event)
    except AuthenticationRequiredError:
        return next_middleware(app)
    state = get_container().quotas.admit_request(principal.tenant_id)
    response = next_middleware(app)
    if state is not None:
        response.headers.update(rate_limit_headers(state.limit, state.remaining, state.reset_seconds))
    return response


def rate_limit_headers(limit: int, remaining: int, reset_seconds: int) -> dict[str, str]:
    """The fields of draft-ietf-httpapi-ratelimit-headers-06 for one quota: ``RateLimit-Limit`` (uses
    per second), ``RateLimit-Remaining`` (uses admitted at once) and ``RateLimit-Reset`` (seconds)."""
    return {
        "RateLimit-Limit": str(limit),
        "RateLimit-Remaining": str(remaining),
        "RateLimit-Reset": str(reset_seconds),
    }


def retry_after_headers(error: KnowledgeError) -> dict[str, str] | None:
    """``Retry-After`` (whole seconds) and the ``RateLimit-*`` fields of the broken quota for a
    ``RateLimitedError``; ``None`` for any other error."""
    if isinstance(error, RateLimitedError):
        return {
            "Retry-After": str(error.retry_after_seconds),
            **rate_limit_headers(error.limit, 0, error.retry_after_seconds),
        }
    return None


def _require_utf8_query(app: APIGatewayHttpResolver, next_middleware: NextMiddleware) -> Response[Any]:
    """Every query parameter, name and value, must be UTF-8 once percent-decoded: API Gateway (and
    the local gateway) hand on undecodable bytes (``%FF``, an encoded surrogate ``%ED%A0%80``) as
    replacement characters, which would otherwise pass as text. Checked on the raw query string,
    for every route; 400 ``validation_error`` naming each field."""
    raw = str(app.current_event.raw_event.get("rawQueryString") or "")
    problems = [
        {"field": f"query.{name}" if name else "query", "problem": UNDECODABLE_QUERY_PROBLEM}
        for name, undecodable in _query_pairs(raw)
        if undecodable
    ]
    if problems:
        raise RequestValidationError("The request has a malformed value.", {"fields": problems})
    return next_middleware(app)


UNDECODABLE_QUERY_PROBLEM = "must be valid Unicode text (it is not UTF-8 once percent-decoded)"


def _query_pairs(raw: str) -> list[tuple[str, bool]]:
    """``(name, undecodable)`` for each ``name=value`` of ``raw``; ``name`` is empty when the name
    itself does not decode."""
    pairs = []
    for pair in raw.split("&"):
        if not pair:
            continue
        name, _, value = pair.partition("=")
        try:
            decoded = unquote_to_bytes(name.replace("+", " ")).decode("utf-8")
        except UnicodeDecodeError:
            pairs.append(("", True))
            continue
        try:
            unquote_to_bytes(value.replace("+", " ")).decode("utf-8")
        except UnicodeDecodeError:
            pairs.append((decoded, True))
            continue
        pairs.append((decoded, False))
    return pairs


def _missing_body(problem: Mapping[str, Any]) -> bool:
    return problem.get("type") == "missing" and tuple(problem.get("loc", ())) == ("body",)


class _ErrorAnswers:
    """The exception handlers of one resolver; each answers a Powertools ``Response`` in the envelope."""

    def __init__(self, resolver: ServiceResolver, invalid_request: type[KnowledgeError]) -> None:
        self._resolver = resolver
        self._invalid_request = invalid_request

    def register(self) -> None:
        handlers: dict[type[Exception], Callable[[Any], Response[str]]] = {
            BodyValidationError: self.invalid_body,
            UnicodeDecodeError: self.undecodable_body,
            binascii.Error: self.undecodable_body,
            RequestValidationError: self.rejected_body,
            KnowledgeError: self.domain_error,
            NotFoundError: self.not_found,
            ResponseValidationError: self.unexpected,
            Exception: self.unexpected,
        }
        for exception_class, handler in handlers.items():
            self._resolver.exception_handler(exception_class)(handler)

    def invalid_body(self, error: BodyValidationError) -> Response[str]:
        errors = error.errors()
        if not self._resolver.current_event.body and any(_missing_body(problem) for problem in errors):
            # No body at all on a route that needs one: the parser found no JSON, not a bad field.
            return self._invalid(
                RequestValidationError(
                    "The request body is not valid JSON.", _body_problem("The body is not valid JSON.")
                )
            )
        return self._invalid(from_validation_errors(errors, self._invalid_request))

    def undecodable_body(self, error: ValueError) -> Response[str]:
        return self._invalid(RequestValidationError("The request body is not valid UTF-8 JSON."))

    def rejected_body(self, error: RequestValidationError) -> Response[str]:
        return self._invalid(error)

    def domain_error(self, error: KnowledgeError, headers: dict[str, str] | None = None) -> Response[str]:
        status, body = error_envelope(error)
        headers = headers or retry_after_headers(error)
        if status == 401:  # RFC 9110 §11.6.1: a 401 names the scheme that would authenticate
            headers = {"WWW-Authenticate": "Bearer", **(headers or {})}
        return error_response(status, body, headers)

    def not_found(self, error: NotFoundError) -> Response[str]:
        allowed = self._resolver.allowed_methods(self._resolver.current_event.path)
        if not allowed:
            return self.domain_error(RouteNotFoundError("No route matches this path."))
        return self.domain_error(
            MethodNotAllowedError("The path does not accept this method.", {"allowed_methods": allowed}),
            headers={"Allow": ", ".join(allowed)},
        )

    def unexpected(self, error: Exception) -> Response[str]:
        status, body = unexpected_error_envelope(error)
        return error_response(status, body)

    def _invalid(self, error: KnowledgeError) -> Response[str]:
        """Authentication before validation: an unauthenticated caller learns nothing of the shape."""
        try:
            principal_from_event(self._resolver.current_event.raw_event)
        except AuthenticationRequiredError as unauthenticated:
            return self.domain_error(unauthenticated)
        return self.domain_error(error)
