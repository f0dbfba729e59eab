"""Index work: one part of a revision to chunk, embed and write (the work queue's message).

A revision is indexed in parts of about ``PART_TARGET_CHARS`` characters, so no single invocation
has to chunk and embed a whole large revision: the stream consumer only enqueues parts, and the
work consumer indexes one part per message. Embedding is nearly all of a part's cost (the MiniLM
model on two cores: 11-18 chunks per second on a quiet machine, a few on a busy one), so a part is
sized to be a second or two of embedding: another document's work waits at most that long for a
large revision's part to finish.

Parts are numbered from 0; ``parts`` is their count, fixed by the revision's size
(``part_count``), so every message of one item version agrees on it. Part ``n`` nominally covers
``[n · PART_TARGET_CHARS, (n + 1) · PART_TARGET_CHARS)``; each inner boundary is moved back to the
nearest paragraph break (else line break, else sentence end, else space) within
``BOUNDARY_REACH_CHARS`` before it (``part_span``), so the chunker's forced break between parts falls
where it would have cut anyway. A boundary depends only on the text just before it, so the two parts
that share it compute the same one, each from its own read (``part_window``).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator

PART_TARGET_CHARS = 8_000
"""Nominal characters per part: about 15 chunks of 200 tokens of English prose (1 s of embedding on
a quiet two-core machine), and a few times that for scripts of more tokens per character."""
BOUNDARY_REACH_CHARS = 1_000
"""How far before a nominal boundary ``part_span`` looks for a break to move it to."""
ORDINAL_STRIDE = 100_000
"""Chunk and passage ordinals of part ``n`` start at ``n · ORDINAL_STRIDE``; a part holds fewer
spans than characters, and parts are under 10,000 characters, so ordinals never collide."""
FANOUT_WINDOW = 1
"""Parts of one item version in the queue at a time: the stream consumer queues the first one and
each part, once written, queues the next one behind whatever arrived meanwhile. Each item being
indexed thus holds one place in the queue, and the worker takes items' parts in turn."""

_BREAKS = ("\n\n", "\n", ". ", " ")
"""Separators a boundary may move to, strongest first; the boundary goes just after one."""


def part_count(total_chars: int) -> int:
    """Number of parts of a revision of ``total_chars`` characters (an empty one has one part)."""
    return max(1, -(-total_chars // PART_TARGET_CHARS))


def part_window(part: int, total_chars: int) -> tuple[int, int]:
    """``(offset, limit)`` in code points of the revision text that ``part_span`` needs for ``part``:
    its nominal range with the ``BOUNDARY_REACH_CHARS`` before its start."""
    start = max(0, part * PART_TARGET_CHARS - BOUNDARY_REACH_CHARS)
    end = min(total_chars, (part + 1) * PART_TARGET_CHARS)
    return start, max(0, end - start)


def part_span(text: str, offset: int, *, part: int, total_chars: int) -> tuple[int, int]:
    """``(start, end)`` code points of the revision that ``part`` covers, from ``text``: the revision's
    characters from ``offset`` on, at least ``part_window``'s. The spans of parts ``0 .. parts - 1``
    tile ``[0, total_chars)`` without gaps or overlaps, each shorter than
    ``PART_TARGET_CHARS + BOUNDARY_REACH_CHARS``."""
    parts = part_count(total_chars)
    return (
        _boundary(text, offset, part, parts, total_chars),
        _boundary(text, offset, part + 1, parts, total_chars),
    )


def _boundary(text: str, offset: int, number: int, parts: int, total_chars: int) -> int:
    """Where part ``number`` starts (``parts`` for the end of the last one)."""
    if number <= 0:
        return 0
    if number >= parts:
        return total_chars
    nominal = number * PART_TARGET_CHARS
    first = max(0, nominal - BOUNDARY_REACH_CHARS - offset)
    reach = text[first : nominal - offset]
    for separator in _BREAKS:
        found = reach.rfind(separator)
        if found >= 0:
            return offset + first + found + len(separator)
    return nominal


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
