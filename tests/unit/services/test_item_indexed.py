"""Item write answers say ``indexed``: whether searches already reflect the item as answered."""

from __future__ import annotations

from knowledge.contract.writes import (
    ArchiveRequest,
    CreateItemRequest,
    CreateKnowledgeBaseRequest,
    CreateRevisionRequest,
    PublishRequest,
)
from knowledge.domain.models import Source
from knowledge.services.curation import CurationService
from knowledge.services.indexing import IndexingService
from tests.unit.services.conftest import ADMIN, READ, TENANT, WRITE, caller

CURATOR = caller("curator-1", ADMIN, READ, WRITE)
DOC = "# Deployment runbook\n\nRoll out with the blue green switch and watch the health dashboard.\n"


def test_item_write_answers_say_indexed_once_the_index_holds_the_current_revision(
    curation: CurationService, indexing: IndexingService
) -> None:
    base = curation.create_base(CURATOR, CreateKnowledgeBaseRequest(name="Handbook", scope="tenant"))
    draft, _ = curation.create_item(
        CURATOR, base.knowledge_base_id, CreateItemRequest(title="Runbook", content=DOC, source=Source())
    )
    assert draft.indexed is True  # a draft: nothing to search yet

    published = curation.publish(
        CURATOR,
        draft.knowledge_item_id,
        PublishRequest(revision_id=draft.knowledge_revision_id, expected_version=draft.version),
    )
    assert published.indexed is False
    indexing.sync_item(TENANT, draft.knowledge_item_id, last_known_version=published.version)
    assert curation.get_item(CURATOR, draft.knowledge_item_id).indexed is True

    revised = curation.add_revision(
        CURATOR,
        draft.knowledge_item_id,
        CreateRevisionRequest(content=DOC + "\nA second step.", publish=True),
    )
    assert revised.indexed is False
    unpublished_draft = curation.add_revision(
        CURATOR, draft.knowledge_item_id, CreateRevisionRequest(content=DOC + "\nA draft.", publish=False)
    )
    assert unpublished_draft.indexed is False  # the current revision is still not indexed

    archived = curation.archive(
        CURATOR, draft.knowledge_item_id, ArchiveRequest(expected_version=unpublished_draft.version)
    )
    assert archived.indexed is True
