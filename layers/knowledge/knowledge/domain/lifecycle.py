"""What a knowledge store writes for each change of a base, an item or a revision (DESIGN §3), as
pure functions, so that every store adapter applies the same rules.

- Versions are integers: a new base or item is at 1 and every change moves it by one.
- A revision is immutable; its content is cut into pages of ``page_size`` code points (the last
  one shorter), at most ``MAX_PAGES`` of them. ``published_at`` is set the first time it becomes
  current and never changes afterwards.
- An item's ``title`` is its current revision's: a draft never renames it, publishing (a rollback
  included) does. ``latest_revision_id`` and ``latest_sha256`` follow the newest revision.
- An archived item refuses every later write (``ResourceUnavailableError``); a stale
  ``expected_version`` is ``ConflictError`` carrying the item's current version.

Timestamps are the aware UTC datetimes of the store's clock.
"""

from __future__ import annotations

import hashlib
from datetime import datetime

from knowledge.domain import ids
from knowledge.domain.models import (
    BaseStatus,
    ItemStatus,
    KnowledgeBase,
    KnowledgeItem,
    Revision,
    Scope,
    Source,
)
from knowledge.domain.segments import Segment, segments_problem
from knowledge.errors import ConflictError, ResourceUnavailableError

MAX_PAGES = 1_000_000
"""Pages of one revision (page numbers are six digits)."""
DEFAULT_PAGE_SIZE_CHARS = 50_000
"""Code points per page of new revisions unless a store is given another size."""
MAX_PAGE_SIZE_CHARS = 90_000
"""At most 4 UTF-8 bytes per code point keeps a page under DynamoDB's 400 KB item limit."""


def content_sha256(content: str) -> str:
    """SHA-256 hex digest of the UTF-8 content: the ``sha256`` a stored revision records."""
    return hashlib.sha256(content.encode("utf-8")).hexdigest()


def check_page_size(page_size_chars: int) -> int:
    """``page_size_chars`` when within 1..``MAX_PAGE_SIZE_CHARS``; ``ValueError`` otherwise."""
    if not 1 <= page_size_chars <= MAX_PAGE_SIZE_CHARS:
        raise ValueError(f"page_size_chars must be within 1..{MAX_PAGE_SIZE_CHARS}")
    return page_size_chars


def new_base(
    tenant_id: str, *, name: str, owner_id: str, scope: Scope, team_id: str | None, now: datetime
) -> KnowledgeBase:
    """An active base at version 1 with a fresh ``kb_`` id."""
    return KnowledgeBase(
        tenant_id=tenant_id,
        knowledge_base_id=ids.new_base_id(),
        name=name,
        owner_id=owner_id,
        team_id=team_id,
        scope=scope,
        version=1,
        created_at=now,
        updated_at=now,
    )


def updated_base(
    base: KnowledgeBase, *, status: BaseStatus | None, name: str | None, now: datetime
) -> KnowledgeBase:
    """``base`` with the given ``status`` and/or ``name`` at the next version."""
    changes = {field: value for field, value in (("status", status), ("name", name)) if value is not None}
    return base.model_copy(update={**changes, "version": base.version + 1, "updated_at": now})


def new_revision(
    tenant_id: str,
    knowledge_base_id: str,
    knowledge_item_id: str,
    *,
    title: str,
    source: Source,
    content: str,
    page_size: int,
    publish: bool,
    now: datetime,
    segments: tuple[Segment, ...] = (),
) -> Revision:
    """A revision of ``content`` with a fresh ``kr_`` id and its ``segments``. Raises ``ValueError``
    past ``MAX_PAGES`` or when the segments do not fit the content (``segments_problem``; the
    boundaries refuse such segments first)."""
    page_count = -(-len(content) // page_size)
    if page_count > MAX_PAGES:
        raise ValueError("content needs more pages than a revision can hold")
    problem = segments_problem(segments, len(content))
    if problem is not None:
        raise ValueError(problem)
    return Revision(
        tenant_id=tenant_id,
        knowledge_base_id=knowledge_base_id,
        knowledge_item_id=knowledge_item_id,
        knowledge_revision_id=ids.new_revision_id(),
        title=title,
        source=source,
        sha256=content_sha256(content),
        total_chars=len(content),
        page_size=page_size,
        page_count=page_count,
        created_at=now,
        published_at=now if publish else None,
        segments=segments,
    )


def repaged_revision(revision: Revision, content: str, page_size: int) -> Revision:
    """``revision`` (restored from a bundle) paged in ``page_size`` characters, as a store pages a
    new one. Raises ``ValueError`` when ``content`` is not the revision's (length and SHA-256), past
    ``MAX_PAGES`` or when its segments do not fit the content."""
    if not matches(revision, content):
        raise ValueError("the content is not the revision's (its length or SHA-256 differ)")
    page_count = -(-len(content) // page_size)
    if page_count > MAX_PAGES:
        raise ValueError("content needs more pages than a revision can hold")
    problem = segments_problem(revision.segments, len(content))
    if problem is not None:
        raise ValueError(problem)
    return revision.model_copy(update={"page_size": page_size, "page_count": page_count})


def new_item(revision: Revision, *, external_id: str | None, publish: bool) -> KnowledgeItem:
    """The item at version 1 whose first revision is ``revision`` (current when ``publish``)."""
    return KnowledgeItem(
        tenant_id=revision.tenant_id,
        knowledge_base_id=revision.knowledge_base_id,
        knowledge_item_id=revision.knowledge_item_id,
        title=revision.title,
        status=ItemStatus.PUBLISHED if publish else ItemStatus.DRAFT,
        current_revision_id=revision.knowledge_revision_id if publish else None,
        latest_revision_id=revision.knowledge_revision_id,
        latest_sha256=revision.sha256,
        external_id=external_id,
        version=1,
        created_at=revision.created_at,
        updated_at=revision.created_at,
    )


def writable_item(item: KnowledgeItem | None, expected_version: int | None) -> KnowledgeItem:
    """``item`` when a write may change it: ``ResourceUnavailableError`` when it is absent or
    archived, ``ConflictError`` (its current version) when ``expected_version`` is stale;
    ``expected_version=None`` accepts the version as read."""
    if item is None or item.status is ItemStatus.ARCHIVED:
        raise ResourceUnavailableError()
    if expected_version is not None and expected_version != item.version:
        raise ConflictError(
            "The knowledge item has changed; retry with its current version.",
            current_version=item.version,
        )
    return item


def revision_defaults(
    item: KnowledgeItem, latest: Revision | None, *, title: str | None, source: Source | None
) -> tuple[str, Source]:
    """The title and source of a new revision: as given, else the latest revision's (the item's
    title and an empty source when that revision cannot be read)."""
    if title is None:
        title = latest.title if latest is not None else item.title
    if source is None:
        source = latest.source if latest is not None else Source()
    return title, source


def revised_item(item: KnowledgeItem, revision: Revision, *, publish: bool, now: datetime) -> KnowledgeItem:
    """``item`` at the next version with ``revision`` as its latest, and current when ``publish``."""
    changes: dict[str, object] = {
        "latest_revision_id": revision.knowledge_revision_id,
        "latest_sha256": revision.sha256,
    }
    if publish:
        changes.update(
            status=ItemStatus.PUBLISHED,
            current_revision_id=revision.knowledge_revision_id,
            title=revision.title,
        )
    return _next_version(item, now, changes)


def published_item(item: KnowledgeItem, revision: Revision, *, now: datetime) -> KnowledgeItem:
    """``item`` at the next version with ``revision`` current (and its title)."""
    return _next_version(
        item,
        now,
        {
            "status": ItemStatus.PUBLISHED,
            "current_revision_id": revision.knowledge_revision_id,
            "title": revision.title,
        },
    )


def archived_item(item: KnowledgeItem, *, now: datetime) -> KnowledgeItem:
    """``item`` archived at the next version."""
    return _next_version(item, now, {"status": ItemStatus.ARCHIVED})


def content_window(revision: Revision, *, offset: int, limit: int) -> int:
    """The end (exclusive, in code points) of the window ``offset``/``limit`` of ``revision``.

    Raises ``ValueError`` for a negative ``offset`` or ``limit`` or an ``offset`` past the end.
    """
    if offset < 0 or limit < 0 or offset > revision.total_chars:
        raise ValueError("offset must be within 0..total_chars and limit must not be negative")
    return min(offset + limit, revision.total_chars)


def matches(revision: Revision, content: str) -> bool:
    """True when ``content`` is the revision's content (length and SHA-256)."""
    return len(content) == revision.total_chars and content_sha256(content) == revision.sha256


def _next_version(item: KnowledgeItem, now: datetime, changes: dict[str, object]) -> KnowledgeItem:
    return item.model_copy(update={**changes, "version": item.version + 1, "updated_at": now})
