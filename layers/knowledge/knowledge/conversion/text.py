"""Markdown, plain text and reStructuredText: the text itself, titled and segmented by its headings.

Content is the file decoded as UTF-8 (a leading byte order mark dropped) with line endings turned
into ``\\n`` (``\\r\\n`` and a lone ``\\r`` alike), so offsets count that text. A Markdown
document's ATX headings (outside fenced code) and a reStructuredText document's underlined titles
start ``section`` segments; plain text has none. A text with more headings than a revision's
segments hold keeps its text and has no segments.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from knowledge.conversion.limits import ConversionLimits
from knowledge.conversion.markdown import NO_TEXT
from knowledge.domain.segments import MAX_SECTION_CHARS, ConvertedDocument, Segment, segments_problem
from knowledge.errors import ConversionError, DocumentTooLargeError

MARKDOWN_SUFFIXES = frozenset({".md", ".markdown"})
TEXT_SUFFIXES = frozenset({*MARKDOWN_SUFFIXES, ".txt", ".rst"})
MAX_TITLE_CHARS = 200
MAX_FIRST_LINE_TITLE_CHARS = 100
_ATX_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*$")
_HEADING_ATTRIBUTES = re.compile(r"\s*\{[^{}]*\}\s*$")
_RST_ADORNMENT = re.compile(r"^([=\-`:'\"~^_*+#<>.])\1{2,}\s*$")


def decode_text(data: bytes) -> str:
    """``data`` as UTF-8 (BOM dropped, line endings as ``\\n``); ``ConversionError`` otherwise."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ConversionError("not UTF-8 text") from None
    return text.replace("\r\n", "\n").replace("\r", "\n")


def convert_text(suffix: str, data: bytes, limits: ConversionLimits) -> ConvertedDocument:
    """A text document of type ``suffix`` (``.md``, ``.markdown``, ``.txt``, ``.rst``)."""
    content = decode_text(data)
    if len(content) > limits.max_chars:
        raise DocumentTooLargeError(f"longer than {limits.max_chars:,} characters")
    if not content.strip():
        raise ConversionError(NO_TEXT)
    lines = content.split("\n")
    if suffix in MARKDOWN_SUFFIXES:
        headings = list(_markdown_headings(lines))
    elif suffix == ".rst":
        headings = list(_rst_titles(lines))
    else:
        headings = []
    segments = _sections(lines, headings)
    title: str | None
    if headings:
        title = headings[0][1]
    elif suffix == ".txt":
        title = next((line.strip() for line in lines if line.strip()), None)
        title = title if title is not None and len(title) <= MAX_FIRST_LINE_TITLE_CHARS else None
    else:
        title = None
    title = title[:MAX_TITLE_CHARS] if title else None
    return ConvertedDocument(title=title, content=content, segments=segments)


def _sections(lines: list[str], headings: list[tuple[int, str]]) -> tuple[Segment, ...]:
    """A segment per heading; none at all past the segment bounds (``segments_problem``): the text
    itself is whole, only its locators lose their section."""
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)
    segments = tuple(
        Segment(offset=starts[number], section=text[:MAX_SECTION_CHARS]) for number, text in headings
    )
    return () if segments_problem(segments, starts[-1]) else segments


def _markdown_headings(lines: list[str]) -> Iterator[tuple[int, str]]:
    """(line number, heading text) of each ATX heading outside fenced code, MkDocs ``{ #anchor }``
    attributes dropped."""
    in_fence = False
    for number, line in enumerate(lines):
        if line.lstrip().startswith(("```", "~~~")):
            in_fence = not in_fence
            continue
        heading = None if in_fence else _ATX_HEADING.match(line)
        if heading:
            text = _HEADING_ATTRIBUTES.sub("", heading.group(2)).strip()
            if text:
                yield number, text


def _rst_titles(lines: list[str]) -> Iterator[tuple[int, str]]:
    """(line number, title) of each title underlined at least as long as itself (an overline, when
    there is one, starts the section)."""
    for number in range(len(lines) - 1):
        text, underline = lines[number].strip(), lines[number + 1].rstrip()
        adorned = bool(_RST_ADORNMENT.match(underline)) and len(underline) >= len(text)
        if text and adorned and not _RST_ADORNMENT.match(text):
            overlined = number > 0 and lines[number - 1].rstrip() == underline
            yield (number - 1 if overlined else number), text
