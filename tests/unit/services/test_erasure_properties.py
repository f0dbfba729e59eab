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
from knowledge.contract.memory import ForgetMemoryArguments
from knowledge.domain.models import Scope, Source
from tests.support.fuzzing import budget
from tests.unit.services.memory_world import READ, SHARE, WRITE, agent
from tests.unit.services.test_erasure import ErasureWorld, principal

TENANTS = ("acme", "globex", "initech")
WORDS = ("pump", "seal", "tide", "crane", "rotor", "cable", "kelp", "harbour")

text = st.lists(st.sampled_from(WORDS), min_size=2, max_size=6).map(" ".join)
item_step = st.tuples(
    st.just("item"),
    st.integers(0, 2),  # the base (by order of creation, modulo the bases there are)
    text,
    st.integers(0, 2),  # more revisions
    st.booleans(),  # archived
    st.booleans(),  # published
)
note_step = st.tuples(
    st.just("note"),
    text,
    st.sampled_from([None, "soft", "hard", "redact"]),
    st.booleans(),  # pinned
    st.sampled_from([None, "k1", "k2"]),  # semantic key
)
base_step = st.tuples(st.just("base"), st.sampled_from([Scope.TENANT, Scope.PRIVATE, Scope.TEAM]))
history = st.lists(st.one_of(base_step, item_step, note_step), min_size=2, max_size=14)


def _play(run: ErasureWorld, tenant_id: str, steps: list[tuple[Any, ...]]) -> None:
    store = run.store
    world = run.deployment.world
    author = agent("alice", READ, WRITE, SHARE, team_ids=["red"]).model_copy(update={"tenant_id": tenant_id})
    bases: list[str] = []
    for step in steps:
        world.clock.advance(1)
        if step[0] == "base":
            team = "red" if step[1] is Scope.TEAM else None
            bases.append(
                store.create_base(
                    tenant_id, name="b", owner_id="alice", scope=step[1], team_id=team
                ).knowledge_base_id
            )
        elif step[0] == "item" and bases:
            _, which, content, revisions, archived, published = step
            item, _ = store.create_item(
                tenant_id,
                bases[which % len(bases)],
                title="t",
                content=content,
                source=Source(),
                external_id=None,
                publish=published,
            )
            for number in range(revisions):
                item, _ = store.add_revision(
                    tenant_id,
                    item.knowledge_item_id,
                    content=f"{content} {number}",
                    title=None,
                    source=None,
                    publish=published,
                    expected_version=item.version,
                )
            if archived:
                store.archive_item(tenant_id, item.knowledge_item_id, expected_version=item.version)
        elif step[0] == "note":
            _, content, forget, pinned, key = step
            answer = world.remember(author, content, path="/p", semantic_key=key, sync=False)
            note_id = answer.note.note_id
            if pinned and forget is None:
                world.pin(author, note_id)
            if forget is not None:
                world.notes.forget(author, ForgetMemoryArguments(note_id=note_id, mode=forget))


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
        _play(run, tenant_id, steps)
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
