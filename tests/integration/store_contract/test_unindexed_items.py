"""The store contract for read-your-own-writes over knowledge (DESIGN §9): a published item is among
its tenant's unindexed items from the write that made its current revision current until the
indexer's mark of that revision, on every adapter."""

from __future__ import annotations

import pytest

from knowledge.domain.models import KnowledgeBase, KnowledgeItem, Source
from knowledge.ports import KnowledgeStore
from tests.integration.store_contract.conftest import OTHER_TENANT, TENANT
from tests.support.store import make_base


def _created(store: KnowledgeStore, base: KnowledgeBase, *, publish: bool = True) -> KnowledgeItem:
    item, _ = store.create_item(
        base.tenant_id,
        base.knowledge_base_id,
        title="Runbook",
        content="Restart the ledger service.",
        source=Source(),
        external_id=None,
        publish=publish,
    )
    return item


def _revised(store: KnowledgeStore, item: KnowledgeItem, *, publish: bool = True) -> KnowledgeItem:
    updated, _ = store.add_revision(
        item.tenant_id,
        item.knowledge_item_id,
        content="Restart the ledger service twice.",
        title=None,
        source=None,
        publish=publish,
        expected_version=item.version,
    )
    return updated


def _unindexed(store: KnowledgeStore, tenant_id: str = TENANT) -> list[tuple[str, str | None]]:
    return [
        (item.knowledge_item_id, item.current_revision_id)
        for item in store.list_unindexed_items(tenant_id, limit=100)
    ]


def test_list_unindexed_items_published_item_listed_until_its_revision_is_marked(
    store: KnowledgeStore, base: KnowledgeBase
) -> None:
    item = _created(store, base)

    assert _unindexed(store) == [(item.knowledge_item_id, item.current_revision_id)]
    store.set_indexed_revision(
        TENANT, item.knowledge_item_id, item.current_revision_id, expected_version=item.version
    )
    assert _unindexed(store) == []


def test_list_unindexed_items_draft_is_not_listed(store: KnowledgeStore, base: KnowledgeBase) -> None:
    _created(store, base, publish=False)

    assert _unindexed(store) == []


def test_list_unindexed_items_publish_of_a_draft_lists_the_item(
    store: KnowledgeStore, base: KnowledgeBase
) -> None:
    draft = _created(store, base, publish=False)

    published = store.publish_revision(
        TENANT, draft.knowledge_item_id, draft.latest_revision_id, expected_version=draft.version
    )

    assert _unindexed(store) == [(draft.knowledge_item_id, published.current_revision_id)]


def test_list_unindexed_items_new_revision_after_the_mark_is_listed_at_it(
    store: KnowledgeStore, base: KnowledgeBase
) -> None:
    item = _created(store, base)
    store.set_indexed_revision(
        TENANT, item.knowledge_item_id, item.current_revision_id, expected_version=item.version
    )

    revised = _revised(store, item)

    [listed] = store.list_unindexed_items(TENANT, limit=10)
    assert (listed.current_revision_id, listed.indexed_revision_id) == (
        revised.current_revision_id,
        item.current_revision_id,
    )


def test_list_unindexed_items_mark_of_an_older_revision_leaves_the_newer_one_listed(
    store: KnowledgeStore, base: KnowledgeBase
) -> None:
    item = _created(store, base)
    revised = _revised(store, item)

    # A slow indexer marks the revision it took before the newer one was published.
    store.set_indexed_revision(TENANT, item.knowledge_item_id, item.current_revision_id)

    assert _unindexed(store) == [(item.knowledge_item_id, revised.current_revision_id)]


def test_list_unindexed_items_archived_item_is_not_listed(store: KnowledgeStore, base: KnowledgeBase) -> None:
    item = _created(store, base)

    store.archive_item(TENANT, item.knowledge_item_id, expected_version=item.version)

    assert _unindexed(store) == []


def test_list_unindexed_items_newest_first_up_to_the_limit_of_one_tenant(
    store: KnowledgeStore, base: KnowledgeBase
) -> None:
    items = [_created(store, base) for _ in range(3)]
    _created(store, make_base(store, OTHER_TENANT))

    listed = store.list_unindexed_items(TENANT, limit=2)

    assert [item.knowledge_item_id for item in listed] == [
        item.knowledge_item_id for item in reversed(items)
    ][:2]
    assert len(store.list_unindexed_items(OTHER_TENANT, limit=10)) == 1


def test_list_unindexed_items_limit_below_one_is_value_error(store: KnowledgeStore) -> None:
    with pytest.raises(ValueError, match="limit"):
        store.list_unindexed_items(TENANT, limit=0)
