"""Upsert by ``external_id``: the one way producers (queue) and curators (REST) put a document in a
base without creating duplicates (DESIGN §6).

Idempotent by (base, ``external_id``, content): when the item holding ``external_id`` already has a
latest revision with the same content hash, title, source and segments, nothing is written (a redelivery or
a re-ingest of an unchanged file); only ``publish`` of a not-yet-current latest revision is applied.
A concurrent writer that creates or changes the item makes us read it again, up to
``MAX_ATTEMPTS`` times.

Errors: ``ResourceUnavailableError`` (the base is gone), ``ConflictError`` (the item kept changing),
``DependencyUnavailableError`` (the store is down).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from knowledge.domain.lifecycle import content_sha256
from knowledge.domain.models import KnowledgeItem, Source
from knowledge.domain.segments import Segment
from knowledge.errors import ConflictError, ResourceUnavailableError
from knowledge.ports import ItemStore

MAX_ATTEMPTS = 5
"""Re-reads of an item whose version moved between our read and our write."""


class UpsertOutcome(StrEnum):
    CREATED = "created"
    """A new item with its first revision."""
    REVISED = "revised"
    """A new revision of the existing item."""
    PUBLISHED = "published"
    """The unchanged latest revision was published."""
    UNCHANGED = "unchanged"
    """Nothing written."""


@dataclass(frozen=True)
class Upserted:
    """The item after the upsert and its latest revision (the one just created, or the equal one)."""

    item: KnowledgeItem
    revision_id: str
    outcome: UpsertOutcome


@dataclass(frozen=True)
class Document:
    """What an upsert writes: ``source`` ``None`` keeps the latest revision's source."""

    external_id: str
    title: str
    content: str
    source: Source | None
    publish: bool
    segments: tuple[Segment, ...] = ()


def upsert_by_external_id(
    store: ItemStore, tenant_id: str, knowledge_base_id: str, document: Document
) -> Upserted:
    """Create the item holding ``document.external_id``, or add a revision when the content, title or
    source changed, or publish the equal latest revision, or do nothing (see the module doc)."""
    item: KnowledgeItem | None = None
    for _ in range(MAX_ATTEMPTS):
        item = store.find_item_by_external_id(tenant_id, knowledge_base_id, document.external_id)
        try:
            if item is None:
                created, revision = store.create_item(
                    tenant_id,
                    knowledge_base_id,
                    title=document.title,
                    content=document.content,
                    source=document.source or Source(),
                    external_id=document.external_id,
                    publish=document.publish,
                    segments=document.segments,
                )
                return Upserted(created, revision.knowledge_revision_id, UpsertOutcome.CREATED)
            return _update(store, item, document)
        except ConflictError:
            continue  # another writer created or changed the item: read it again
        except ResourceUnavailableError:
            if item is None:
                raise  # the base itself is gone
            continue  # the item was archived meanwhile: its external id is free again
    raise ConflictError(
        "The item with this external_id kept changing; retry.",
        current_version=item.version if item is not None else None,
    )


def _update(store: ItemStore, item: KnowledgeItem, document: Document) -> Upserted:
    latest = store.get_revision(item.tenant_id, item.knowledge_item_id, item.latest_revision_id)
    unchanged = (
        latest is not None
        and item.latest_sha256 == content_sha256(document.content)
        and latest.title == document.title
        and (document.source is None or latest.source == document.source)
        and latest.segments == document.segments
    )
    if not unchanged:
        updated, revision = store.add_revision(
            item.tenant_id,
            item.knowledge_item_id,
            content=document.content,
            title=document.title,
            source=document.source,
            publish=document.publish,
            expected_version=item.version,
            segments=document.segments,
        )
        return Upserted(updated, revision.knowledge_revision_id, UpsertOutcome.REVISED)
    if document.publish and item.current_revision_id != item.latest_revision_id:
        published = store.publish_revision(
            item.tenant_id, item.knowledge_item_id, item.latest_revision_id, expected_version=item.version
        )
        return Upserted(published, item.latest_revision_id, UpsertOutcome.PUBLISHED)
    return Upserted(item, item.latest_revision_id, UpsertOutcome.UNCHANGED)
