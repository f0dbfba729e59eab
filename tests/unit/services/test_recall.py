"""RecallService: a context pack of the caller's notes inside a token budget, pins first, built on
search_memory's ranking, recounted with tiktoken."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from knowledge.domain.memory.context_pack import count_cl100k
from knowledge.domain.memory.notes import Note, can_see_note
from knowledge.domain.models import Permission
from knowledge.errors import InsufficientScopeError, MemoryInvalidRequestError, RuntimeDisabledError
from tests.unit.services.memory_world import READ, SHARE, TENANT_ID, WRITE, MemoryWorld, agent

ALICE = agent("alice", READ, WRITE, SHARE, team_ids=["red"])
BOB = agent("bob", team_ids=["red"])
MALLORY = agent("mallory", team_ids=["blue"])
OTHER_TENANT = agent("alice", tenant_id="globex", team_ids=["red"])

FACTS = [
    "The deploy pipeline runs the integration tests before every release.",
    "Release notes are written by the engineer on call that week.",
    "The staging database is refreshed from production every Sunday night.",
    "Alice prefers answers in British English with metric units.",
    "The billing service retries failed card payments three times over five days.",
    "Support tickets tagged P1 page the on-call engineer within five minutes.",
    "The mobile app's minimum supported iOS version is 16.",
    "Customer data exports are encrypted with the tenant's own KMS key.",
    "Quarterly planning starts in the second week of the last month of the quarter.",
    "The public status page is hosted outside the main AWS account.",
    "Feature flags are removed within two sprints of a full rollout.",
    "The search cluster is resized only during the Tuesday maintenance window.",
]


@pytest.fixture
def world() -> MemoryWorld:
    return MemoryWorld()


def remember_facts(world: MemoryWorld, principal=ALICE, facts=FACTS) -> list[str]:  # type: ignore[no-untyped-def]
    return [world.remember(principal, fact).note.note_id for fact in facts]


@pytest.mark.parametrize("budget", [64, 200, 1_200, 8_000])
def test_recall_context_used_tokens_is_the_recount_of_text_and_fits_the_budget(
    world: MemoryWorld, budget: int
) -> None:
    ids = remember_facts(world)
    world.pin(ALICE, ids[3])

    for query in (None, "release engineer", "payments"):
        pack = world.recall(ALICE, query, max_tokens=budget, max_items=50)

        assert pack.budget.used_tokens == count_cl100k(pack.text)
        assert pack.budget.used_tokens <= budget
        assert pack.budget.max_tokens == budget
        assert pack.budget.tokenizer == "cl100k_base"
        assert all(
            item.tokens == count_cl100k(block)
            for item, block in zip(pack.items, _blocks(pack.text), strict=True)
        )


def test_recall_context_larger_budget_includes_more_and_64_tokens_still_holds_a_short_note(
    world: MemoryWorld,
) -> None:
    remember_facts(world)

    sizes = [len(world.recall(ALICE, max_tokens=budget, max_items=50).items) for budget in (64, 200, 1_200)]

    assert sizes[0] >= 1
    assert sizes[0] < sizes[1] < sizes[2] == len(FACTS)


def test_recall_context_pinned_note_comes_first_for_an_unrelated_query(world: MemoryWorld) -> None:
    ids = remember_facts(world)
    world.pin(ALICE, ids[6])  # the iOS version

    pack = world.recall(ALICE, "billing card payments retries")

    assert pack.items[0].note_id == ids[6]
    assert pack.items[0].pinned is True
    assert pack.items[0].score is None
    assert pack.items[1].note_id == ids[4]  # the best match for the query comes right after
    assert pack.text.startswith("## fact · ")
    assert pack.text.splitlines()[0].endswith(" · pinned · own · /")
    assert "minimum supported iOS version is 16" in pack.text.split("\n\n")[0]


def test_recall_context_pins_follow_order_then_pin_time(world: MemoryWorld) -> None:
    ids = remember_facts(world)
    world.pin(ALICE, ids[0], order=5)
    world.clock.advance(1)
    world.pin(ALICE, ids[1], order=1)
    world.clock.advance(1)
    world.pin(ALICE, ids[2], order=1)

    assert world.recalled(ALICE, "unrelated words", max_items=3) == [ids[1], ids[2], ids[0]]


def test_recall_context_pin_is_invisible_to_callers_who_cannot_see_its_note(world: MemoryWorld) -> None:
    private = world.remember(ALICE, "Alice's locker code is 4471.").note.note_id
    team = world.remember(
        ALICE, "The red team's standup is at 09:30.", scope="team", team_id="red"
    ).note.note_id
    remember_facts(world, MALLORY, FACTS[:3])
    remember_facts(world, OTHER_TENANT, FACTS[3:5])
    world.pin(ALICE, private)
    world.pin(ALICE, team)

    assert world.recalled(ALICE, "anything")[:2] == [private, team]
    assert world.recalled(BOB, "anything") == [team]
    for stranger in (MALLORY, OTHER_TENANT):
        pack = world.recall(stranger, "locker code standup")
        assert {private, team}.isdisjoint(item.note_id for item in pack.items)
        assert {private, team}.isdisjoint(dropped.note_id for dropped in pack.coverage.dropped)
        assert "4471" not in pack.text
        assert "standup" not in pack.text


def test_recall_context_unpinning_and_every_kind_of_forgetting_take_effect_on_the_next_call(
    world: MemoryWorld,
) -> None:
    ids = remember_facts(world)
    for note_id in ids[:6]:
        world.pin(ALICE, note_id)
    assert [item.note_id for item in world.recall(ALICE, max_items=6, max_tokens=8_000).items] == ids[:6]

    assert world.unpin(ALICE, ids[0]) is True
    world.forget(ALICE, ids[1], "soft")
    world.forget(ALICE, ids[2], "redact")
    world.forget(ALICE, ids[3], "hard")
    world.remember(ALICE, "Alice prefers American English now.", supersedes=[ids[4]])
    world.remember(
        ALICE, "The five-minute paging rule now applies to P1 and P2.", memory_id=ids[5], ttl_seconds=60
    )
    world.clock.advance(61)

    pack = world.recall(ALICE, max_items=50, max_tokens=8_000)
    pinned = [item.note_id for item in pack.items if item.pinned]
    present = {item.note_id for item in pack.items} | {dropped.note_id for dropped in pack.coverage.dropped}

    assert pinned == []
    assert ids[0] in present  # unpinned, still a note
    assert present.isdisjoint(ids[1:6])
    assert world.store.get_pin(ALICE.tenant_id, ids[3]) is None  # the hard delete took the pin


def test_recall_context_restored_note_brings_its_pin_back(world: MemoryWorld) -> None:
    ids = remember_facts(world)
    world.pin(ALICE, ids[7])
    world.forget(ALICE, ids[7], "soft")
    assert ids[7] not in world.recalled(ALICE, "exports")

    world.notes.restore(ALICE, ids[7])
    world.sync()

    assert world.recalled(ALICE, "unrelated")[0] == ids[7]


def test_recall_context_expired_pin_no_longer_comes_first(world: MemoryWorld) -> None:
    ids = remember_facts(world)
    world.pin(ALICE, ids[9], expires_at=world.clock.now.replace(hour=10))
    assert world.recalled(ALICE, "billing")[0] == ids[9]

    world.clock.advance(3_601)

    pack = world.recall(ALICE, "billing")
    assert pack.items[0].note_id != ids[9]
    assert all(not item.pinned for item in pack.items)


def test_recall_context_pins_use_at_most_half_of_the_budget(world: MemoryWorld) -> None:
    ids = remember_facts(world)
    for note_id in ids:
        world.pin(ALICE, note_id)

    pack = world.recall(ALICE, max_tokens=200, max_items=50)
    pinned_text = "\n\n".join(_blocks(pack.text)[: len(pack.items)])

    assert all(item.pinned for item in pack.items)
    assert count_cl100k(pinned_text) <= 100
    assert {dropped.reason for dropped in pack.coverage.dropped} == {"pin_budget"}
    assert len(pack.items) + len(pack.coverage.dropped) == len(ids) == pack.coverage.candidates


def test_recall_context_without_query_ranks_by_importance_then_recency(world: MemoryWorld) -> None:
    low = world.remember(ALICE, FACTS[0], importance=0.2).note.note_id
    world.clock.advance(1)
    older_high = world.remember(ALICE, FACTS[1], importance=0.9).note.note_id
    world.clock.advance(1)
    newer_high = world.remember(ALICE, FACTS[2], importance=0.9).note.note_id
    world.clock.advance(1)
    middle = world.remember(ALICE, FACTS[3]).note.note_id

    pack = world.recall(ALICE)

    assert [item.note_id for item in pack.items] == [newer_high, older_high, middle, low]
    assert [item.score for item in pack.items] == [0.9, 0.9, 0.5, 0.2]


def test_recall_context_with_query_follows_search_memory_order(world: MemoryWorld) -> None:
    remember_facts(world)

    searched = [result.note_id for result in world.search(ALICE, "release engineer on call", limit=8).results]
    recalled = world.recalled(ALICE, "release engineer on call", max_tokens=8_000)

    assert recalled == searched[: len(recalled)]
    assert len(recalled) == 8


def test_recall_context_drops_near_duplicates_and_says_why(world: MemoryWorld) -> None:
    kept = world.remember(ALICE, "The staging database is refreshed from production every Sunday night.")
    world.clock.advance(1)
    near = world.remember(
        ALICE, "The staging database is refreshed from production every Sunday night!", path="/ops"
    )
    other = world.remember(ALICE, "Feature flags are removed within two sprints of a full rollout.")

    pack = world.recall(ALICE, "staging database refresh")

    assert [item.note_id for item in pack.items] == [kept.note.note_id, other.note.note_id] or [
        item.note_id for item in pack.items
    ] == [near.note.note_id, other.note.note_id]
    duplicate = {dropped.note_id: dropped.reason for dropped in pack.coverage.dropped}
    assert list(duplicate.values()) == ["duplicate"]
    assert set(duplicate) | {item.note_id for item in pack.items} == {
        kept.note.note_id,
        near.note.note_id,
        other.note.note_id,
    }


def test_recall_context_max_items_caps_the_pack_and_names_the_rest(world: MemoryWorld) -> None:
    ids = remember_facts(world)

    pack = world.recall(ALICE, max_items=3, max_tokens=8_000)

    assert len(pack.items) == 3
    assert pack.coverage.included == 3
    assert pack.coverage.candidates == len(ids)
    assert sorted(dropped.note_id for dropped in pack.coverage.dropped) == sorted(
        set(ids) - {item.note_id for item in pack.items}
    )
    assert {dropped.reason for dropped in pack.coverage.dropped} == {"max_items"}


def test_recall_context_budget_skips_a_note_that_does_not_fit_and_takes_a_later_one(
    world: MemoryWorld,
) -> None:
    long = world.remember(
        ALICE, "A long note about deploys. " + "Deploys need care and review. " * 40, importance=0.9
    )
    short = world.remember(ALICE, "Deploys stop on Fridays.", importance=0.1)

    pack = world.recall(ALICE, max_tokens=64)

    assert [item.note_id for item in pack.items] == [short.note.note_id]
    assert [(d.note_id, d.reason) for d in pack.coverage.dropped] == [(long.note.note_id, "budget")]


def test_recall_context_same_state_and_arguments_give_the_same_pack(world: MemoryWorld) -> None:
    ids = remember_facts(world)
    world.pin(ALICE, ids[2])

    first = world.recall(ALICE, "release", max_tokens=300)
    again = world.recall(ALICE, "release", max_tokens=300)

    assert first == again


def test_recall_context_filters_narrow_pins_and_candidates(world: MemoryWorld) -> None:
    ops = world.remember(ALICE, "Backups run at 02:00 UTC.", path="/ops/backups", memory_type="decision")
    world.remember(ALICE, "Alice likes tea.", path="/personal", memory_type="preference")
    world.pin(ALICE, ops.note.note_id)

    assert world.recalled(ALICE, path_prefix="/ops") == [ops.note.note_id]
    assert world.recalled(ALICE, memory_type="preference") != [ops.note.note_id]
    assert ops.note.note_id not in world.recalled(ALICE, memory_type="preference")


def test_recall_context_never_returns_knowledge_or_empty_when_nothing_is_kept(world: MemoryWorld) -> None:
    pack = world.recall(ALICE, "anything")

    assert pack.text == ""
    assert pack.items == []
    assert pack.budget.used_tokens == 0
    assert pack.coverage.candidates == 0


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({"max_tokens": 63}, "max_tokens"),
        ({"max_tokens": 8_001}, "max_tokens"),
        ({"max_items": 0}, "max_items"),
        ({"max_items": 51}, "max_items"),
    ],
)
def test_recall_context_out_of_bounds_is_memory_invalid_request(
    world: MemoryWorld, arguments: dict[str, int], field: str
) -> None:
    with pytest.raises(MemoryInvalidRequestError) as raised:
        world.recall(ALICE, **arguments)

    assert [problem["field"] for problem in raised.value.details["fields"]] == [field]


def test_recall_context_needs_memory_read_and_the_runtime(world: MemoryWorld) -> None:
    with pytest.raises(InsufficientScopeError):
        world.recall(agent("writer", Permission.MEMORY_WRITE))
    with pytest.raises(RuntimeDisabledError):
        MemoryWorld(enabled=False).recall(ALICE)


def _blocks(text: str) -> list[str]:
    """The pack's blocks (each starts with a ``## `` header after a blank line)."""
    return (
        [block if index == 0 else "## " + block for index, block in enumerate(text.split("\n\n## "))]
        if text
        else []
    )


WORDS = ["deploy", "billing", "staging", "release", "tickets", "exports", "flags", "cluster", "budget", "iOS"]
SUBJECTS = ["alice", "bob", "mallory"]
TEAMS = {"alice": ["red"], "bob": ["red"], "mallory": ["blue"]}


@st.composite
def memories(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Random notes: an owner, a scope (team notes in the owner's team), words, importance, a pin."""
    drawn = []
    for _ in range(draw(st.integers(min_value=0, max_value=12))):
        owner = draw(st.sampled_from(SUBJECTS))
        scope = draw(st.sampled_from(["private", "team", "tenant"]))
        words = draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=30))
        drawn.append(
            {
                "owner": owner,
                "scope": scope,
                "content": " ".join(words) + ".",
                "importance": draw(st.sampled_from([0.1, 0.5, 0.9])),
                "pinned": draw(st.booleans()),
                "order": draw(st.integers(min_value=0, max_value=3)),
            }
        )
    return drawn


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    drawn=memories(),
    caller=st.sampled_from(SUBJECTS),
    query=st.one_of(st.none(), st.sampled_from(WORDS)),
    max_tokens=st.sampled_from([64, 200, 1_200, 8_000]),
    max_items=st.integers(min_value=1, max_value=12),
)
def test_recall_context_invariants_for_random_notes_pins_callers_and_budgets(
    drawn: list[dict[str, Any]], caller: str, query: str | None, max_tokens: int, max_items: int
) -> None:
    world = MemoryWorld()
    principals = {
        subject: agent(subject, READ, WRITE, SHARE, team_ids=TEAMS[subject]) for subject in SUBJECTS
    }
    notes: dict[str, Note] = {}
    pin_keys: dict[str, tuple[int, str]] = {}
    for memory in drawn:
        owner = principals[memory["owner"]]
        team = {"team_id": TEAMS[memory["owner"]][0]} if memory["scope"] == "team" else {}
        answer = world.remember(
            owner,
            memory["content"],
            scope=memory["scope"],
            importance=memory["importance"],
            sync=False,
            **team,
        )
        if answer.result != "created":
            continue
        notes[answer.note.note_id] = world.store.get_note(TENANT_ID, answer.note.note_id)  # type: ignore[assignment]
        if memory["pinned"]:
            world.clock.advance(0.001)
            pin = world.pin(owner, answer.note.note_id, order=memory["order"])
            pin_keys[pin.note_id] = (pin.order, pin.pin_id)
    world.sync()
    principal = principals[caller]

    pack = world.recall(principal, query, max_tokens=max_tokens, max_items=max_items)

    included = [item.note_id for item in pack.items]
    considered = included + [dropped.note_id for dropped in pack.coverage.dropped]
    # visibility: only notes the caller can see, and every visible pin is considered
    assert all(can_see_note(principal, notes[note_id]) for note_id in considered)
    visible_pins = {note_id for note_id in pin_keys if can_see_note(principal, notes[note_id])}
    assert visible_pins <= set(considered)
    # budget: exact and within it, pins within half of it
    assert pack.budget.used_tokens == count_cl100k(pack.text) <= max_tokens
    pinned_items = [item for item in pack.items if item.pinned]
    assert sum(item.tokens for item in pinned_items) <= max_tokens // 2
    # ordering: pins first, in pin order
    assert [item.pinned for item in pack.items] == sorted((item.pinned for item in pack.items), reverse=True)
    assert [item.note_id for item in pinned_items] == sorted(
        (item.note_id for item in pinned_items), key=pin_keys.__getitem__
    )
    assert {item.note_id for item in pinned_items} <= visible_pins
    # whose: every item and its block name the note's owner, own for the caller's
    headers = [block.split("\n")[0] for block in _blocks(pack.text)]
    for item, header in zip(pack.items, headers, strict=True):
        owner = notes[item.note_id].owner_id
        assert (item.owner_id, item.own, item.scope) == (owner, owner == caller, notes[item.note_id].scope)
        assert (
            header.endswith(" · own · /") if owner == caller else header.endswith(f" · shared by {owner} · /")
        )
    # dedupe and accounting: each candidate once, the counts agree, max_items holds
    assert len(considered) == len(set(considered)) == pack.coverage.candidates
    assert len(included) == pack.coverage.included <= max_items
    # the same state gives the same pack
    assert world.recall(principal, query, max_tokens=max_tokens, max_items=max_items) == pack
