"""build_indexed_item: a revision's chunks, each embedded with the title prepended, in one call, and
its passages for the lexical leg."""

from __future__ import annotations

from itertools import pairwise

from knowledge.domain.retrieval.chunking import Chunker, embedding_text
from knowledge.domain.retrieval.hits import PASSAGE_TOKENS, IndexedItem
from knowledge.services.documents import build_indexed_item
from tests.support.embedding import HashingEmbedder


def _indexed(chunker: Chunker, embedder: HashingEmbedder, content: str) -> IndexedItem:
    return build_indexed_item(
        chunker=chunker,
        embedder=embedder,
        tenant_id="acme",
        knowledge_base_id="kb_1",
        knowledge_item_id="ki_1",
        knowledge_revision_id="kr_1",
        version=3,
        owner_id="owner-1",
        team_id=None,
        scope="tenant",
        title="Runbook",
        content=content,
    )


def test_build_indexed_item_chunks_cover_the_content_with_one_vector_each(
    chunker: Chunker, embedder: HashingEmbedder
) -> None:
    content = " ".join(f"Sentence number {n} about the deployment runbook." for n in range(60))

    indexed = _indexed(chunker, embedder, content)

    assert len(indexed.chunks) > 1
    assert embedder.calls == 1
    assert all(content[chunk.start : chunk.end] == chunk.text for chunk in indexed.chunks)
    assert all(len(chunk.vector) == embedder.dimension for chunk in indexed.chunks)
    assert (indexed.version, indexed.title, indexed.scope) == (3, "Runbook", "tenant")


def test_build_indexed_item_of_empty_content_has_one_empty_chunk_findable_by_title(
    chunker: Chunker, embedder: HashingEmbedder
) -> None:
    indexed = _indexed(chunker, embedder, "")

    assert [(chunk.start, chunk.end, chunk.text) for chunk in indexed.chunks] == [(0, 0, "")]
    assert indexed.chunks[0].vector == embedder.embed([embedding_text("Runbook", "")])[0]


def test_build_indexed_item_passages_cover_the_content_in_fewer_larger_spans(
    chunker: Chunker, embedder: HashingEmbedder
) -> None:
    content = "\n\n".join(
        f"## Step {n}\n\n" + " ".join(f"Sentence {m} of step {n} in the runbook." for m in range(25))
        for n in range(4)
    )

    indexed = _indexed(chunker, embedder, content)

    passages = indexed.passages
    assert 1 < len(passages) < len(indexed.chunks)
    assert [passage.ordinal for passage in passages] == list(range(len(passages)))
    assert all(content[passage.start : passage.end] == passage.text for passage in passages)
    assert all(left.end <= right.start for left, right in pairwise(passages))
    assert all(chunker.count_tokens(p.text) <= PASSAGE_TOKENS for p in passages)
    assert embedder.calls == 1


def test_build_indexed_item_of_empty_content_has_one_empty_passage(
    chunker: Chunker, embedder: HashingEmbedder
) -> None:
    indexed = _indexed(chunker, embedder, "")

    assert [(passage.start, passage.end, passage.text) for passage in indexed.passages] == [(0, 0, "")]
