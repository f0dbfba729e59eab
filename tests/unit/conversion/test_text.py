"""Markdown, plain text and reStructuredText through ``knowledge.conversion.convert``."""

from __future__ import annotations

import pytest

from knowledge.conversion import (
    SUPPORTED_SUFFIXES,
    ConversionError,
    ConversionLimits,
    DocumentTooLargeError,
    Segment,
    convert,
)


def test_convert_markdown_headings_become_section_segments() -> None:
    data = b"# Guide\r\n\r\nIntro.\n\n```\n# not a heading\n```\n\n## Install {#install}\n\nSteps.\n"
    document = convert("docs/guide.MD", data)
    assert document.title == "Guide"
    assert document.content.startswith("# Guide\n\nIntro.")
    assert "\r" not in document.content
    install = document.content.index("## Install")
    assert document.segments == (
        Segment(offset=0, section="Guide"),
        Segment(offset=install, section="Install"),
    )


def test_convert_rst_underlined_titles_become_sections() -> None:
    document = convert("a.rst", b"=====\nTitle\n=====\n\nBody.\n\nPart\n----\n\nMore.\n")
    assert document.title == "Title"
    assert [segment.section for segment in document.segments] == ["Title", "Part"]
    assert document.segments[0].offset == 0
    assert document.content[document.segments[1].offset :].startswith("Part\n")


def test_convert_text_first_short_line_is_the_title() -> None:
    document = convert("notes.txt", "\ufeffRelease notes\nFixed things.".encode())
    assert document == convert("notes.txt", b"Release notes\nFixed things.")
    assert document.title == "Release notes"
    assert document.segments == ()


def test_convert_text_not_utf8_is_unreadable() -> None:
    with pytest.raises(ConversionError) as raised:
        convert("latin.txt", "café".encode("latin-1"))
    assert raised.value.code == "document_unreadable"
    assert raised.value.reason == "not UTF-8 text"


def test_convert_blank_text_has_no_extractable_text() -> None:
    with pytest.raises(ConversionError, match="no extractable text"):
        convert("blank.md", b" \n\t\n")


def test_convert_unknown_suffix_is_unreadable() -> None:
    with pytest.raises(ConversionError, match=r"\.exe is not one of"):
        convert("setup.exe", b"MZ")


def test_convert_over_max_bytes_is_too_large() -> None:
    with pytest.raises(DocumentTooLargeError) as raised:
        convert("big.txt", b"x" * 101, limits=ConversionLimits(max_bytes=100))
    assert raised.value.code == "document_too_large"
    assert "101 bytes" in raised.value.reason


def test_convert_over_max_chars_is_too_large() -> None:
    with pytest.raises(DocumentTooLargeError, match="longer than 10 characters"):
        convert("long.md", b"x" * 11, limits=ConversionLimits(max_chars=10))


def test_supported_suffixes_name_every_format() -> None:
    assert {".md", ".markdown", ".txt", ".rst", ".pdf", ".docx", ".html", ".htm", ".csv", ".xlsx"} == set(
        SUPPORTED_SUFFIXES
    )
