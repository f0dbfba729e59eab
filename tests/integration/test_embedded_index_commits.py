"""The embedded index commits its writes in batches (before the next search or refresh):
whatever writes happened in between, a search answers exactly what they left, with every lexical
hit on the chunk its row now holds."""

from __future__ import annotations

import pytest

from knowledge.adapters.embedded.passages import EmbeddedIndex
from tests.support.index import DIMENSION, MODEL_ID, found_items, item, query


@pytest.fixture
def index() -> EmbeddedIndex:
    ready = EmbeddedIndex()
    ready.ensure_ready(model_id=MODEL_ID, dimension=DIMENSION)
    return ready


def test_embedded_index_writes_between_searches_are_all_applied_in_order(index: EmbeddedIndex) -> None:
    index.upsert(item("ki_a", ["alpha espresso"], version=1))
    index.upsert(item("ki_b", ["bravo espresso"]))
    index.upsert(item("ki_a", ["alpha rollback"], version=2))
    index.remove_item("t1", "ki_b", version=2)
    index.upsert(item("ki_c", ["charlie espresso"]))  # takes the rows ki_b and ki_a's v1 freed

    hits = index.search(query("espresso rollback")).lexical

    assert {(hit.knowledge_item_id, hit.text) for hit in hits} == {
        ("ki_a", "alpha rollback"),
        ("ki_c", "charlie espresso"),
    }
    assert found_items(index, "bravo") == set()


def test_embedded_index_refresh_and_search_both_see_every_write(index: EmbeddedIndex) -> None:
    index.upsert_many([item(f"ki_{number}", [f"note {number} espresso"]) for number in range(5)])
    index.refresh()
    index.remove_base("t1", "kb_a")
    index.upsert(item("ki_z", ["espresso after the base was emptied"], base="kb_b"))

    assert found_items(index, "espresso") == {"ki_z"}
