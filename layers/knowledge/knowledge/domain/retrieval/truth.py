"""What the read-time truth check of a search (DESIGN §4) reads from the store: for each fused
candidate, its item, its base and the revision it was indexed from, in one batched read per round."""

from __future__ import annotations

from typing import NamedTuple

from pydantic import BaseModel, ConfigDict

from knowledge.domain.models import KnowledgeBase, KnowledgeItem, Revision


class CandidateKey(NamedTuple):
    """A search candidate as the index holds it: the base, item and revision of its chunk."""

    knowledge_base_id: str
    knowledge_item_id: str
    knowledge_revision_id: str


class CandidateRecords(BaseModel):
    """The stored records of a round of candidates, by id; an absent record is left out.
    ``revisions`` is keyed by ``(knowledge_item_id, knowledge_revision_id)``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    items: dict[str, KnowledgeItem] = {}
    bases: dict[str, KnowledgeBase] = {}
    revisions: dict[tuple[str, str], Revision] = {}
