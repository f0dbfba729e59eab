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

import json
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

MAX_SEGMENTS = 5_000
"""The most segments one revision holds: a page, a section or a block of rows each."""
MAX_SECTION_CHARS = 200
"""The longest ``section`` (a heading) and ``sheet`` name a segment keeps."""
MAX_NAME_CHARS = 30_000
"""The most characters of ``section`` and ``sheet`` names one revision's segments hold, counting a
name only where it differs from the previous segment's (a sheet's blocks of rows name it once).
With ``MAX_SEGMENTS`` this keeps a revision's record, segments included, inside DynamoDB's 400 KB."""


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
    content), pages at least 1, rows first ≤ last and at least 1, names at most ``MAX_SECTION_CHARS``
    each and ``MAX_NAME_CHARS`` in all (``name_chars``)."""
    if len(segments) > MAX_SEGMENTS:
        return f"at most {MAX_SEGMENTS:,} segments"
    if name_chars(segments) > MAX_NAME_CHARS:
        return f"at most {MAX_NAME_CHARS:,} characters of section and sheet names in all"
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


def name_chars(segments: Sequence[Segment]) -> int:
    """The characters of ``section`` and ``sheet`` names, each counted where it differs from the
    previous segment's."""
    total, section, sheet = 0, None, None
    for segment in segments:
        if segment.section != section:
            total += len(segment.section or "")
        if segment.sheet != sheet:
            total += len(segment.sheet or "")
        section, sheet = segment.section, segment.sheet
    return total


def encode_segments(segments: Sequence[Segment]) -> str:
    """``segments`` as compact JSON: a list of objects with ``o`` (offset) and, when set, ``p``
    (page) and ``r`` (``[first, last]``); ``s`` (section) and ``h`` (sheet) appear only where they
    differ from the previous segment's (``null`` when they stop), so a sheet's blocks name it once."""
    entries: list[dict[str, Any]] = []
    section, sheet = None, None
    for segment in segments:
        entry: dict[str, Any] = {"o": segment.offset}
        if segment.page is not None:
            entry["p"] = segment.page
        if segment.rows is not None:
            entry["r"] = list(segment.rows)
        if segment.section != section:
            entry["s"] = segment.section
        if segment.sheet != sheet:
            entry["h"] = segment.sheet
        section, sheet = segment.section, segment.sheet
        entries.append(entry)
    return json.dumps(entries, ensure_ascii=False, separators=(",", ":"))


def decode_segments(text: str) -> tuple[Segment, ...]:
    """The segments ``encode_segments`` wrote."""
    segments: list[Segment] = []
    section, sheet = None, None
    for entry in json.loads(text):
        section = entry.get("s", section)
        sheet = entry.get("h", sheet)
        rows = entry.get("r")
        segments.append(
            Segment(
                offset=entry["o"],
                page=entry.get("p"),
                sheet=sheet,
                rows=(rows[0], rows[1]) if rows else None,
                section=section,
            )
        )
    return tuple(segments)
