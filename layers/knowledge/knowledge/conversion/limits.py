"""What one conversion may take: input bytes, what a zip container unpacks to, output characters.

Every limit is checked before the work it bounds (the zip's central directory before a DOCX or XLSX
is parsed, the input size before anything), so a hostile document fails fast with a
``DocumentTooLargeError`` instead of exhausting a worker's memory.
"""

from __future__ import annotations

from dataclasses import dataclass

MIB = 1024 * 1024


@dataclass(frozen=True)
class ConversionLimits:
    """Bounds of one ``convert`` call.

    - ``max_bytes``: the document's size (default 50 MiB).
    - ``max_unpacked_bytes``: the sum of the uncompressed sizes a DOCX/XLSX's zip declares
      (default 200 MiB).
    - ``max_compression_ratio``: uncompressed over compressed size, per member larger than 1 MiB and for the
      whole archive (default 100; real Office files stay well under 20).
    - ``max_chars``: the converted Markdown's length in code points (default 4,000,000, the write
      API's content limit).
    - ``max_pages``: PDF pages read (default 5,000); ``max_rows``: spreadsheet rows read over every
      sheet (default 1,000,000).
    """

    max_bytes: int = 50 * MIB
    max_unpacked_bytes: int = 200 * MIB
    max_compression_ratio: float = 100.0
    max_chars: int = 4_000_000
    max_pages: int = 5_000
    max_rows: int = 1_000_000
    table_block_chars: int = 480
    table_block_rows: int = 25


DEFAULT_LIMITS = ConversionLimits()
