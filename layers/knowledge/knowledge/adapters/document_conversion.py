"""``ConvertedDocuments``: the ``DocumentConverter`` port on ``knowledge.conversion`` (PDF, DOCX,
HTML, CSV, XLSX and text files into Markdown with segments). Errors are ``convert``'s:
``ConversionError``, ``DocumentTooLargeError``."""

from __future__ import annotations

from knowledge.conversion import SUPPORTED_SUFFIXES, convert
from knowledge.domain.segments import ConvertedDocument


class ConvertedDocuments:
    def suffixes(self) -> frozenset[str]:
        return SUPPORTED_SUFFIXES

    def convert(self, name: str, data: bytes) -> ConvertedDocument:
        return convert(name, data)
