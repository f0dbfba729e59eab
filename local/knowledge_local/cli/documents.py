"""Text files to ingest: Markdown, plain text and reStructuredText from a file or a folder tree.

Each document has an ``external_id``: its path relative to the folder it was collected from (or its
file name), with ``/`` separators, so re-ingesting the same tree addresses the same items. Titles
come from the content: a Markdown document's first heading (without MkDocs ``{ #anchor }``
attributes), a reStructuredText document's first underlined title, a text file's first line when it
is short; otherwise the file name.

A folder is searched recursively; hidden entries and files of other types are left out, and
symbolic links to folders are not followed. A file that cannot become an item is skipped with its
reason (``SkippedFile``) instead of failing the whole folder: not UTF-8, unreadable, empty or blank,
over the write API's limits (``MAX_CONTENT_CHARS`` characters, ``MAX_CONTENT_BYTES`` of JSON), or,
in a folder, a symbolic link that resolves outside it (never followed).

Content is the file's text as Python reads it: UTF-8 with a leading byte order mark dropped and
line endings turned into ``\n`` (``\r\n`` and a lone ``\r`` alike), so a document's character
offsets (search locators, addressed reads) count that text, not the bytes on disk; a file saved with
Windows line endings has one character fewer per line break than its size suggests.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

SUFFIXES = frozenset({".md", ".markdown", ".txt", ".rst"})
MAX_TITLE_CHARS = 200
MAX_CONTENT_CHARS = 4_000_000
"""The write API's content limit (its default ``MAX_CONTENT_CHARS``), in characters."""
MAX_CONTENT_BYTES = 6 * 1024 * 1024 - 64 * 1024
"""The content's share of a write request body: Lambda takes 6 MiB, the rest is left for the
title, the source and the JSON around them."""
_MAX_UTF8_BYTES_PER_CHAR = 4
_ATX_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*$")
_HEADING_ATTRIBUTES = re.compile(r"\s*\{[^{}]*\}\s*$")
_RST_ADORNMENT = re.compile(r"^([=\-`:'\"~^_*+#<>.])\1{2,}\s*$")


class DocumentError(ValueError):
    """A path cannot be ingested at all (missing, unsupported type); the message names it."""


@dataclass(frozen=True)
class SourceDocument:
    path: Path
    external_id: str
    title: str
    content: str

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
    try:
        if path.stat().st_size > MAX_CONTENT_CHARS * _MAX_UTF8_BYTES_PER_CHAR:
            raise _SkipError(f"larger than the write API's limit of {MAX_CONTENT_CHARS:,} characters")
        content = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise _SkipError("not UTF-8 text") from None
    except OSError as error:
        raise _SkipError(f"cannot be read ({error.strerror})") from None
    if not content.strip():
        raise _SkipError("empty")
    if len(content) > MAX_CONTENT_CHARS:
        raise _SkipError(f"{len(content):,} characters, over the write API's limit of {MAX_CONTENT_CHARS:,}")
    if len(json.dumps(content, ensure_ascii=False).encode("utf-8")) > MAX_CONTENT_BYTES:
        raise _SkipError(f"over {MAX_CONTENT_BYTES:,} bytes as JSON, more than one write request carries")
    return SourceDocument(path=path, external_id=external_id, title=title_of(path, content), content=content)


def title_of(path: Path, content: str) -> str:
    """The document's title (see the module docs), at most ``MAX_TITLE_CHARS`` characters."""
    suffix = path.suffix.lower()
    lines = content.splitlines()
    title: str | None
    if suffix in (".md", ".markdown"):
        title = _markdown_title(lines)
    elif suffix == ".rst":
        title = _rst_title(lines)
    else:
        title = next((line.strip() for line in lines if line.strip()), None)
        if title is not None and len(title) > 100:
            title = None
    return (title or path.stem)[:MAX_TITLE_CHARS]


def _markdown_title(lines: list[str]) -> str | None:
    in_fence = False
    for line in lines:
        if line.lstrip().startswith(("```", "~~~")):
            in_fence = not in_fence
            continue
        heading = None if in_fence else _ATX_HEADING.match(line)
        if heading:
            text = _HEADING_ATTRIBUTES.sub("", heading.group(2)).strip()
            if text:
                return text
    return None


def _rst_title(lines: list[str]) -> str | None:
    for number in range(len(lines) - 1):
        text, underline = lines[number].strip(), lines[number + 1].rstrip()
        adorned = bool(_RST_ADORNMENT.match(underline)) and len(underline) >= len(text)
        if text and adorned and not _RST_ADORNMENT.match(text):
            return text
    return None
