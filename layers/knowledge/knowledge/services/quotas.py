"""Per-tenant quotas: requests per second and writes per second, each a GCRA rate
(``knowledge.domain.access.rates``) kept in the store (``QuotaStore``), so every execution environment of
every function shares it.

``admit_request`` runs for every authenticated REST and MCP request, ``admit_write`` in addition for
every write (``knowledge.api.writes`` and the MCP write tools). A refused use raises
``RateLimitedError`` (429 ``rate_limited``, ``Retry-After``: the whole seconds, at least 1, until
a use is admitted again); a limit of 0 turns that quota off. A tenant may send ``limit`` uses at
once; one that keeps sending is admitted one use every ``1/limit`` seconds, spread evenly, so what
a flooding tenant is still allowed never arrives as one burst at the start of each second. The
record expires (TTL) ``COUNTER_TTL_SECONDS`` after its last admitted use.

Each service remembers, per tenant and quota, the last arrival time the store answered. A tenant's
arrival time only grows, so while the remembered one refuses, every use is refused in memory before
any other work: a flooding tenant costs one store write per admitted use and per refusal that
learns a later arrival time, not one per request. The remembered time also tells the store which
of its two writes to try first (``expect_idle``).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable

from knowledge.domain.access.rates import MICROS, Rate
from knowledge.errors import RateLimitedError
from knowledge.ports import QuotaStore

WINDOW_SECONDS = 1
"""The period the limits are given in (``details.window_seconds``)."""
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
        self._rates = {
            quota: Rate(limit) if limit > 0 else None
            for quota, limit in ((REQUESTS, requests_per_second), (WRITES, writes_per_second))
        }
        self._clock = clock
        self._arrivals: dict[tuple[str, str], int] = {}
        """``(tenant, quota)`` → the last theoretical arrival time the store answered (epoch µs)."""
        self._arrivals_lock = threading.Lock()

    def admit_request(self, tenant_id: str) -> None:
        """Count one request of ``tenant_id``; raises ``RateLimitedError`` when its rate is used up,
        ``DependencyUnavailableError`` when the store is down."""
        self._admit(tenant_id, REQUESTS)

    def admit_write(self, tenant_id: str) -> None:
        """Count one write of ``tenant_id``; raises as ``admit_request``."""
        self._admit(tenant_id, WRITES)

    def _admit(self, tenant_id: str, quota: str) -> None:
        rate = self._rates[quota]
        if rate is None:
            return
        now = int(self._clock() * MICROS)
        with self._arrivals_lock:
            known = self._arrivals.get((tenant_id, quota))
        if known is not None and rate.admitted_from(known) > now:
            tat = known  # refused in memory: the stored arrival time is at least this one
        else:
            decision = self._store.consume_rate(
                tenant_id,
                quota,
                rate,
                now=now,
                expires_at=now // MICROS + COUNTER_TTL_SECONDS,
                expect_idle=known is None or known < now,
            )
            with self._arrivals_lock:
                self._arrivals[tenant_id, quota] = decision.tat
            if decision.admitted:
                return
            tat = decision.tat
        retry_after = max(1, math.ceil((rate.admitted_from(tat) - now) / MICROS))
        raise RateLimitedError(
            quota, limit=rate.limit, window_seconds=WINDOW_SECONDS, retry_after_seconds=retry_after
        )
