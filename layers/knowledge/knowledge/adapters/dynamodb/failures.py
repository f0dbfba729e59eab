"""Translation of DynamoDB failures into domain errors, in one place (``_translate``).

- Throttling, service faults, a missing table and connection errors → ``DependencyUnavailableError``
  (botocore's standard retry mode has already retried them).
- A failed condition → ``ResourceUnavailableError`` when the target is absent or an archived item,
  ``CounterFullError`` (a ``ConflictError``) when it is a quota counter, else ``ConflictError``
  carrying the ``version`` of the refused item as stored. The adapter asks
  for that item with ``ReturnValuesOnConditionCheckFailure=ALL_OLD``, so no message is parsed.
- A cancelled transaction → the same, from its per-item ``CancellationReasons``; an absent target
  outranks a version race. ``TransactionConflict`` (another transaction held an item) becomes
  ``TransactionRaceError``, which the adapter retries.
- Anything else (a validation error is a bug in the adapter) propagates unchanged.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError, HTTPClientError
from botocore.exceptions import ConnectionError as BotocoreConnectionError

from knowledge.adapters.dynamodb.codec import Entity, entity_of
from knowledge.domain.models import ItemStatus
from knowledge.errors import (
    ClaimTakenError,
    ConflictError,
    DependencyUnavailableError,
    ResourceUnavailableError,
)
from knowledge.observability import logger

_UNAVAILABLE_CODES = frozenset(
    {
        "ThrottlingException",
        "ProvisionedThroughputExceededException",
        "RequestLimitExceeded",
        "InternalServerError",
        "ServiceUnavailable",
        "TransactionInProgressException",
        "ResourceNotFoundException",  # the table itself is missing: a deployment fault, not a 404
    }
)
_THROTTLED_REASONS = frozenset({"ThrottlingError", "ProvisionedThroughputExceeded", "RequestLimitExceeded"})


class CounterFullError(ConflictError):
    """The condition of a quota counter failed: the counter is at its limit."""


class TransactionRaceError(ConflictError):
    """Another transaction was writing one of the items (``TransactionConflict``); a retry may pass."""


def backoff(attempt: int) -> float:
    """Seconds to wait before retry ``attempt`` (from 1): exponential with full jitter, at most one second."""
    return random.uniform(0, min(1.0, 0.05 * 2**attempt))


def unavailable(code: str) -> DependencyUnavailableError:
    """The error for an unreachable, throttled or broken store; ``code`` is logged, never shown."""
    logger.warning("dynamodb unavailable", extra={"error_code": code})
    return DependencyUnavailableError("The knowledge store is temporarily unavailable; retry later.")


def _refusal(old: Mapping[str, Any] | None) -> Exception:
    if not old:
        return ResourceUnavailableError()
    if entity_of(old) is Entity.NOTE_CLAIM:
        return ClaimTakenError()
    if entity_of(old) is Entity.QUOTA:
        return CounterFullError("The quota counter is at its limit.", current_version=None)
    if entity_of(old) is Entity.ITEM and old.get("status", {}).get("S") == ItemStatus.ARCHIVED:
        return ResourceUnavailableError()
    version = old.get("version", {}).get("N")
    return ConflictError(
        "The record was changed by another writer; re-read it and retry with its current version.",
        current_version=int(version) if version is not None else None,
    )


def _cancellation(error: ClientError) -> Exception:
    response: Mapping[str, Any] = error.response
    reasons: list[Mapping[str, Any]] = response.get("CancellationReasons") or []
    codes = {reason.get("Code") for reason in reasons}
    if codes & _THROTTLED_REASONS:
        return unavailable("TransactionThrottled")
    refusals = [
        _refusal(reason.get("Item")) for reason in reasons if reason.get("Code") == "ConditionalCheckFailed"
    ]
    refusals.sort(key=lambda refusal: not isinstance(refusal, ResourceUnavailableError))
    if refusals:
        return refusals[0]
    if "TransactionConflict" in codes:
        return TransactionRaceError("A concurrent transaction changed the record.", current_version=None)
    return error


def _translate(error: Exception) -> Exception:
    """The domain error for a failed DynamoDB call; an error it cannot interpret comes back unchanged."""
    if isinstance(error, ClientError):
        response: Mapping[str, Any] = error.response
        code = response.get("Error", {}).get("Code", "")
        if code == "ConditionalCheckFailedException":
            return _refusal(response.get("Item"))
        if code == "TransactionCanceledException":
            return _cancellation(error)
        if code in _UNAVAILABLE_CODES:
            return unavailable(code)
        return error
    if isinstance(error, BotocoreConnectionError | HTTPClientError):
        return unavailable(type(error).__name__)
    return error


@contextmanager
def translated_errors() -> Iterator[None]:
    """Run DynamoDB calls whose botocore failures should surface as domain errors."""
    try:
        yield
    except (ClientError, BotoCoreError) as error:
        translated = _translate(error)
        if translated is error:
            raise
        raise translated from error
