"""Errors mapped once: domain error → HTTP status and the ``{"type":"error","error":{...}}`` envelope.

DESIGN §5's table is ``STATUS_BY_CODE``. Unknown exceptions become 500 ``internal_error`` with a
generic message; their details go to the log, never to the caller.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from knowledge.contract.search import ErrorDetail, ErrorResponse
from knowledge.errors import (
    InvalidRequestError,
    KnowledgeError,
    RequestValidationError,
    RuntimeDisabledError,
)
from knowledge.observability import logger


class RouteNotFoundError(KnowledgeError):
    """No route (or, over MCP, no tool) has this name."""

    code = "not_found"


class MethodNotAllowedError(KnowledgeError):
    """The path exists, but not with this method; ``details.allowed_methods`` lists the ones that do."""

    code = "method_not_allowed"


class PayloadTooLargeError(KnowledgeError):
    """The request body is larger than the endpoint accepts."""

    code = "payload_too_large"


STATUS_BY_CODE: Mapping[str, int] = {
    "validation_error": 400,
    "knowledge_invalid_request": 400,
    "knowledge_query_required": 400,
    "knowledge_item_required": 400,
    "memory_invalid_request": 400,
    "data_source_bucket_not_allowed": 400,
    "as_of_invalid": 400,
    "authentication_required": 401,
    "insufficient_scope": 403,
    "knowledge_resource_unavailable": 404,
    "knowledge_page_unavailable": 404,
    "memory_unavailable": 404,
    "not_found": 404,
    "method_not_allowed": 405,
    "knowledge_conflict": 409,
    "memory_conflict": 409,
    "payload_too_large": 413,
    "document_too_large": 413,
    "document_unreadable": 422,
    "rate_limited": 429,
    "knowledge_runtime_disabled": 503,
    "dependency_unavailable": 503,
    "internal_error": 500,
}


def error_envelope(error: KnowledgeError) -> tuple[int, ErrorResponse]:
    """The HTTP status and body for a domain error."""
    envelope_type = "knowledge_unavailable" if isinstance(error, RuntimeDisabledError) else "error"
    body = ErrorResponse(
        type=envelope_type,
        error=ErrorDetail(
            code=error.code, message=error.message, retryable=error.retryable, details=error.details
        ),
    )
    return STATUS_BY_CODE.get(error.code, 500), body


def unexpected_error_envelope(error: BaseException) -> tuple[int, ErrorResponse]:
    """A 500 for a bug: logged with its traceback, answered without internals."""
    logger.exception("unexpected error", extra={"error_type": type(error).__name__})
    body = ErrorResponse(
        error=ErrorDetail(code="internal_error", message="An unexpected error occurred.", retryable=True)
    )
    return 500, body


_SHAPE_ERRORS = frozenset({"extra_forbidden"})
"""pydantic error types of a request-shape problem: a field the model does not accept."""
_BOUND_ERRORS = frozenset({"greater_than", "greater_than_equal", "less_than", "less_than_equal"})
"""pydantic error types of a number out of its bound (the message names the bound)."""


def from_validation_errors(
    errors: Iterable[Mapping[str, Any]], invalid_request: type[KnowledgeError] = InvalidRequestError
) -> KnowledgeError:
    """Translate pydantic errors. Unknown fields and numbers out of their bounds are request-shape
    problems (``invalid_request``: ``knowledge_invalid_request``, or ``memory_invalid_request`` for
    the memory tools), with ``details.fields`` naming each field and, for a bound, the bound
    ("Input should be less than or equal to 100"); anything else, alone or beside those, is a
    malformed value (``validation_error``: a wrong type such as ``true`` or ``1.5`` for an integer).
    A length bound on a string is told in characters (pydantic says "items" when the bound applies
    after a validator)."""
    errors = list(errors)
    problems = [
        {
            "field": ".".join(str(part) for part in error.get("loc", ()) if part != "body") or "body",
            "problem": _problem(error),
        }
        for error in errors
    ]
    types = {str(error.get("type", "")) for error in errors}
    if types and types <= _SHAPE_ERRORS:
        return invalid_request("The request has fields the tool does not accept.", {"fields": problems})
    if types and types <= _SHAPE_ERRORS | _BOUND_ERRORS:
        return invalid_request("A parameter is out of bounds.", {"fields": problems})
    return RequestValidationError("The request has a malformed value.", {"fields": problems})


def _problem(error: Mapping[str, Any]) -> str:
    """The error's message; for a length bound on a string, in characters, as pydantic words its
    own string bounds (``String should have at most 200 characters``)."""
    context = error.get("ctx") or {}
    if isinstance(error.get("input"), str):
        if error.get("type") == "too_long" and "max_length" in context:
            return f"String should have at most {_characters(context['max_length'])}"
        if error.get("type") == "too_short" and "min_length" in context:
            return f"String should have at least {_characters(context['min_length'])}"
    return str(error.get("msg", "invalid"))


def _characters(count: int) -> str:
    return f"{count} character" if count == 1 else f"{count} characters"
