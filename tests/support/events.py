"""API Gateway HTTP API v2 events from ``events/*.json``, and helpers to shape them for a test.

``load_event("search_knowledge_query")`` is a fresh deep copy; keyword overrides replace top-level
keys, and mapping values merge into mapping values (``requestContext={"stage": "prod"}`` keeps the
rest of the request context).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from knowledge.api.principal import authorizer_context
from knowledge.domain.models import TokenRecord
from tests.support.template import ROOT

EVENTS_DIR = ROOT / "events"


@cache
def _raw(name: str) -> str:
    return (EVENTS_DIR / f"{name}.json").read_text(encoding="utf-8")


def _merge(target: dict[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    for key, value in overrides.items():
        if isinstance(value, Mapping) and isinstance(target.get(key), dict):
            _merge(target[key], value)
        else:
            target[key] = copy.deepcopy(value)
    return target


def load_event(name: str, **overrides: Any) -> dict[str, Any]:
    """The event ``events/{name}.json`` with ``overrides`` merged in."""
    event: dict[str, Any] = json.loads(_raw(name))
    return _merge(event, overrides)


def with_body(event: dict[str, Any], body: Any) -> dict[str, Any]:
    """``event`` with ``body``: a string is sent as is, anything else as its JSON text."""
    text = body if isinstance(body, str) else json.dumps(body)
    event["body"] = text
    event["isBase64Encoded"] = False
    event["headers"]["content-length"] = str(len(text.encode("utf-8", errors="surrogatepass")))
    return event


def with_authorizer_context(event: dict[str, Any], context: Mapping[str, str] | None) -> dict[str, Any]:
    """``event`` as the function sees it after the authorizer answered ``context`` (``None``: no
    authorizer ran, so the request context has no ``authorizer``)."""
    if context is None:
        event["requestContext"].pop("authorizer", None)
    else:
        event["requestContext"]["authorizer"] = {"lambda": dict(context)}
    return event


def with_token(event: dict[str, Any], record: TokenRecord | None) -> dict[str, Any]:
    """``event`` carrying the authorizer context of a resolved token (``None``: not authenticated)."""
    return with_authorizer_context(event, authorizer_context(record))


def with_authorization(event: dict[str, Any], header: str | None) -> dict[str, Any]:
    """``event`` with this ``Authorization`` header (``None`` removes it), identity source included."""
    if header is None:
        event["headers"].pop("authorization", None)
        event.pop("identitySource", None)
    else:
        event["headers"]["authorization"] = header
        if "identitySource" in event:
            event["identitySource"] = [header]
    return event


@dataclass
class LambdaContext:
    """The attributes of a Lambda context that Powertools reads."""

    function_name: str = "knowledge-test"
    function_version: str = "$LATEST"
    memory_limit_in_mb: int = 1024
    invoked_function_arn: str = "arn:aws:lambda:us-east-1:123456789012:function:knowledge-test"
    aws_request_id: str = "5f0c7d9a-3c52-4d0e-9f41-2b8f6b1e7a10"
    log_group_name: str = "/aws/lambda/knowledge-test"
    log_stream_name: str = "2026/11/29/[$LATEST]0123456789abcdef"

    def get_remaining_time_in_millis(self) -> int:
        return 29_000


def lambda_context() -> Any:
    return LambdaContext()
