"""CSV (the standard library's ``csv``) and XLSX (openpyxl, MIT): tables in blocks of rows.

A sheet's first non-empty row is its header. The rows after it are written as Markdown tables of
about ``ConversionLimits.table_block_chars`` characters, each repeating the header, so every chunk
holds the header of the rows it holds; each block starts a segment with ``rows`` (first, last),
numbered as the spreadsheet numbers them (the header of a CSV is row 1, its first data row 2), and
for XLSX the ``sheet``. An XLSX workbook writes one ``##`` section per sheet (hidden sheets too),
with its cached values (formulas as last computed). CSV is UTF-8 (else undecodable) and its
delimiter (``,``, ``;``, tab or ``|``) is sniffed from its start.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Iterator, Sequence
from datetime import date, datetime, time

import openpyxl

from knowledge.conversion.archives import checked_archive
from knowledge.conversion.limits import ConversionLimits
from knowledge.conversion.markdown import MarkdownWriter, table_cell
from knowledge.conversion.text import decode_text
from knowledge.domain.segments import ConvertedDocument
from knowledge.errors import ConversionError, DocumentTooLargeError

_DELIMITERS = ",;\t|"
_SNIFF_CHARS = 8192


def convert_csv(data: bytes, limits: ConversionLimits) -> ConvertedDocument:
    """The CSV file in ``data`` (see the module docs)."""
    text = decode_text(data)
    try:
        dialect: type[csv.Dialect] | csv.Dialect = csv.Sniffer().sniff(text[:_SNIFF_CHARS], _DELIMITERS)
    except csv.Error:
        dialect = csv.excel
    writer = MarkdownWriter(limits.max_chars)
    try:
        rows = (
            (number, [table_cell(cell) for cell in row])
            for number, row in enumerate(csv.reader(io.StringIO(text), dialect), start=1)
        )
        _write_table(writer, rows, None, limits, _RowBudget(limits.max_rows))
    except csv.Error as error:
        raise ConversionError(f"not readable CSV ({error})") from None
    return writer.document(None)


def convert_xlsx(data: bytes, limits: ConversionLimits) -> ConvertedDocument:
    """The workbook in ``data`` (see the module docs)."""
    stream = checked_archive(data, "XLSX", limits)
    writer = MarkdownWriter(limits.max_chars)
    budget = _RowBudget(limits.max_rows)
    try:
        workbook = openpyxl.load_workbook(stream, read_only=True, data_only=True)
    except Exception:  # openpyxl raises KeyError, ValueError, lxml errors ... on a damaged workbook
        raise ConversionError("not a readable XLSX file (a part is missing or damaged)") from None
    try:
        title = workbook.properties.title or None
        for sheet in workbook.worksheets:
            rows = (
                (number, [_cell_text(value) for value in values])
                for number, values in enumerate(sheet.iter_rows(min_row=1, values_only=True), start=1)
            )
            _write_table(writer, rows, sheet.title, limits, budget)
    except ConversionError:
        raise
    except Exception:
        raise ConversionError("not a readable XLSX file (a sheet is damaged)") from None
    finally:
        workbook.close()
    return writer.document(title)


class _RowBudget:
    def __init__(self, max_rows: int) -> None:
        self._left = max_rows
        self._max_rows = max_rows

    def spend(self) -> None:
        self._left -= 1
        if self._left < 0:
            raise DocumentTooLargeError(f"more than {self._max_rows:,} rows")


def _cell_text(value: object) -> str:
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return table_cell(value)


def _write_table(
    writer: MarkdownWriter,
    rows: Iterable[tuple[int, list[str]]],
    sheet: str | None,
    limits: ConversionLimits,
    budget: _RowBudget,
) -> None:
    """A sheet's ``##`` heading (XLSX), its header, then blocks of numbered rows; empty rows are
    left out (their numbers are kept), and a sheet without a non-empty row writes nothing."""
    blocks = _blocks(_non_empty(rows, budget), limits)
    first = next(blocks, None)
    if first is None:
        return
    header = first[0][1]
    if sheet is not None:
        writer.mark(sheet=sheet, section=sheet)
        writer.heading(2, sheet)
    written = False
    for block in blocks:
        width = max(len(header), *(len(cells) for _, cells in block))
        writer.mark(sheet=sheet, rows=(block[0][0], block[-1][0]))
        writer.table(_padded(header, width), [cells for _, cells in block])
        written = True
    if not written:
        # A table of only its header still has text worth finding.
        writer.mark(sheet=sheet, rows=(first[0][0], first[0][0]))
        writer.table(header, [])


def _non_empty(rows: Iterable[tuple[int, list[str]]], budget: _RowBudget) -> Iterator[tuple[int, list[str]]]:
    for number, cells in rows:
        budget.spend()
        while cells and not cells[-1]:
            cells.pop()
        if cells:
            yield number, cells


def _blocks(
    rows: Iterator[tuple[int, list[str]]], limits: ConversionLimits
) -> Iterator[list[tuple[int, list[str]]]]:
    """The header row alone, then rows grouped up to ``table_block_chars`` (counting the header's
    length in each) and at most ``table_block_rows``."""
    first = next(rows, None)
    if first is None:
        return
    yield [first]
    header_chars = _row_chars(first[1])
    block: list[tuple[int, list[str]]] = []
    size = header_chars
    for row in rows:
        chars = _row_chars(row[1])
        if block and (size + chars > limits.table_block_chars or len(block) >= limits.table_block_rows):
            yield block
            block, size = [], header_chars
        block.append(row)
        size += chars
    if block:
        yield block


def _row_chars(cells: Sequence[str]) -> int:
    return sum(len(cell) + 3 for cell in cells) + 2


def _padded(cells: list[str], width: int) -> list[str]:
    return [*cells, *[""] * (width - len(cells))]
