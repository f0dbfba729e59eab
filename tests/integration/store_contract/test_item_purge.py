"""The store contract: ``purge_item`` deletes the item and every record of it for good."""

from __future__ import annotations

import pytest

from knowledge.domain.models import KnowledgeBase, Source
from knowledge.errors import ConflictError, ResourceUnavailableError
from knowledge.ports import KnowledgeStore
from tests.integration.store_contract.conftest import TENANT


def _item_with_two_revisions(store: KnowledgeStore, base: KnowledgeBase) -> str:
    item, _ = store.create_item(
        TENANT,
        base.knowledge_base_id,
        title="Runbook",
        content="Restart the service. " * 40,
        source=Source(),
        external_id="runbook.md",
        publish=True,
    )
    store.add_revision(
        TENANT,
        item.knowledge_item_id,
        content="Page it.",
        title=None,
        source=None,
        publish=True,
        expected_version=1,
    )
    return item.knowledge_item_id


def test_purge_item_deletes_item_revisions_content_states_and_guard(
    store: KnowledgeStore, base: KnowledgeBase
) -> None:
    item_id = _item_with_two_revisions(store, base)
    revisions = store.list_revisions(TENANT, item_id, limit=10, next_token=None).entries
    stored_before = store.read_counters(TENANT).stored

    store.purge_item(TENANT, item_id, expected_version=2)

    assert store.get_item(TENANT, item_id) is None
    assert store.list_revisions(TENANT, item_id, limit=10, next_token=None).entries == []
    assert all(store.get_revision(TENANT, item_id, r.knowledge_revision_id) is None for r in revisions)
    assert store.list_item_states(TENANT, item_id) == []
    assert store.find_item_by_external_id(TENANT, base.knowledge_base_id, "runbook.md") is None
    assert store.read_counters(TENANT).stored == stored_before - 1


def test_purge_item_of_an_archived_item_leaves_the_count_alone(
    store: KnowledgeStore, base: KnowledgeBase
) -> None:
    item_id = _item_with_two_revisions(store, base)
    store.archive_item(TENANT, item_id, expected_version=2)
    counted = store.read_counters(TENANT).stored

    store.purge_item(TENANT, item_id, expected_version=3)

    assert store.get_item(TENANT, item_id) is None
    assert store.read_counters(TENANT).stored == counted


def test_purge_item_stale_version_raises_conflict_and_deletes_nothing(
    store: KnowledgeStore, base: KnowledgeBase
) -> None:
    item_id = _item_with_two_revisions(store, base)

    with pytest.raises(ConflictError) as raised:
        store.purge_item(TENANT, item_id, expected_version=1)

    assert raised.value.current_version == 2
    assert store.get_item(TENANT, item_id) is not None
    assert len(store.list_revisions(TENANT, item_id, limit=10, next_token=None).entries) == 2
    assert len(store.list_item_states(TENANT, item_id)) == 2


def test_purge_item_absent_raises_resource_unavailable(store: KnowledgeStore, base: KnowledgeBase) -> None:
    item_id = _item_with_two_revisions(store, base)
    store.purge_item(TENANT, item_id, expected_version=2)

    with pytest.raises(ResourceUnavailableError):
        store.purge_item(TENANT, item_id, expected_version=2)


@pytest.mark.parametrize("archived", [False, True], ids=["live", "archived"])
def test_purge_item_gives_back_its_stored_bytes_and_drops_its_unindexed_mark(
    store: KnowledgeStore, base: KnowledgeBase, archived: bool
) -> None:
    before = store.read_counters(TENANT)
    item_id = _item_with_two_revisions(store, base)
    item = store.get_item(TENANT, item_id)
    assert item is not None
    if archived:
        item = store.archive_item(TENANT, item_id, expected_version=item.version)

    store.purge_item(TENANT, item_id, expected_version=item.version)

    after = store.read_counters(TENANT)
    assert (after.stored, after.content_bytes) == (before.stored, before.content_bytes)
    assert item_id not in {
        pending.knowledge_item_id for pending in store.list_unindexed_items(TENANT, limit=10)
    }
