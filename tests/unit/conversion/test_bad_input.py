"""Hostile and broken documents: each a ``ConversionError`` with its reason, never a parser's crash."""

from __future__ import annotations

import io
import tracemalloc
import zipfile

import pytest

from knowledge.conversion import ConversionError, ConversionLimits, DocumentTooLargeError, convert
from knowledge.domain.segments import MAX_SEGMENTS, segment_at
from tests.support.documents import (
    billion_laughs_docx_bytes,
    corrupt_pdf_bytes,
    docx_bytes,
    encrypted_pdf_bytes,
    pdf_bytes,
    pdf_stream_bomb_bytes,
    zip_bomb_bytes,
)


def test_convert_encrypted_pdf_needs_a_password() -> None:
    with pytest.raises(ConversionError) as raised:
        convert("secret.pdf", encrypted_pdf_bytes([["classified"]]))
    assert raised.value.code == "document_unreadable"
    assert raised.value.reason == "an encrypted PDF that needs a password"


def test_convert_pdf_encrypted_with_empty_user_password_is_read() -> None:
    assert "open text" in convert("open.pdf", encrypted_pdf_bytes([["open text"]], password="")).content


def test_convert_corrupt_pdf_is_unreadable() -> None:
    with pytest.raises(ConversionError, match="not a readable PDF"):
        convert("broken.pdf", corrupt_pdf_bytes())


def test_convert_truncated_pdf_is_unreadable() -> None:
    data = pdf_bytes([["first page text"], ["second page"]])
    with pytest.raises(ConversionError, match="not a readable PDF"):
        convert("cut.pdf", data[: len(data) // 3])


def test_convert_scanned_pdf_has_no_extractable_text() -> None:
    with pytest.raises(ConversionError) as raised:
        convert("scan.pdf", pdf_bytes([[], []]))
    assert raised.value.reason == "no extractable text"


@pytest.mark.parametrize(
    ("name", "member"), [("bomb.docx", "word/document.xml"), ("bomb.xlsx", "xl/workbook.xml")]
)
def test_convert_zip_bomb_is_refused_before_parsing(name: str, member: str) -> None:
    data = zip_bomb_bytes(member, unpacked_mib=64)
    assert len(data) < 1024 * 1024
    with pytest.raises(DocumentTooLargeError, match="a zip bomb") as raised:
        convert(name, data)
    assert raised.value.code == "document_too_large"


def test_convert_docx_unpacking_past_the_total_is_too_large() -> None:
    data = docx_bytes([("p", "x" * 1000)])
    with pytest.raises(DocumentTooLargeError, match="unpacks to"):
        convert("a.docx", data, limits=ConversionLimits(max_unpacked_bytes=10_000))


@pytest.mark.parametrize("name", ["fake.docx", "fake.xlsx"])
def test_convert_office_file_that_is_not_a_zip_is_unreadable(name: str) -> None:
    with pytest.raises(ConversionError, match="not a zip archive"):
        convert(name, b"PK\x03\x04 this is not really a zip")


def test_convert_zip_without_a_document_part_is_unreadable() -> None:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("hello.txt", "hi")
    with pytest.raises(ConversionError, match="not a readable DOCX"):
        convert("a.docx", out.getvalue())
    with pytest.raises(ConversionError, match="not a readable XLSX"):
        convert("a.xlsx", out.getvalue())


def test_convert_csv_not_utf8_is_unreadable() -> None:
    with pytest.raises(ConversionError, match="not UTF-8"):
        convert("a.csv", "naïve,1".encode("latin-1"))


def test_convert_long_output_stops_at_max_chars() -> None:
    lines = ["a,b"] + [f"{number},{number}" for number in range(5_000)]
    with pytest.raises(DocumentTooLargeError, match="longer than 1,000 characters"):
        convert("a.csv", "\n".join(lines).encode(), limits=ConversionLimits(max_chars=1_000))


def test_convert_rows_past_max_rows_is_too_large() -> None:
    with pytest.raises(DocumentTooLargeError, match="more than 3 rows"):
        convert("a.csv", b"a\n1\n2\n3\n", limits=ConversionLimits(max_rows=3))


def test_convert_csv_past_the_segment_bound_widens_the_last_row_range() -> None:
    rows = ["id,value"] + [f"{number},v{number}" for number in range(2, 12_000)]
    document = convert("long.csv", "\n".join(rows).encode(), limits=ConversionLimits(table_block_rows=2))
    assert len(document.segments) == MAX_SEGMENTS
    assert document.segments[-1].rows == (2 * MAX_SEGMENTS, 11_999)
    last = segment_at(document.segments, document.content.index("| 11999 |"))
    assert last is not None
    assert last.rows is not None
    assert last.rows[0] <= 11_999 <= last.rows[1]


def test_convert_pdf_past_the_segment_bound_is_too_large() -> None:
    pages = [[f"page {number}"] for number in range(MAX_SEGMENTS + 1)]
    with pytest.raises(DocumentTooLargeError, match="more than 5,000 pages"):
        convert("many.pdf", pdf_bytes(pages), limits=ConversionLimits(max_pages=MAX_SEGMENTS + 1))


def test_convert_pdf_stream_bomb_fails_without_inflating_it() -> None:
    data = pdf_stream_bomb_bytes(unpacked_mib=200)
    assert len(data) < 1024 * 1024
    tracemalloc.start()
    try:
        with pytest.raises(ConversionError, match="no extractable text"):
            convert("bomb.pdf", data)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 80 * 1024 * 1024


def test_convert_docx_with_an_entity_bomb_is_unreadable_without_expanding_it() -> None:
    with pytest.raises(ConversionError, match="not a readable DOCX"):
        convert("laughs.docx", billion_laughs_docx_bytes())
