"""PDF through pypdf (BSD-3-Clause, pure Python): the text of each page, one ``page`` segment per
page (1-based, as a viewer numbers them).

pypdf bounds what each stream may inflate to (``pypdf.Configuration``: 75 MB), so a compressed
content stream built to exhaust memory stops there (its page then has no text). A PDF encrypted
with a user password is refused (one readable with the empty password, as many
"protected" PDFs are, is read); a file pypdf cannot parse is corrupt; a PDF whose pages hold no text
layer (a scan) has no extractable text. The PDF's ``/Title`` is the document's title.
"""

from __future__ import annotations

import io
import logging

from pypdf import PdfReader
from pypdf.errors import FileNotDecryptedError

from knowledge.conversion.limits import ConversionLimits
from knowledge.conversion.markdown import MarkdownWriter, one_line
from knowledge.domain.segments import ConvertedDocument
from knowledge.errors import ConversionError, DocumentTooLargeError

_CORRUPT = "not a readable PDF (corrupt or truncated)"
_ENCRYPTED = "an encrypted PDF that needs a password"
# pypdf logs every recoverable oddity of a damaged file as a warning; the outcome is what counts.
logging.getLogger("pypdf").setLevel(logging.ERROR)


def convert_pdf(data: bytes, limits: ConversionLimits) -> ConvertedDocument:
    """The PDF in ``data`` (see the module docs)."""
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise ConversionError(_ENCRYPTED)
        page_count = len(reader.pages)
        if page_count > limits.max_pages:
            raise DocumentTooLargeError(f"{page_count:,} pages, over the limit of {limits.max_pages:,}")
        writer = MarkdownWriter(limits.max_chars)
        for number, page in enumerate(reader.pages, start=1):
            writer.mark(page=number)
            writer.block(_paragraphs(page.extract_text()))
        title = _title(reader)
    except ConversionError:
        raise
    except FileNotDecryptedError:
        raise ConversionError(_ENCRYPTED) from None
    except Exception:  # a hostile file can make any parser step raise anything (PdfReadError, ...)
        raise ConversionError(_CORRUPT) from None
    return writer.document(title)


def _paragraphs(text: str) -> str:
    """A page's text with blank-line runs collapsed, so page text never starts a code block or a
    Markdown heading by accident of indentation."""
    lines = [line.strip() for line in text.replace("\r", "\n").split("\n")]
    paragraphs: list[str] = []
    current: list[str] = []
    for line in lines:
        if line:
            current.append(line)
        elif current:
            paragraphs.append("\n".join(current))
            current = []
    if current:
        paragraphs.append("\n".join(current))
    return "\n\n".join(paragraphs)


def _title(reader: PdfReader) -> str | None:
    metadata = reader.metadata
    title = one_line(str(metadata.title)) if metadata is not None and metadata.title else ""
    return title or None
