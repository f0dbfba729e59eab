"""Text files to ingest: Markdown, plain text and reStructuredText from a file or a folder tree.

Each document has an ``external_id``: its path relative to the folder it was collected from (or its
file name), with ``/`` separators, so re-ingesting the same tree addresses the same items. Titles
come from the content: a Markdown document's first heading (without MkDocs ``{ #anchor }``
attributes), a reStructuredText document's first underlined title, a text file's first line when it
is short; otherwise the file name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

SUFFIXES = frozenset({".md", ".markdown", ".txt", ".rst"})
MAX_TITLE_CHARS = 200
_ATX_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*$")
_HEADING_ATTRIBUTES = re.compile(r"\s*\{[^{}]*\}\s*$")
_RST_ADORNMENT = re.compile(r"^([=\-`:'\"~^_*+#<>.])\1{2,}\s*$")


class DocumentError(ValueError):
    """A path cannot be ingested (missing, unsupported type, not UTF-8); the message names it."""


@dataclass(frozen=True)
class SourceDocument:
    path: Path
    external_id: str
    title: str
    content: str

    @property
    def uri(self) -> str:
        """``file://`` URI of the document."""
        return self.path.resolve().as_uri()


def collect_documents(path: Path, *, relative_to: Path | None = None) -> list[SourceDocument]:
    """The documents under ``path`` (a file, or a folder searched recursively without hidden
    entries), sorted by ``external_id``; files with only whitespace are left out.

    ``relative_to`` is the folder external ids are relative to (default: ``path`` itself for a
    folder, its parent for a file). Raises ``DocumentError``.
    """
    if not path.exists():
        raise DocumentError(f"No such file or folder: {path}")
    if path.is_file():
        if path.suffix.lower() not in SUFFIXES:
            raise DocumentError(f"{path} is not a {', '.join(sorted(SUFFIXES))} file.")
        files = [path]
        base = relative_to or path.parent
    else:
        base = relative_to or path
        files = sorted(
            candidate
            for candidate in path.rglob("*")
            if candidate.is_file()
            and candidate.suffix.lower() in SUFFIXES
            and not any(part.startswith(".") for part in candidate.relative_to(path).parts)
        )
    documents = [_read(file, base) for file in files]
    return sorted((document for document in documents if document.content.strip()), key=_external_id)


def _external_id(document: SourceDocument) -> str:
    return document.external_id


def _read(path: Path, base: Path) -> SourceDocument:
    try:
        content = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise DocumentError(f"{path} is not UTF-8 text.") from None
    except OSError as error:
        raise DocumentError(f"Cannot read {path}: {error.strerror}.") from None
    try:
        external_id = path.resolve().relative_to(base.resolve()).as_posix()
    except ValueError:
        external_id = path.name
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
