"""Segments as the write API and the ingest queue take them, and as locators name them.

A write may carry ``segments``: where stretches of its ``content`` came from in the original
document (``knowledge.domain.segments``), as ``knowledge.conversion`` makes them. Each is
``{"offset", "page"?, "sheet"?, "rows"?: {"first", "last"}, "section"?}``; offsets are code
points into the content, strictly ascending and inside it, at most ``MAX_SEGMENTS`` segments.
A list that breaks these rules is ``validation_error`` on ``segments`` (a bound of an integer,
``knowledge_invalid_request`` naming it, as everywhere).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StrictInt

from knowledge.domain.bounds import INTEGER_MAX, OFFSET_MAX
from knowledge.domain.segments import MAX_SECTION_CHARS, MAX_SEGMENTS, Segment
from knowledge.domain.text import StrictText

_Name = Annotated[StrictText, Field(min_length=1, max_length=MAX_SECTION_CHARS)]
_Row = Annotated[StrictInt, Field(ge=1, le=INTEGER_MAX)]


class RowRange(BaseModel):
    """Rows ``first`` to ``last`` (inclusive, 1-based as the spreadsheet numbers them)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    first: _Row
    last: _Row


class SegmentField(BaseModel):
    """One segment of a write: content from ``offset`` to the next segment's came from this place."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    offset: Annotated[StrictInt, Field(ge=0, le=OFFSET_MAX)]
    page: Annotated[StrictInt, Field(ge=1, le=INTEGER_MAX)] | None = None
    sheet: _Name | None = None
    rows: RowRange | None = None
    section: _Name | None = None

    def to_domain(self) -> Segment:
        rows = (self.rows.first, self.rows.last) if self.rows is not None else None
        return Segment(offset=self.offset, page=self.page, sheet=self.sheet, rows=rows, section=self.section)

    @classmethod
    def of(cls, segment: Segment) -> SegmentField:
        rows = RowRange(first=segment.rows[0], last=segment.rows[1]) if segment.rows else None
        return cls(
            offset=segment.offset, page=segment.page, sheet=segment.sheet, rows=rows, section=segment.section
        )


Segments = Annotated[
    list[SegmentField],
    Field(
        max_length=MAX_SEGMENTS,
        description=(
            "Optional: where stretches of content came from in the original document (a PDF page, a "
            "spreadsheet's sheet and rows, a section heading), offsets ascending and inside content; "
            f"at most {MAX_SEGMENTS:,}. Search results and addressed reads name the covering segment."
        ),
    ),
]


def to_segments(fields: list[SegmentField] | None) -> tuple[Segment, ...]:
    """The domain segments of a write's ``segments`` (none when absent)."""
    return tuple(field.to_domain() for field in fields or ())
