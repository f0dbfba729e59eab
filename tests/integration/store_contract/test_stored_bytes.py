"""The store contract for the tenant's stored content bytes (``QuotaCounters.content_bytes``, what
``GET /v1/usage`` reports): the UTF-8 bytes of every revision and of every note at its current
version, moved in the same atomic write as the content, on every adapter."""

from __future__ import annotations

from datetime import UTC, datetime

from knowledge.domain.memory.lifecycle import NoteDraft, NoteWrite, new_note, revised_note
from knowledge.domain.memory.notes import MemoryType, Note, claims_of
from knowledge.domain.models import KnowledgeBase, Scope, Source
from knowledge.ports import KnowledgeStore
from tests.integration.store_contract.conftest import OTHER_TENANT, TENANT

NOW = datetime(2026, 6, 1, tzinfo=UTC)
FIRST = "Blue-green deployments switch traffic at the router."
SECOND = "Canary déploiements: 5 % du trafic d'abord."  # accents: more bytes than characters
NOTE = "The build runs on Python 3.11."
REVISED = "The build runs on Python 3.13 — since June."


def _size(text: str) -> int:
    return len(text.encode("utf-8"))


def _draft(content: str) -> NoteDraft:
    return NoteDraft(
        content=content,
        scope=Scope.PRIVATE,
        team_id=None,
        agent_id=None,
        path="/",
        memory_type=MemoryType.FACT,
        importance=0.5,
        semantic_key=None,
        expires_at=None,
    )


def _remember(store: KnowledgeStore, content: str) -> Note:
    note = new_note(TENANT, "user-1", _draft(content), supersedes=(), now=NOW)
    store.commit_notes(TENANT, [NoteWrite(previous=None, note=note, claim=tuple(claims_of(note)))])
    return note


def _stored_bytes(store: KnowledgeStore, tenant_id: str = TENANT) -> int:
    return store.read_counters(tenant_id).content_bytes


def test_stored_bytes_count_every_revision_archived_items_included(
    store: KnowledgeStore, base: KnowledgeBase
) -> None:
    item, _ = store.create_item(
        TENANT,
        base.knowledge_base_id,
        title="Runbook",
        content=FIRST,
        source=Source(),
        external_id=None,
        publish=True,
    )
    revised, _ = store.add_revision(
        TENANT,
        item.knowledge_item_id,
        content=SECOND,
        title=None,
        source=None,
        publish=False,
        expected_version=item.version,
    )
    both = _stored_bytes(store)

    store.archive_item(TENANT, item.knowledge_item_id, expected_version=revised.version)

    assert both == _size(FIRST) + _size(SECOND)
    assert _stored_bytes(store) == both  # revisions are kept
    assert _stored_bytes(store, OTHER_TENANT) == 0


def test_stored_bytes_follow_a_note_revised_then_deleted(store: KnowledgeStore) -> None:
    note = _remember(store, NOTE)
    created = _stored_bytes(store)
    revision = revised_note(note, _draft(REVISED), supersedes=(), now=NOW)
    store.commit_notes(TENANT, [NoteWrite(previous=note, note=revision)])
    revised = _stored_bytes(store)

    store.delete_note(TENANT, note.note_id, claims=claims_of(revision), expected_version=revision.version)

    assert (created, revised, _stored_bytes(store)) == (_size(NOTE), _size(REVISED), 0)


def test_stored_bytes_note_expiry_counted_out_once_takes_its_bytes_off_once(store: KnowledgeStore) -> None:
    kept = _remember(store, NOTE)
    expired = _remember(store, REVISED)

    store.release_expired_note(TENANT, expired.note_id, content_bytes=_size(REVISED))
    store.release_expired_note(TENANT, expired.note_id, content_bytes=_size(REVISED))

    assert _stored_bytes(store) == _size(kept.content)
