"""Base archive and base purge: each dry run writes nothing and equals the real call's receipt; a
purge leaves nothing of the base or any of its items (archived ones too) in the table, both indexes
or the embedding cache; an archive keeps everything and takes the base out of search."""

from __future__ import annotations

import pytest

from knowledge.contract.deletion import DeletionReceipt
from knowledge.contract.writes import BaseArchiveRequest
from knowledge.domain.models import BaseStatus, Permission
from knowledge.errors import ConflictError, InsufficientScopeError, ResourceUnavailableError
from tests.support.knowledge_history import KnowledgeWorld
from tests.unit.services.conftest import TENANT, caller
from tests.unit.services.test_item_purge import ADMIN, WRITER, PurgeWorld, ids_of


def _with_archived_item(run: PurgeWorld) -> str:
    archived = run._create("Old", "zephyr retired page")
    run.world.store.archive_item(TENANT, archived.knowledge_item_id, expected_version=archived.version)
    return archived.knowledge_item_id


def check_base_purge(world: KnowledgeWorld) -> None:
    """The base purge's dry run equals its receipt and writes nothing; afterwards no record,
    index document or cached vector of any of the base's items is left."""
    run = PurgeWorld(world)
    archived = _with_archived_item(run)
    base_id = run.base.knowledge_base_id
    items = {run.target.knowledge_item_id, run.bystander.knowledge_item_id, archived}
    before = run.state()
    assert run.found(as_of=run.first_moment) == {run.target.knowledge_item_id}

    preview = run.curation.purge_base(ADMIN, base_id, expected_version=1, dry_run=True)
    assert run.state() == before
    purged = run.curation.purge_base(ADMIN, base_id, expected_version=1, dry_run=False)

    assert (preview.dry_run, purged.dry_run, purged.items) == (True, False, 3)
    assert preview.receipt.stores() == purged.receipt.stores()
    receipt = purged.receipt
    assert ids_of(receipt, "table", "knowledge_base") == {base_id}
    assert ids_of(receipt, "table", "item") == items
    after = run.state()
    assert (after["items"], after["revisions"], after["states"]) == ({}, {}, {})
    assert after["external_ids"] == {}
    assert (after["index"], after["history"]) == (set(), set())
    assert after["cache"] == 0
    assert len(ids_of(receipt, "embedding_cache", "cached_vector")) == before["cache"]
    assert world.store.get_base(TENANT, base_id) is None
    assert run.found(as_of=run.first_moment) == set()


def test_purge_base_dry_run_equals_the_receipt_and_every_item_is_gone() -> None:
    check_base_purge(KnowledgeWorld())


@pytest.mark.parametrize("dry_run", [True, False])
def test_purge_base_with_a_stale_expected_version_is_a_conflict(dry_run: bool) -> None:
    run = PurgeWorld(KnowledgeWorld())
    before = run.state()
    with pytest.raises(ConflictError):
        run.curation.purge_base(ADMIN, run.base.knowledge_base_id, expected_version=2, dry_run=dry_run)
    assert run.state() == before


def test_purge_base_without_admin_scope_is_refused() -> None:
    run = PurgeWorld(KnowledgeWorld())
    with pytest.raises(InsufficientScopeError):
        run.curation.purge_base(WRITER, run.base.knowledge_base_id, expected_version=1, dry_run=True)


def test_archive_base_dry_run_equals_the_receipt_and_the_archive_hides_and_keeps_the_base() -> None:
    run = PurgeWorld(KnowledgeWorld())
    base_id = run.base.knowledge_base_id
    before = run.state()

    preview = run.curation.archive_base(ADMIN, base_id, BaseArchiveRequest(expected_version=1, dry_run=True))
    assert run.state() == before
    assert (preview.status, preview.version, preview.dry_run) == (BaseStatus.ACTIVE, 1, True)
    archived = run.curation.archive_base(ADMIN, base_id, BaseArchiveRequest(expected_version=1))
    assert (archived.status, archived.version, archived.dry_run) == (BaseStatus.INACTIVE, 2, False)
    assert preview.receipt.stores() == archived.receipt.stores()

    current = {
        item.current_revision_id for (_, _), item in before["items"].items() if item.current_revision_id
    }
    assert [(entry.kind, entry.state) for entry in archived.receipt.table] == [("knowledge_base", "hidden")]
    assert ids_of_state(archived.receipt, "item_passages") == current
    run.world.indexing.sync_base(TENANT, base_id)  # what the stream does with the base's change
    assert run.state()["items"] == before["items"]
    assert run.found() == set()


@pytest.mark.parametrize("dry_run", [True, False])
def test_archiving_an_inactive_base_again_changes_nothing_and_its_receipt_is_empty(dry_run: bool) -> None:
    run = PurgeWorld(KnowledgeWorld())
    base_id = run.base.knowledge_base_id
    run.curation.archive_base(ADMIN, base_id, BaseArchiveRequest(expected_version=1))
    before = run.state()
    base = run.world.store.get_base(TENANT, base_id)

    again = run.curation.archive_base(ADMIN, base_id, BaseArchiveRequest(expected_version=2, dry_run=dry_run))

    assert (again.status, again.version, again.dry_run) == (BaseStatus.INACTIVE, 2, dry_run)
    assert again.receipt.stores() == DeletionReceipt(dry_run=dry_run).stores()
    assert run.world.store.get_base(TENANT, base_id) == base
    assert run.state() == before


def ids_of_state(receipt: DeletionReceipt, kind: str) -> set[str]:
    entries = [entry for entry in receipt.index if entry.kind == kind]
    assert all(entry.state == "scheduled" for entry in entries)
    return {identifier for entry in entries for identifier in entry.ids}


def test_archive_base_with_a_stale_expected_version_is_a_conflict() -> None:
    run = PurgeWorld(KnowledgeWorld())
    with pytest.raises(ConflictError):
        run.curation.archive_base(
            ADMIN, run.base.knowledge_base_id, BaseArchiveRequest(expected_version=3, dry_run=True)
        )


def test_archive_base_of_another_tenant_is_unavailable() -> None:
    run = PurgeWorld(KnowledgeWorld())
    stranger = caller("eve", Permission.ADMIN, tenant_id="globex")
    with pytest.raises(ResourceUnavailableError):
        run.curation.archive_base(
            stranger, run.base.knowledge_base_id, BaseArchiveRequest(expected_version=1)
        )
