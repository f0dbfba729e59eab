"""Revision content on the table: pages of ``page_size`` code points under the item's partition
(``PAGE#{rev}#{n:06d}``), written before their revision is sealed and read through it.

A read of ``content[offset:offset + limit]`` is one Query over the pages it spans (more only past
1 MB of results). Missing or truncated pages and a content hash that does not match are a broken
store: ``DependencyUnavailableError``, logged with the revision's ids.
"""

from __future__ import annotations

from knowledge.adapters.dynamodb import codec, keys
from knowledge.adapters.dynamodb.table import DynamoDBTable, TableRecords
from knowledge.domain import lifecycle
from knowledge.domain.models import ContentWindow, Revision
from knowledge.errors import DependencyUnavailableError
from knowledge.observability import logger


class DynamoDBContentStore(TableRecords):
    """The ``ContentStore`` port: windows and whole texts of sealed revisions."""

    def read_content(self, revision: Revision, *, offset: int, limit: int) -> ContentWindow:
        """``content[offset:offset + limit]`` in code points, from one Query over at most the pages it spans.

        ``offset == total_chars`` gives empty text. Raises ``ValueError`` for a negative ``offset``
        or ``limit`` or an ``offset`` past the end, ``DependencyUnavailableError`` for missing pages.
        """
        end = lifecycle.content_window(revision, offset=offset, limit=limit)
        text = ""
        if end > offset:
            size = revision.page_size
            first, last = offset // size, (end - 1) // size
            text = "".join(_read_pages(self._table, revision, first, last))[
                offset - first * size : end - first * size
            ]
        return ContentWindow(text=text, offset=offset, limit=limit, total_chars=revision.total_chars)

    def read_all_content(self, revision: Revision) -> str:
        """The whole content, checked against the revision's SHA-256.

        Raises ``DependencyUnavailableError`` when pages are missing or the hash differs (a broken store).
        """
        pages = _read_pages(self._table, revision, 0, revision.page_count - 1) if revision.page_count else []
        content = "".join(pages)
        if not lifecycle.matches(revision, content):
            raise _broken(revision, "content hash mismatch")
        return content


def write_pages(table: DynamoDBTable, revision: Revision, content: str) -> None:
    """Write every page of ``revision`` (write-once); on ``DependencyUnavailableError`` the pages
    written so far are deleted again before it propagates."""
    size = revision.page_size
    try:
        for number in range(revision.page_count):
            table.put_new(codec.encode_page(revision, number, content[number * size : (number + 1) * size]))
    except DependencyUnavailableError:
        discard_pages(table, revision)
        raise


def discard_pages(table: DynamoDBTable, revision: Revision) -> None:
    """Delete the pages of a revision that was never sealed; best effort, as nothing can read them."""
    pages = (
        keys.page_key(revision.tenant_id, revision.knowledge_item_id, revision.knowledge_revision_id, number)
        for number in range(revision.page_count)
    )
    if not table.delete_quietly(pages):
        logger.warning("unsealed pages left behind", extra=revision_ids(revision))


def revision_ids(revision: Revision) -> dict[str, str]:
    """The ids that name a revision in logs."""
    return {
        "tenant_id": revision.tenant_id,
        "knowledge_item_id": revision.knowledge_item_id,
        "knowledge_revision_id": revision.knowledge_revision_id,
    }


def _read_pages(table: DynamoDBTable, revision: Revision, first: int, last: int) -> list[str]:
    """Texts of pages ``first..last`` of a sealed revision, from one Query (more only past 1 MB).

    Raises ``DependencyUnavailableError`` when a page is missing or has the wrong length.
    """
    records = table.query_range(
        keys.item_partition(revision.tenant_id, revision.knowledge_item_id),
        keys.page_sort_key(revision.knowledge_revision_id, first),
        keys.page_sort_key(revision.knowledge_revision_id, last),
    )
    pages = [codec.decode_page(record) for record in records]
    if [number for number, _ in pages] != list(range(first, last + 1)) or any(
        len(text) != _page_length(revision, number) for number, text in pages
    ):
        raise _broken(revision, "pages missing or truncated")
    return [text for _, text in pages]


def _page_length(revision: Revision, number: int) -> int:
    if number < revision.page_count - 1:
        return revision.page_size
    return revision.total_chars - (revision.page_count - 1) * revision.page_size


def _broken(revision: Revision, reason: str) -> DependencyUnavailableError:
    logger.error("stored content is inconsistent", extra={**revision_ids(revision), "reason": reason})
    return DependencyUnavailableError("The knowledge store returned inconsistent content.")
