"""``GET /v1/usage``: what the caller's tenant holds and how much of each quota is left, from the
counters the quotas themselves keep (``knowledge.services.quotas``), read strongly consistent.

Rates are GCRA (``knowledge.domain.access.rates``): a quota of ``limit`` uses per second admits a
burst of ``limit`` and then one use every ``1/limit`` s, so its "window" slides: ``used`` is the
part of the burst spent (it drains back at ``limit`` per second), ``remaining`` what may be sent at
once now, ``reset_seconds`` when the whole burst is back. The same figures travel on every REST
answer in ``RateLimit-Limit``, ``RateLimit-Remaining`` and ``RateLimit-Reset``
(draft-ietf-httpapi-ratelimit-headers-06) for the requests quota.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

QuotaName = Literal["requests_per_second", "writes_per_second"]


class RateUsage(BaseModel):
    """One rate quota of the tenant; ``limit`` ``null`` when the quota is off (then nothing is
    counted and every other figure is ``null`` too)."""

    quota: QuotaName
    limit: int | None = Field(ge=1)
    window_seconds: int = 1
    used: int | None = Field(ge=0)
    remaining: int | None = Field(ge=0)
    reset_seconds: int | None = Field(ge=0)


class StoredUsage(BaseModel):
    """What the tenant stores against its stored items quota: live knowledge items and notes (a
    note written before notes were counted apart counts among ``items``). ``limit`` and
    ``remaining`` are ``null`` when the quota is off."""

    items: int = Field(ge=0)
    notes: int = Field(ge=0)
    total: int = Field(ge=0)
    limit: int | None = Field(ge=1)
    remaining: int | None = Field(ge=0)
    content_bytes: int = Field(default=0, ge=0)
    """The UTF-8 bytes of content the tenant stores: every knowledge revision (drafts and the
    revisions of archived items included: revisions are kept) and every note at its current
    version (a note's older versions are history and not counted), counted by the writes
    themselves; not a quota. Content written before it was counted is not in it."""


class UsageResponse(BaseModel):
    """``GET /v1/usage``: the caller's tenant at ``measured_at``."""

    type: Literal["usage"] = "usage"
    tenant_id: str
    measured_at: datetime
    stored: StoredUsage
    rates: list[RateUsage]
