"""Bearer tokens: resolving a presented token to its record, and issuing new ones.

Tokens are 256-bit random strings shown once; only their SHA-256 is stored (DESIGN §3). Every token
records its lineage (``TokenRecord.ancestor_token_ids``: the tokens that minted it, root first), and
a token is valid only while every ancestor is valid too. Revoking a token therefore disables all
its descendants with one write, including a child minted while the revocation was under way: the
check happens when a token is presented, against the ancestors' current (strongly consistent)
records, so no enumeration of descendants can miss one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta

from knowledge.domain.access.bearer_tokens import TokenRejection, hash_token, new_token
from knowledge.domain.models import TokenRecord
from knowledge.ports import TokenStore

BEARER_PREFIX = "bearer "
MAX_LINEAGE_DEPTH = 16
"""A token has at most this many ancestors, so the authorizer's lineage check stays one
``BatchGetItem`` of a few keys; a token this deep cannot mint another."""


def _utc_now() -> datetime:
    return datetime.now(UTC)


class TokenService:
    def __init__(self, store: TokenStore, clock: Callable[[], datetime] = _utc_now) -> None:
        self._store = store
        self._clock = clock

    def resolve(self, authorization: str | None) -> TokenRecord | None:
        """The valid record for an ``Authorization`` header value (``Bearer <token>`` or the bare
        token); ``None`` when absent, unknown, expired or revoked, or when one of its ancestors is
        revoked, expired or gone."""
        outcome = self.authenticate(authorization)
        return outcome if isinstance(outcome, TokenRecord) else None

    def authenticate(self, authorization: str | None) -> TokenRecord | TokenRejection:
        """The valid record for an ``Authorization`` header value, or why there is none:
        ``missing`` (no header, or no token in it), ``unknown`` (not in the store), ``revoked``
        (the token, or one of its ancestors: a revoked, expired or deleted issuer invalidates what
        it minted), ``expired`` (revocation wins when both hold)."""
        token = (authorization or "").strip()
        if token.lower().startswith(BEARER_PREFIX):
            token = token[len(BEARER_PREFIX) :].strip()
        if not token or token.lower() == BEARER_PREFIX.strip():
            return TokenRejection.MISSING
        record = self._store.get_token(hash_token(token))
        rejection = self.rejection(record)
        if rejection is not None or record is None:
            return rejection or TokenRejection.UNKNOWN
        return record

    def rejection(self, record: TokenRecord | None) -> TokenRejection | None:
        """Why ``record`` is not valid now (``unknown`` for ``None``, then ``revoked``, ``expired``,
        ``revoked`` for an invalid ancestor, as ``authenticate``), or ``None`` when it is."""
        if record is None:
            return TokenRejection.UNKNOWN
        if record.revoked:
            return TokenRejection.REVOKED
        now = self._clock()
        if not record.is_valid_at(now):
            return TokenRejection.EXPIRED
        if not self._lineage_is_valid(record, now):
            return TokenRejection.REVOKED
        return None

    def _lineage_is_valid(self, record: TokenRecord, now: datetime) -> bool:
        ancestors = self._store.get_tokens(record.ancestor_token_ids) if record.ancestor_token_ids else {}
        return invalid_ancestor(record, ancestors, now) is None

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
        ancestor_token_ids: Sequence[str] = (),
    ) -> tuple[str, TokenRecord]:
        """A new token and its stored record; the token itself is returned once and never stored.

        The token expires ``expires_in`` from now (``None``: never), but never after ``not_after``
        (the issuer's own expiry, when it has one): the earlier of the two wins.
        ``ancestor_token_ids`` is its lineage, root first and issuer last (empty: a root token);
        more than ``MAX_LINEAGE_DEPTH`` is ``ValueError``.
        """
        if len(ancestor_token_ids) > MAX_LINEAGE_DEPTH:
            raise ValueError(f"a token has at most {MAX_LINEAGE_DEPTH} ancestors")
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
            ancestor_token_ids=tuple(ancestor_token_ids),
        )
        self._store.put_token(record)
        return token, record


def invalid_ancestor(record: TokenRecord, ancestors: Mapping[str, TokenRecord], now: datetime) -> str | None:
    """The id of the first (closest to the root) ancestor of ``record`` that is revoked, expired or
    absent from ``ancestors`` (the stored records by id); ``None`` when the whole lineage is valid."""
    for ancestor_id in record.ancestor_token_ids:
        ancestor = ancestors.get(ancestor_id)
        if ancestor is None or not ancestor.is_valid_at(now):
            return ancestor_id
    return None


def _after(now: datetime, delay: timedelta | None) -> datetime | None:
    return now + delay if delay is not None else None
