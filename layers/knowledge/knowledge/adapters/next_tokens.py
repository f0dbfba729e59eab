"""The wire form of listings' opaque ``next_token``: the URL-safe base64 (unpadded) of a compact
JSON object, at most ``MAX_TOKEN_CHARS`` characters. Each store adapter decides what the object
holds and checks that a token belongs to the listing it is given to."""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from typing import Any

from knowledge.errors import RequestValidationError

MAX_TOKEN_CHARS = 2_048


def encode(payload: Mapping[str, Any]) -> str:
    """``payload`` (JSON-ready) as a token."""
    raw = json.dumps(payload, separators=(",", ":"), sort_keys=True).encode("utf-8")
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def decode(token: str) -> dict[str, Any]:
    """The JSON object a token holds; ``RequestValidationError`` when it is empty, too long, not
    base64, not JSON or not an object."""
    if not token or len(token) > MAX_TOKEN_CHARS:
        raise malformed()
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        payload = json.loads(raw)
    except (binascii.Error, ValueError) as error:
        raise malformed() from error
    if not isinstance(payload, dict):
        raise malformed()
    return payload


def malformed() -> RequestValidationError:
    """The error for a token that no listing issued."""
    return RequestValidationError("next_token is malformed.")


def foreign() -> RequestValidationError:
    """The error for a token that another listing issued."""
    return RequestValidationError("next_token does not belong to this listing.")
