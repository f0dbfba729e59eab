"""Per-tenant quotas: requests per second and writes per second, each a GCRA rate
(``knowledge.domain.access.rates``) kept in the store (``QuotaStore``), so every execution environment of
every function shares it.

``admit_request`` runs for every authenticated REST and MCP request, ``admit_write`` in addition for
every write (``knowledge.api.writes`` and the MCP write tools); each answers the quota's state after
the use (``RateState``: what the ``RateLimit-*`` headers carry). ``usage`` reads every counter of a
tenant for ``GET /v1/usage``. A refused use raises
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
from datetime import UTC, datetime
from typing import Literal

from knowledge.contract.usage import RateUsage, StoredUsage, UsageResponse
from knowledge.domain.access.rates import MICROS, Rate, RateState
from knowledge.errors import RateLimitedError
from knowledge.ports import QuotaStore

WINDOW_SECONDS = 1
"""The period the limits are given in (``details.window_seconds``)."""
COUNTER_TTL_SECONDS = 300
QuotaName = Literal["requests_per_second", "writes_per_second"]
REQUESTS: Literal["requests_per_second"] = "requests_per_second"
WRITES: Literal["writes_per_second"] = "writes_per_second"


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
        stored_items_limit: int = 0,
    ) -> None:
        self._store = store
        self._rates: dict[QuotaName, Rate | None] = {
            quota: Rate(limit) if limit > 0 else None
            for quota, limit in ((REQUESTS, requests_per_second), (WRITES, writes_per_second))
        }
        self._clock = clock
        self._stored_limit = stored_items_limit
        self._arrivals: dict[tuple[str, str], int] = {}
        """``(tenant, quota)`` → the last theoretical arrival time the store answered (epoch µs)."""
        self._arrivals_lock = threading.Lock()

    def admit_request(self, tenant_id: str) -> RateState | None:
        """Count one request of ``tenant_id`` and answer the quota's state after it (``None`` when
        the quota is off); raises ``RateLimitedError`` when its rate is used up,
        ``DependencyUnavailableError`` when the store is down."""
        return self._admit(tenant_id, REQUESTS)

    def admit_write(self, tenant_id: str) -> RateState | None:
        """Count one write of ``tenant_id``; answers and raises as ``admit_request``."""
        return self._admit(tenant_id, WRITES)

    def usage(self, tenant_id: str) -> UsageResponse:
        """Every counter of ``tenant_id`` now (``QuotaStore.read_counters``), with each limit and
        what is left of it. Raises ``DependencyUnavailableError``."""
        counters = self._store.read_counters(tenant_id)
        now = int(self._clock() * MICROS)
        rates = []
        for quota, rate in self._rates.items():
            if rate is None:
                rates.append(
                    RateUsage(quota=quota, limit=None, used=None, remaining=None, reset_seconds=None)
                )
                continue
            state = rate.state(counters.arrivals.get(quota), now)
            rates.append(
                RateUsage(
                    quota=quota,
                    limit=state.limit,
                    window_seconds=WINDOW_SECONDS,
                    used=state.used,
                    remaining=state.remaining,
                    reset_seconds=state.reset_seconds,
                )
            )
        limit = self._stored_limit or None
        return UsageResponse(
            tenant_id=tenant_id,
            measured_at=datetime.fromtimestamp(now / MICROS, UTC),
            stored=StoredUsage(
                items=counters.stored - counters.notes,
                notes=counters.notes,
                total=counters.stored,
                limit=limit,
                remaining=max(0, limit - counters.stored) if limit is not None else None,
                content_bytes=counters.content_bytes,
            ),
            rates=rates,
        )

    def _admit(self, tenant_id: str, quota: QuotaName) -> RateState | None:
        rate = self._rates[quota]
        if rate is None:
            return None
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
                return rate.state(decision.tat, now)
            tat = decision.tat
        retry_after = max(1, math.ceil((rate.admitted_from(tat) - now) / MICROS))
        raise RateLimitedError(
            quota, limit=rate.limit, window_seconds=WINDOW_SECONDS, retry_after_seconds=retry_after
        )
