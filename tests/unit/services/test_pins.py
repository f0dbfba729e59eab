"""PinService: one pin per note, idempotent pinning, unpinning, listing the pins a caller can see,
and remember with ``pin``."""

from __future__ import annotations

import base64
from datetime import timedelta

import pytest

from knowledge.contract.memory import PinMemoryArguments, RememberArguments
from knowledge.domain.models import Permission
from knowledge.errors import (
    InsufficientScopeError,
    MemoryConflictError,
    MemoryInvalidRequestError,
    MemoryUnavailableError,
    RequestValidationError,
)
from tests.unit.services.memory_world import ADMIN, READ, SHARE, WRITE, MemoryWorld, agent

ALICE = agent("alice", READ, WRITE, SHARE, team_ids=["red"])
BOB = agent("bob", READ, WRITE, SHARE, team_ids=["red"])
RED_ADMIN = agent("rita", READ, WRITE, SHARE, ADMIN, team_ids=["red"])
MALLORY = agent("mallory", team_ids=["blue"])
OTHER_TENANT = agent("alice", tenant_id="globex", team_ids=["red"])


@pytest.fixture
def world() -> MemoryWorld:
    return MemoryWorld()


def test_pin_memory_creates_one_pin_and_pinning_again_returns_it(world: MemoryWorld) -> None:
    note = world.remember(ALICE, "The release train leaves on Thursdays.").note

    first = world.pins.pin(ALICE, PinMemoryArguments(note_id=note.note_id, reason="release rule"))
    again = world.pins.pin(ALICE, PinMemoryArguments(note_id=note.note_id))

    assert first.created is True
    assert again.created is False
    assert again.pin == first.pin
    assert first.pin.reason == "release rule"
    assert first.pin.order == 0
    assert first.pin.pin_id.startswith("pn_")
    assert world.notes.get_note(ALICE, note.note_id).pinned is True


def test_pin_memory_again_with_other_values_keeps_the_pin_and_changes_them(world: MemoryWorld) -> None:
    note = world.remember(ALICE, "The release train leaves on Thursdays.").note
    first = world.pin(ALICE, note.note_id, reason="release rule")
    world.clock.advance(5)

    changed = world.pin(ALICE, note.note_id, order=3)

    assert (changed.pin_id, changed.created_at, changed.reason) == (
        first.pin_id,
        first.created_at,
        "release rule",
    )
    assert changed.order == 3


def test_pin_applies_to_every_caller_who_can_see_the_note_and_only_a_memory_admin_may_unpin_it(
    world: MemoryWorld,
) -> None:
    note = world.remember(ALICE, "Red team deploys go through Bob.", scope="team", team_id="red").note
    world.pin(ALICE, note.note_id)

    assert [pin.note_id for pin in world.pins.list_pins(BOB, limit=None, next_token=None).pins] == [
        note.note_id
    ]
    assert world.pins.list_pins(MALLORY, limit=None, next_token=None).pins == []
    assert world.pins.list_pins(OTHER_TENANT, limit=None, next_token=None).pins == []
    with pytest.raises(InsufficientScopeError) as refused:
        world.unpin(BOB, note.note_id)
    assert refused.value.details == {"required_scope": "memory:admin"}
    assert world.unpin(RED_ADMIN, note.note_id) is True
    assert world.pins.list_pins(ALICE, limit=None, next_token=None).pins == []


@pytest.mark.parametrize("stranger", [MALLORY, OTHER_TENANT])
def test_pin_and_unpin_of_a_note_the_caller_cannot_see_is_memory_unavailable(
    world: MemoryWorld, stranger
) -> None:  # type: ignore[no-untyped-def]
    note = world.remember(ALICE, "Alice's private fact.").note

    with pytest.raises(MemoryUnavailableError):
        world.pin(stranger, note.note_id)
    with pytest.raises(MemoryUnavailableError):
        world.unpin(stranger, note.note_id)
    assert world.notes.get_note(ALICE, note.note_id).pinned is False


def test_pin_of_an_absent_note_is_memory_unavailable(world: MemoryWorld) -> None:
    with pytest.raises(MemoryUnavailableError):
        world.pin(ALICE, "nt_01J0000000000000000000000Z")


@pytest.mark.parametrize("note_id", ["not-an-id", "", "kb_01J0000000000000000000000Z"])
def test_pin_and_unpin_of_a_malformed_note_id_name_the_expected_shape(
    world: MemoryWorld, note_id: str
) -> None:
    for call in (world.pin, world.unpin):
        with pytest.raises(RequestValidationError, match="note_id"):
            call(ALICE, note_id)


def test_unpin_of_a_note_without_a_pin_changes_nothing(world: MemoryWorld) -> None:
    note = world.remember(ALICE, "Unpinned fact.").note

    assert world.unpin(ALICE, note.note_id) is False
    assert world.unpin(ALICE, note.note_id) is False


def test_pin_of_a_forgotten_or_superseded_note_is_refused(world: MemoryWorld) -> None:
    old = world.remember(ALICE, "The office is on floor 3.").note
    world.remember(ALICE, "The office is on floor 5.", supersedes=[old.note_id])
    forgotten = world.remember(ALICE, "A forgotten fact.").note
    world.forget(ALICE, forgotten.note_id)

    with pytest.raises(MemoryInvalidRequestError) as raised:
        world.pin(ALICE, old.note_id)
    assert raised.value.details["fields"][0]["field"] == "note_id"
    with pytest.raises(MemoryUnavailableError):
        world.pin(ALICE, forgotten.note_id)


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({"order": -1}, "order"),
        ({"order": 1_000_000}, "order"),
        ({"expires_at": "2020-01-01T00:00:00Z"}, "expires_at"),
    ],
)
def test_pin_out_of_bounds_is_memory_invalid_request(world: MemoryWorld, arguments: dict, field: str) -> None:  # type: ignore[type-arg]
    note = world.remember(ALICE, "A fact.").note

    with pytest.raises(MemoryInvalidRequestError) as raised:
        world.pins.pin(ALICE, PinMemoryArguments.model_validate({"note_id": note.note_id, **arguments}))

    assert [problem["field"] for problem in raised.value.details["fields"]] == [field]


def test_pins_need_memory_write_to_change_and_memory_read_to_list(world: MemoryWorld) -> None:
    note = world.remember(ALICE, "A fact.").note
    reader = agent("alice", Permission.MEMORY_READ, team_ids=["red"])
    writer = agent("alice", Permission.MEMORY_WRITE, team_ids=["red"])

    with pytest.raises(InsufficientScopeError):
        world.pin(reader, note.note_id)
    with pytest.raises(InsufficientScopeError):
        world.unpin(reader, note.note_id)
    with pytest.raises(InsufficientScopeError):
        world.pins.list_pins(writer, limit=None, next_token=None)


def test_list_pins_pages_in_pin_order_and_leaves_out_pins_that_no_longer_apply(world: MemoryWorld) -> None:
    notes = [world.remember(ALICE, f"Pinned fact number {n}.").note for n in range(5)]
    for position, note in enumerate(notes):
        world.clock.advance(1)
        world.pin(ALICE, note.note_id, order=4 - position)
    world.forget(ALICE, notes[0].note_id)  # order 4: gone from the listing
    world.pin(ALICE, notes[1].note_id, expires_at=world.clock.now + timedelta(seconds=10))
    world.clock.advance(11)  # order 3's pin expired

    first = world.pins.list_pins(ALICE, limit=2, next_token=None)
    rest = world.pins.list_pins(ALICE, limit=2, next_token=first.next_token)

    assert [pin.note_id for pin in first.pins + rest.pins] == [
        notes[4].note_id,
        notes[3].note_id,
        notes[2].note_id,
    ]
    with pytest.raises(MemoryInvalidRequestError):
        world.pins.list_pins(ALICE, limit=101, next_token=None)
    with pytest.raises(RequestValidationError):
        world.pins.list_pins(BOB, limit=2, next_token="not-a-token")


def test_remember_with_pin_pins_the_note_it_answers(world: MemoryWorld) -> None:
    remembered = world.pins.remember(ALICE, RememberArguments(content="Always answer in French.", pin=True))
    duplicate = world.pins.remember(ALICE, RememberArguments(content="Always answer in French.", pin=True))

    assert remembered.created is True
    assert remembered.response.note.pinned is True
    assert duplicate.response.result == "duplicate"
    assert [pin.note_id for pin in world.pins.list_pins(ALICE, limit=None, next_token=None).pins] == [
        remembered.response.note.note_id
    ]


def test_a_pinned_note_stays_pinned_across_updates_and_its_versions_say_so(world: MemoryWorld) -> None:
    note = world.remember(ALICE, "Deploy window: 10:00.", semantic_key="deploy-window").note
    world.pin(ALICE, note.note_id)

    updated = world.remember(ALICE, "Deploy window: 11:00.", semantic_key="deploy-window").note
    versions = world.notes.list_versions(ALICE, note.note_id, limit=None, next_token=None).versions

    assert updated.version == 2
    assert updated.pinned is True
    assert [version.pinned for version in versions] == [True, True]
    assert world.store.get_pin(ALICE.tenant_id, note.note_id) is not None


def test_list_pins_pages_are_full_and_their_tokens_name_only_pins_the_caller_sees(world: MemoryWorld) -> None:
    hidden = []
    for n in range(6):
        hidden.append(world.remember(ALICE, f"Alice's private pinned fact {n}.").note.note_id)
        world.pin(ALICE, hidden[-1])
    team = [
        world.remember(ALICE, f"Red team fact {n}.", scope="team", team_id="red").note.note_id
        for n in range(3)
    ]
    for note_id in team:
        world.clock.advance(1)
        world.pin(ALICE, note_id)

    first = world.pins.list_pins(BOB, limit=2, next_token=None)
    rest = world.pins.list_pins(BOB, limit=2, next_token=first.next_token)

    assert [pin.note_id for pin in first.pins] == team[:2]
    assert [pin.note_id for pin in rest.pins] == team[2:]
    assert rest.next_token is None
    decoded = base64.urlsafe_b64decode(first.next_token + "==").decode()  # type: ignore[operator]
    assert not any(note_id in decoded for note_id in hidden)


def test_pinning_again_after_a_pin_expired_makes_a_new_pin(world: MemoryWorld) -> None:
    note = world.remember(ALICE, "A briefly pinned fact.").note
    old = world.pin(ALICE, note.note_id, expires_at=world.clock.now + timedelta(seconds=5))
    world.clock.advance(6)

    again = world.pins.pin(ALICE, PinMemoryArguments(note_id=note.note_id))

    assert again.created is True
    assert again.pin.pin_id != old.pin_id
    assert again.pin.expires_at is None
    assert again.pin.created_at == world.clock.now


def test_pins_of_superseded_notes_are_not_listed_and_a_redact_deletes_the_pin(world: MemoryWorld) -> None:
    old = world.remember(ALICE, "The office is on floor 3.").note
    redacted = world.remember(ALICE, "A fact to redact.").note
    world.pin(ALICE, old.note_id)
    world.pin(ALICE, redacted.note_id)

    world.remember(ALICE, "The office is on floor 5.", supersedes=[old.note_id])
    world.forget(ALICE, redacted.note_id, "redact")

    assert world.pins.list_pins(ALICE, limit=None, next_token=None).pins == []
    assert world.store.get_pin(ALICE.tenant_id, redacted.note_id) is None
    assert world.store.get_pin(ALICE.tenant_id, old.note_id) is not None  # inert, kept with its note


def test_a_replayable_pin_answer_is_refused_once_the_pin_is_gone(world: MemoryWorld) -> None:
    note = world.remember(ALICE, "Pinned then unpinned.").note
    pin = world.pin(ALICE, note.note_id)
    world.pins.replayable(ALICE, note.note_id, pin.pin_id)

    world.unpin(ALICE, note.note_id)

    with pytest.raises(MemoryConflictError, match="pin again with a new key"):
        world.pins.replayable(ALICE, note.note_id, pin.pin_id)


def test_supersedes_with_a_malformed_id_names_the_supersedes_field(world: MemoryWorld) -> None:
    with pytest.raises(RequestValidationError) as raised:
        world.remember(ALICE, "New fact.", supersedes=["nt_bad"])

    assert raised.value.details["fields"][0]["field"] == "supersedes"
