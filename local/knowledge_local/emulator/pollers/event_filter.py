"""Lambda event filtering for the local pollers: a mapping's ``FilterCriteria`` decides which
records reach the function.

A record is delivered when it matches at least one pattern, or when there is none. Patterns are
EventBridge event patterns (exact values, ``prefix``, ``suffix``, ``anything-but``, ``exists``,
``numeric``, ``$or``...), matched by moto's EventBridge matcher. As in Lambda, an SQS record is
matched with its ``body`` parsed as JSON when it is JSON (a plain-text body stays a string), and a
DynamoDB stream record is matched as delivered (``dynamodb.NewImage.SK.S`` and so on).
Source: AWS Lambda developer guide, "Control which events Lambda sends to your function".
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from moto.events.models import EventPattern


class InvalidFilterError(ValueError):
    """A ``FilterCriteria`` pattern is not a valid event pattern."""


class EventFilter:
    """The compiled ``FilterCriteria`` of one event source mapping."""

    def __init__(self, patterns: Sequence[str]) -> None:
        try:
            self._patterns = [EventPattern.load(pattern) for pattern in patterns]
        except Exception as error:
            raise InvalidFilterError(f"Invalid FilterCriteria pattern: {error}") from error

    def admits(self, record: Mapping[str, Any]) -> bool:
        """True when ``record`` (a Lambda event record) should be delivered."""
        if not self._patterns:
            return True
        subject: Any = _with_parsed_body(record)  # moto types events as its own TypedDict
        return any(pattern.matches_event(subject) for pattern in self._patterns)


def _with_parsed_body(record: Mapping[str, Any]) -> dict[str, Any]:
    subject = dict(record)
    body = subject.get("body")
    if isinstance(body, str):
        with contextlib.suppress(ValueError):
            subject["body"] = json.loads(body)
    return subject
