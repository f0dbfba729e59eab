"""Random tenant histories for the property tests of the tenant jobs (erasure, export and import):
bases of every scope, items with revisions (published or draft, some archived), notes with
versions by key, forgotten notes of every mode, and pins, played on an ``ErasureWorld``."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from knowledge.contract.memory import ForgetMemoryArguments
from knowledge.domain.models import Scope, Source
from tests.unit.services.memory_world import READ, SHARE, WRITE, agent
from tests.unit.services.test_erasure import ErasureWorld

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


def play(run: ErasureWorld, tenant_id: str, steps: list[tuple[Any, ...]]) -> None:
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
