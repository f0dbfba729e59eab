"""The read-time truth check of a search (DESIGN §4) on the table: the items (``T#{tenant}#ITEM#{item}``
/ ``META``), bases (``T#{tenant}#KB#{kb}`` / ``META``) and revisions (``T#{tenant}#ITEM#{item}`` /
``REV#{rev}``) of a round of candidates, all in one ``DynamoDBTable.batch_get``."""

from __future__ import annotations

from collections.abc import Sequence

from knowledge.adapters.dynamodb import codec, keys
from knowledge.adapters.dynamodb.table import TableRecords
from knowledge.domain.models import KnowledgeBase, KnowledgeItem, Revision
from knowledge.domain.retrieval.truth import CandidateKey, CandidateRecords


class DynamoDBCandidateRecords(TableRecords):
    """``CatalogStore.read_candidates``: one strongly consistent ``BatchGetItem`` per 100 distinct
    keys, unprocessed keys retried with backoff (``DependencyUnavailableError`` when they stay)."""

    def read_candidates(self, tenant_id: str, candidates: Sequence[CandidateKey]) -> CandidateRecords:
        items = {keys.item_key(tenant_id, candidate.knowledge_item_id) for candidate in candidates}
        bases = {keys.base_key(tenant_id, candidate.knowledge_base_id) for candidate in candidates}
        revisions = {
            keys.revision_key(tenant_id, candidate.knowledge_item_id, candidate.knowledge_revision_id)
            for candidate in candidates
        }
        found_items: dict[str, KnowledgeItem] = {}
        found_bases: dict[str, KnowledgeBase] = {}
        found_revisions: dict[tuple[str, str], Revision] = {}
        for record in self._table.batch_get([*items, *bases, *revisions]):
            table_key = keys.TableKey(record["PK"]["S"], record["SK"]["S"])
            if table_key in items:
                item = codec.decode_item(record)
                found_items[item.knowledge_item_id] = item
            elif table_key in bases:
                base = codec.decode_base(record)
                found_bases[base.knowledge_base_id] = base
            elif table_key in revisions:
                revision = codec.decode_revision(record)
                found_revisions[revision.knowledge_item_id, revision.knowledge_revision_id] = revision
        return CandidateRecords(items=found_items, bases=found_bases, revisions=found_revisions)
