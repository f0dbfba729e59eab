"""From revision text to what the search index stores: chunk, embed (title prepended), package.

Shared by the stream indexer and the relevance benchmark, so both measure the same path.
"""

from __future__ import annotations

from functools import cache

from knowledge.domain.retrieval.chunking import Chunker, embedding_text
from knowledge.domain.retrieval.hits import PASSAGE_TOKENS, Chunk, IndexedChunk, IndexedItem
from knowledge.ports import Embedder


@cache
def _passage_splitter() -> Chunker:
    """Passages end at the chunker's strongest boundaries in reach (sections first), never overlap."""
    return Chunker(max_tokens=PASSAGE_TOKENS, overlap_tokens=0)


def build_indexed_item(
    *,
    chunker: Chunker,
    embedder: Embedder,
    tenant_id: str,
    knowledge_base_id: str,
    knowledge_item_id: str,
    knowledge_revision_id: str,
    version: int,
    owner_id: str,
    team_id: str | None,
    scope: str,
    title: str,
    content: str,
    offset: int = 0,
    first_ordinal: int = 0,
) -> IndexedItem:
    """Chunk ``content`` (offsets in code points of the revision) and embed each chunk with the
    title prepended; split it into passages of up to ``PASSAGE_TOKENS`` tokens for the lexical leg.
    One ``embed`` call per item; the embedder's cache skips unchanged chunks.

    For one part of a revision, ``content`` is the part's text, which starts at code point
    ``offset`` of the revision; the spans' offsets are shifted by it and their ordinals start at
    ``first_ordinal`` (``index_work.ORDINAL_STRIDE`` apart per part)."""
    # An item with no text is still findable by its title: it gets one empty chunk at offset 0.
    empty = [Chunk(ordinal=0, start=0, end=0, text="")]
    chunks = _shifted(chunker.split(content) or empty, offset, first_ordinal)
    passages = _shifted(_passage_splitter().split(content) or empty, offset, first_ordinal)
    vectors = embedder.embed([embedding_text(title, chunk.text) for chunk in chunks])
    return IndexedItem(
        tenant_id=tenant_id,
        knowledge_base_id=knowledge_base_id,
        knowledge_item_id=knowledge_item_id,
        knowledge_revision_id=knowledge_revision_id,
        version=version,
        owner_id=owner_id,
        team_id=team_id,
        scope=scope,
        title=title,
        chunks=[
            IndexedChunk(
                ordinal=chunk.ordinal, start=chunk.start, end=chunk.end, text=chunk.text, vector=vector
            )
            for chunk, vector in zip(chunks, vectors, strict=True)
        ],
        passages=passages,
    )


def _shifted(spans: list[Chunk], offset: int, first_ordinal: int) -> list[Chunk]:
    if offset == 0 and first_ordinal == 0:
        return spans
    return [
        Chunk(
            ordinal=first_ordinal + span.ordinal,
            start=offset + span.start,
            end=offset + span.end,
            text=span.text,
        )
        for span in spans
    ]
