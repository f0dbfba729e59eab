"""Markdown as the converters write it, with the segment of every block tracked by offset."""

from __future__ import annotations

import re
from collections.abc import Sequence

from knowledge.domain.segments import (
    MAX_NAME_CHARS,
    MAX_SECTION_CHARS,
    MAX_SEGMENTS,
    ConvertedDocument,
    Segment,
    name_chars,
)
from knowledge.errors import ConversionError, DocumentTooLargeError

_SPACE_RUN = re.compile(r"[ \t\r\n\f\v]+")
_TABLE_ESCAPES = str.maketrans({"|": "\\|"})
NO_TEXT = "no extractable text"


def one_line(text: str) -> str:
    """``text`` with every run of whitespace turned into one space, trimmed."""
    return _SPACE_RUN.sub(" ", text).strip()


def table_cell(value: object) -> str:
    """A value as one Markdown table cell: on one line, pipes escaped."""
    return one_line("" if value is None else str(value)).translate(_TABLE_ESCAPES)


class MarkdownWriter:
    """Blocks separated by blank lines; ``mark`` starts a segment at the next block.

    Raises ``DocumentTooLargeError`` as soon as the text grows past ``max_chars`` or the segments
    past ``MAX_SEGMENTS``, so a huge document stops converting at the limit, not after it.
    """

    def __init__(self, max_chars: int) -> None:
        self._max_chars = max_chars
        self._parts: list[str] = []
        self._length = 0
        self._segments: list[Segment] = []
        self._names = 0
        self._pending: Segment | None = None

    def mark(
        self,
        *,
        page: int | None = None,
        sheet: str | None = None,
        rows: tuple[int, int] | None = None,
        section: str | None = None,
    ) -> None:
        """The next block starts a segment with these fields (a later ``mark`` before any block wins)."""
        self._pending = Segment(
            offset=0,
            page=page,
            sheet=sheet[:MAX_SECTION_CHARS] if sheet else None,
            rows=rows,
            section=section[:MAX_SECTION_CHARS] if section else None,
        )

    def block(self, text: str) -> None:
        """One block (a paragraph, a heading, a list, a table); blank text is left out."""
        text = text.strip("\n")
        if not text.strip():
            return
        if self._parts:
            self._append("\n\n")
        if self._pending is not None and len(self._segments) >= MAX_SEGMENTS:
            self._widen_last_rows(self._pending)
        if self._pending is not None:
            segment = Segment(
                offset=self._length,
                page=self._pending.page,
                sheet=self._pending.sheet,
                rows=self._pending.rows,
                section=self._pending.section,
            )
            previous = self._segments[-1] if self._segments else Segment(offset=-1)
            self._names += name_chars([previous, segment]) - name_chars([previous])
            if self._names > MAX_NAME_CHARS:
                raise DocumentTooLargeError(
                    f"more than {MAX_NAME_CHARS:,} characters of section and sheet names"
                )
            self._segments.append(segment)
            self._pending = None
        self._append(text)

    def _widen_last_rows(self, pending: Segment) -> None:
        """With every segment used, a block of rows of the last segment's sheet widens that
        segment's row range instead (its locators name a wider range, still holding the row);
        anything else is ``DocumentTooLargeError``."""
        last = self._segments[-1]
        if (
            pending.rows is None
            or last.rows is None
            or (pending.sheet, pending.section)
            != (
                last.sheet,
                last.section,
            )
        ):
            raise DocumentTooLargeError(f"more than {MAX_SEGMENTS:,} pages, sections or row blocks")
        self._segments[-1] = Segment(
            offset=last.offset,
            sheet=last.sheet,
            rows=(last.rows[0], pending.rows[1]),
            section=last.section,
        )
        self._pending = None

    def heading(self, level: int, text: str) -> None:
        """An ATX heading of ``level`` (clamped to 1..6) on one line."""
        text = one_line(text)
        if text:
            self.block(f"{'#' * min(max(level, 1), 6)} {text}")

    def table(self, header: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
        """A Markdown table: ``header`` (cells already ``table_cell``), its rule, then ``rows``
        padded or cut to the header's width."""
        width = len(header)
        if width == 0:
            return
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * width]
        for row in rows:
            cells = [*row[:width], *[""] * (width - len(row))]
            lines.append("| " + " | ".join(cells) + " |")
        self.block("\n".join(lines))

    def _append(self, text: str) -> None:
        self._length += len(text)
        if self._length > self._max_chars:
            raise DocumentTooLargeError(f"longer than {self._max_chars:,} characters as text")
        self._parts.append(text)

    def document(self, title: str | None) -> ConvertedDocument:
        """The document written so far; ``ConversionError`` when it holds no text."""
        content = "".join(self._parts)
        if not content.strip():
            raise ConversionError(NO_TEXT)
        return ConvertedDocument(title=title, content=content + "\n", segments=tuple(self._segments))
