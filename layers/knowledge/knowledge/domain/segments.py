"""Segments: where each stretch of a revision's content came from in the original document.

A converted PDF, Word file, web page or spreadsheet (``knowledge.conversion``) becomes Markdown
plus segments, each naming the place in the original that the content from its ``offset`` up to the
next segment's offset came from: a PDF page (``page``, 1-based), a spreadsheet's ``sheet`` and its
``rows`` (first and last, 1-based as the spreadsheet numbers them; a CSV's data rows after its
header), a section heading (``section``). Offsets are Unicode code points into the content, like
every locator, and strictly ascending; content before the first segment has none.

Revisions store their segments (empty for text written without them), and search results and
addressed reads name the segment covering their locator's offset.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass

MAX_SEGMENTS = 10_000
"""The most segments one revision holds: a page, a section or a block of rows each."""
MAX_SECTION_CHARS = 500
"""The longest ``section`` (a heading) and ``sheet`` name a segment keeps."""


@dataclass(frozen=True)
class Segment:
    """Content from ``offset`` (code points) to the next segment's offset came from this place."""

    offset: int
    page: int | None = None
    sheet: str | None = None
    rows: tuple[int, int] | None = None
    section: str | None = None


@dataclass(frozen=True)
class ConvertedDocument:
    """A document as the chunker reads it: ``content`` is Markdown (headings, tables with their
    header row, lists), ``title`` the document's own title when it has one, ``segments`` ascending
    offsets into ``content``."""

    title: str | None
    content: str
    segments: tuple[Segment, ...] = ()


def segment_at(segments: Sequence[Segment], offset: int) -> Segment | None:
    """The segment covering ``offset``: the last one starting at or before it (``None`` when the
    offset comes before the first segment or there are none). ``segments`` must be ascending."""
    index = bisect_right([segment.offset for segment in segments], offset)
    return segments[index - 1] if index else None


def page_offset(segments: Sequence[Segment], page: int) -> int | None:
    """The offset where page ``page`` starts, ``None`` when no segment names that page."""
    return next((segment.offset for segment in segments if segment.page == page), None)


def segments_problem(segments: Sequence[Segment], total_chars: int) -> str | None:
    """Why ``segments`` do not fit content of ``total_chars`` code points, or ``None`` when they do:
    at most ``MAX_SEGMENTS``, offsets strictly ascending and below ``total_chars`` (0 for empty
    content), pages at least 1, rows first ≤ last and at least 1, names at most ``MAX_SECTION_CHARS``."""
    if len(segments) > MAX_SEGMENTS:
        return f"at most {MAX_SEGMENTS:,} segments"
    previous = -1
    for segment in segments:
        if segment.offset <= previous:
            return "segment offsets must be strictly ascending"
        if segment.offset >= max(total_chars, 1):
            return "every segment offset must fall within the content"
        if segment.page is not None and segment.page < 1:
            return "a segment's page starts at 1"
        if segment.rows is not None and not 1 <= segment.rows[0] <= segment.rows[1]:
            return "a segment's rows are [first, last] with 1 <= first <= last"
        if any(len(name) > MAX_SECTION_CHARS for name in (segment.section, segment.sheet) if name):
            return f"a segment's section or sheet has at most {MAX_SECTION_CHARS} characters"
        previous = segment.offset
    return None
