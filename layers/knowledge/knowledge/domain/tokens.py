"""Bearer tokens: 256 random bits, shown once; only their SHA-256 hex digest is stored."""

from __future__ import annotations

import hashlib
import secrets

TOKEN_PREFIX = "kn_"


def new_token() -> str:
    """A fresh bearer token (``kn_`` + 43 URL-safe characters)."""
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def hash_token(token: str) -> str:
    """SHA-256 hex digest of the token, the only form that is stored or looked up."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()
