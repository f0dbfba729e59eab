"""forget_memory's dry run and receipt: for every mode, a dry run writes nothing and lists exactly
what the real call then removes, store by store, and the indexes lose exactly the documents the
receipt names once the indexer has run."""

from __future__ import annotations

import copy
import hashlib
from typing import Any

import pytest

from knowledge.adapters.embedding_cache import embedding_key
from knowledge.contract.deletion import DeletionReceipt
from knowledge.contract.memory import ForgetMemoryArguments
from knowledge.domain.models import Principal
from knowledge.errors import InsufficientScopeError, MemoryUnavailableError
from tests.unit.services.memory_world import READ, SHARE, WRITE, MemoryWorld, agent

ALICE = agent("alice", READ, WRITE, SHARE, team_ids=["red"])
BOB = agent("bob", READ, WRITE, team_ids=["red"])
TENANT = "acme"


@pytest.fixture
def world() -> MemoryWorld:
    return MemoryWorld()


def _state(world: MemoryWorld) -> dict[str, Any]:
    store: Any = world.store
    return {
        "notes": copy.deepcopy(store._notes),
        "versions": copy.deepcopy(store._note_versions),
        "claims": copy.deepcopy(store._claims),
        "pins": copy.deepcopy(store._pins),
        "cache": len(world.cache),
        "index": world.index.document_ids(TENANT),  # type: ignore[attr-defined]
        "history": world.history.document_ids(TENANT),  # type: ignore[attr-defined]
    }


def _forget(
    world: MemoryWorld, principal: Principal, note_id: str, mode: str, *, dry_run: bool
) -> DeletionReceipt:
    answer = world.notes.forget(
        principal,
        ForgetMemoryArguments(note_id=note_id, mode=mode, dry_run=dry_run),  # type: ignore[arg-type]
    )
    assert answer.dry_run is dry_run
    assert answer.receipt.dry_run is dry_run
    return answer.receipt


def _ids(receipt: DeletionReceipt, store: str, kind: str) -> set[str]:
    found = [entry for entry in receipt.stores()[store] if entry.kind == kind]
    assert all(entry.count == len(entry.ids) for entry in found)
    return {identifier for entry in found for identifier in entry.ids}


def _seed(world: MemoryWorld, *, soft_first: bool = False) -> str:
    world.remember(ALICE, "An unrelated fact that stays.")
    first = world.remember(ALICE, "The deploy window is Monday 09:00.", semantic_key="deploy.window").note
    world.remember(ALICE, "The deploy window is Tuesday 10:00.", semantic_key="deploy.window")
    world.pin(ALICE, first.note_id)
    world.sync()
    if soft_first:
        world.forget(ALICE, first.note_id, "soft")
    return first.note_id


@pytest.mark.parametrize(
    ("mode", "soft_first"),
    [("soft", False), ("redact", False), ("hard", False), ("redact", True), ("hard", True)],
)
def test_forget_dry_run_writes_nothing_and_lists_what_the_real_call_removes(
    world: MemoryWorld, mode: str, soft_first: bool
) -> None:
    check_forget_receipt(world, mode, soft_first=soft_first)


def check_forget_receipt(world: MemoryWorld, mode: str, *, soft_first: bool) -> None:
    """Dry run, then the real call, of forgetting a pinned two-version note in ``mode``: the dry
    run changes nothing, the lists are equal, and every store lost exactly what the receipt names."""
    note_id = _seed(world, soft_first=soft_first)
    before = _state(world)

    preview = _forget(world, ALICE, note_id, mode, dry_run=True)
    world.sync()
    assert _state(world) == before

    receipt = _forget(world, ALICE, note_id, mode, dry_run=False)
    assert receipt.stores() == preview.stores()

    world.sync()
    after = _state(world)
    assert before["index"] - after["index"] == _ids(receipt, "index", "note")
    assert before["history"] - after["history"] == _ids(receipt, "index", "note_history")
    pin_ids = {pin.pin_id for pin in before["pins"].values()} - {pin.pin_id for pin in after["pins"].values()}
    assert pin_ids == _ids(receipt, "pins", "pin")
    assert before["cache"] - after["cache"] == len(_ids(receipt, "embedding_cache", "cached_vector"))
    assert receipt.queued_messages == []
    assert after["index"] or after["history"]  # the unrelated note stays


def test_forget_hard_receipt_names_every_version_claim_and_cached_text(world: MemoryWorld) -> None:
    note_id = _seed(world)
    versions = world.store.list_note_versions(TENANT, note_id, limit=10, next_token=None).entries

    receipt = _forget(world, ALICE, note_id, "hard", dry_run=False)

    assert _ids(receipt, "table", "note") == {note_id}
    assert _ids(receipt, "table", "note_version") == {f"{note_id}@{version.version}" for version in versions}
    assert len(_ids(receipt, "table", "note_claim")) == 2  # the key claim and the content claim
    assert _ids(receipt, "embedding_cache", "cached_vector") == {
        hashlib.sha256(version.content.encode()).hexdigest() for version in versions
    }
    assert {entry.state for entry in receipt.index} == {"scheduled"}
    assert world.store.list_note_versions(TENANT, note_id, limit=10, next_token=None).entries == []


def test_forget_redact_receipt_names_the_forgetting_version_too(world: MemoryWorld) -> None:
    note_id = _seed(world)
    texts = [
        version.content
        for version in world.store.list_note_versions(TENANT, note_id, limit=10, next_token=None).entries
    ]
    keys = [embedding_key(world.embedder.model_id, world.embedder.dimension, text) for text in texts]
    assert len(world.cache.get_many(keys)) == 2

    receipt = _forget(world, ALICE, note_id, "redact", dry_run=False)

    # a cached vector of a redacted text would outlive the text: its rows go too
    assert _ids(receipt, "embedding_cache", "cached_vector") == {
        hashlib.sha256(text.encode()).hexdigest() for text in texts
    }
    assert world.cache.get_many(keys) == {}

    assert _ids(receipt, "table", "note_version") == {f"{note_id}@{number}" for number in (1, 2, 3)}
    assert [entry.state for entry in receipt.table] == ["redacted"]
    stored = world.store.list_note_versions(TENANT, note_id, limit=10, next_token=None).entries
    assert {f"{note_id}@{version.version}" for version in stored} == _ids(receipt, "table", "note_version")


def test_forget_soft_receipt_hides_the_note_and_schedules_its_index_document(world: MemoryWorld) -> None:
    note_id = _seed(world)

    receipt = _forget(world, ALICE, note_id, "soft", dry_run=False)

    assert [(entry.kind, entry.ids, entry.state) for entry in receipt.table] == [
        ("note", [note_id], "hidden")
    ]
    assert [(entry.kind, entry.ids, entry.state) for entry in receipt.index] == [
        ("note", [note_id], "scheduled")
    ]
    assert receipt.pins == receipt.embedding_cache == []


def test_forget_dry_run_of_another_principals_note_is_unavailable(world: MemoryWorld) -> None:
    note_id = _seed(world)

    with pytest.raises(MemoryUnavailableError):
        _forget(world, BOB, note_id, "hard", dry_run=True)


def test_forget_dry_run_without_write_scope_is_refused(world: MemoryWorld) -> None:
    note_id = _seed(world)

    with pytest.raises(InsufficientScopeError):
        _forget(world, agent("alice", READ), note_id, "hard", dry_run=True)
