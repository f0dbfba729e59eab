"""The store contract: a revision keeps the segments it was written with, on every adapter."""

from __future__ import annotations

import pytest

from knowledge.domain.models import KnowledgeBase, Source
from knowledge.domain.segments import MAX_SEGMENTS, Segment
from knowledge.ports import KnowledgeStore
from tests.integration.store_contract.conftest import TENANT

CONTENT = "## Budget\n\n| Item | Cost |\n|---|---|\n| Pump | 3 |\n\nPage two text.\n"
SEGMENTS = (
    Segment(offset=0, sheet="Budget", section="Budget"),
    Segment(offset=11, sheet="Budget", rows=(2, 2)),
    Segment(offset=CONTENT.index("Page two"), page=2, section="Überblick"),
)


def test_create_item_revision_keeps_its_segments(store: KnowledgeStore, base: KnowledgeBase) -> None:
    item, revision = store.create_item(
        TENANT,
        base.knowledge_base_id,
        title="Plant",
        content=CONTENT,
        source=Source(uri="s3://docs/plant.xlsx"),
        external_id=None,
        publish=True,
        segments=SEGMENTS,
    )
    assert revision.segments == SEGMENTS
    stored = store.get_revision(TENANT, item.knowledge_item_id, revision.knowledge_revision_id)
    assert stored is not None
    assert stored.segments == SEGMENTS


def test_add_revision_without_segments_has_none(store: KnowledgeStore, base: KnowledgeBase) -> None:
    item, _ = store.create_item(
        TENANT,
        base.knowledge_base_id,
        title="Plant",
        content=CONTENT,
        source=Source(),
        external_id=None,
        publish=True,
        segments=SEGMENTS,
    )
    _, revision = store.add_revision(
        TENANT,
        item.knowledge_item_id,
        content="Plain text now.",
        title=None,
        source=None,
        publish=True,
        expected_version=item.version,
    )
    stored = store.get_revision(TENANT, item.knowledge_item_id, revision.knowledge_revision_id)
    assert stored is not None
    assert stored.segments == ()


def test_revision_holds_the_most_segments_with_long_names(store: KnowledgeStore, base: KnowledgeBase) -> None:
    content = "x" * MAX_SEGMENTS
    segments = tuple(
        Segment(offset=number, page=number + 1, section=f"{number % 150:0200d}" if number < 150 else None)
        for number in range(MAX_SEGMENTS)
    )
    item, revision = store.create_item(
        TENANT,
        base.knowledge_base_id,
        title="Long",
        content=content,
        source=Source(),
        external_id=None,
        publish=True,
        segments=segments,
    )
    stored = store.get_revision(TENANT, item.knowledge_item_id, revision.knowledge_revision_id)
    assert stored is not None
    assert stored.segments == segments


def test_create_item_segments_outside_the_content_are_refused(
    store: KnowledgeStore, base: KnowledgeBase
) -> None:
    with pytest.raises(ValueError, match="within the content"):
        store.create_item(
            TENANT,
            base.knowledge_base_id,
            title="Bad",
            content="short",
            source=Source(),
            external_id=None,
            publish=True,
            segments=(Segment(offset=99),),
        )
