"""Index work: one part of a revision to chunk, embed and write (the work queue's message).

A revision is indexed in parts of whole pages (``part_chars``), so no single invocation has to
chunk and embed a whole large revision: the stream consumer only enqueues parts, and the work
consumer indexes one part per message. Parts are numbered from 0; ``parts`` is their count, fixed
by the revision's size, so every message of one item version agrees on it.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator

PART_TARGET_CHARS = 50_000
"""Characters per part, rounded down to whole pages (at least one page): about 60 chunks of 200
tokens, a few seconds of embedding."""
ORDINAL_STRIDE = 100_000
"""Chunk and passage ordinals of part ``n`` start at ``n · ORDINAL_STRIDE``; a part holds fewer
spans than characters, and pages are at most 90,000 characters, so ordinals never collide."""
FANOUT_WINDOW = 2
"""Parts of one item version queued at a time: the stream consumer queues the first ones and each
part, once written, queues the part ``FANOUT_WINDOW`` further on. Another item's work therefore
never waits behind more than this many parts of a large revision in the queue."""


def part_chars(page_size: int) -> int:
    """Characters per part for pages of ``page_size`` characters: whole pages, at least one."""
    return page_size * max(1, PART_TARGET_CHARS // page_size)


def part_count(total_chars: int, page_size: int) -> int:
    """Number of parts of a revision of ``total_chars`` characters (an empty one has one part)."""
    size = part_chars(page_size)
    return max(1, -(-total_chars // size))


class IndexWork(BaseModel):
    """One part of one item version to index (the JSON body of a work-queue message).

    ``version`` and ``knowledge_revision_id`` name the item state the part was planned for: a part
    of a version the item has left is dropped, and the index refuses it anyway (external versions).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    tenant_id: str = Field(min_length=1)
    knowledge_item_id: str = Field(min_length=1)
    knowledge_revision_id: str = Field(min_length=1)
    version: int = Field(ge=1)
    part: int = Field(ge=0)
    parts: int = Field(ge=1)

    @model_validator(mode="after")
    def _part_in_range(self) -> IndexWork:
        if self.part >= self.parts:
            raise ValueError("part must be below parts")
        return self


class PartWrite(BaseModel):
    """What writing one part did: ``written`` (False: the index holds a newer version or a
    tombstone), ``held`` (the parts of that version the index now holds) and ``complete`` (every
    part of it is in)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    written: bool
    held: frozenset[int] = frozenset()
    complete: bool = False
