"""The local gateway's throttle of unauthenticated requests, per client address.

Each client address (the connection's peer, ``HttpRequest.source_ip``) may fail authentication
``limit`` times per second, with a burst of ``limit``: a GCRA rate (``knowledge.domain.access.rates``, the
same algorithm as the tenants' quotas), kept in memory. A request to a route behind the authorizer
uses one when its identity source is missing or the authorizer does not accept its token (denied,
or ``authenticated: "false"`` in its context: unknown, expired or revoked). Requests that
authenticate use nothing.

While an address has none left, its requests to those routes are refused before the authorizer
runs, so before any table read: ``429 rate_limited`` with ``Retry-After`` (whole seconds, at least
1) and ``details`` ``{"quota": "failed_authentications_per_second", "limit", "window_seconds": 1,
"retry_after_seconds"}``. A request whose identity the authorizer accepted within the last
``KNOWN_SECONDS`` is let through all the same: every client of a laptop is ``127.0.0.1``, and a
flood of unknown tokens must not lock out a tenant whose token works. Only digests (SHA-256) of
accepted identities are kept, at most ``MAX_ENTRIES`` of them and of addresses.
"""

from __future__ import annotations

import hashlib
import math
import threading
import time
from collections.abc import Callable, Sequence
from typing import TypeVar

from knowledge.domain.access.rates import MICROS, Rate

KNOWN_SECONDS = 300
"""How long an identity the authorizer accepted passes a throttled address (the template's
``ReauthorizeEvery``)."""
MAX_ENTRIES = 4096
"""Addresses, and accepted identities, remembered at most; the oldest are dropped first."""
QUOTA = "failed_authentications_per_second"
_Key = TypeVar("_Key", str, bytes)


class AddressThrottle:
    """``limit`` failed authentications per second per client address (at least 1); ``clock``:
    monotonic seconds. Thread-safe."""

    def __init__(self, limit: int, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.rate = Rate(limit)
        self._clock = clock
        self._tats: dict[str, int] = {}
        self._known: dict[bytes, int] = {}
        self._lock = threading.Lock()

    def retry_after(self, address: str, identity: Sequence[str | None]) -> int | None:
        """Whole seconds (at least 1) until ``address`` may try again, or ``None`` when the
        request may go on: the address has failures left, or ``identity`` (the identity source's
        values) was accepted within ``KNOWN_SECONDS``."""
        now = self._now()
        with self._lock:
            tat = self._tats.get(address)
            if tat is None or self.rate.admitted_from(tat) <= now:
                return None
            expiry = self._known.get(_digest(identity))
            if expiry is not None and expiry > now:
                return None
        return max(1, math.ceil((self.rate.admitted_from(tat) - now) / MICROS))

    def failed(self, address: str) -> None:
        """Count one failed authentication of ``address``."""
        now = self._now()
        with self._lock:
            decision = self.rate.decide(self._tats.pop(address, None), now)
            self._tats[address] = decision.tat  # the most recent last: the oldest go first
            _trim(self._tats, now)

    def accepted(self, identity: Sequence[str | None]) -> None:
        """Remember that the authorizer accepted ``identity``, for ``KNOWN_SECONDS``."""
        now = self._now()
        key = _digest(identity)
        with self._lock:
            self._known.pop(key, None)
            self._known[key] = now + KNOWN_SECONDS * MICROS
            _trim(self._known, now)

    def _now(self) -> int:
        return int(self._clock() * MICROS)


def _digest(identity: Sequence[str | None]) -> bytes:
    return hashlib.sha256("\n".join(value or "" for value in identity).encode()).digest()


def _trim(entries: dict[_Key, int], now: int) -> None:
    """Keep at most ``MAX_ENTRIES``: drop the entries of the past (an address fully recovered, an
    acceptance expired), then the oldest."""
    if len(entries) <= MAX_ENTRIES:
        return
    for key in [key for key, until in entries.items() if until <= now]:
        del entries[key]
    while len(entries) > MAX_ENTRIES:
        del entries[next(iter(entries))]
