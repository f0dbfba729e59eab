"""The store contract for rate quotas (GCRA, ``knowledge.domain.access.rates``): each use decided by
``Rate.decide`` on the stored arrival time and stored atomically when admitted, tenants and quotas
kept apart, whichever write the caller expects first; the same on every adapter."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from knowledge.domain.access.rates import MICROS, Rate, RateDecision
from knowledge.ports import KnowledgeStore
from tests.integration.store_contract.conftest import OTHER_TENANT, TENANT

NOW = 1_800_000_000 * MICROS
EXPIRES = 1_800_000_000 + 300
THREE = Rate(3)


def _consume(
    store: KnowledgeStore,
    times: int,
    *,
    now: int = NOW,
    tenant_id: str = TENANT,
    quota: str = "requests_per_second",
    expect_idle: bool = True,
) -> list[RateDecision]:
    return [
        store.consume_rate(tenant_id, quota, THREE, now=now, expires_at=EXPIRES, expect_idle=expect_idle)
        for _ in range(times)
    ]


@pytest.mark.parametrize("expect_idle", [True, False])
def test_consume_rate_admits_a_burst_of_the_limit_then_refuses(
    store: KnowledgeStore, expect_idle: bool
) -> None:
    decisions = _consume(store, 5, expect_idle=expect_idle)

    step = THREE.interval
    assert decisions == [
        RateDecision(True, NOW + step),
        RateDecision(True, NOW + 2 * step),
        RateDecision(True, NOW + 3 * step),
        RateDecision(False, NOW + 3 * step),
        RateDecision(False, NOW + 3 * step),
    ]


def test_consume_rate_then_admits_one_use_per_interval(store: KnowledgeStore) -> None:
    opens = THREE.admitted_from(_consume(store, 3)[-1].tat)

    def admitted(now: int, expect_idle: bool) -> list[bool]:
        return [decision.admitted for decision in _consume(store, 2, now=now, expect_idle=expect_idle)]

    assert NOW < opens <= NOW + THREE.interval
    assert admitted(opens - 1, expect_idle=False) == [False, False]
    assert admitted(opens, expect_idle=False) == [True, False]
    assert admitted(opens + THREE.interval, expect_idle=True) == [True, False]


def test_consume_rate_after_idle_admits_a_full_burst_and_no_more(store: KnowledgeStore) -> None:
    _consume(store, 3)

    later = _consume(store, 4, now=NOW + 60 * MICROS, expect_idle=False)

    assert [d.admitted for d in later] == [True, True, True, False]
    assert later[0].tat == NOW + 60 * MICROS + THREE.interval


def test_consume_rate_tenants_are_counted_apart(store: KnowledgeStore) -> None:
    _consume(store, 3)

    assert _consume(store, 1, tenant_id=OTHER_TENANT)[0].admitted
    assert not _consume(store, 1)[0].admitted


def test_consume_rate_quotas_are_counted_apart(store: KnowledgeStore) -> None:
    _consume(store, 3)

    assert _consume(store, 1, quota="writes_per_second")[0].admitted


def test_consume_rate_concurrent_uses_admit_exactly_the_burst(store: KnowledgeStore) -> None:
    rate = Rate(5)

    def use(_: int) -> bool:
        return store.consume_rate(
            TENANT, "requests_per_second", rate, now=NOW, expires_at=EXPIRES, expect_idle=False
        ).admitted

    with ThreadPoolExecutor(max_workers=8) as pool:
        admitted = list(pool.map(use, range(12)))

    assert admitted.count(True) == 5


def test_consume_rate_tenant_with_a_hash_is_refused(store: KnowledgeStore) -> None:
    with pytest.raises(ValueError, match="must not contain '#'"):
        store.consume_rate("a#b", "requests_per_second", THREE, now=NOW, expires_at=EXPIRES, expect_idle=True)


def test_read_counters_reports_arrival_times_and_stored_counts(store: KnowledgeStore) -> None:
    _consume(store, 2)
    _consume(store, 1, quota="writes_per_second")

    counters = store.read_counters(TENANT)

    assert counters.arrivals == {
        "requests_per_second": NOW + 2 * THREE.interval,
        "writes_per_second": NOW + THREE.interval,
    }
    assert (counters.stored, counters.notes) == (0, 0)
    assert store.read_counters(OTHER_TENANT).arrivals == {}
