"""Documents into the Markdown the chunker reads, with segments pointing back into the original.

``convert(name, data)`` picks the converter by ``name``'s suffix (case-insensitive):

- ``.md``, ``.markdown``, ``.txt``, ``.rst``: the text itself (``knowledge.conversion.text``);
- ``.pdf``: pypdf's text of each page, one ``page`` segment per page (``pdf``);
- ``.docx``: python-docx's paragraphs and tables, heading styles as headings, a ``section``
  segment per heading (``word``);
- ``.html``, ``.htm``: the main content as readability-lxml finds it, navigation, headers,
  footers and asides left out, a ``section`` segment per heading (``html``);
- ``.csv``, ``.xlsx``: tables in blocks of rows that each repeat the header row, a segment per
  block with its ``rows`` (and ``sheet``) (``sheets``).

Every failure is a ``ConversionError`` (``document_unreadable``) or ``DocumentTooLargeError``
(``document_too_large``) with a one-sentence ``reason``: an unsupported type, input over
``ConversionLimits.max_bytes``, an encrypted or corrupt PDF, a zip bomb (checked in the zip's
central directory before a DOCX or XLSX is parsed), text that is not UTF-8, or no extractable text
(a scanned PDF). A parser's own exception never escapes: whatever a third-party parser raises on a
hostile file is that file's ``ConversionError``.
"""

from __future__ import annotations

from pathlib import PurePosixPath

from knowledge.conversion.limits import DEFAULT_LIMITS, ConversionLimits
from knowledge.conversion.text import TEXT_SUFFIXES, convert_text
from knowledge.domain.segments import ConvertedDocument, Segment
from knowledge.errors import ConversionError, DocumentTooLargeError

__all__ = [
    "DEFAULT_LIMITS",
    "SUPPORTED_SUFFIXES",
    "ConversionError",
    "ConversionLimits",
    "ConvertedDocument",
    "DocumentTooLargeError",
    "Segment",
    "convert",
]

SUPPORTED_SUFFIXES: frozenset[str] = frozenset(
    {*TEXT_SUFFIXES, ".pdf", ".docx", ".html", ".htm", ".csv", ".xlsx"}
)


def convert(name: str, data: bytes, *, limits: ConversionLimits = DEFAULT_LIMITS) -> ConvertedDocument:
    """``data``, a document named ``name`` (a file name or an object key: only its suffix counts),
    as Markdown with its title (``None`` when the document names none) and segments.

    Raises ``ConversionError`` (see the module docs); never a parser's own exception.
    """
    suffix = PurePosixPath(name.replace("\\", "/")).suffix.lower()
    if suffix not in SUPPORTED_SUFFIXES:
        kinds = ", ".join(sorted(SUPPORTED_SUFFIXES))
        raise ConversionError(f"{suffix or 'a name without a suffix'} is not one of {kinds}")
    if len(data) > limits.max_bytes:
        raise DocumentTooLargeError(f"{len(data):,} bytes, over the limit of {limits.max_bytes:,}")
    if suffix in TEXT_SUFFIXES:
        return convert_text(suffix, data, limits)
    return _convert_binary(suffix, data, limits)


def _convert_binary(suffix: str, data: bytes, limits: ConversionLimits) -> ConvertedDocument:
    # Imported on use: a function that only reads text never loads pypdf, lxml or openpyxl.
    if suffix == ".pdf":
        from knowledge.conversion.pdf import convert_pdf

        return convert_pdf(data, limits)
    if suffix == ".docx":
        from knowledge.conversion.word import convert_docx

        return convert_docx(data, limits)
    if suffix in (".html", ".htm"):
        from knowledge.conversion.html import convert_html

        return convert_html(data, limits)
    from knowledge.conversion.sheets import convert_csv, convert_xlsx

    return convert_csv(data, limits) if suffix == ".csv" else convert_xlsx(data, limits)
