"""The write API's bodies and answers (DESIGN §6), named as the tool names things.

Request bodies refuse unknown fields (``knowledge_invalid_request``, as the tool does), take JSON
types strictly (``"3"``, ``true`` or ``1.5`` is not a version: ``validation_error``) and refuse strings
that are not valid Unicode (``knowledge.domain.text``: ``validation_error``) and identifiers
(``tenant_id``, ``subject_id``, ``team_id``/``team_ids``, ``external_id``, the ids a body names)
holding control, bidirectional or invisible characters (``knowledge.domain.identifiers``:
``validation_error`` naming the field and the code point). Every integer is
bounded (``knowledge.domain.bounds``); a value out of its bound is ``knowledge_invalid_request``
naming the field and the bound. Answers are exactly the shapes of
DESIGN §6; timestamps are ISO-8601 UTC, character counts Unicode code points.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    StrictStr,
    field_validator,
    model_validator,
)

from knowledge.contract.deletion import DeletionReceipt
from knowledge.contract.segments import Segments, to_segments
from knowledge.domain import ids
from knowledge.domain.bounds import VERSION_MAX, VERSION_MIN
from knowledge.domain.identifiers import StrictIdentifier, StrictVisibleText, require_identifier
from knowledge.domain.models import (
    EXTERNAL_ID_MAX_CHARS,
    TENANT_ID_PATTERN,
    TITLE_MAX_CHARS,
    BaseStatus,
    ItemStatus,
    KnowledgeBase,
    KnowledgeItem,
    Permission,
    Revision,
    Scope,
    Source,
    TokenRecord,
)
from knowledge.domain.segments import segments_problem
from knowledge.domain.sources import SafeSource
from knowledge.domain.text import StrictText

MAX_CONTENT_CHARS = 4_000_000
"""Default content limit in characters (``MAX_CONTENT_CHARS`` setting); longer is ``validation_error``."""
NAME_MAX_CHARS = 200
LABEL_MAX_CHARS = 128
"""Subject, team and other free identifiers."""
LIST_LIMIT_DEFAULT, LIST_LIMIT_MAX = 50, 100
TOKEN_TTL_MAX_SECONDS = 10 * 366 * 86_400
"""``expires_in`` is at most ten years; omit it for a token that never expires."""

Version = Annotated[
    StrictInt,
    Field(
        ge=VERSION_MIN,
        le=VERSION_MAX,
        description=f"The version the caller last read (optimistic lock), {VERSION_MIN} to {VERSION_MAX}.",
    ),
]
Label = Annotated[StrictIdentifier, Field(min_length=1, max_length=LABEL_MAX_CHARS)]
"""A subject, team or base id: visible characters only (``knowledge.domain.identifiers``)."""
ExternalId = Annotated[StrictIdentifier, Field(min_length=1, max_length=EXTERNAL_ID_MAX_CHARS)]
Title = Annotated[StrictText, Field(min_length=1, max_length=TITLE_MAX_CHARS)]
# The pattern comes before the identifier check, so that it stays in the published JSON schema.
TenantId = Annotated[StrictStr, Field(pattern=TENANT_ID_PATTERN), AfterValidator(require_identifier)]
Content = Annotated[
    StrictText,
    Field(description=f"The revision's text, at most {MAX_CONTENT_CHARS:,} characters (code points)."),
]


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _not_blank(value: str | None, field: str) -> None:
    if value is not None and not value.strip():
        raise ValueError(f"{field} must not be blank")


def _segments_fit(segments: Segments | None, content: str) -> None:
    problem = segments_problem(to_segments(segments), len(content)) if segments else None
    if problem is not None:
        raise ValueError(f"segments: {problem}")


# -- requests -------------------------------------------------------------------------------------


class CreateKnowledgeBaseRequest(_Request):
    """``POST /v1/knowledge-bases``. ``team`` scope needs ``team_id``; other scopes take none."""

    name: Annotated[StrictVisibleText, Field(min_length=1, max_length=NAME_MAX_CHARS)]
    scope: Scope
    team_id: Label | None = None

    @model_validator(mode="after")
    def _team_matches_scope(self) -> CreateKnowledgeBaseRequest:
        _not_blank(self.name, "name")
        if self.scope is Scope.TEAM and self.team_id is None:
            raise ValueError("scope 'team' requires team_id")
        if self.scope is not Scope.TEAM and self.team_id is not None:
            raise ValueError("team_id is only allowed with scope 'team'")
        return self


class UpdateKnowledgeBaseRequest(_Request):
    """``PATCH /v1/knowledge-bases/{kb}``: a new ``status`` and/or ``name``."""

    status: BaseStatus | None = None
    name: Annotated[StrictVisibleText, Field(min_length=1, max_length=NAME_MAX_CHARS)] | None = None
    expected_version: Version

    @model_validator(mode="after")
    def _name_not_blank(self) -> UpdateKnowledgeBaseRequest:
        _not_blank(self.name, "name")
        return self


class CreateItemRequest(_Request):
    """``POST /v1/knowledge-bases/{kb}/items``: a new item, or a new revision of the base's item
    holding ``external_id``. ``publish`` (default false) makes the revision current at once;
    ``segments`` (``knowledge.contract.segments``) say where its content came from."""

    title: Title
    content: Content
    source: SafeSource | None = None
    external_id: ExternalId | None = None
    publish: StrictBool = False
    segments: Segments | None = None

    @model_validator(mode="after")
    def _title_not_blank(self) -> CreateItemRequest:
        _not_blank(self.title, "title")
        _segments_fit(self.segments, self.content)
        return self


class CreateRevisionRequest(_Request):
    """``POST /v1/knowledge-items/{item}/revisions``. ``title`` defaults to the item's, ``source`` to
    the latest revision's; without ``expected_version`` the version read just before is used.
    ``segments`` belong to this revision alone (none when absent)."""

    content: Content
    title: Title | None = None
    source: SafeSource | None = None
    publish: StrictBool = False
    expected_version: Version | None = None
    segments: Segments | None = None

    @model_validator(mode="after")
    def _title_not_blank(self) -> CreateRevisionRequest:
        _not_blank(self.title, "title")
        _segments_fit(self.segments, self.content)
        return self


class PublishRequest(_Request):
    """``POST /v1/knowledge-items/{item}/publish``: make ``revision_id`` (any revision of the item,
    an older one rolls back) current."""

    revision_id: Label
    expected_version: Version


class ArchiveRequest(_Request):
    """``POST /v1/knowledge-items/{item}/archive``; ``dry_run`` changes nothing and answers the
    receipt the archive would give."""

    expected_version: Version
    dry_run: StrictBool = False


class CreateTokenRequest(_Request):
    """``POST /v1/tokens``. ``tenant_id`` defaults to the caller's (another tenant needs
    ``platform:admin``); ``scopes`` must all be held by the caller; ``knowledge_base_ids`` is an
    optional allow-list of at least one base (a caller holding one can only narrow it; an empty
    list, which would admit nothing, is ``validation_error``); ``subject_id`` and ``team_ids`` are
    free for a caller without an allow-list, else its own subject and a subset of its own teams
    (``knowledge.domain.access.reach``); ``expires_in`` is in seconds."""

    tenant_id: TenantId | None = None
    subject_id: Label
    team_ids: list[Label] = Field(default_factory=list, max_length=100)
    scopes: list[Permission] = Field(min_length=1, max_length=len(Permission))
    knowledge_base_ids: list[Label] | None = Field(default=None, min_length=1, max_length=1_000)
    expires_in: Annotated[StrictInt, Field(ge=1, le=TOKEN_TTL_MAX_SECONDS)] | None = None

    @field_validator("knowledge_base_ids")
    @classmethod
    def _base_ids_are_well_formed(cls, value: list[str] | None) -> list[str] | None:
        if value is not None and not all(ids.is_well_formed(entry, ids.KB_PREFIX) for entry in value):
            raise ValueError("knowledge_base_ids must be knowledge base ids (kb_ followed by a ULID)")
        return value


# -- answers --------------------------------------------------------------------------------------


class KnowledgeBaseResponse(BaseModel):
    knowledge_base_id: str
    name: str
    scope: Scope
    team_id: str | None
    owner_id: str
    status: BaseStatus
    version: int

    @classmethod
    def of(cls, base: KnowledgeBase) -> KnowledgeBaseResponse:
        return cls(
            knowledge_base_id=base.knowledge_base_id,
            name=base.name,
            scope=base.scope,
            team_id=base.team_id,
            owner_id=base.owner_id,
            status=base.status,
            version=base.version,
        )


class KnowledgeBaseList(BaseModel):
    knowledge_bases: list[KnowledgeBaseResponse]
    next_token: str | None


class KnowledgeItemResponse(BaseModel):
    """An item: ``current_revision_id`` is the published (searchable) revision and ``title`` its
    title; ``latest_revision_id`` is the newest revision, a draft when it is not the current one.
    Callers without ``knowledge:write`` never see drafts: for them ``latest_revision_id`` equals
    ``current_revision_id`` (see ``published_view``)."""

    knowledge_base_id: str
    knowledge_item_id: str
    title: str
    status: ItemStatus
    current_revision_id: str | None
    latest_revision_id: str
    version: int
    external_id: str | None
    indexed: bool = True
    """Whether searches already reflect the item as answered: the search index holds its current
    revision (false after a publish until the indexer takes it), or it has nothing to search (no
    published revision) or is archived (every search leaves an archived item out at once)."""

    @classmethod
    def of(cls, item: KnowledgeItem) -> KnowledgeItemResponse:
        return cls(**_item_fields(item))


class CreatedRevisionResponse(KnowledgeItemResponse):
    """An item after a write that created ``knowledge_revision_id`` (or, for an unchanged upsert by
    ``external_id``, found it as the item's latest revision)."""

    knowledge_revision_id: str

    @classmethod
    def of_revision(cls, item: KnowledgeItem, revision: Revision) -> CreatedRevisionResponse:
        return cls.of_item(item, revision.knowledge_revision_id)

    @classmethod
    def of_item(cls, item: KnowledgeItem, knowledge_revision_id: str) -> CreatedRevisionResponse:
        return cls(**_item_fields(item), knowledge_revision_id=knowledge_revision_id)


class ArchivedItemResponse(KnowledgeItemResponse):
    """An archive's answer: the item as archived (with ``dry_run``: as it stands) and the receipt
    of what left each store (``knowledge.contract.deletion``)."""

    dry_run: bool = False
    receipt: DeletionReceipt


class BaseArchiveRequest(_Request):
    """``POST /v1/knowledge-bases/{kb}/archive``; ``dry_run`` changes nothing and answers the
    receipt the archive would give."""

    expected_version: Version
    dry_run: StrictBool = False


class ArchivedBaseResponse(KnowledgeBaseResponse):
    """A base archive's answer: the base as archived (``inactive``; with ``dry_run``: as it stands)
    and the receipt (``knowledge.contract.deletion``)."""

    dry_run: bool = False
    receipt: DeletionReceipt


class PurgedBaseResponse(BaseModel):
    """``DELETE /v1/knowledge-bases/{kb}``: the base id, how many items went with it, ``dry_run``
    and the receipt of what left each store for good (with ``dry_run``: what would)."""

    knowledge_base_id: str
    items: int = Field(ge=0)
    dry_run: bool = False
    receipt: DeletionReceipt


class PurgedItemResponse(BaseModel):
    """``DELETE /v1/knowledge-items/{item}``: the purged item's ids, ``dry_run`` and the receipt of
    what left each store for good (``knowledge.contract.deletion``; with ``dry_run``: what would)."""

    knowledge_item_id: str
    knowledge_base_id: str
    dry_run: bool = False
    receipt: DeletionReceipt


class KnowledgeItemDetail(KnowledgeItemResponse):
    """``GET /v1/knowledge-items/{item}``: ``indexed_revision_id`` is the revision the search index
    holds; it equals ``current_revision_id`` once a publish is searchable."""

    indexed_revision_id: str | None

    @classmethod
    def of_item(cls, item: KnowledgeItem) -> KnowledgeItemDetail:
        return cls(**_item_fields(item), indexed_revision_id=item.indexed_revision_id)


class KnowledgeItemList(BaseModel):
    """One page of a base's items, each with ``indexed_revision_id``: a page tells which of its
    items are searchable at their current revision, so a client waiting for the index reads a
    page rather than every item."""

    items: list[KnowledgeItemDetail]
    next_token: str | None


class RevisionResponse(BaseModel):
    """An immutable revision; ``total_chars`` counts code points, ``sha256`` is of its UTF-8 content."""

    knowledge_base_id: str
    knowledge_item_id: str
    knowledge_revision_id: str
    title: str
    source: Source
    sha256: str
    total_chars: int
    created_at: datetime
    published_at: datetime | None
    is_current: bool

    @classmethod
    def of(cls, revision: Revision, *, current_revision_id: str | None) -> RevisionResponse:
        return cls(
            knowledge_base_id=revision.knowledge_base_id,
            knowledge_item_id=revision.knowledge_item_id,
            knowledge_revision_id=revision.knowledge_revision_id,
            title=revision.title,
            source=revision.source,
            sha256=revision.sha256,
            total_chars=revision.total_chars,
            created_at=revision.created_at,
            published_at=revision.published_at,
            is_current=revision.knowledge_revision_id == current_revision_id,
        )


class RevisionList(BaseModel):
    revisions: list[RevisionResponse]
    next_token: str | None


class TokenSummary(BaseModel):
    """A token as the API describes it, never its secret: ``token_id`` is its SHA-256 hex digest
    (the only form stored; not secret), which names it for ``DELETE /v1/tokens/{token_id}``;
    ``issuer_token_id`` the token that minted it (``null``: a root token); ``knowledge_base_ids``
    its allow-list (``null``: every base of the tenant); ``expires_at`` when it expires (``null``:
    never), never later than its issuer. Lists are sorted; timestamps ISO-8601 UTC."""

    token_id: str
    tenant_id: str
    subject_id: str
    team_ids: list[str]
    scopes: list[str]
    knowledge_base_ids: list[str] | None
    issuer_token_id: str | None
    created_at: datetime
    expires_at: datetime | None

    @classmethod
    def fields_of(cls, record: TokenRecord) -> dict[str, Any]:
        return {
            "token_id": record.token_hash,
            "tenant_id": record.tenant_id,
            "subject_id": record.subject_id,
            "team_ids": sorted(record.team_ids),
            "scopes": sorted(record.scopes),
            "knowledge_base_ids": None
            if record.knowledge_base_ids is None
            else sorted(record.knowledge_base_ids),
            "issuer_token_id": record.issuer_token_id,
            "created_at": record.created_at,
            "expires_at": record.expires_at,
        }


class TokenResponse(TokenSummary):
    """``POST /v1/tokens`` (201): the bearer ``token``, shown this once, with what it holds."""

    token: str

    @classmethod
    def of(cls, token: str, record: TokenRecord) -> TokenResponse:
        return cls(token=token, **cls.fields_of(record))


class TokenEntry(TokenSummary):
    """One token of ``GET /v1/tokens``: ``revoked`` is true when the token or one of its ancestors
    was revoked (it no longer authenticates); ``revoked_ancestor_token_id`` names the revoked
    ancestor closest to the root (``null`` when no ancestor is revoked)."""

    revoked: bool
    revoked_ancestor_token_id: str | None

    @classmethod
    def of(cls, record: TokenRecord, *, revoked_ancestor_token_id: str | None) -> TokenEntry:
        return cls(
            **cls.fields_of(record),
            revoked=record.revoked or revoked_ancestor_token_id is not None,
            revoked_ancestor_token_id=revoked_ancestor_token_id,
        )


class TokenList(BaseModel):
    """``GET /v1/tokens``: one page of the tokens the caller may revoke, in creation order."""

    tokens: list[TokenEntry]
    next_token: str | None


class ReindexResponse(BaseModel):
    """``POST /v1/knowledge-bases/{kb}/reindex``: of ``scanned`` live items, ``indexed`` were written
    to the index, ``queued`` sent to the index work queue (where one is configured: the deployed
    stack and the local runtime; they are searchable once the index worker has taken them),
    ``removed`` (drafts) taken out, ``superseded`` already newer in the index, ``skipped`` gone
    meanwhile; the five add up to ``scanned``. An inactive base is removed from the index and scans
    nothing."""

    knowledge_base_id: str
    status: BaseStatus
    scanned: int
    indexed: int
    queued: int
    removed: int
    superseded: int
    skipped: int


class HealthResponse(BaseModel):
    """``GET /v1/health``: the function answers, and whether the runtime switch lets tools answer."""

    status: Literal["ok"] = "ok"
    runtime_enabled: bool


def published_view(item: KnowledgeItem) -> KnowledgeItem:
    """``item`` as a caller without ``knowledge:write`` sees it: only published state, so the latest
    revision is the current one (a published item always has one) and drafts do not show."""
    if item.current_revision_id is None:
        return item
    return item.model_copy(update={"latest_revision_id": item.current_revision_id})


def _item_fields(item: KnowledgeItem) -> dict[str, Any]:
    return {
        "knowledge_base_id": item.knowledge_base_id,
        "knowledge_item_id": item.knowledge_item_id,
        "title": item.title,
        "status": item.status,
        "current_revision_id": item.current_revision_id,
        "latest_revision_id": item.latest_revision_id,
        "version": item.version,
        "external_id": item.external_id,
        "indexed": item.status is ItemStatus.ARCHIVED
        or item.current_revision_id is None
        or item.indexed_revision_id == item.current_revision_id,
    }
