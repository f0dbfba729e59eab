"""The store contract: items and the revision lifecycle (versions, publishing, archiving,
external ids, indexed marks, batch reads)."""

from __future__ import annotations

from typing import Any

import pytest

from knowledge.domain.models import ItemStatus, KnowledgeBase, Source
from knowledge.errors import ConflictError, ResourceUnavailableError
from knowledge.ports import KnowledgeStore
from tests.integration.store_contract.conftest import TENANT
from tests.support.store import make_base


def _create(store: KnowledgeStore, base: KnowledgeBase, **overrides: Any) -> Any:
    arguments: dict[str, Any] = {
        "title": "Runbook",
        "content": "Restart the service.",
        "source": Source(uri="https://example.com/runbook", title="Runbook"),
        "external_id": None,
        "publish": False,
    }
    arguments.update(overrides)
    return store.create_item(TENANT, base.knowledge_base_id, **arguments)


def test_create_item_without_publish_is_draft_with_unpublished_revision(
    store: KnowledgeStore, base: KnowledgeBase
) -> None:
    item, revision = _create(store, base)

    stored = store.get_item(TENANT, item.knowledge_item_id)
    assert stored == item
    assert stored.status is ItemStatus.DRAFT
    assert stored.current_revision_id is None
    assert stored.latest_revision_id == revision.knowledge_revision_id
    assert store.get_revision(TENANT, item.knowledge_item_id, revision.knowledge_revision_id) == revision
    assert revision.published_at is None


def test_add_revision_without_publish_keeps_draft_unpublished(
    store: KnowledgeStore, base: KnowledgeBase
) -> None:
    item, _ = _create(store, base)

    updated, revision = store.add_revision(
        TENANT,
        item.knowledge_item_id,
        content="v2",
        title=None,
        source=None,
        publish=False,
        expected_version=1,
    )

    stored = store.get_item(TENANT, item.knowledge_item_id)
    assert stored == updated
    assert (stored.status, stored.current_revision_id) == (ItemStatus.DRAFT, None)
    assert stored.latest_revision_id == revision.knowledge_revision_id
    stored_revision = store.get_revision(TENANT, item.knowledge_item_id, revision.knowledge_revision_id)
    assert stored_revision is not None
    assert stored_revision.published_at is None


def test_publish_revision_of_draft_publishes_item_and_stamps_revision(
    store: KnowledgeStore, base: KnowledgeBase
) -> None:
    item, revision = _create(store, base)

    published = store.publish_revision(
        TENANT, item.knowledge_item_id, revision.knowledge_revision_id, expected_version=1
    )

    assert store.get_item(TENANT, item.knowledge_item_id) == published
    assert (published.status, published.current_revision_id, published.version) == (
        ItemStatus.PUBLISHED,
        revision.knowledge_revision_id,
        2,
    )
    stored_revision = store.get_revision(TENANT, item.knowledge_item_id, revision.knowledge_revision_id)
    assert stored_revision is not None
    assert stored_revision.published_at == published.updated_at


def test_add_revision_with_publish_supersedes_but_keeps_first_revision_published(
    store: KnowledgeStore, base: KnowledgeBase
) -> None:
    item, first = _create(store, base, publish=True)

    updated, second = store.add_revision(
        TENANT,
        item.knowledge_item_id,
        content="v2",
        title=None,
        source=None,
        publish=True,
        expected_version=1,
    )

    stored_first = store.get_revision(TENANT, item.knowledge_item_id, first.knowledge_revision_id)
    assert stored_first is not None
    assert stored_first.published_at == first.published_at
    assert first.published_at is not None
    assert updated.current_revision_id == second.knowledge_revision_id != first.knowledge_revision_id
    assert second.published_at is not None
    assert store.get_item(TENANT, item.knowledge_item_id) == updated


def test_publish_revision_superseded_revision_rolls_back_and_keeps_published_at(
    store: KnowledgeStore, base: KnowledgeBase
) -> None:
    item, first = _create(store, base, publish=True)
    store.add_revision(
        TENANT,
        item.knowledge_item_id,
        content="v2",
        title=None,
        source=None,
        publish=True,
        expected_version=1,
    )

    rolled_back = store.publish_revision(
        TENANT, item.knowledge_item_id, first.knowledge_revision_id, expected_version=2
    )

    assert (rolled_back.current_revision_id, rolled_back.version) == (first.knowledge_revision_id, 3)
    assert store.get_revision(TENANT, item.knowledge_item_id, first.knowledge_revision_id) == first


def test_publish_revision_of_another_item_raises_resource_unavailable_and_changes_nothing(
    store: KnowledgeStore, base: KnowledgeBase
) -> None:
    item, _ = _create(store, base)
    _, foreign = _create(store, base, title="Other")

    with pytest.raises(ResourceUnavailableError):
        store.publish_revision(
            TENANT, item.knowledge_item_id, foreign.knowledge_revision_id, expected_version=1
        )

    assert store.get_item(TENANT, item.knowledge_item_id) == item
    assert store.get_revision(TENANT, item.knowledge_item_id, foreign.knowledge_revision_id) is None


def test_publish_revision_stale_version_raises_conflict_with_current_version(
    store: KnowledgeStore, base: KnowledgeBase
) -> None:
    item, revision = _create(store, base)
    store.add_revision(
        TENANT,
        item.knowledge_item_id,
        content="v2",
        title=None,
        source=None,
        publish=False,
        expected_version=1,
    )

    with pytest.raises(ConflictError) as raised:
        store.publish_revision(
            TENANT, item.knowledge_item_id, revision.knowledge_revision_id, expected_version=1
        )

    assert raised.value.current_version == 2


def _add(store: KnowledgeStore, item_id: str, **overrides: Any) -> Any:
    arguments: dict[str, Any] = {
        "content": "v2",
        "title": None,
        "source": None,
        "publish": False,
        "expected_version": None,
    }
    arguments.update(overrides)
    return store.add_revision(TENANT, item_id, **arguments)


def test_add_revision_defaults_title_and_source_from_latest_revision(
    store: KnowledgeStore, base: KnowledgeBase
) -> None:
    item, first = _create(store, base)
    _, draft = _add(store, item.knowledge_item_id, title="Draft title", content="v2")

    _, third = _add(store, item.knowledge_item_id, content="v3")

    assert (third.title, third.source) == ("Draft title", first.source)
    assert draft.title == "Draft title"


def test_add_draft_revision_with_title_keeps_item_title(store: KnowledgeStore, base: KnowledgeBase) -> None:
    item, first = _create(store, base, publish=True)
    source = Source(uri="https://example.com/new")

    updated, revision = _add(
        store, item.knowledge_item_id, title="Renamed", source=source, expected_version=1
    )

    assert (revision.title, revision.source) == ("Renamed", source)
    assert (updated.title, updated.current_revision_id) == ("Runbook", first.knowledge_revision_id)
    assert updated.latest_revision_id == revision.knowledge_revision_id
    assert store.get_item(TENANT, item.knowledge_item_id) == updated


def test_add_published_revision_with_title_renames_item(store: KnowledgeStore, base: KnowledgeBase) -> None:
    item, _ = _create(store, base, publish=True)

    updated, revision = _add(store, item.knowledge_item_id, title="Renamed", publish=True)

    assert (updated.title, updated.current_revision_id) == ("Renamed", revision.knowledge_revision_id)
    assert store.get_item(TENANT, item.knowledge_item_id) == updated


def test_publish_revision_renames_item_to_its_title_and_rollback_restores_the_old_one(
    store: KnowledgeStore, base: KnowledgeBase
) -> None:
    item, first = _create(store, base, publish=True)
    _, draft = _add(store, item.knowledge_item_id, title="Renamed")

    published = store.publish_revision(
        TENANT, item.knowledge_item_id, draft.knowledge_revision_id, expected_version=2
    )
    rolled_back = store.publish_revision(
        TENANT, item.knowledge_item_id, first.knowledge_revision_id, expected_version=3
    )

    assert published.title == "Renamed"
    assert (rolled_back.title, rolled_back.current_revision_id) == ("Runbook", first.knowledge_revision_id)
    assert store.get_item(TENANT, item.knowledge_item_id) == rolled_back


def test_add_revision_stale_expected_version_raises_conflict_and_writes_no_revision(
    store: KnowledgeStore, base: KnowledgeBase
) -> None:
    item, _ = _create(store, base)
    store.add_revision(
        TENANT,
        item.knowledge_item_id,
        content="v2",
        title=None,
        source=None,
        publish=False,
        expected_version=1,
    )

    with pytest.raises(ConflictError) as raised:
        store.add_revision(
            TENANT,
            item.knowledge_item_id,
            content="v3",
            title=None,
            source=None,
            publish=False,
            expected_version=1,
        )

    assert raised.value.current_version == 2
    assert len(store.list_revisions(TENANT, item.knowledge_item_id, limit=10, next_token=None).entries) == 2


def test_add_revision_records_latest_sha256(store: KnowledgeStore, base: KnowledgeBase) -> None:
    item, first = _create(store, base)

    updated, second = store.add_revision(
        TENANT,
        item.knowledge_item_id,
        content="v2",
        title=None,
        source=None,
        publish=False,
        expected_version=1,
    )

    assert updated.latest_sha256 == second.sha256 != first.sha256


def test_create_item_in_absent_base_raises_resource_unavailable(store: KnowledgeStore) -> None:
    other_tenant_base = make_base(store, "tenant-b")

    with pytest.raises(ResourceUnavailableError):
        store.create_item(
            TENANT,
            other_tenant_base.knowledge_base_id,
            title="T",
            content="c",
            source=Source(),
            external_id=None,
            publish=False,
        )


def test_create_item_taken_external_id_raises_conflict_with_existing_version(
    store: KnowledgeStore, base: KnowledgeBase
) -> None:
    existing, _ = _create(store, base, external_id="doc-1")
    store.publish_revision(
        TENANT, existing.knowledge_item_id, existing.latest_revision_id, expected_version=1
    )

    with pytest.raises(ConflictError) as raised:
        _create(store, base, external_id="doc-1")

    assert raised.value.current_version == 2
    listed = store.list_items(TENANT, base.knowledge_base_id, limit=10, next_token=None).entries
    assert [entry.knowledge_item_id for entry in listed] == [existing.knowledge_item_id]


def test_find_item_by_external_id_returns_owner_only_in_its_base(
    store: KnowledgeStore, base: KnowledgeBase
) -> None:
    item, _ = _create(store, base, external_id="doc-1")
    other_base = make_base(store, TENANT)

    assert store.find_item_by_external_id(TENANT, base.knowledge_base_id, "doc-1") == item
    assert store.find_item_by_external_id(TENANT, other_base.knowledge_base_id, "doc-1") is None
    assert store.find_item_by_external_id(TENANT, base.knowledge_base_id, "doc-2") is None


def test_archive_item_stale_version_raises_conflict_with_current_version(
    store: KnowledgeStore, base: KnowledgeBase
) -> None:
    item, revision = _create(store, base)
    store.publish_revision(TENANT, item.knowledge_item_id, revision.knowledge_revision_id, expected_version=1)

    with pytest.raises(ConflictError) as raised:
        store.archive_item(TENANT, item.knowledge_item_id, expected_version=1)

    assert raised.value.current_version == 2
    stored = store.get_item(TENANT, item.knowledge_item_id)
    assert stored is not None
    assert (stored.status, stored.version) == (ItemStatus.PUBLISHED, 2)


def test_archive_item_then_every_write_raises_resource_unavailable(
    store: KnowledgeStore, base: KnowledgeBase
) -> None:
    item, revision = _create(store, base, publish=True)
    archived = store.archive_item(TENANT, item.knowledge_item_id, expected_version=1)

    with pytest.raises(ResourceUnavailableError):
        store.add_revision(
            TENANT,
            item.knowledge_item_id,
            content="x",
            title=None,
            source=None,
            publish=True,
            expected_version=2,
        )
    with pytest.raises(ResourceUnavailableError):
        store.publish_revision(
            TENANT, item.knowledge_item_id, revision.knowledge_revision_id, expected_version=2
        )
    with pytest.raises(ResourceUnavailableError):
        store.archive_item(TENANT, item.knowledge_item_id, expected_version=2)
    assert store.get_item(TENANT, item.knowledge_item_id) == archived
    assert (archived.status, archived.version) == (ItemStatus.ARCHIVED, 2)


def test_archive_item_releases_external_id_and_leaves_listing(
    store: KnowledgeStore, base: KnowledgeBase
) -> None:
    item, _ = _create(store, base, external_id="doc-1")
    store.archive_item(TENANT, item.knowledge_item_id, expected_version=1)

    assert store.find_item_by_external_id(TENANT, base.knowledge_base_id, "doc-1") is None
    replacement, _ = _create(store, base, external_id="doc-1")

    assert store.find_item_by_external_id(TENANT, base.knowledge_base_id, "doc-1") == replacement
    listed = store.list_items(TENANT, base.knowledge_base_id, limit=10, next_token=None).entries
    assert [entry.knowledge_item_id for entry in listed] == [replacement.knowledge_item_id]


def test_set_indexed_revision_sets_and_clears_without_moving_version(
    store: KnowledgeStore, base: KnowledgeBase
) -> None:
    item, revision = _create(store, base, publish=True)

    store.set_indexed_revision(TENANT, item.knowledge_item_id, revision.knowledge_revision_id)
    indexed = store.get_item(TENANT, item.knowledge_item_id)
    store.set_indexed_revision(TENANT, item.knowledge_item_id, None)
    cleared = store.get_item(TENANT, item.knowledge_item_id)

    assert indexed == item.model_copy(update={"indexed_revision_id": revision.knowledge_revision_id})
    assert cleared == item


def test_set_indexed_revision_absent_item_raises_resource_unavailable_and_creates_nothing(
    store: KnowledgeStore,
) -> None:
    with pytest.raises(ResourceUnavailableError):
        store.set_indexed_revision(
            TENANT, "ki_01ABSENT00000000000000000000", "kr_01ABSENT00000000000000000000"
        )

    assert store.get_item(TENANT, "ki_01ABSENT00000000000000000000") is None


def test_get_items_and_get_revisions_return_existing_records_only(
    store: KnowledgeStore, base: KnowledgeBase
) -> None:
    first, first_revision = _create(store, base)
    second, second_revision = _create(store, base, title="Second")
    absent = "ki_01ABSENT00000000000000000000"

    items = store.get_items(TENANT, [first.knowledge_item_id, second.knowledge_item_id, absent])
    revisions = store.get_revisions(
        TENANT,
        [
            (first.knowledge_item_id, first_revision.knowledge_revision_id),
            (second.knowledge_item_id, second_revision.knowledge_revision_id),
            (first.knowledge_item_id, second_revision.knowledge_revision_id),
        ],
    )

    assert items == {first.knowledge_item_id: first, second.knowledge_item_id: second}
    assert revisions == {
        (first.knowledge_item_id, first_revision.knowledge_revision_id): first_revision,
        (second.knowledge_item_id, second_revision.knowledge_revision_id): second_revision,
    }
    assert store.get_items("tenant-b", [first.knowledge_item_id]) == {}
