"""Erasure properties over random tenants (``knowledge.services.erasure``): for random histories of
three tenants (bases of every scope, items with revisions, archived items, notes with versions,
forgotten notes, pins), erasing one of them, with random batch boundaries (out of time after any
step), leaves that tenant no record, leaves every other tenant's records exactly as they were,
counts in its receipt exactly the records it held, and a dry run before it answers the same
receipt and changes nothing."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from knowledge.contract.erasure import ErasureRequest
from tests.support.fuzzing import budget
from tests.unit.services.tenant_history import TENANTS, history, play
from tests.unit.services.test_erasure import ErasureWorld, principal


@settings(
    max_examples=budget(100, 1_000),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    histories=st.tuples(history, history, history),
    erased=st.sampled_from(TENANTS),
    pause_every=st.integers(1, 4),
)
def test_an_erasure_empties_its_tenant_only_and_its_receipt_is_its_dry_runs(
    histories: tuple[list[tuple[Any, ...]], ...], erased: str, pause_every: int
) -> None:
    run = ErasureWorld(seeded=False)
    for tenant_id, steps in zip(TENANTS, histories, strict=True):
        play(run, tenant_id, steps)
    before = {tenant_id: run.snapshot(tenant_id) for tenant_id in TENANTS}
    held = {
        kind: sum(1 for record in before[erased] if record["kind"] == kind)
        for kind in ("base", "item", "note")
    }
    caller = principal(erased)

    preview = run.service.start(caller, ErasureRequest(dry_run=True))
    run.run_all()
    previewed = run.service.get(caller, preview.erasure_id)
    assert {tenant_id: run.snapshot(tenant_id) for tenant_id in TENANTS} == before

    started = run.service.start(caller, ErasureRequest(confirm_tenant_id=erased))
    steps = {"n": 0}

    def seconds_left() -> float:
        steps["n"] += 1
        return 0 if steps["n"] % pause_every == 0 else 1

    run.run_all(seconds_left=seconds_left)
    done = run.service.get(caller, started.erasure_id)

    event(f"records erased > 0: {sum(done.erased.values()) > 0}")
    assert done.status == previewed.status == "succeeded"
    assert done.receipt.stores() == previewed.receipt.stores()
    assert done.erased == previewed.erased
    assert done.erased.get("knowledge_base", 0) == held["base"]
    assert done.erased.get("note", 0) == held["note"]
    assert done.erased.get("item", 0) >= held["item"]  # archived items are erased, not exported
    assert run.snapshot(erased) == [{"kind": "end", "counts": {}}]
    assert run.store.read_counters(erased).stored == 0
    for tenant_id in TENANTS:
        if tenant_id != erased:
            assert run.snapshot(tenant_id) == before[tenant_id]
