"""The store contract for the stored items quota: a tenant's live knowledge items and notes are
counted exactly, in the same atomic write as each create, archive and hard delete; a create past
the limit is ``StoredItemsQuotaError`` and stores nothing; tenants are counted apart. The same on
every adapter."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime

import pytest

from knowledge.domain.memory.lifecycle import NoteDraft, NoteWrite, new_note, revised_note
from knowledge.domain.memory.notes import MemoryType, Note, claims_of
from knowledge.domain.models import KnowledgeBase, KnowledgeItem, Scope, Source
from knowledge.errors import StoredItemsQuotaError
from knowledge.ports import KnowledgeStore
from tests.integration.store_contract.conftest import OTHER_TENANT, TENANT, StoreFactory
from tests.support.store import TickingClock, make_base

LIMIT = 3
NOW = datetime(2026, 6, 1, tzinfo=UTC)


@pytest.fixture
def capped(new_store: StoreFactory) -> KnowledgeStore:
    return new_store(clock=TickingClock(), stored_items_limit=LIMIT)


@pytest.fixture
def capped_base(capped: KnowledgeStore) -> KnowledgeBase:
    return make_base(capped, TENANT)


def _item(store: KnowledgeStore, base: KnowledgeBase, title: str = "Runbook") -> KnowledgeItem:
    item, _ = store.create_item(
        base.tenant_id,
        base.knowledge_base_id,
        title=title,
        content=f"{title}: blue-green deployments switch traffic at the router.",
        source=Source(),
        external_id=None,
        publish=True,
    )
    return item


def _draft(content: str) -> NoteDraft:
    return NoteDraft(
        content=content,
        scope=Scope.PRIVATE,
        team_id=None,
        agent_id="agent-1",
        path="/projects/alpha",
        memory_type=MemoryType.FACT,
        importance=0.5,
        semantic_key=None,
        expires_at=None,
    )


def _new_note(tenant_id: str, content: str) -> Note:
    return new_note(tenant_id, "user-1", _draft(content), supersedes=(), now=NOW)


def _remember(store: KnowledgeStore, content: str, tenant_id: str = TENANT) -> Note:
    note = _new_note(tenant_id, content)
    store.commit_notes(tenant_id, [NoteWrite(previous=None, note=note, claim=tuple(claims_of(note)))])
    return note


def test_stored_items_quota_counts_items_and_notes_together_up_to_the_limit(
    capped: KnowledgeStore, capped_base: KnowledgeBase
) -> None:
    _item(capped, capped_base, "First")
    _remember(capped, "The build runs on Python 3.11.")
    _item(capped, capped_base, "Second")

    with pytest.raises(StoredItemsQuotaError) as item_refused:
        _item(capped, capped_base, "Third")
    with pytest.raises(StoredItemsQuotaError):
        _remember(capped, "Deployments go out on Tuesdays.")

    assert item_refused.value.details == {"quota": "stored_items", "limit": LIMIT}
    listed = capped.list_items(TENANT, capped_base.knowledge_base_id, limit=20, next_token=None).entries
    assert sorted(item.title for item in listed) == ["First", "Second"]


def test_stored_items_quota_refused_commit_applies_none_of_its_notes(capped: KnowledgeStore) -> None:
    _remember(capped, "The build runs on Python 3.11.")
    batch = [_new_note(TENANT, f"Fact number {n}.") for n in range(LIMIT)]

    with pytest.raises(StoredItemsQuotaError):
        capped.commit_notes(TENANT, [NoteWrite(previous=None, note=note) for note in batch])

    assert capped.get_notes(TENANT, [note.note_id for note in batch]) == {}
    _remember(capped, "Deployments go out on Tuesdays.")  # the refused commit took no room


def test_stored_items_quota_hard_delete_and_archive_free_room(
    capped: KnowledgeStore, capped_base: KnowledgeBase
) -> None:
    item = _item(capped, capped_base, "First")
    note = _remember(capped, "The build runs on Python 3.11.")
    _remember(capped, "Deployments go out on Tuesdays.")

    capped.delete_note(TENANT, note.note_id, claims=claims_of(note), expected_version=note.version)
    _remember(capped, "Releases are tagged from main.")
    capped.archive_item(TENANT, item.knowledge_item_id, expected_version=item.version)
    _item(capped, capped_base, "Second")

    with pytest.raises(StoredItemsQuotaError):
        _item(capped, capped_base, "Third")


def test_stored_items_quota_revisions_and_note_versions_take_no_room(
    capped: KnowledgeStore, capped_base: KnowledgeBase
) -> None:
    item = _item(capped, capped_base, "First")
    note = _remember(capped, "The build runs on Python 3.11.")
    for n in range(LIMIT + 1):
        item, _ = capped.add_revision(
            TENANT,
            item.knowledge_item_id,
            content=f"Revision {n} of the runbook.",
            title=None,
            source=None,
            publish=True,
            expected_version=item.version,
        )
        revised = revised_note(note, _draft(f"The build runs on Python 3.1{n}."), supersedes=(), now=NOW)
        capped.commit_notes(TENANT, [NoteWrite(previous=note, note=revised)])
        note = revised

    _item(capped, capped_base, "Second")  # the third and last stored item


def test_stored_items_quota_tenants_are_counted_apart(
    capped: KnowledgeStore, capped_base: KnowledgeBase
) -> None:
    for n in range(LIMIT):
        _remember(capped, f"Fact number {n}.")

    _remember(capped, "Fact number 0.", tenant_id=OTHER_TENANT)
    _item(capped, make_base(capped, OTHER_TENANT))

    with pytest.raises(StoredItemsQuotaError):
        _item(capped, capped_base)


def test_stored_items_quota_concurrent_creators_store_exactly_the_limit(
    capped: KnowledgeStore, capped_base: KnowledgeBase
) -> None:
    writers = 8

    def create(n: int) -> str:
        try:
            if n % 2:
                _item(capped, capped_base, f"Item {n}")
            else:
                _remember(capped, f"Fact number {n}.")
        except StoredItemsQuotaError:
            return "refused"
        return "stored"

    with ThreadPoolExecutor(max_workers=writers) as pool:
        outcomes = list(pool.map(create, range(writers)))

    assert sorted(outcomes) == ["refused"] * (writers - LIMIT) + ["stored"] * LIMIT


def test_stored_items_quota_of_zero_counts_without_a_limit(new_store: StoreFactory) -> None:
    store = new_store(clock=TickingClock(), stored_items_limit=0)
    base = make_base(store, TENANT)

    for n in range(LIMIT + 2):
        _item(store, base, f"Item {n}")
        _remember(store, f"Fact number {n}.")


def test_stored_items_quota_note_removed_by_its_expiry_frees_one_slot_once(capped: KnowledgeStore) -> None:
    expired = _remember(capped, "The build runs on Python 3.11.")
    _remember(capped, "Deployments go out on Tuesdays.")
    _remember(capped, "Releases are tagged from main.")

    first = capped.release_expired_note(TENANT, expired.note_id)
    again = capped.release_expired_note(TENANT, expired.note_id)

    assert (first, again) == (True, False)
    _remember(capped, "Builds run on arm64.")
    with pytest.raises(StoredItemsQuotaError):
        _remember(capped, "The wiki lives in the ops space.")


def test_stored_items_quota_expired_note_never_takes_the_count_below_zero(capped: KnowledgeStore) -> None:
    uncounted = _new_note(TENANT, "Stored before the counter existed.")

    assert capped.release_expired_note(TENANT, uncounted.note_id) is False
    for n in range(LIMIT):
        _remember(capped, f"Fact number {n}.")
    assert capped.release_expired_note(TENANT, uncounted.note_id) is False  # counted out once already
    with pytest.raises(StoredItemsQuotaError):
        _remember(capped, "One fact too many.")


def test_stored_items_quota_expired_notes_of_one_tenant_free_none_of_another(
    capped: KnowledgeStore,
) -> None:
    note = _remember(capped, "Fact number 0.", tenant_id=OTHER_TENANT)
    for n in range(LIMIT):
        _remember(capped, f"Fact number {n}.")

    assert capped.release_expired_note(OTHER_TENANT, note.note_id) is True

    with pytest.raises(StoredItemsQuotaError):
        _remember(capped, "One fact too many.")


def test_read_counters_tells_notes_from_items_as_they_come_and_go(
    capped: KnowledgeStore, capped_base: KnowledgeBase
) -> None:
    _item(capped, capped_base, "First")
    kept = _remember(capped, "The build runs on Python 3.11.")
    gone = _remember(capped, "The deploy freeze starts on Friday.")
    before = capped.read_counters(TENANT)

    capped.delete_note(TENANT, gone.note_id, claims=claims_of(gone), expected_version=1)
    capped.release_expired_note(TENANT, kept.note_id)  # its expiry counted out

    after = capped.read_counters(TENANT)
    assert (before.stored, before.notes) == (3, 2)
    assert (after.stored, after.notes) == (1, 0)
    assert capped.read_counters(OTHER_TENANT)[1:] == (0, 0, 0)
