"""The store contract: ``set_indexed_revision`` conditioned on the version that was indexed, as the
stream indexer uses it."""

from __future__ import annotations

import pytest

from knowledge.domain.models import KnowledgeBase, KnowledgeItem, Source
from knowledge.errors import ConflictError, ResourceUnavailableError
from knowledge.ports import KnowledgeStore
from tests.integration.store_contract.conftest import TENANT


def _published(store: KnowledgeStore, base: KnowledgeBase) -> KnowledgeItem:
    item, _ = store.create_item(
        TENANT,
        base.knowledge_base_id,
        title="Runbook",
        content="Roll out with the blue green switch.",
        source=Source(),
        external_id=None,
        publish=True,
    )
    return item


def test_set_indexed_revision_at_expected_version_sets_mark_without_moving_version(
    store: KnowledgeStore, base: KnowledgeBase
) -> None:
    item = _published(store, base)

    store.set_indexed_revision(
        TENANT, item.knowledge_item_id, item.current_revision_id, expected_version=item.version
    )

    stored = store.get_item(TENANT, item.knowledge_item_id)
    assert stored == item.model_copy(update={"indexed_revision_id": item.current_revision_id})


def test_set_indexed_revision_stale_version_raises_conflict_and_keeps_newer_mark(
    store: KnowledgeStore, base: KnowledgeBase
) -> None:
    item = _published(store, base)
    newer, revision = store.add_revision(
        TENANT,
        item.knowledge_item_id,
        content="Roll out with a canary.",
        title=None,
        source=None,
        publish=True,
        expected_version=item.version,
    )
    store.set_indexed_revision(
        TENANT, item.knowledge_item_id, revision.knowledge_revision_id, expected_version=newer.version
    )

    with pytest.raises(ConflictError) as raised:
        store.set_indexed_revision(
            TENANT, item.knowledge_item_id, item.current_revision_id, expected_version=item.version
        )

    assert raised.value.current_version == newer.version
    stored = store.get_item(TENANT, item.knowledge_item_id)
    assert stored is not None
    assert stored.indexed_revision_id == revision.knowledge_revision_id


def test_set_indexed_revision_on_item_archived_since_raises_resource_unavailable(
    store: KnowledgeStore, base: KnowledgeBase
) -> None:
    item = _published(store, base)
    store.archive_item(TENANT, item.knowledge_item_id, expected_version=item.version)

    with pytest.raises(ResourceUnavailableError):
        store.set_indexed_revision(
            TENANT, item.knowledge_item_id, item.current_revision_id, expected_version=item.version
        )

    stored = store.get_item(TENANT, item.knowledge_item_id)
    assert stored is not None
    assert stored.indexed_revision_id is None


def test_set_indexed_revision_clear_on_archived_item_at_its_version_succeeds(
    store: KnowledgeStore, base: KnowledgeBase
) -> None:
    item = _published(store, base)
    store.set_indexed_revision(TENANT, item.knowledge_item_id, item.current_revision_id)
    archived = store.archive_item(TENANT, item.knowledge_item_id, expected_version=item.version)

    store.set_indexed_revision(TENANT, item.knowledge_item_id, None, expected_version=archived.version)

    stored = store.get_item(TENANT, item.knowledge_item_id)
    assert stored is not None
    assert (stored.indexed_revision_id, stored.version) == (None, archived.version)
