"""Domain entities (DESIGN §3). Frozen pydantic models; versions are integers starting at 1.

Character counts and offsets are Unicode code points (Python ``str`` indices).
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from knowledge.domain.segments import Segment
from knowledge.domain.text import Text

TENANT_ID_PATTERN = r"^[^#\s]{1,128}$"
"""Tenant ids are part of every key: non-empty, no ``#`` and no whitespace."""
EXTERNAL_ID_MAX_CHARS = 1_024
TITLE_MAX_CHARS = 1_000


class Scope(StrEnum):
    """Who may see a knowledge base besides its owner (DESIGN §5, visibility)."""

    PRIVATE = "private"
    TEAM = "team"
    TENANT = "tenant"


class BaseStatus(StrEnum):
    ACTIVE = "active"
    INACTIVE = "inactive"


class ItemStatus(StrEnum):
    """``draft`` until a revision is published; ``archived`` is final for search and read."""

    DRAFT = "draft"
    PUBLISHED = "published"
    ARCHIVED = "archived"


class Permission(StrEnum):
    """Token scopes (DESIGN §6 and §9). ``memory:*`` are the notes' scopes: ``memory:share`` to
    write, pin, change or forget a note others see (``team`` or ``tenant`` scope), ``memory:admin``
    to do so to another principal's note (``knowledge.domain.memory.rights``). A token holds exactly
    the scopes it was issued with, and ``platform:admin`` implies every one."""

    READ = "knowledge:read"
    WRITE = "knowledge:write"
    ADMIN = "knowledge:admin"
    PLATFORM_ADMIN = "platform:admin"
    MEMORY_READ = "memory:read"
    MEMORY_WRITE = "memory:write"
    MEMORY_SHARE = "memory:share"
    MEMORY_ADMIN = "memory:admin"


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Source(_Frozen):
    """Where a revision's content came from; both fields optional."""

    uri: Text | None = None
    title: Text | None = None


class Principal(_Frozen):
    """The caller, resolved from a bearer token.

    ``knowledge_base_ids`` is an optional allow-list: ``None`` admits every base of the tenant.
    ``expires_at`` is when the caller's token expires (aware UTC; ``None``: never); tokens the
    caller issues expire no later. ``token_id`` is the caller's token (its SHA-256 hex), the issuer
    of the tokens it mints; ``None`` for a principal not resolved from a stored token, whose tokens
    start a lineage of their own.
    """

    tenant_id: str
    subject_id: str
    team_ids: frozenset[str] = frozenset()
    scopes: frozenset[str] = frozenset()
    knowledge_base_ids: frozenset[str] | None = None
    expires_at: datetime | None = None
    token_id: str | None = None

    def has_scope(self, scope: Permission) -> bool:
        """True when the principal holds ``scope``; ``platform:admin`` implies every scope."""
        return scope.value in self.scopes or Permission.PLATFORM_ADMIN.value in self.scopes


class TokenRecord(_Frozen):
    """A stored bearer token: only its SHA-256 is kept, never the token itself.

    ``ancestor_token_ids`` is the token's lineage: the ids of the tokens that minted it, its root
    first and its issuer last (empty for a root token, issued by an operator or ``make run``). A
    token authenticates only while it and every ancestor are valid (``TokenService.resolve``), so
    revoking a token disables everything below it at once.
    """

    token_hash: str
    tenant_id: str
    subject_id: str
    team_ids: frozenset[str] = frozenset()
    scopes: frozenset[str] = frozenset()
    knowledge_base_ids: frozenset[str] | None = None
    created_at: datetime
    expires_at: datetime | None = None
    revoked: bool = False
    ancestor_token_ids: tuple[str, ...] = ()

    @property
    def issuer_token_id(self) -> str | None:
        """The token that minted this one; ``None`` for a root token."""
        return self.ancestor_token_ids[-1] if self.ancestor_token_ids else None

    def principal(self) -> Principal:
        return Principal(
            tenant_id=self.tenant_id,
            subject_id=self.subject_id,
            team_ids=self.team_ids,
            scopes=self.scopes,
            knowledge_base_ids=self.knowledge_base_ids,
            expires_at=self.expires_at,
            token_id=self.token_hash,
        )

    def is_valid_at(self, now: datetime) -> bool:
        """A token is valid when it is not revoked and ``now`` is before its expiry."""
        return not self.revoked and (self.expires_at is None or now < self.expires_at)


class KnowledgeBase(_Frozen):
    tenant_id: str
    knowledge_base_id: str
    name: str
    owner_id: str
    team_id: str | None = None
    scope: Scope
    status: BaseStatus = BaseStatus.ACTIVE
    version: int = Field(ge=1)
    created_at: datetime
    updated_at: datetime


class KnowledgeItem(_Frozen):
    """An item of a base. ``current_revision_id`` is the published one; ``latest_revision_id`` the newest.

    ``title`` is the current revision's title (the first revision's while none is current): a draft
    never renames the item.

    ``latest_sha256`` is the content hash of the latest revision, for idempotent upserts.
    ``indexed_revision_id`` is written by the indexer once the search index holds the current revision.
    """

    tenant_id: str
    knowledge_base_id: str
    knowledge_item_id: str
    title: str
    status: ItemStatus
    current_revision_id: str | None = None
    latest_revision_id: str
    latest_sha256: str
    external_id: str | None = None
    version: int = Field(ge=1)
    indexed_revision_id: str | None = None
    created_at: datetime
    updated_at: datetime


class Revision(_Frozen):
    """An immutable revision. Its content is stored in pages of ``page_size`` characters.

    ``published_at`` is set once, when the revision is first published, and never cleared.
    ``segments`` name where stretches of the content came from in the original document
    (``knowledge.domain.segments``); empty for text written without them and for revisions older
    than segments.
    """

    tenant_id: str
    knowledge_base_id: str
    knowledge_item_id: str
    knowledge_revision_id: str
    title: str
    source: Source = Source()
    sha256: str
    total_chars: int = Field(ge=0)
    page_size: int = Field(ge=1)
    page_count: int = Field(ge=0)
    created_at: datetime
    published_at: datetime | None = None
    segments: tuple[Segment, ...] = ()

    @property
    def is_published(self) -> bool:
        return self.published_at is not None


class ContentWindow(_Frozen):
    """``text`` is ``content[offset:offset + limit]`` of a revision whose length is ``total_chars``."""

    text: str
    offset: int = Field(ge=0)
    limit: int = Field(ge=0)
    total_chars: int = Field(ge=0)

    @property
    def truncated(self) -> bool:
        """True when content continues after this window."""
        return self.offset + len(self.text) < self.total_chars


T = TypeVar("T")


class Page(_Frozen, Generic[T]):
    """One page of a listing; ``next_token`` is opaque and ``None`` on the last page."""

    entries: list[T]
    next_token: str | None = None
