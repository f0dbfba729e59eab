"""Per-tenant quotas: requests per second and writes per second, each a fixed one-second window
counted in the store (``QuotaStore``), so every execution environment of every function shares it.

``admit_request`` runs for every authenticated REST and MCP request, ``admit_write`` in addition for
every write (``knowledge.api.writes`` and the MCP write tools). A full window raises
``RateLimitedError`` (429 ``rate_limited``, ``Retry-After``: the seconds until the next window);
a limit of 0 turns that quota off. A counter expires (TTL) ``COUNTER_TTL_SECONDS`` after its window.

A window refused once stays refused until it ends (its count only grows), so each service
remembers, per tenant and quota, the last window it saw full and refuses the rest of that window
in memory: a flooding tenant costs one store write per window and execution environment, not one
per request, and its refusals are answered before any other work.

Why fixed windows: one conditional ``UpdateItem`` per quota per request (1 WCU, one round trip),
against a read and a conditional write for a token bucket. A burst of up to twice the limit can
straddle a window edge; for quotas meant to shield tenants from each other that is acceptable.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable

from knowledge.errors import RateLimitedError
from knowledge.ports import QuotaStore

WINDOW_SECONDS = 1
COUNTER_TTL_SECONDS = 300
REQUESTS = "requests_per_second"
WRITES = "writes_per_second"


class QuotaService:
    """Counts a tenant's requests and writes against its limits. Thread-safe if the store is.

    ``clock`` returns epoch seconds (``time.time``)."""

    def __init__(
        self,
        store: QuotaStore,
        *,
        requests_per_second: int,
        writes_per_second: int,
        clock: Callable[[], float],
    ) -> None:
        self._store = store
        self._limits = {REQUESTS: requests_per_second, WRITES: writes_per_second}
        self._clock = clock
        self._full: dict[tuple[str, str], int] = {}
        """``(tenant, quota)`` → the start of the last window seen full."""
        self._full_lock = threading.Lock()

    def admit_request(self, tenant_id: str) -> None:
        """Count one request of ``tenant_id``; raises ``RateLimitedError`` when its window is full,
        ``DependencyUnavailableError`` when the store is down."""
        self._admit(tenant_id, REQUESTS)

    def admit_write(self, tenant_id: str) -> None:
        """Count one write of ``tenant_id``; raises as ``admit_request``."""
        self._admit(tenant_id, WRITES)

    def _admit(self, tenant_id: str, quota: str) -> None:
        limit = self._limits[quota]
        if limit <= 0:
            return
        now = self._clock()
        window = int(now // WINDOW_SECONDS) * WINDOW_SECONDS
        with self._full_lock:
            known_full = self._full.get((tenant_id, quota)) == window
        if not known_full:
            counted = self._store.consume_quota(
                tenant_id, quota, window=window, limit=limit, expires_at=window + COUNTER_TTL_SECONDS
            )
            if counted:
                return
            with self._full_lock:
                self._full[tenant_id, quota] = window
        retry_after = max(1, math.ceil(window + WINDOW_SECONDS - now))
        raise RateLimitedError(
            quota, limit=limit, window_seconds=WINDOW_SECONDS, retry_after_seconds=retry_after
        )
