"""NoteService: remember (create, duplicate, update by key or id, supersede, expire), forget in each
mode, restore, and the reads, with DESIGN §9's errors."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any

import pytest

from knowledge.contract.memory import ForgetMemoryArguments, RememberArguments
from knowledge.domain.memory.notes import REDACTED
from knowledge.domain.models import Permission
from knowledge.errors import (
    InsufficientScopeError,
    MemoryConflictError,
    MemoryInvalidRequestError,
    MemoryUnavailableError,
    RuntimeDisabledError,
)
from tests.unit.services.memory_world import READ, SHARE, WRITE, MemoryWorld, agent

ALICE = agent("alice", READ, WRITE, SHARE, team_ids=["red"])
BOB = agent("bob", team_ids=["red"])
MALLORY = agent("mallory")
OUTSIDER = agent("alice", tenant_id="other-tenant")


@pytest.fixture
def world() -> MemoryWorld:
    return MemoryWorld()


def test_remember_new_fact_is_created_with_the_defaults(world: MemoryWorld) -> None:
    answer = world.remember(ALICE, "The staging database is db-stage-3.")

    note = answer.note
    assert answer.result == "created"
    assert (note.version, note.scope, note.path, note.memory_type, note.importance) == (
        1,
        "private",
        "/",
        "fact",
        0.5,
    )
    assert (note.owner_id, note.status, note.pinned) == ("alice", "active", False)
    assert note.note_id.startswith("nt_")


def test_remember_same_fact_again_is_a_duplicate_and_writes_nothing(world: MemoryWorld) -> None:
    first = world.remember(ALICE, "The staging database is db-stage-3.", path="ops")

    again = world.remember(ALICE, "The staging  database is db-stage-3.\n", path="/ops/")

    assert again.result == "duplicate"
    assert again.note == first.note
    assert world.found(ALICE, "staging database") == ["The staging database is db-stage-3."]


def test_remember_same_text_by_another_principal_privately_is_its_own_note(world: MemoryWorld) -> None:
    mine = world.remember(ALICE, "I prefer tabs.")

    theirs = world.remember(BOB, "I prefer tabs.")

    assert theirs.result == "created"
    assert theirs.note.note_id != mine.note.note_id


def test_remember_by_semantic_key_updates_the_note_and_only_the_new_text_is_found(world: MemoryWorld) -> None:
    first = world.remember(ALICE, "The release train leaves on Tuesdays.", semantic_key="release.day")

    second = world.remember(ALICE, "The release train leaves on Thursdays.", semantic_key="release.day")

    assert second.result == "updated"
    assert (second.note.note_id, second.note.version) == (first.note.note_id, 2)
    assert world.found(ALICE, "release train") == ["The release train leaves on Thursdays."]
    assert world.found(ALICE, "Tuesdays", mode="lexical") == []


def test_remember_by_semantic_key_with_equal_content_is_unchanged(world: MemoryWorld) -> None:
    first = world.remember(ALICE, "Coffee is at 10.", semantic_key="coffee")

    again = world.remember(ALICE, "Coffee is at 10.", semantic_key="coffee")

    assert again.result == "unchanged"
    assert again.note == first.note


def test_remember_by_memory_id_keeps_fields_not_given(world: MemoryWorld) -> None:
    first = world.remember(
        ALICE, "Standup is at 9.", path="/team/rituals", memory_type="event", importance=0.9
    )

    second = world.remember(ALICE, "Standup is at 9:30.", memory_id=first.note.note_id, expected_version=1)

    assert (second.note.path, second.note.memory_type, second.note.importance) == (
        "/team/rituals",
        "event",
        0.9,
    )
    assert second.note.content == "Standup is at 9:30."


def test_remember_stale_expected_version_is_a_conflict_with_the_current_version(world: MemoryWorld) -> None:
    first = world.remember(ALICE, "v1", semantic_key="k")
    world.remember(ALICE, "v2", semantic_key="k")

    with pytest.raises(MemoryConflictError) as raised:
        world.remember(ALICE, "v3", memory_id=first.note.note_id, expected_version=1)

    assert raised.value.details["current_version"] == 2


def test_remember_expected_version_for_a_free_key_is_a_conflict_without_version(world: MemoryWorld) -> None:
    with pytest.raises(MemoryConflictError) as raised:
        world.remember(ALICE, "v1", semantic_key="never-used", expected_version=3)

    assert raised.value.details["current_version"] is None


def test_remember_supersedes_hides_the_old_note_from_search_but_not_from_reads(world: MemoryWorld) -> None:
    old = world.remember(ALICE, "The office wifi password rotates monthly.")

    new = world.remember(ALICE, "The office wifi password rotates weekly.", supersedes=[old.note.note_id])

    assert world.found(ALICE, "wifi password") == ["The office wifi password rotates weekly."]
    assert world.notes.get_note(ALICE, old.note.note_id).superseded_by == new.note.note_id
    assert len(world.found(ALICE, "wifi password", include_superseded=True)) == 2


def test_remember_ttl_seconds_expires_the_note_at_read_time(world: MemoryWorld) -> None:
    note = world.remember(ALICE, "The demo room is booked until noon.", ttl_seconds=60).note
    assert note.expires_at == datetime(2026, 6, 1, 9, 1, tzinfo=UTC)

    world.clock.advance(61)

    assert world.found(ALICE, "demo room") == []
    with pytest.raises(MemoryUnavailableError):
        world.notes.get_note(ALICE, note.note_id)


def test_remember_same_fact_after_expiry_is_a_new_note(world: MemoryWorld) -> None:
    first = world.remember(ALICE, "Parking is in lot B.", ttl_seconds=5)
    world.clock.advance(10)

    again = world.remember(ALICE, "Parking is in lot B.")

    assert again.result == "created"
    assert again.note.note_id != first.note.note_id


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({"content": "   "}, "content"),
        ({"content": "x" * 8_001}, "content"),
        ({"importance": 1.5}, "importance"),
        ({"semantic_key": ""}, "semantic_key"),
        ({"semantic_key": "  "}, "semantic_key"),
        ({"ttl_seconds": 0}, "ttl_seconds"),
        ({"ttl_seconds": 316_224_001}, "ttl_seconds"),
        ({"ttl_seconds": 9_223_372_036_854_775_807}, "ttl_seconds"),
        ({"ttl_seconds": 99_999_999_999_999_999_999}, "ttl_seconds"),
        ({"ttl_seconds": 5, "expires_at": datetime(2030, 1, 1, tzinfo=UTC)}, "ttl_seconds"),
        ({"expires_at": datetime(2020, 1, 1, tzinfo=UTC)}, "expires_at"),
        ({"scope": "team"}, "team_id"),
        ({"team_id": "red"}, "team_id"),
        ({"scope": "team", "team_id": "blue"}, "team_id"),
        ({"expected_version": 1}, "expected_version"),
        ({"supersedes": [f"nt_{n}" for n in range(20)]}, "supersedes"),
    ],
)
def test_remember_out_of_bounds_or_dependent_field_is_invalid(
    world: MemoryWorld, arguments: dict[str, Any], field: str
) -> None:
    values = {"content": "A fact.", **arguments}
    with pytest.raises(MemoryInvalidRequestError) as raised:
        world.notes.remember(ALICE, RememberArguments(**values))

    assert field in [problem["field"] for problem in raised.value.details["fields"]]


def test_remember_without_memory_write_is_insufficient_scope(world: MemoryWorld) -> None:
    with pytest.raises(InsufficientScopeError) as raised:
        world.remember(agent("alice", READ, Permission.WRITE), "A fact.")

    assert raised.value.details == {"required_scope": "memory:write"}


def test_remember_platform_admin_implies_memory_write(world: MemoryWorld) -> None:
    assert world.remember(agent("root", Permission.PLATFORM_ADMIN), "A fact.").result == "created"


def test_remember_with_the_runtime_switch_off_is_refused() -> None:
    world = MemoryWorld(enabled=False)
    with pytest.raises(RuntimeDisabledError):
        world.remember(ALICE, "A fact.")


def test_remember_memory_id_of_an_invisible_note_is_unavailable_like_an_absent_one(
    world: MemoryWorld,
) -> None:
    private = world.remember(ALICE, "My secret.").note

    with pytest.raises(MemoryUnavailableError) as hidden:
        world.remember(MALLORY, "Overwritten.", memory_id=private.note_id)
    with pytest.raises(MemoryUnavailableError) as absent:
        world.remember(MALLORY, "Overwritten.", memory_id="nt_01ARZ3NDEKTSV4RRFFQ69G5FAV")

    assert (hidden.value.code, hidden.value.message) == (absent.value.code, absent.value.message)


def test_remember_concurrent_same_fact_yields_one_note(world: MemoryWorld) -> None:
    def write(_: int) -> str:
        return world.notes.remember(ALICE, RememberArguments(content="Lunch is at 12.")).response.note.note_id

    with ThreadPoolExecutor(max_workers=8) as pool:
        note_ids = set(pool.map(write, range(8)))

    assert len(note_ids) == 1


def test_remember_concurrent_upserts_of_one_key_and_version_have_one_winner(world: MemoryWorld) -> None:
    world.remember(ALICE, "v1", semantic_key="race")

    def write(n: int) -> str:
        arguments = RememberArguments(content=f"writer {n}", semantic_key="race", expected_version=1)
        try:
            return world.notes.remember(ALICE, arguments).response.result
        except MemoryConflictError:
            return "conflict"

    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(write, range(8)))

    assert sorted(results) == ["conflict"] * 7 + ["updated"]


def test_remember_moving_a_keyed_note_onto_a_taken_key_is_a_conflict_that_retrying_cannot_win(
    world: MemoryWorld,
) -> None:
    world.remember(ALICE, "Tenant-wide standup is at 9.", semantic_key="standup", scope="tenant")
    private = world.remember(ALICE, "My standup is at 10.", semantic_key="standup").note

    with pytest.raises(MemoryConflictError) as raised:
        world.notes.remember(
            ALICE,
            RememberArguments(content="My standup is at 10.", memory_id=private.note_id, scope="tenant"),
        )

    assert raised.value.retryable is False
    assert "retry" not in raised.value.message.lower()
    assert raised.value.details == {"current_version": 1, "field": "semantic_key"}
    assert world.notes.get_note(ALICE, private.note_id).scope == "private"


def test_remember_losing_a_race_without_expected_version_is_a_retryable_conflict(
    world: MemoryWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    note = world.remember(ALICE, "Coffee machine: floor 3.", semantic_key="coffee").note
    commit_notes = world.store.commit_notes
    raced = []

    def another_writer_first(*args: Any, **kwargs: Any) -> None:
        if not raced:
            raced.append(True)
            world.remember(ALICE, "Coffee machine: floor 4.", semantic_key="coffee", sync=False)
        commit_notes(*args, **kwargs)

    monkeypatch.setattr(world.store, "commit_notes", another_writer_first)

    with pytest.raises(MemoryConflictError) as raised:
        world.notes.remember(
            ALICE, RememberArguments(content="Coffee machine: floor 5.", semantic_key="coffee")
        )

    assert raised.value.retryable is True
    assert raised.value.details["current_version"] == 2
    monkeypatch.setattr(world.store, "commit_notes", commit_notes)
    retried = world.notes.remember(
        ALICE, RememberArguments(content="Coffee machine: floor 5.", semantic_key="coffee")
    )
    assert (retried.response.result, retried.response.note.note_id) == ("updated", note.note_id)


def test_remember_stale_expected_version_conflict_is_not_retryable(world: MemoryWorld) -> None:
    note = world.remember(ALICE, "v1", semantic_key="pinned-version").note
    world.remember(ALICE, "v2", semantic_key="pinned-version")

    with pytest.raises(MemoryConflictError) as raised:
        world.notes.remember(
            ALICE, RememberArguments(content="v3", memory_id=note.note_id, expected_version=1)
        )

    assert raised.value.retryable is False


def test_forget_soft_hides_the_note_and_restore_brings_it_back(world: MemoryWorld) -> None:
    note = world.remember(ALICE, "The VPN needs a hardware key.").note

    world.forget(ALICE, note.note_id, "soft")
    assert world.found(ALICE, "VPN hardware key") == []
    with pytest.raises(MemoryUnavailableError):
        world.notes.get_note(ALICE, note.note_id)

    restored = world.notes.restore(ALICE, note.note_id)
    world.sync()
    assert (restored.result, restored.note.version, restored.note.status) == ("restored", 3, "active")
    assert world.found(ALICE, "VPN hardware key") == ["The VPN needs a hardware key."]


def test_forget_redact_replaces_every_version_and_cannot_be_restored(world: MemoryWorld) -> None:
    first = world.remember(ALICE, "My badge PIN is 4471.", semantic_key="pin")
    world.remember(ALICE, "My badge PIN is 9913.", semantic_key="pin")

    world.forget(ALICE, first.note.note_id, "redact")

    versions = world.store.list_note_versions("acme", first.note.note_id, limit=10, next_token=None).entries
    assert {version.content for version in versions} == {REDACTED}
    assert world.found(ALICE, "badge PIN") == []
    with pytest.raises(MemoryInvalidRequestError):
        world.notes.restore(ALICE, first.note.note_id)


def test_forget_hard_deletes_versions_index_entry_and_cached_embeddings(world: MemoryWorld) -> None:
    keep = world.remember(ALICE, "Keep this unrelated fact.").note
    note = world.remember(ALICE, "Delete me entirely, please.").note
    cached = len(world.cache)

    world.forget(ALICE, note.note_id, "hard")

    assert world.store.get_note("acme", note.note_id) is None
    assert world.store.list_note_versions("acme", note.note_id, limit=10, next_token=None).entries == []
    assert world.found(ALICE, "delete entirely", mode="lexical") == []
    assert len(world.index) == 1
    assert len(world.cache) == cached - 1
    assert world.notes.get_note(ALICE, keep.note_id).content == "Keep this unrelated fact."


def test_forget_hard_that_loses_a_race_with_an_upsert_is_a_conflict_and_deletes_nothing(
    world: MemoryWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    note = world.remember(ALICE, "Racing fact v1.", semantic_key="race").note
    delete_note = world.store.delete_note

    def upsert_first(*args: Any, **kwargs: Any) -> None:
        world.remember(ALICE, "Racing fact v2.", semantic_key="race")  # a writer wins meanwhile
        delete_note(*args, **kwargs)

    monkeypatch.setattr(world.store, "delete_note", upsert_first)

    with pytest.raises(MemoryConflictError) as raised:
        world.notes.forget(ALICE, ForgetMemoryArguments(note_id=note.note_id, mode="hard"))

    assert raised.value.details["current_version"] == 2
    versions = world.notes.list_versions(ALICE, note.note_id, limit=None, next_token=None).versions
    assert [version.content for version in versions] == ["Racing fact v2.", "Racing fact v1."]
    assert world.notes.get_note(ALICE, note.note_id).content == "Racing fact v2."


def test_forget_note_of_another_principal_is_unavailable(world: MemoryWorld) -> None:
    note = world.remember(ALICE, "Private plan.").note

    with pytest.raises(MemoryUnavailableError):
        world.notes.forget(MALLORY, ForgetMemoryArguments(note_id=note.note_id, mode="hard"))
    with pytest.raises(MemoryUnavailableError):
        world.notes.forget(OUTSIDER, ForgetMemoryArguments(note_id=note.note_id, mode="hard"))

    assert world.notes.get_note(ALICE, note.note_id).content == "Private plan."


def test_forget_soft_twice_is_unavailable(world: MemoryWorld) -> None:
    note = world.remember(ALICE, "Once.").note
    world.forget(ALICE, note.note_id, "soft")

    with pytest.raises(MemoryUnavailableError):
        world.forget(ALICE, note.note_id, "soft")


def test_get_note_team_note_is_read_by_a_team_member_only(world: MemoryWorld) -> None:
    note = world.remember(ALICE, "Red team deploys with blue-green.", scope="team", team_id="red").note

    assert world.notes.get_note(BOB, note.note_id).content == "Red team deploys with blue-green."
    with pytest.raises(MemoryUnavailableError):
        world.notes.get_note(MALLORY, note.note_id)


def test_get_note_without_memory_read_is_insufficient_scope(world: MemoryWorld) -> None:
    note = world.remember(ALICE, "A fact.").note

    with pytest.raises(InsufficientScopeError):
        world.notes.get_note(agent("alice", WRITE), note.note_id)


def test_list_versions_newest_first_in_pages(world: MemoryWorld) -> None:
    for n in range(1, 4):
        note = world.remember(ALICE, f"Version {n}.", semantic_key="versions").note

    first = world.notes.list_versions(ALICE, note.note_id, limit=2, next_token=None)
    rest = world.notes.list_versions(ALICE, note.note_id, limit=2, next_token=first.next_token)

    assert [v.content for v in first.versions] == ["Version 3.", "Version 2."]
    assert [v.content for v in rest.versions] == ["Version 1."]
    assert rest.next_token is None
    with pytest.raises(MemoryInvalidRequestError):
        world.notes.list_versions(ALICE, note.note_id, limit=0, next_token=None)


def test_restore_of_an_active_note_answers_it_unchanged(world: MemoryWorld) -> None:
    note = world.remember(ALICE, "Still here.").note

    answer = world.notes.restore(ALICE, note.note_id)

    assert (answer.result, answer.note) == ("unchanged", note)


def test_restore_when_another_note_now_holds_the_fact_is_a_conflict(world: MemoryWorld) -> None:
    first = world.remember(ALICE, "The vault code changes monthly.").note
    world.forget(ALICE, first.note_id, "soft")
    world.remember(ALICE, "The vault code changes monthly.")

    with pytest.raises(MemoryConflictError) as raised:
        world.notes.restore(ALICE, first.note_id)

    assert raised.value.details["current_version"] == 2


def test_remember_a_note_that_supersedes_itself_is_invalid(world: MemoryWorld) -> None:
    note = world.remember(ALICE, "Self.", semantic_key="self").note

    with pytest.raises(MemoryInvalidRequestError):
        world.remember(ALICE, "Self again.", semantic_key="self", supersedes=[note.note_id])


def test_remember_superseding_an_already_superseded_note_is_invalid_and_writes_nothing(
    world: MemoryWorld,
) -> None:
    old = world.remember(ALICE, "Standup is at nine.").note
    first = world.remember(ALICE, "Standup is at ten.", supersedes=[old.note_id]).note

    with pytest.raises(MemoryInvalidRequestError) as raised:
        world.remember(ALICE, "Standup is at eleven.", supersedes=[old.note_id])

    assert raised.value.details["fields"] == [
        {"field": "supersedes", "problem": f"{old.note_id} is superseded by {first.note_id}"}
    ]
    assert world.notes.get_note(ALICE, old.note_id).superseded_by == first.note_id
    assert world.found(ALICE, "standup") == ["Standup is at ten."]


def test_forget_redact_twice_keeps_the_note_redacted(world: MemoryWorld) -> None:
    note = world.remember(ALICE, "Secret twice.").note
    world.forget(ALICE, note.note_id, "redact")

    world.forget(ALICE, note.note_id, "redact")

    versions = world.store.list_note_versions("acme", note.note_id, limit=10, next_token=None).entries
    assert [(v.version, v.content) for v in versions] == [(2, REDACTED), (1, REDACTED)]


def test_forget_hard_of_a_softly_forgotten_note_deletes_it(world: MemoryWorld) -> None:
    note = world.remember(ALICE, "Soft, then hard.").note
    world.forget(ALICE, note.note_id, "soft")

    world.forget(ALICE, note.note_id, "hard")

    assert world.store.get_note("acme", note.note_id) is None


def test_search_memory_with_the_runtime_switch_off_is_refused() -> None:
    with pytest.raises(RuntimeDisabledError):
        MemoryWorld(enabled=False).search(ALICE, "anything")
