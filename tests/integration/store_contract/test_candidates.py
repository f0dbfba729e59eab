"""``read_candidates``: the records a search's read-time truth check needs, in one batched read."""

from __future__ import annotations

from knowledge.domain.models import KnowledgeBase, Source
from knowledge.domain.retrieval.truth import CandidateKey
from knowledge.ports import KnowledgeStore
from tests.integration.store_contract.conftest import OTHER_TENANT, TENANT
from tests.support.store import make_base

ABSENT_ITEM = "ki_01ABSENT00000000000000000000"
ABSENT_REVISION = "kr_01ABSENT00000000000000000000"
ABSENT_BASE = "kb_01ABSENT00000000000000000000"


def _published(store: KnowledgeStore, base: KnowledgeBase, title: str = "Runbook") -> CandidateKey:
    item, revision = store.create_item(
        TENANT,
        base.knowledge_base_id,
        title=title,
        content=f"{title} content",
        source=Source(),
        external_id=None,
        publish=True,
    )
    return CandidateKey(base.knowledge_base_id, item.knowledge_item_id, revision.knowledge_revision_id)


def test_read_candidates_returns_each_candidates_item_base_and_revision(
    store: KnowledgeStore, base: KnowledgeBase
) -> None:
    first = _published(store, base, "First")
    other_base = make_base(store, TENANT)
    second = _published(store, other_base, "Second")

    records = store.read_candidates(TENANT, [first, second, first])

    assert records.items == {
        key.knowledge_item_id: store.get_item(TENANT, key.knowledge_item_id) for key in (first, second)
    }
    assert records.bases == {base.knowledge_base_id: base, other_base.knowledge_base_id: other_base}
    assert records.revisions == {
        (key.knowledge_item_id, key.knowledge_revision_id): store.get_revision(
            TENANT, key.knowledge_item_id, key.knowledge_revision_id
        )
        for key in (first, second)
    }


def test_read_candidates_leaves_absent_records_and_other_tenants_out(
    store: KnowledgeStore, base: KnowledgeBase
) -> None:
    known = _published(store, base)

    records = store.read_candidates(
        TENANT,
        [
            CandidateKey(ABSENT_BASE, ABSENT_ITEM, ABSENT_REVISION),
            CandidateKey(base.knowledge_base_id, known.knowledge_item_id, ABSENT_REVISION),
        ],
    )
    elsewhere = store.read_candidates(OTHER_TENANT, [known])

    assert set(records.items) == {known.knowledge_item_id}
    assert set(records.bases) == {base.knowledge_base_id}
    assert records.revisions == {}
    assert (elsewhere.items, elsewhere.bases, elsewhere.revisions) == ({}, {}, {})


def test_read_candidates_more_keys_than_one_batch_returns_every_record(
    store: KnowledgeStore, base: KnowledgeBase
) -> None:
    keys = [_published(store, base, f"Item {number}") for number in range(60)]  # 121 distinct keys

    records = store.read_candidates(TENANT, keys)

    assert set(records.items) == {key.knowledge_item_id for key in keys}
    assert set(records.revisions) == {(key.knowledge_item_id, key.knowledge_revision_id) for key in keys}
    assert set(records.bases) == {base.knowledge_base_id}


def test_read_candidates_of_nothing_is_empty(store: KnowledgeStore) -> None:
    records = store.read_candidates(TENANT, [])

    assert (records.items, records.bases, records.revisions) == ({}, {}, {})
