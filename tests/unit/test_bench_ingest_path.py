"""``bench.ingest_path``: a few synthetic documents through the real handlers end up searchable."""

from __future__ import annotations

from bench.ingest_path import PHASES, TENANT, Document, ingest_path, table
from bench.memory import HashingVectors
from knowledge.domain.access.visibility import VisibilityFilter
from knowledge.domain.retrieval.hits import IndexQuery, Leg

WORDS = ("quokka", "narwhal", "axolotl", "pangolin", "okapi")


def _documents() -> list[Document]:
    return [
        Document(
            external_id=f"doc-{number}",
            title=f"Field note {number}",
            content=f"The {word} was seen near the river at dawn. Observers counted it twice.",
        )
        for number, word in enumerate(WORDS)
    ]


def test_every_document_is_indexed_and_found_by_its_own_word() -> None:
    documents = _documents()

    run = ingest_path(documents, HashingVectors(384), round_size=2)

    assert run.documents == len(documents)
    assert run.marked == len(documents)
    assert run.chunks >= len(documents)
    visibility = VisibilityFilter(tenant_id=TENANT, subject_id="inspector")
    for document, word in zip(documents, WORDS, strict=True):
        hits = run.index.search(
            IndexQuery(text=word, visibility=visibility, k=10, legs=frozenset({Leg.LEXICAL}))
        )
        assert {hit.knowledge_item_id for hit in hits.lexical} == {run.item_ids[document.external_id]}
    assert all(run.seconds[phase] > 0 for phase in PHASES)
    assert len(table({"hashing": run})) == 2 + len(PHASES)
