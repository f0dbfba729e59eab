"""API Gateway's cache of Lambda authorizer answers, for the local gateway (``gateway``).

An HTTP API whose Lambda authorizer has a result TTL (SAM's ``Identity.ReauthorizeEvery``, in
seconds; CloudFormation's ``AuthorizerResultTtlInSeconds``) keeps each answer for that long, keyed
by the authorizer and the values of its identity sources (here the ``Authorization`` header), and
replays it, context included, for any route behind that authorizer. An authorizer that fails is
not cached. ``AuthorizerCache`` does the same: ``get`` answers a deep copy of a live entry (so no two
requests share a context), ``put`` keeps an answer for ``ttl_seconds``. It holds at most
``max_entries`` answers and drops the oldest first, so a flood of distinct tokens cannot grow it
without bound. Thread-safe: the gateway serves each request on its own thread.
"""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Callable, Hashable
from typing import Any

DEFAULT_MAX_ENTRIES = 10_000

Decision = tuple[bool, dict[str, Any]]
"""``(allowed, context)``: what the authorizer answered."""


class AuthorizerCache:
    """Authorizer answers by key for their TTL; ``clock`` is monotonic seconds."""

    def __init__(
        self, max_entries: int = DEFAULT_MAX_ENTRIES, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if max_entries < 1:
            raise ValueError("max_entries must be at least 1")
        self._max_entries = max_entries
        self._clock = clock
        self._entries: dict[Hashable, tuple[float, Decision]] = {}
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> Decision | None:
        """The answer kept for ``key`` (its context copied), or ``None`` when there is none or it
        has expired (an expired entry is dropped)."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            expires, (allowed, context) = entry
            if self._clock() >= expires:
                del self._entries[key]
                return None
        return allowed, copy.deepcopy(context)

    def put(self, key: Hashable, decision: Decision, ttl_seconds: float) -> None:
        """Keep ``decision`` for ``ttl_seconds`` (nothing when it is 0 or less)."""
        if ttl_seconds <= 0:
            return
        allowed, context = decision
        kept = (allowed, copy.deepcopy(context))
        with self._lock:
            self._entries.pop(key, None)
            self._entries[key] = (self._clock() + ttl_seconds, kept)
            while len(self._entries) > self._max_entries:
                del self._entries[next(iter(self._entries))]

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)
