"""DOCX through python-docx (MIT): paragraphs and tables in document order.

Heading styles (``Heading 1`` … ``Heading 9``, and ``Title``) become ATX headings (levels past 6
stay at 6) and start a ``section`` segment; list paragraphs (``List Bullet``/``List Number``
styles, or Word numbering) become list items; a table becomes a Markdown table whose first row is
its header. The core properties' title, else the first ``Title`` or heading, is the title.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import docx
from docx.enum.style import WD_STYLE_TYPE
from docx.table import Table
from docx.text.paragraph import Paragraph

from knowledge.conversion.archives import checked_archive
from knowledge.conversion.limits import ConversionLimits
from knowledge.conversion.markdown import MarkdownWriter, one_line, table_cell
from knowledge.domain.segments import ConvertedDocument
from knowledge.errors import ConversionError

_HEADING_STYLE = re.compile(r"^heading\s*(\d)$", re.IGNORECASE)


def convert_docx(data: bytes, limits: ConversionLimits) -> ConvertedDocument:
    """The Word document in ``data`` (see the module docs)."""
    stream = checked_archive(data, "DOCX", limits)
    try:
        document = docx.Document(stream)
        writer = MarkdownWriter(limits.max_chars)
        # python-docx resolves a paragraph's style by scanning every style each time; one map of
        # style id to name makes that a lookup (10x faster on a long document).
        names = {style.style_id: style.name or "" for style in document.styles}
        default = document.styles.default(WD_STYLE_TYPE.PARAGRAPH)
        title = _Body(writer, names, default.name if default is not None else "").write(
            document.iter_inner_content()
        )
        core_title = one_line(document.core_properties.title or "")
    except ConversionError:
        raise
    except Exception:  # a damaged part can make python-docx or lxml raise anything
        raise ConversionError("not a readable DOCX file (a part is missing or damaged)") from None
    return writer.document(core_title or title)


class _Body:
    """Writes blocks, grouping consecutive list paragraphs into one list."""

    def __init__(self, writer: MarkdownWriter, style_names: dict[str, str], default_style: str) -> None:
        self._writer = writer
        self._style_names = style_names
        self._default_style = default_style or ""
        self._items: list[str] = []

    def write(self, blocks: Iterable[Paragraph | Table]) -> str | None:
        """Every block of ``blocks`` (paragraphs and tables); the first heading's text."""
        first_heading: str | None = None
        for block in blocks:
            if isinstance(block, Paragraph):
                heading = self._paragraph(block)
                first_heading = first_heading or heading
            elif isinstance(block, Table):
                self._flush()
                self._table(block)
        self._flush()
        return first_heading

    def _paragraph(self, paragraph: Paragraph) -> str | None:
        text = paragraph.text.strip()
        style_id = paragraph._p.style
        style = self._style_names.get(style_id, "") if style_id else self._default_style
        level = _heading_level(style)
        if level is not None:
            self._flush()
            heading = one_line(text)
            if heading:
                self._writer.mark(section=heading)
                self._writer.heading(level, heading)
            return heading or None
        marker = _list_marker(paragraph, style)
        if marker is not None and text:
            self._items.append(f"{marker} {one_line(text)}")
            return None
        self._flush()
        self._writer.block(text)
        return None

    def _table(self, table: Table) -> None:
        rows = [[table_cell(cell.text) for cell in row.cells] for row in table.rows]
        rows = [row for row in rows if any(row)]
        if rows:
            self._writer.table(rows[0], rows[1:])

    def _flush(self) -> None:
        if self._items:
            self._writer.block("\n".join(self._items))
            self._items = []


def _heading_level(style: str) -> int | None:
    if style.lower() == "title":
        return 1
    match = _HEADING_STYLE.match(style.strip())
    return min(int(match.group(1)), 6) if match else None


def _list_marker(paragraph: Paragraph, style: str) -> str | None:
    lowered = style.lower()
    if lowered.startswith("list number"):
        return "1."
    if lowered.startswith("list bullet") or lowered.startswith("list paragraph"):
        return "-"
    properties = paragraph._p.pPr
    return "-" if properties is not None and properties.numPr is not None else None
