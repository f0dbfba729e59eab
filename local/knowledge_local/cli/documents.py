"""Documents to ingest from a file or a folder tree: Markdown, plain text, reStructuredText, PDF,
Word (.docx), web pages (.html, .htm), CSV and Excel (.xlsx), each read through
``knowledge.conversion.convert`` into Markdown and the segments that locate its text in the
original (pages, sections, sheets and rows), which the write API stores with the revision.

Each document has an ``external_id``: its path relative to the folder it was collected from (or its
file name), with ``/`` separators, so re-ingesting the same tree addresses the same items. Titles
come from the content: a Markdown document's first heading (without MkDocs ``{ #anchor }``
attributes), a reStructuredText document's first underlined title, a text file's first line when it
is short, a PDF's, Word document's or workbook's declared title, a web page's ``<title>``, else a
converted document's first heading; otherwise the file name.

A folder is searched recursively; hidden entries and files of other types are left out, and
symbolic links to folders are not followed. A file that cannot become an item is skipped with its
reason (``SkippedFile``) instead of failing the whole folder: not UTF-8, unreadable, empty or blank,
a document the converter refuses (its ``ConversionError`` reason: encrypted or corrupt PDF, zip
bomb, no extractable text, over ``ConversionLimits``), over the write API's limits
(``MAX_CONTENT_CHARS`` characters, ``MAX_CONTENT_BYTES`` of JSON), or, in a folder, a symbolic link
that resolves outside it (never followed).

Content is the file's text as Python reads it: UTF-8 with a leading byte order mark dropped and
line endings turned into ``\n`` (``\r\n`` and a lone ``\r`` alike), so a document's character
offsets (search locators, addressed reads) count that text, not the bytes on disk; a file saved with
Windows line endings has one character fewer per line break than its size suggests.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from knowledge.contract.segments import SegmentField
from knowledge.conversion import DEFAULT_LIMITS, SUPPORTED_SUFFIXES, ConversionError, Segment, convert
from knowledge.conversion.text import TEXT_SUFFIXES

SUFFIXES = SUPPORTED_SUFFIXES
MAX_TITLE_CHARS = 200
MAX_CONTENT_CHARS = 4_000_000
"""The write API's content limit (its default ``MAX_CONTENT_CHARS``), in characters."""
MAX_CONTENT_BYTES = 6 * 1024 * 1024 - 64 * 1024
"""The content's share of a write request body: Lambda takes 6 MiB, the rest is left for the
title, the source and the JSON around them."""
_MAX_UTF8_BYTES_PER_CHAR = 4


class DocumentError(ValueError):
    """A path cannot be ingested at all (missing, unsupported type); the message names it."""


@dataclass(frozen=True)
class SourceDocument:
    path: Path
    external_id: str
    title: str
    content: str
    segments: tuple[Segment, ...] = ()

    def segment_fields(self) -> list[dict[str, Any]]:
        """``segments`` as the write API takes them (fields a segment does not name left out)."""
        return [SegmentField.of(segment).model_dump(exclude_none=True) for segment in self.segments]

    def uri(self, base_url: str | None = None) -> str:
        """The document's ``source.uri``: its ``external_id`` percent-encoded as a relative
        reference (``guides/http2.md``), under ``base_url`` when one is given
        (``https://docs.example.com/guides/http2.md``). Never the local path: that would publish
        the curator's folders."""
        relative = quote(self.external_id)
        return f"{base_url.rstrip('/')}/{relative}" if base_url else relative


@dataclass(frozen=True)
class SkippedFile:
    """A file left out, and why (one line). ``external_id`` is set when the file is part of the
    folder (it exists there but has no usable text) and ``None`` for a link leading out of it."""

    path: Path
    reason: str
    external_id: str | None


@dataclass
class Collection:
    """What a file or folder holds: the ``documents`` to ingest, sorted by ``external_id``, and the
    files ``skipped``, sorted by path."""

    documents: list[SourceDocument] = field(default_factory=list)
    skipped: list[SkippedFile] = field(default_factory=list)

    @property
    def external_ids(self) -> set[str]:
        """The external ids of every file still in the folder, ingested or skipped for its content."""
        skipped = {file.external_id for file in self.skipped if file.external_id is not None}
        return {document.external_id for document in self.documents} | skipped


class _SkipError(Exception):
    """Why ``_read`` leaves a file out."""


def collect_documents(path: Path, *, relative_to: Path | None = None) -> Collection:
    """The documents under ``path`` (a file, or a folder searched recursively) and the files
    skipped (see the module docs).

    ``relative_to`` is the folder external ids are relative to (default: ``path`` itself for a
    folder, its parent for a file). Raises ``DocumentError`` when ``path`` does not exist or is a
    file of another type.
    """
    if not path.exists():
        raise DocumentError(f"No such file or folder: {path}")
    collection = Collection()
    if path.is_file():
        if path.suffix.lower() not in SUFFIXES:
            raise DocumentError(f"{path} is not a {', '.join(sorted(SUFFIXES))} file.")
        files, base, root = [path], relative_to or path.parent, None
    else:
        base, root = relative_to or path, path.resolve()
        files = sorted(
            candidate
            for candidate in path.rglob("*")
            if candidate.is_file()
            and candidate.suffix.lower() in SUFFIXES
            and not any(part.startswith(".") for part in candidate.relative_to(path).parts)
        )
    for file in files:
        external_id = _external_id_of(file, base)
        target = file.resolve()
        if root is not None and not target.is_relative_to(root):
            reason = f"a symbolic link to {target}, outside {path}; not followed"
            collection.skipped.append(SkippedFile(file, reason, None))
            continue
        try:
            collection.documents.append(_read(file, external_id))
        except _SkipError as reason:
            collection.skipped.append(SkippedFile(file, str(reason), external_id))
    collection.documents.sort(key=_external_id)
    return collection


def _external_id(document: SourceDocument) -> str:
    return document.external_id


def _external_id_of(path: Path, base: Path) -> str:
    """``path`` relative to ``base`` as written (a link keeps its own path), else as resolved,
    else its name."""
    for candidate, folder in ((path, base), (path.resolve(), base.resolve())):
        try:
            return candidate.relative_to(folder).as_posix()
        except ValueError:
            continue
    return path.name


def _read(path: Path, external_id: str) -> SourceDocument:
    """The document in ``path``; ``_SkipError`` with the reason when it has no usable text."""
    text = path.suffix.lower() in TEXT_SUFFIXES
    max_bytes = MAX_CONTENT_CHARS * _MAX_UTF8_BYTES_PER_CHAR if text else DEFAULT_LIMITS.max_bytes
    try:
        if path.stat().st_size > max_bytes:
            limit = f"{MAX_CONTENT_CHARS:,} characters" if text else f"{max_bytes:,} bytes"
            raise _SkipError(f"larger than the write API's limit of {limit}")
        data = path.read_bytes()
    except OSError as error:
        raise _SkipError(f"cannot be read ({error.strerror})") from None
    if text and not data.strip():
        raise _SkipError("empty")
    try:
        converted = convert(path.name, data)
    except ConversionError as error:
        raise _SkipError(error.reason) from None
    content = converted.content
    if len(content) > MAX_CONTENT_CHARS:
        raise _SkipError(f"{len(content):,} characters, over the write API's limit of {MAX_CONTENT_CHARS:,}")
    if len(json.dumps(content, ensure_ascii=False).encode("utf-8")) > MAX_CONTENT_BYTES:
        raise _SkipError(f"over {MAX_CONTENT_BYTES:,} bytes as JSON, more than one write request carries")
    return SourceDocument(
        path=path,
        external_id=external_id,
        title=(converted.title or path.stem)[:MAX_TITLE_CHARS],
        content=content,
        segments=converted.segments,
    )


def title_of(path: Path, content: str) -> str:
    """The title of a text document (see the module docs), at most ``MAX_TITLE_CHARS`` characters."""
    try:
        title = convert(path.name, content.encode("utf-8")).title
    except ConversionError:
        title = None
    return (title or path.stem)[:MAX_TITLE_CHARS]
