"""``TextDocuments``: the ``DocumentConverter`` port for text files (``.md``, ``.markdown``,
``.txt``, ``.rst``), decoded as UTF-8 (a byte-order mark dropped); other formats are
``knowledge.conversion``'s.

Errors: ``DocumentRejectedError`` with ``details.reason`` ``unsupported_type`` (another suffix) or
``conversion_failed`` (not UTF-8, or no text).
"""

from __future__ import annotations

import posixpath

from knowledge.domain.data_sources import ConvertedText, FailureReason
from knowledge.errors import DocumentRejectedError

TEXT_SUFFIXES = frozenset({".md", ".markdown", ".txt", ".rst"})


class TextDocuments:
    def suffixes(self) -> frozenset[str]:
        return TEXT_SUFFIXES

    def convert(self, name: str, data: bytes) -> ConvertedText:
        suffix = posixpath.splitext(name)[1].lower()
        if suffix not in TEXT_SUFFIXES:
            raise DocumentRejectedError(
                f"{suffix or 'A file without a suffix'} is not a supported format.",
                {"reason": FailureReason.UNSUPPORTED_TYPE.value},
            )
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise DocumentRejectedError(
                "The file is not UTF-8 text.", {"reason": FailureReason.CONVERSION_FAILED.value}
            ) from None
        if not text.strip():
            raise DocumentRejectedError(
                "The file holds no text.", {"reason": FailureReason.CONVERSION_FAILED.value}
            )
        return ConvertedText(title=None, content=text)
