"""MemorySearchService: the knowledge search's legs and fusion over the caller's visible current
notes, checked against the store at read time."""

from __future__ import annotations

import pytest

from knowledge.contract.memory import RememberArguments
from knowledge.domain.models import Permission
from knowledge.errors import InsufficientScopeError, MemoryInvalidRequestError
from tests.unit.services.memory_world import READ, SHARE, WRITE, MemoryWorld, agent

ALICE = agent("alice", READ, WRITE, SHARE, team_ids=["red"])
BOB = agent("bob", READ, WRITE, SHARE, team_ids=["red"])
MALLORY = agent("mallory", team_ids=["blue"])
OTHER_TENANT_ALICE = agent("alice", READ, WRITE, SHARE, tenant_id="globex", team_ids=["red"])

FILLER = [
    "The deploy pipeline runs the integration tests before every release.",
    "Release notes are written by the engineer on call that week.",
    "The release checklist lives in the operations handbook.",
    "Deploys are frozen during the last week of the quarter.",
    "Every release is tagged in git with its version number.",
]


@pytest.fixture
def world() -> MemoryWorld:
    return MemoryWorld()


@pytest.mark.parametrize("mode", ["hybrid", "lexical", "rrf"])
def test_search_memory_rare_exact_token_ranks_first(world: MemoryWorld, mode: str) -> None:
    for text in FILLER:
        world.remember(ALICE, text)
    world.remember(ALICE, "The release signing key is stored under ticket QX-88412.")

    results = world.search(ALICE, "QX-88412 release", mode=mode).results

    assert results[0].content == "The release signing key is stored under ticket QX-88412."


def test_search_memory_never_returns_another_principals_private_note_in_any_mode(world: MemoryWorld) -> None:
    world.remember(MALLORY, "Mallory's private zebra fact.")
    world.remember(OTHER_TENANT_ALICE, "Another tenant's zebra fact.", scope="tenant")
    world.remember(ALICE, "Alice's own zebra fact.")

    for mode in ("hybrid", "lexical", "semantic", "rrf"):
        assert world.found(ALICE, "zebra fact", mode=mode) == ["Alice's own zebra fact."]


def test_search_memory_team_and_tenant_notes_reach_their_audience(world: MemoryWorld) -> None:
    world.remember(BOB, "Red team okapi note.", scope="team", team_id="red")
    world.remember(BOB, "Tenant-wide okapi note.", scope="tenant")

    assert sorted(world.found(ALICE, "okapi note")) == ["Red team okapi note.", "Tenant-wide okapi note."]
    assert world.found(MALLORY, "okapi note") == ["Tenant-wide okapi note."]
    assert world.found(ALICE, "okapi note", scope="team") == ["Red team okapi note."]
    assert world.found(OTHER_TENANT_ALICE, "okapi note") == []


def test_search_memory_filters_narrow_by_type_agent_and_path_prefix(world: MemoryWorld) -> None:
    world.remember(ALICE, "Prefers dark mode in the ibis editor.", memory_type="preference", agent_id="ide")
    world.remember(
        ALICE, "Decided to ship the ibis beta.", memory_type="decision", path="/projects/ibis/plan"
    )
    world.remember(ALICE, "The ibisfoo project is unrelated.", path="/projects/ibisfoo")

    assert world.found(ALICE, "ibis", memory_type="preference") == ["Prefers dark mode in the ibis editor."]
    assert world.found(ALICE, "ibis", agent_id="ide") == ["Prefers dark mode in the ibis editor."]
    assert world.found(ALICE, "ibis", path_prefix="projects/ibis") == ["Decided to ship the ibis beta."]


def test_search_memory_drops_a_hit_whose_index_version_is_stale(world: MemoryWorld) -> None:
    note = world.remember(ALICE, "The heron cache holds 5 GB.").note

    world.notes.remember(
        ALICE, RememberArguments(content="The heron cache holds 9 GB.", memory_id=note.note_id)
    )

    assert world.found(ALICE, "heron cache") == []
    world.sync()
    assert world.found(ALICE, "heron cache") == ["The heron cache holds 9 GB."]


def test_search_memory_explain_adds_every_legs_scores(world: MemoryWorld) -> None:
    world.remember(ALICE, "The llama service listens on port 7443.")

    plain = world.search(ALICE, "llama port").results[0]
    explained = world.search(ALICE, "llama port", explain=True).results[0]

    assert plain.scores is None
    assert explained.scores is not None
    assert explained.scores.lexical_rank == 1
    assert explained.scores.semantic_rank == 1
    assert explained.scores.final == explained.score


def test_search_memory_unknown_mode_is_hybrid_and_alpha_is_clamped(world: MemoryWorld) -> None:
    world.remember(ALICE, "A yak fact.")

    answer = world.search(ALICE, "yak", mode="fancy", alpha=7.0)

    assert (answer.mode, answer.alpha, answer.type) == ("hybrid", 1.0, "memory_search")


@pytest.mark.parametrize(("query", "limit"), [("   ", 10), ("yak", 0), ("yak", 51)])
def test_search_memory_blank_query_or_limit_out_of_bounds_is_invalid(
    world: MemoryWorld, query: str, limit: int
) -> None:
    with pytest.raises(MemoryInvalidRequestError):
        world.search(ALICE, query, limit=limit)


def test_search_memory_without_memory_read_is_insufficient_scope(world: MemoryWorld) -> None:
    with pytest.raises(InsufficientScopeError) as raised:
        world.search(agent("alice", WRITE, Permission.READ), "anything")

    assert raised.value.details == {"required_scope": "memory:read"}


def test_search_memory_limit_caps_the_results(world: MemoryWorld) -> None:
    for n in range(6):
        world.remember(ALICE, f"Gecko fact number {n}.")

    assert len(world.search(ALICE, "gecko fact", limit=4).results) == 4
