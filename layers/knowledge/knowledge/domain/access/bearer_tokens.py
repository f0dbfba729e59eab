"""Bearer tokens: 256 random bits, shown once; only their SHA-256 hex digest is stored.

That digest is also the token's public id (``token_id``): it names the token for revocation and
cannot be turned back into the token.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from enum import StrEnum

TOKEN_PREFIX = "kn_"
_TOKEN_ID = re.compile(r"^[0-9a-f]{64}$")


def new_token() -> str:
    """A fresh bearer token (``kn_`` + 43 URL-safe characters)."""
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def hash_token(token: str) -> str:
    """SHA-256 hex digest of the token, the only form that is stored or looked up (its ``token_id``)."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def is_token_id(value: str) -> bool:
    """True when ``value`` has the form of a ``token_id``: 64 lowercase hexadecimal characters."""
    return _TOKEN_ID.match(value) is not None


class TokenRejection(StrEnum):
    """Why a request carries no valid token: the ``details.reason`` of a 401
    ``authentication_required``.

    Only the holder of a token can be told it expired or was revoked (presenting it proves they
    hold it); the answer names no tenant, subject or scope, so it says nothing about anyone else.
    ``unknown`` covers every token the store does not hold: mistyped, made up, or issued by
    another deployment (or an earlier ``make run``, whose state is gone).
    """

    MISSING = "missing"
    UNKNOWN = "unknown"
    EXPIRED = "expired"
    REVOKED = "revoked"

    @property
    def message(self) -> str:
        """The fixed message of a 401 for this reason."""
        return _REJECTION_MESSAGES[self]


_REJECTION_MESSAGES = {
    TokenRejection.MISSING: "A bearer token is required (Authorization: Bearer <token>).",
    TokenRejection.UNKNOWN: "The bearer token is not known to this service.",
    TokenRejection.EXPIRED: "The bearer token has expired.",
    TokenRejection.REVOKED: "The bearer token has been revoked.",
}
