"""Domain errors. Each carries the public error code of DESIGN §5 (§9 for memory); HTTP statuses live in
``api.error_envelopes``.

Messages are safe to show to callers: no stack traces, internal names or other tenants' data.
"""

from __future__ import annotations

from typing import Any, ClassVar


class KnowledgeError(Exception):
    """Base of every error the service reports to callers as ``{"type":"error","error":{...}}``."""

    code: ClassVar[str] = "internal_error"
    retryable: ClassVar[bool] = False

    def __init__(self, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details: dict[str, Any] = details or {}


class RequestValidationError(KnowledgeError):
    """A value is malformed: wrong type, NaN, too long, unknown field shape."""

    code = "validation_error"


class InvalidRequestError(KnowledgeError):
    """The request shape is contradictory or a bound is exceeded (query mixed with ids, offsets)."""

    code = "knowledge_invalid_request"


class QueryRequiredError(KnowledgeError):
    """Neither a query nor an addressed item was supplied."""

    code = "knowledge_query_required"


class ItemRequiredError(KnowledgeError):
    """A revision id was supplied without the item id it belongs to."""

    code = "knowledge_item_required"


class ConversionError(KnowledgeError):
    """A document cannot become text (``knowledge.conversion``): corrupt, encrypted, a zip bomb, over
    the size limits, not decodable, or without extractable text. ``reason`` says which in one
    sentence and is also ``details.reason``; the code is ``document_unreadable`` (422), or
    ``document_too_large`` (413) for ``DocumentTooLargeError``."""

    code = "document_unreadable"

    def __init__(self, reason: str) -> None:
        super().__init__(f"The document cannot be read: {reason}.", {"reason": reason})
        self.reason = reason


class DocumentTooLargeError(ConversionError):
    """A document (or what it unpacks to) is over a conversion limit; ``reason`` names the limit."""

    code = "document_too_large"


class PageUnavailableError(KnowledgeError):
    """An addressed read asked for a page the revision has no segment for (not converted from a
    PDF, or past its last page); ``details`` name the ``page`` and the revision's ``first_page`` and
    ``last_page`` (``null`` when it has no pages)."""

    code = "knowledge_page_unavailable"

    def __init__(self, page: int, first_page: int | None, last_page: int | None) -> None:
        where = f"pages {first_page} to {last_page}" if first_page is not None else "no pages"
        super().__init__(
            f"The revision has no page {page}; it has {where}.",
            {"page": page, "first_page": first_page, "last_page": last_page},
        )


class AuthenticationRequiredError(KnowledgeError):
    """No, bad, expired or revoked bearer token."""

    code = "authentication_required"


class InsufficientScopeError(KnowledgeError):
    """The principal lacks the scope the operation needs (``details.required_scope``)."""

    code = "insufficient_scope"


class ResourceUnavailableError(KnowledgeError):
    """Absent, unauthorized, inactive or unpublished; one answer for all so existence never leaks."""

    code = "knowledge_resource_unavailable"

    def __init__(self, message: str = "The requested knowledge resource is unavailable.") -> None:
        super().__init__(message)


class ConflictError(KnowledgeError):
    """A conditional write lost a race; ``details.current_version`` is the version that won."""

    code = "knowledge_conflict"

    def __init__(self, message: str, current_version: int | None) -> None:
        super().__init__(message, {"current_version": current_version})
        self.current_version = current_version


RUNTIME_DISABLED_MESSAGE = (
    "The knowledge runtime is switched off by its runtime switch (KNOWLEDGE_RUNTIME_ENABLED=false, "
    "or the SSM parameter the deployment names); try again later."
)


class RuntimeDisabledError(KnowledgeError):
    """The runtime switch is off; answered in a ``knowledge_unavailable`` envelope with a message
    that names the switch."""

    code = "knowledge_runtime_disabled"
    retryable = True

    def __init__(self, message: str = RUNTIME_DISABLED_MESSAGE) -> None:
        super().__init__(message)


class DependencyUnavailableError(KnowledgeError):
    """DynamoDB, the search index or the embedding model is down or throttled."""

    code = "dependency_unavailable"
    retryable = True


class RateLimitedError(KnowledgeError):
    """The tenant used up one of its quotas for the current window (``knowledge.services.quotas``):
    ``details`` are ``{"quota": "requests_per_second" | "writes_per_second", "limit": int,
    "window_seconds": int, "retry_after_seconds": int}``; the HTTP answer carries ``Retry-After``
    with the same seconds."""

    code = "rate_limited"
    retryable = True

    def __init__(self, quota: str, *, limit: int, window_seconds: int, retry_after_seconds: int) -> None:
        super().__init__(
            f"The tenant's {quota.replace('_', ' ')} quota ({limit}) is used up; "
            f"retry after {retry_after_seconds} s.",
            {
                "quota": quota,
                "limit": limit,
                "window_seconds": window_seconds,
                "retry_after_seconds": retry_after_seconds,
            },
        )
        self.retry_after_seconds = retry_after_seconds
        self.limit = limit


class StoredItemsQuotaError(KnowledgeError):
    """The tenant holds as many stored items (live knowledge items and notes) as its quota allows:
    429 ``rate_limited`` with ``details`` ``{"quota": "stored_items", "limit": int}``. Not retryable
    and without ``Retry-After``: room comes back only when the tenant archives items or forgets
    memories (or the quota is raised), never by waiting."""

    code = "rate_limited"
    retryable = False

    def __init__(self, limit: int) -> None:
        super().__init__(
            f"The tenant's stored items quota ({limit}) is used up; archive knowledge items or forget "
            "memories to make room, or ask for a larger quota.",
            {"quota": "stored_items", "limit": limit},
        )
        self.limit = limit


class IndexConfigurationError(KnowledgeError):
    """The search index was built with another embedding model or dimension than the one configured."""

    code = "dependency_unavailable"


class ClaimTakenError(ConflictError):
    """A note's claim (its semantic key or its content, ``domain.notes``) is held by another note;
    services re-read and decide again."""

    def __init__(self, message: str = "Another note holds this claim.") -> None:
        super().__init__(message, current_version=None)


class MemoryInvalidRequestError(KnowledgeError):
    """A memory tool's argument is out of bounds, or a field is given without the one it needs."""

    code = "memory_invalid_request"


class MemoryUnavailableError(KnowledgeError):
    """The note is absent, not visible to the caller, forgotten or expired: one answer for all, so
    existence never leaks."""

    code = "memory_unavailable"

    def __init__(self, message: str = "The requested memory is unavailable.") -> None:
        super().__init__(message)


class MemoryConflictError(KnowledgeError):
    """A note changed since the caller read it (a stale ``expected_version``, a lost race), or a
    semantic key it needs is held by another note; ``details.current_version`` is the note's version
    (``null`` when there is no such note)."""

    code = "memory_conflict"

    def __init__(self, message: str, current_version: int | None, **details: object) -> None:
        super().__init__(message, {"current_version": current_version, **details})
        self.current_version = current_version


class RetryableMemoryConflictError(MemoryConflictError):
    """A ``memory_conflict`` that the same request may win when sent again: a concurrent writer
    changed the note (or took the fact) first, and no ``expected_version`` pins the version read."""

    retryable = True


class BucketNotAllowedError(KnowledgeError):
    """A data source names a bucket the deployment does not grant (``DOCUMENT_BUCKETS``): the
    service could never read it, so it is refused at once; ``details.bucket`` names it."""

    code = "data_source_bucket_not_allowed"


class AsOfInvalidError(KnowledgeError):
    """An ``as_of`` that names no moment of the past: a time without a zone, or one later than the
    service's clock (``details.as_of`` echoes it, ``details.now`` is the service's time)."""

    code = "as_of_invalid"
