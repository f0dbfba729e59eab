"""Export and import properties over random histories (``knowledge.services.bundles``): for a random
tenant history (bases of every scope, items with revisions and drafts, archived items, notes with
versions by key, forgotten notes of every mode, pins), exporting it, importing the bundle into an
empty tenant and exporting that tenant gives the same records; importing the bundle again finds
every record present and changes nothing; and the tenant exported is left as it was."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, event, given, settings

from knowledge.domain.bundles import BundleSelection
from tests.support.fuzzing import budget
from tests.unit.services.tenant_history import TENANTS, history, play
from tests.unit.services.test_erasure import ErasureWorld

SOURCE, COPY = TENANTS[0], TENANTS[2]


@settings(
    max_examples=budget(100, 1_000),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(steps=history)
def test_an_export_imported_into_an_empty_tenant_exports_the_same_records(
    steps: list[tuple[Any, ...]],
) -> None:
    run = ErasureWorld(seeded=False)
    play(run, SOURCE, steps)
    service = run.deployment.service
    lines = list(service.bundle_lines(SOURCE, BundleSelection()))
    records = [json.loads(line) for line in lines][1:]
    event(f"records exported > 1: {len(records) > 1}")

    first = service.import_lines(COPY, lines)
    again = service.import_lines(COPY, lines)

    assert first is not None
    assert again is not None
    assert first.conflicts == again.conflicts == []
    assert not any(name.endswith(".present") for name in first.counts)
    assert not any(name.endswith(".imported") for name in again.counts)
    assert sum(first.counts.values()) == sum(again.counts.values()) == len(records) - 1  # all but `end`
    assert run.snapshot(COPY) == records
    assert run.snapshot(SOURCE) == records
