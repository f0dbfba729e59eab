"""The store contract for export and import (``BundleStore``): records read from one tenant restore
whole into another (read back equal, content, states and versions included), a second restore
writes nothing, conflicts and absent bases refuse, restored notes wait for the indexer, the stored
items count moves, and bundle jobs move under conditional versions; the same on every adapter."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from knowledge.domain import ids
from knowledge.domain.bundles import BundleJob, BundleJobKind, BundleJobStatus
from knowledge.domain.memory.lifecycle import NoteDraft, NoteWrite, new_note, revised_note
from knowledge.domain.memory.notes import MemoryType, Note, claims_of, content_claim
from knowledge.domain.memory.pins import Pin
from knowledge.domain.models import KnowledgeBase, KnowledgeItem, Scope, Source
from knowledge.errors import ConflictError, ResourceUnavailableError
from knowledge.ports import KnowledgeStore
from tests.integration.store_contract.conftest import OTHER_TENANT, TENANT

NOW = datetime(2026, 6, 1, tzinfo=UTC)


def _note(store: KnowledgeStore, content: str, *, key: str | None = None, tenant_id: str = TENANT) -> Note:
    draft = NoteDraft(
        content=content,
        scope=Scope.PRIVATE,
        team_id=None,
        agent_id=None,
        path="/ops",
        memory_type=MemoryType.FACT,
        importance=0.5,
        semantic_key=key,
        expires_at=None,
    )
    note = new_note(tenant_id, "user-1", draft, supersedes=(), now=NOW)
    store.commit_notes(tenant_id, [NoteWrite(previous=None, note=note, claim=tuple(claims_of(note)))])
    return note


def _revised(store: KnowledgeStore, note: Note, content: str) -> Note:
    draft = NoteDraft(
        content=content,
        scope=note.scope,
        team_id=None,
        agent_id=None,
        path=note.path,
        memory_type=note.memory_type,
        importance=note.importance,
        semantic_key=note.semantic_key,
        expires_at=None,
    )
    revised = revised_note(note, draft, supersedes=(), now=NOW)
    write = NoteWrite(
        previous=note, note=revised, claim=(content_claim(revised),), release=(content_claim(note),)
    )
    store.commit_notes(TENANT, [write])
    return revised


def _item_with_history(store: KnowledgeStore, base: KnowledgeBase) -> KnowledgeItem:
    item, _ = store.create_item(
        TENANT,
        base.knowledge_base_id,
        title="Rotor",
        content="Grease the rotor every 500 hours. " * 200,
        source=Source(uri="guides/rotor.md"),
        external_id="guides/rotor.md",
        publish=True,
    )
    item, revision = store.add_revision(
        TENANT,
        item.knowledge_item_id,
        content="Grease the rotor every 400 hours.",
        title=None,
        source=None,
        publish=False,
        expected_version=item.version,
    )
    return store.publish_revision(
        TENANT, item.knowledge_item_id, revision.knowledge_revision_id, expected_version=item.version
    )


def _moved(record: object, tenant_id: str = OTHER_TENANT) -> object:
    return record.model_copy(update={"tenant_id": tenant_id})  # type: ignore[attr-defined]


def _restore_item(store: KnowledgeStore, item: KnowledgeItem, tenant_id: str = OTHER_TENANT) -> bool:
    revisions = store.list_revisions(TENANT, item.knowledge_item_id, limit=10, next_token=None).entries
    pairs = [(_moved(revision, tenant_id), store.read_all_content(revision)) for revision in revisions]
    states = [_moved(state, tenant_id) for state in store.list_item_states(TENANT, item.knowledge_item_id)]
    return store.restore_item(_moved(item, tenant_id), pairs, states)  # type: ignore[arg-type]


def test_list_notes_pages_the_tenant_s_notes_by_id(store: KnowledgeStore) -> None:
    written = sorted(_note(store, f"fact number {n}").note_id for n in range(5))
    _note(store, "another tenant's fact", tenant_id=OTHER_TENANT)

    first = store.list_notes(TENANT, limit=3, next_token=None)
    second = store.list_notes(TENANT, limit=3, next_token=first.next_token)

    assert [note.note_id for note in first.entries + second.entries] == written
    assert second.next_token is None


def test_a_restored_item_reads_back_whole_in_the_other_tenant(
    store: KnowledgeStore, base: KnowledgeBase
) -> None:
    item = _item_with_history(store, base)
    assert store.restore_base(_moved(base)) is True  # type: ignore[arg-type]

    before = store.read_counters(OTHER_TENANT)

    assert _restore_item(store, item) is True

    contents = [
        store.read_all_content(revision)
        for revision in store.list_revisions(
            TENANT, item.knowledge_item_id, limit=10, next_token=None
        ).entries
    ]
    after = store.read_counters(OTHER_TENANT)
    assert (after.stored, after.content_bytes) == (
        before.stored + 1,
        before.content_bytes + sum(len(text.encode()) for text in contents),
    )
    assert [pending.knowledge_item_id for pending in store.list_unindexed_items(OTHER_TENANT, limit=10)] == [
        item.knowledge_item_id
    ]
    restored = store.get_item(OTHER_TENANT, item.knowledge_item_id)
    assert restored == _moved(item).model_copy(update={"indexed_revision_id": None})  # type: ignore[attr-defined]
    for revision in store.list_revisions(TENANT, item.knowledge_item_id, limit=10, next_token=None).entries:
        copy = store.get_revision(OTHER_TENANT, item.knowledge_item_id, revision.knowledge_revision_id)
        assert copy is not None
        assert store.read_all_content(copy) == store.read_all_content(revision)
    assert store.list_item_states(OTHER_TENANT, item.knowledge_item_id) == [
        _moved(state) for state in store.list_item_states(TENANT, item.knowledge_item_id)
    ]
    found = store.find_item_by_external_id(OTHER_TENANT, base.knowledge_base_id, "guides/rotor.md")
    assert found is not None
    assert found.knowledge_item_id == item.knowledge_item_id
    assert [
        listed.knowledge_item_id
        for listed in store.list_items(
            OTHER_TENANT, base.knowledge_base_id, limit=10, next_token=None
        ).entries
    ] == [item.knowledge_item_id]


def test_a_second_restore_writes_nothing(store: KnowledgeStore, base: KnowledgeBase) -> None:
    item = _item_with_history(store, base)
    note = _note(store, "The pump needs a seal.", key="pump")
    store.restore_base(_moved(base))  # type: ignore[arg-type]
    _restore_item(store, item)
    store.restore_note(_moved(note), [_moved(note)])  # type: ignore[arg-type]
    counts = store.read_counters(OTHER_TENANT)

    assert store.restore_base(_moved(base)) is False  # type: ignore[arg-type]
    assert _restore_item(store, item) is False
    assert store.restore_note(_moved(note), [_moved(note)]) is False  # type: ignore[arg-type]
    assert store.read_counters(OTHER_TENANT)[1:] == counts[1:]


def test_an_item_needs_its_base_and_a_free_external_id(store: KnowledgeStore, base: KnowledgeBase) -> None:
    item = _item_with_history(store, base)
    with pytest.raises(ResourceUnavailableError):
        _restore_item(store, item)
    store.restore_base(_moved(base))  # type: ignore[arg-type]
    store.create_item(
        OTHER_TENANT,
        base.knowledge_base_id,
        title="Another rotor guide",
        content="Other text.",
        source=Source(),
        external_id="guides/rotor.md",
        publish=True,
    )

    with pytest.raises(ConflictError):
        _restore_item(store, item)

    assert store.get_item(OTHER_TENANT, item.knowledge_item_id) is None


def test_a_restored_note_keeps_its_versions_and_waits_for_the_indexer(store: KnowledgeStore) -> None:
    first = _note(store, "The pump needs a seal.", key="pump")
    current = _revised(store, first, "The pump's seal was replaced.")
    versions = store.list_note_versions(TENANT, current.note_id, limit=10, next_token=None).entries
    before = store.read_counters(OTHER_TENANT)

    assert store.restore_note(_moved(current), [_moved(version) for version in versions]) is True  # type: ignore[arg-type]

    assert store.get_note(OTHER_TENANT, current.note_id) == _moved(current)
    copies = store.list_note_versions(OTHER_TENANT, current.note_id, limit=10, next_token=None).entries
    assert copies == [_moved(version) for version in versions]
    assert [note.note_id for note in store.list_unindexed_notes(OTHER_TENANT, "user-1", limit=10)] == [
        current.note_id
    ]
    assert store.read_counters(OTHER_TENANT).notes == before.notes + 1
    assert [note.note_id for note in store.list_notes(OTHER_TENANT, limit=10, next_token=None).entries] == [
        current.note_id
    ]


def test_a_note_whose_semantic_key_another_note_holds_is_refused(store: KnowledgeStore) -> None:
    note = _note(store, "The pump needs a seal.", key="pump")
    _note(store, "Someone else's pump fact.", key="pump", tenant_id=OTHER_TENANT)

    with pytest.raises(ConflictError):
        store.restore_note(_moved(note), [_moved(note)])  # type: ignore[arg-type]

    assert store.get_note(OTHER_TENANT, note.note_id) is None


def test_a_pin_is_restored_beside_its_note_only(store: KnowledgeStore) -> None:
    note = _note(store, "Always check the tide tables.")
    pin = Pin(
        tenant_id=OTHER_TENANT,
        pin_id=ids.new_pin_id(),
        note_id=note.note_id,
        order=2,
        reason="safety",
        created_by="user-1",
        created_at=NOW,
        updated_at=NOW,
    )
    assert store.restore_pin(pin) is False  # its note is not there yet
    store.restore_note(_moved(note), [_moved(note)])  # type: ignore[arg-type]

    assert store.restore_pin(pin) is True
    assert store.restore_pin(pin) is False

    assert store.get_pin(OTHER_TENANT, note.note_id) == pin
    assert [change.pin for change in store.pin_changes(OTHER_TENANT, NOW)] == [pin]


def test_bundle_jobs_move_under_conditional_versions(store: KnowledgeStore) -> None:
    job = BundleJob(
        tenant_id=TENANT,
        job_id=ids.new_export_id(),
        kind=BundleJobKind.EXPORT,
        status=BundleJobStatus.QUEUED,
        requested_by="ops",
        object_key="bundles/tenant-a/x.jsonl",
        created_at=NOW,
    )
    store.create_bundle_job(job)
    assert store.get_bundle_job(TENANT, job.job_id) == job
    assert store.get_bundle_job(OTHER_TENANT, job.job_id) is None

    running = store.put_bundle_job(
        job.model_copy(update={"status": BundleJobStatus.RUNNING}), expected_version=1
    )

    assert running.version == 2
    assert store.get_bundle_job(TENANT, job.job_id) == running
    with pytest.raises(ConflictError):
        store.put_bundle_job(job.model_copy(update={"status": BundleJobStatus.FAILED}), expected_version=1)
    with pytest.raises(ConflictError):
        store.create_bundle_job(job.model_copy(update={"status": BundleJobStatus.FAILED}))


def test_item_records_read_an_item_whole(store: KnowledgeStore, base: KnowledgeBase) -> None:
    item = _item_with_history(store, base)

    whole = store.item_records(TENANT, item.knowledge_item_id)

    assert whole is not None
    read, revisions, states = whole
    assert read == item
    listed = store.list_revisions(TENANT, item.knowledge_item_id, limit=10, next_token=None).entries
    assert [revision for revision, _ in revisions] == sorted(
        listed, key=lambda revision: revision.knowledge_revision_id
    )
    assert [content for _, content in revisions] == [
        store.read_all_content(revision) for revision, _ in revisions
    ]
    assert states == store.list_item_states(TENANT, item.knowledge_item_id)
    assert store.item_records(OTHER_TENANT, item.knowledge_item_id) is None
