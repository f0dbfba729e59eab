"""Read-your-own-writes over notes (DESIGN §9): write answers say ``indexed``; ``search_memory`` and
``recall_context`` report ``pending_index`` and, with ``consistent: true``, rank the caller's
unindexed notes by the index's own rules."""

from __future__ import annotations

import random

import pytest

from tests.unit.services.memory_world import READ, SHARE, WRITE, MemoryWorld, agent

ALICE = agent("alice", READ, WRITE, SHARE)
BOB = agent("bob", READ, WRITE, SHARE)
WORDS = [
    *("river", "stone", "cloud", "paper", "green", "market"),
    *("harbor", "lantern", "orchard", "copper", "violet", "thunder"),
]


@pytest.fixture
def world() -> MemoryWorld:
    return MemoryWorld()


def test_remember_answer_is_not_indexed_until_the_indexer_takes_the_note(world: MemoryWorld) -> None:
    created = world.remember(ALICE, "The staging database is called heron.", sync=False)
    assert created.indexed is False

    world.sync()
    duplicate = world.remember(ALICE, "The staging database is called heron.", sync=False)

    assert duplicate.result == "duplicate"
    assert duplicate.indexed is True


def test_search_memory_without_consistent_reports_the_pending_note(world: MemoryWorld) -> None:
    world.remember(ALICE, "The staging database is called heron.", sync=False)

    answer = world.search(ALICE, "staging database")

    assert answer.results == []
    assert (answer.pending_index.writes, answer.pending_index.included) == (1, False)


@pytest.mark.parametrize("mode", ["hybrid", "lexical", "semantic", "rrf"])
def test_search_memory_consistent_finds_the_note_just_remembered(world: MemoryWorld, mode: str) -> None:
    world.remember(ALICE, "The release train leaves on Thursdays.")
    written = world.remember(ALICE, "The staging database is called heron.", sync=False)

    answer = world.search(ALICE, "staging database heron", mode=mode, consistent=True)

    assert answer.results[0].note_id == written.note.note_id
    assert (answer.pending_index.writes, answer.pending_index.included) == (1, True)


def test_search_memory_consistent_finds_the_new_content_of_an_updated_note(world: MemoryWorld) -> None:
    first = world.remember(ALICE, "The deploy window opens at noon.", semantic_key="deploy.window")
    world.remember(ALICE, "The deploy window opens at dawn.", semantic_key="deploy.window", sync=False)

    stale = world.search(ALICE, "deploy window dawn")
    fresh = world.search(ALICE, "deploy window dawn", consistent=True)

    assert stale.results == []  # the index holds version 1, which the truth check refuses
    assert [(r.note_id, r.version, r.content) for r in fresh.results] == [
        (first.note.note_id, 2, "The deploy window opens at dawn.")
    ]


def test_search_memory_consistent_leaves_out_others_and_forgotten_notes(world: MemoryWorld) -> None:
    world.remember(BOB, "Bob's staging database is called egret.", scope="tenant", sync=False)
    forgotten = world.remember(ALICE, "The staging database is called heron.", sync=False)
    world.notes.forget(ALICE, _forget(forgotten.note.note_id))

    answer = world.search(ALICE, "staging database", consistent=True)

    assert answer.results == []
    assert answer.pending_index.writes == 0
    assert world.search(BOB, "staging database", consistent=True).pending_index.writes == 1


def test_search_memory_consistent_respects_the_filters(world: MemoryWorld) -> None:
    world.remember(ALICE, "The staging database is called heron.", path="/infra", sync=False)

    assert world.found(ALICE, "staging database", consistent=True, path_prefix="/people") == []
    assert world.found(ALICE, "staging database", consistent=True, path_prefix="/infra") == [
        "The staging database is called heron."
    ]


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("mode", ["hybrid", "lexical", "semantic", "rrf"])
def test_search_memory_consistent_finds_what_the_index_finds_once_it_takes_the_notes(
    mode: str, seed: int
) -> None:
    rng = random.Random(seed)
    world = MemoryWorld()
    for _ in range(rng.randint(0, 12)):
        world.remember(ALICE, " ".join(rng.choices(WORDS, k=rng.randint(3, 20))))
    for _ in range(rng.randint(1, 6)):
        world.remember(ALICE, " ".join(rng.choices(WORDS, k=rng.randint(3, 20))), sync=False)
    query = " ".join(rng.sample(WORDS, 2))

    before = world.search(ALICE, query, mode=mode, consistent=True, explain=True, limit=50)
    world.sync()
    after = world.search(ALICE, query, mode=mode, explain=True, limit=50)

    assert sorted(r.note_id for r in before.results) == sorted(r.note_id for r in after.results)
    assert after.pending_index.writes == 0


@pytest.mark.parametrize("mode", ["hybrid", "lexical", "semantic", "rrf"])
def test_search_memory_consistent_scores_an_unindexed_copy_as_the_index_scores_the_note(
    world: MemoryWorld, mode: str
) -> None:
    """With the same statistics (the index already holds an identical text), the unindexed note
    gets the score of the indexed one (tantivy scores in 32-bit floats): the same analysis, BM25
    and cosine."""
    for n in range(8):
        world.remember(ALICE, f"{WORDS[n]} {WORDS[n + 1]} {WORDS[n + 2]} harbor", sync=False)
    held = world.remember(ALICE, "The copper lantern hangs in the harbor office.", scope="tenant", sync=False)
    world.sync()  # once: each note indexed once, so no deleted document weighs in tantivy's statistics
    pending = world.remember(ALICE, "The copper lantern hangs in the harbor office.", sync=False)

    answer = world.search(ALICE, "copper lantern harbor", mode=mode, consistent=True, explain=True)

    raw = {r.note_id: (r.scores.lexical, r.scores.semantic) for r in answer.results if r.scores}
    mine, indexed = raw[pending.note.note_id], raw[held.note.note_id]
    assert [score is None for score in mine] == [score is None for score in indexed] != [True, True]
    assert [score or 0.0 for score in mine] == pytest.approx([score or 0.0 for score in indexed], rel=1e-6)


def test_recall_context_consistent_packs_the_note_just_remembered(world: MemoryWorld) -> None:
    written = world.remember(ALICE, "The staging database is called heron.", sync=False)

    assert world.recalled(ALICE, "staging database") == []
    assert world.recalled(ALICE, "staging database", consistent=True) == [written.note.note_id]
    assert world.recalled(ALICE, consistent=True) == [written.note.note_id]
    answer = world.recall(ALICE, "staging database", consistent=True)
    assert (answer.pending_index.writes, answer.pending_index.included) == (1, True)


def test_pin_unpin_and_forget_answers_say_indexed(world: MemoryWorld) -> None:
    note = world.remember(ALICE, "The staging database is called heron.", sync=False).note

    assert world.pin(ALICE, note.note_id).indexed is False
    world.sync()
    assert world.pin(ALICE, note.note_id, order=3).indexed is True
    assert world.pins.unpin(ALICE, _unpin(note.note_id)).indexed is True
    assert world.notes.forget(ALICE, _forget(note.note_id)).indexed is True


def test_remember_with_pin_keeps_the_indexed_answer(world: MemoryWorld) -> None:
    answer = world.pins.remember(ALICE, _remember("Pinned and fresh.", pin=True)).response

    assert (answer.note.pinned, answer.indexed) == (True, False)


def _forget(note_id: str):  # type: ignore[no-untyped-def]
    from knowledge.contract.memory import ForgetMemoryArguments

    return ForgetMemoryArguments(note_id=note_id)


def _unpin(note_id: str):  # type: ignore[no-untyped-def]
    from knowledge.contract.memory import UnpinMemoryArguments

    return UnpinMemoryArguments(note_id=note_id)


def _remember(content: str, **arguments: object):  # type: ignore[no-untyped-def]
    from knowledge.contract.memory import RememberArguments

    return RememberArguments(content=content, **arguments)  # type: ignore[arg-type]
