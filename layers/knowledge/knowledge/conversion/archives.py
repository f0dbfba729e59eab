"""Office Open XML containers (DOCX, XLSX) checked before a parser opens them.

Both formats are zip archives. A zip bomb declares members that inflate to far more than the file's
size; the central directory states every member's compressed and uncompressed size, so the sum and
the ratios are checked there, before one byte is inflated. The parsers then read members through
``zipfile``, which stops at the declared size (a member that inflates past it fails its CRC check),
so the declared sizes bound the memory used.
"""

from __future__ import annotations

import io
import zipfile

from knowledge.conversion.limits import MIB, ConversionLimits
from knowledge.errors import ConversionError, DocumentTooLargeError

_RATIO_FLOOR_BYTES = MIB
"""Members smaller than this are never refused for their ratio alone: tiny XML parts compress
well."""


def checked_archive(data: bytes, kind: str, limits: ConversionLimits) -> io.BytesIO:
    """``data`` as a file for the parser, once its zip central directory is within ``limits``.

    Raises ``ConversionError`` when ``data`` is not a zip archive (not a ``kind`` file) and
    ``DocumentTooLargeError`` when it declares more than ``limits.max_unpacked_bytes`` in all or a
    compression ratio over ``limits.max_compression_ratio`` (a zip bomb).
    """
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            members = archive.infolist()
    except (zipfile.BadZipFile, ValueError, OSError, EOFError):
        raise ConversionError(f"not a readable {kind} file (not a zip archive, or a damaged one)") from None
    unpacked = sum(member.file_size for member in members)
    packed = sum(member.compress_size for member in members)
    if unpacked > limits.max_unpacked_bytes:
        raise DocumentTooLargeError(
            f"the {kind} unpacks to {unpacked:,} bytes, over the limit of {limits.max_unpacked_bytes:,}"
        )
    bombs = [
        member
        for member in members
        if member.file_size > _RATIO_FLOOR_BYTES
        and member.file_size > limits.max_compression_ratio * max(member.compress_size, 1)
    ]
    if bombs or (unpacked > _RATIO_FLOOR_BYTES and unpacked > limits.max_compression_ratio * max(packed, 1)):
        raise DocumentTooLargeError(
            f"the {kind} is compressed more than {limits.max_compression_ratio:g} to 1 (a zip bomb)"
        )
    return io.BytesIO(data)
