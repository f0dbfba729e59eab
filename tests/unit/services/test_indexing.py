"""IndexingService: the index holds exactly the current revisions of published items in active
bases, whatever order, duplication or staleness the changes that trigger it arrive in."""

from __future__ import annotations

import pytest

from knowledge.adapters.embedded.passages import EmbeddedIndex
from knowledge.adapters.in_process.store import InProcessKnowledgeStore
from knowledge.domain.changes import ChangeKind, IndexAction, StoreChange
from knowledge.domain.models import BaseStatus, KnowledgeBase, KnowledgeItem, Revision, Scope, Source
from knowledge.domain.retrieval.chunking import Chunker
from knowledge.errors import DependencyUnavailableError
from knowledge.services.indexing import IndexingService
from tests.support.embedding import HashingEmbedder
from tests.support.streams import indexed_revisions
from tests.unit.services.conftest import TENANT


@pytest.fixture
def base(store: InProcessKnowledgeStore) -> KnowledgeBase:
    return store.create_base(TENANT, name="Ops", owner_id="curator-1", scope=Scope.TENANT, team_id=None)


def _item(
    store: InProcessKnowledgeStore, base: KnowledgeBase, *, publish: bool = True, title: str = "Runbook"
) -> tuple[KnowledgeItem, Revision]:
    return store.create_item(
        TENANT,
        base.knowledge_base_id,
        title=title,
        content="Roll out with the blue green switch and watch the dashboard.",
        source=Source(),
        external_id=None,
        publish=publish,
    )


def _sync(indexing: IndexingService, item: KnowledgeItem) -> IndexAction:
    return indexing.sync_item(TENANT, item.knowledge_item_id, last_known_version=item.version)


def test_sync_item_published_indexes_its_current_revision_and_marks_it(
    indexing: IndexingService, store: InProcessKnowledgeStore, index: EmbeddedIndex, base: KnowledgeBase
) -> None:
    item, revision = _item(store, base)

    assert _sync(indexing, item) is IndexAction.INDEXED

    assert indexed_revisions(index, TENANT) == {item.knowledge_item_id: revision.knowledge_revision_id}
    stored = store.get_item(TENANT, item.knowledge_item_id)
    assert stored is not None
    assert (stored.indexed_revision_id, stored.version) == (revision.knowledge_revision_id, item.version)


def test_sync_item_new_current_revision_replaces_the_old_one(
    indexing: IndexingService, store: InProcessKnowledgeStore, index: EmbeddedIndex, base: KnowledgeBase
) -> None:
    item, _ = _item(store, base)
    _sync(indexing, item)
    updated, newer = store.add_revision(
        TENANT,
        item.knowledge_item_id,
        content="Canary.",
        title=None,
        source=None,
        publish=True,
        expected_version=1,
    )

    assert _sync(indexing, updated) is IndexAction.INDEXED
    assert indexed_revisions(index, TENANT) == {item.knowledge_item_id: newer.knowledge_revision_id}


def test_sync_item_draft_is_not_indexed(
    indexing: IndexingService, store: InProcessKnowledgeStore, index: EmbeddedIndex, base: KnowledgeBase
) -> None:
    item, _ = _item(store, base, publish=False)

    assert _sync(indexing, item) is IndexAction.REMOVED
    assert indexed_revisions(index, TENANT) == {}


def test_sync_item_archived_leaves_the_index_and_loses_its_mark(
    indexing: IndexingService, store: InProcessKnowledgeStore, index: EmbeddedIndex, base: KnowledgeBase
) -> None:
    item, _ = _item(store, base)
    _sync(indexing, item)
    archived = store.archive_item(TENANT, item.knowledge_item_id, expected_version=item.version)

    assert _sync(indexing, archived) is IndexAction.REMOVED
    assert indexed_revisions(index, TENANT) == {}
    stored = store.get_item(TENANT, item.knowledge_item_id)
    assert stored is not None
    assert stored.indexed_revision_id is None


def test_sync_item_of_an_inactive_base_is_skipped(
    indexing: IndexingService, store: InProcessKnowledgeStore, index: EmbeddedIndex, base: KnowledgeBase
) -> None:
    item, _ = _item(store, base)
    store.update_base(TENANT, base.knowledge_base_id, expected_version=1, status=BaseStatus.INACTIVE)

    assert _sync(indexing, item) is IndexAction.SKIPPED
    assert indexed_revisions(index, TENANT) == {}


def test_sync_item_absent_from_the_store_is_removed(indexing: IndexingService) -> None:
    action = indexing.sync_item(TENANT, "ki_01M8MSRAQ70QQ1SJHWP0AMCDPZ", last_known_version=3)

    assert action is IndexAction.REMOVED


def test_sync_base_reindexes_published_items_and_removes_drafts(
    indexing: IndexingService, store: InProcessKnowledgeStore, index: EmbeddedIndex, base: KnowledgeBase
) -> None:
    published = [_item(store, base, title=f"Runbook {n}") for n in range(3)]
    _item(store, base, publish=False, title="Draft")

    counts = indexing.sync_base(TENANT, base.knowledge_base_id)

    assert (counts.active, counts.scanned, counts.indexed, counts.removed, counts.skipped) == (
        True,
        4,
        3,
        1,
        0,
    )
    assert indexed_revisions(index, TENANT) == {
        item.knowledge_item_id: revision.knowledge_revision_id for item, revision in published
    }


def test_sync_base_inactive_removes_every_chunk_of_it(
    indexing: IndexingService, store: InProcessKnowledgeStore, index: EmbeddedIndex, base: KnowledgeBase
) -> None:
    item, _ = _item(store, base)
    _sync(indexing, item)
    store.update_base(TENANT, base.knowledge_base_id, expected_version=1, status=BaseStatus.INACTIVE)

    counts = indexing.sync_base(TENANT, base.knowledge_base_id)

    assert (counts.active, counts.scanned) == (False, 0)
    assert indexed_revisions(index, TENANT) == {}


def test_apply_item_write_that_kept_the_version_is_ignored(
    indexing: IndexingService, store: InProcessKnowledgeStore, base: KnowledgeBase
) -> None:
    item, revision = _item(store, base)
    marked = item.model_copy(update={"indexed_revision_id": revision.knowledge_revision_id})

    assert indexing.apply(StoreChange(ChangeKind.MODIFY, item, marked)) is IndexAction.IGNORED


def test_apply_base_insert_and_rename_are_ignored(
    store: InProcessKnowledgeStore, indexing: IndexingService
) -> None:
    base = store.create_base(TENANT, name="Ops", owner_id="o", scope=Scope.TENANT, team_id=None)
    renamed = store.update_base(TENANT, base.knowledge_base_id, expected_version=1, name="Operations")

    assert indexing.apply(StoreChange(ChangeKind.INSERT, None, base)) is IndexAction.IGNORED
    assert indexing.apply(StoreChange(ChangeKind.MODIFY, base, renamed)) is IndexAction.IGNORED


def test_apply_base_deactivation_then_reactivation_removes_and_restores_its_items(
    indexing: IndexingService, store: InProcessKnowledgeStore, index: EmbeddedIndex, base: KnowledgeBase
) -> None:
    item, revision = _item(store, base)
    _sync(indexing, item)
    inactive = store.update_base(
        TENANT, base.knowledge_base_id, expected_version=1, status=BaseStatus.INACTIVE
    )

    removed = indexing.apply(StoreChange(ChangeKind.MODIFY, base, inactive))
    emptied = indexed_revisions(index, TENANT)
    active = store.update_base(TENANT, base.knowledge_base_id, expected_version=2, status=BaseStatus.ACTIVE)
    restored = indexing.apply(StoreChange(ChangeKind.MODIFY, inactive, active))

    assert (removed, emptied, restored) == (IndexAction.REMOVED, {}, IndexAction.REINDEXED)
    assert indexed_revisions(index, TENANT) == {item.knowledge_item_id: revision.knowledge_revision_id}


def test_apply_records_that_are_not_items_or_bases_are_ignored(
    indexing: IndexingService, store: InProcessKnowledgeStore, base: KnowledgeBase
) -> None:
    _, revision = _item(store, base)

    assert indexing.apply(StoreChange(ChangeKind.INSERT, None, revision)) is IndexAction.IGNORED
    assert indexing.apply(StoreChange(ChangeKind.INSERT, None, None)) is IndexAction.IGNORED


def test_batch_syncs_an_item_once_and_answers_its_later_changes_superseded(
    indexing: IndexingService, store: InProcessKnowledgeStore, index: EmbeddedIndex, base: KnowledgeBase
) -> None:
    item, _ = _item(store, base)
    updated, newer = store.add_revision(
        TENANT,
        item.knowledge_item_id,
        content="Canary.",
        title=None,
        source=None,
        publish=True,
        expected_version=1,
    )
    batch = indexing.batch()

    first = batch.apply(StoreChange(ChangeKind.INSERT, None, item))
    second = batch.apply(StoreChange(ChangeKind.MODIFY, item, updated))

    assert (first, second) == (IndexAction.INDEXED, IndexAction.SUPERSEDED)
    assert indexed_revisions(index, TENANT) == {item.knowledge_item_id: newer.knowledge_revision_id}


class _LostRevisions(InProcessKnowledgeStore):
    """A broken store: items point at revisions it cannot return."""

    def get_revision(
        self, tenant_id: str, knowledge_item_id: str, knowledge_revision_id: str
    ) -> Revision | None:
        return None


def test_sync_item_whose_current_revision_is_missing_raises_dependency_unavailable(
    index: EmbeddedIndex, embedder: HashingEmbedder, chunker: Chunker
) -> None:
    store = _LostRevisions()
    base = store.create_base(TENANT, name="Ops", owner_id="o", scope=Scope.TENANT, team_id=None)
    item, _ = _item(store, base)
    broken = IndexingService(store, index, embedder, chunker)

    with pytest.raises(DependencyUnavailableError):
        _sync(broken, item)
