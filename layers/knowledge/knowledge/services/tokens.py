"""Bearer tokens: resolving a presented token to its record, and issuing new ones.

Tokens are 256-bit random strings shown once; only their SHA-256 is stored (DESIGN §3).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta

from knowledge.domain.bearer_tokens import TokenRejection, hash_token, new_token
from knowledge.domain.models import TokenRecord
from knowledge.ports import TokenStore

BEARER_PREFIX = "bearer "


def _utc_now() -> datetime:
    return datetime.now(UTC)


class TokenService:
    def __init__(self, store: TokenStore, clock: Callable[[], datetime] = _utc_now) -> None:
        self._store = store
        self._clock = clock

    def resolve(self, authorization: str | None) -> TokenRecord | None:
        """The valid record for an ``Authorization`` header value (``Bearer <token>`` or the bare
        token); ``None`` when absent, unknown, expired or revoked."""
        outcome = self.authenticate(authorization)
        return outcome if isinstance(outcome, TokenRecord) else None

    def authenticate(self, authorization: str | None) -> TokenRecord | TokenRejection:
        """The valid record for an ``Authorization`` header value, or why there is none:
        ``missing`` (no header, or no token in it), ``unknown`` (not in the store), ``revoked``,
        ``expired`` (revocation wins when both hold)."""
        token = (authorization or "").strip()
        if token.lower().startswith(BEARER_PREFIX):
            token = token[len(BEARER_PREFIX) :].strip()
        if not token or token.lower() == BEARER_PREFIX.strip():
            return TokenRejection.MISSING
        record = self._store.get_token(hash_token(token))
        if record is None:
            return TokenRejection.UNKNOWN
        if record.revoked:
            return TokenRejection.REVOKED
        if not record.is_valid_at(self._clock()):
            return TokenRejection.EXPIRED
        return record

    def issue(
        self,
        *,
        tenant_id: str,
        subject_id: str,
        scopes: Iterable[str],
        team_ids: Iterable[str] = (),
        knowledge_base_ids: Iterable[str] | None = None,
        expires_in: timedelta | None = None,
        not_after: datetime | None = None,
    ) -> tuple[str, TokenRecord]:
        """A new token and its stored record; the token itself is returned once and never stored.

        The token expires ``expires_in`` from now (``None``: never), but never after ``not_after``
        (the issuer's own expiry, when it has one): the earlier of the two wins.
        """
        token = new_token()
        now = self._clock()
        deadlines = [deadline for deadline in (_after(now, expires_in), not_after) if deadline is not None]
        record = TokenRecord(
            token_hash=hash_token(token),
            tenant_id=tenant_id,
            subject_id=subject_id,
            team_ids=frozenset(team_ids),
            scopes=frozenset(scopes),
            knowledge_base_ids=None if knowledge_base_ids is None else frozenset(knowledge_base_ids),
            created_at=now,
            expires_at=min(deadlines, default=None),
        )
        self._store.put_token(record)
        return token, record


def _after(now: datetime, delay: timedelta | None) -> datetime | None:
    return now + delay if delay is not None else None
