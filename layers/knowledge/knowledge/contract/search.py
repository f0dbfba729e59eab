"""The ``search_knowledge`` tool contract (spec + DESIGN §4–§5): its arguments and its results.

These pydantic models are the one definition both boundaries (REST and MCP) validate against and
serialize from; the OpenAPI document and the MCP ``inputSchema`` are generated from them.
Character offsets and counts are Unicode code points.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from knowledge.contract.segments import RowRange
from knowledge.domain import ids
from knowledge.domain.bounds import INTEGER_MAX, OFFSET_MAX
from knowledge.domain.segments import Segment, segment_at
from knowledge.domain.text import Text

QUERY_MAX_CHARS = 2_000
ID_MAX_CHARS = 128
LIMIT_CHARS_MIN, LIMIT_CHARS_MAX = 1, 10_000
MAX_RESULTS_MIN, MAX_RESULTS_MAX = 1, 50
MODES = ("hybrid", "lexical", "semantic", "rrf")
AS_OF_DESCRIPTION = (
    "Answer as of this moment (ISO-8601 with a zone, not in the future): what the caller would have "
    "got then, with today's authorization; hard-forgotten, redacted and purged content stays gone. "
    "A time without a zone or in the future is as_of_invalid."
)


def _iso_text(value: Any) -> Any:
    """``as_of`` travels as ISO-8601 text (or a datetime, from Python), never a number of seconds."""
    if not isinstance(value, str | datetime):
        raise PydanticCustomError("as_of_text", "as_of must be an ISO-8601 date-time string")
    return value


AsOf = Annotated[datetime, BeforeValidator(_iso_text), Field(strict=False)]
"""An ``as_of`` argument: parsed from ISO-8601 text; its zone and its place in time are the
service's to check (``domain.as_of.resolve_as_of``), so that they answer ``as_of_invalid``."""

_ID_PREFIXES = {
    "knowledge_base_id": ids.KB_PREFIX,
    "knowledge_item_id": ids.ITEM_PREFIX,
    "knowledge_revision_id": ids.REVISION_PREFIX,
}


class SearchKnowledgeArguments(BaseModel):
    """The tool's arguments. Types are checked strictly (``true``, ``1.5`` or ``1e400`` is not an
    integer) and strings must be valid Unicode (``knowledge.domain.text``), both ``validation_error``;
    bounds on ``offset`` (0 to ``OFFSET_MAX``), ``limit_chars`` and ``max_results`` are published in
    the schema but enforced by the service so that they answer ``knowledge_invalid_request``;
    ``alpha`` is clamped, ``mode`` normalized. An id that is given must have its kind's shape
    (``kb_``, ``ki_`` or ``kr_`` and a ULID, ``ids.shape_of``), else ``validation_error`` naming the
    field: a base *name* is not an id. ``null`` for any argument means "use the default"."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    query: Text = Field(
        default="",
        max_length=QUERY_MAX_CHARS,
        description=(
            "Natural-language query for ranked search; required when using query mode and mutually "
            "exclusive with addressed identifiers."
        ),
    )
    knowledge_base_id: Text = Field(
        default="",
        max_length=ID_MAX_CHARS,
        description="Optional exact Knowledge Base ID to narrow query search or validate an addressed item.",
    )
    knowledge_item_id: Text = Field(
        default="", max_length=ID_MAX_CHARS, description="Exact authorized item ID for addressed read."
    )
    knowledge_revision_id: Text = Field(
        default="",
        max_length=ID_MAX_CHARS,
        description=(
            "Optional exact immutable revision ID for the addressed item; it requires knowledge_item_id."
        ),
    )
    offset: int = Field(
        default=0,
        description="Zero-based character offset for addressed content.",
        json_schema_extra={"minimum": 0, "maximum": OFFSET_MAX},
    )
    page: int = Field(
        default=0,
        description=(
            "Optional page number (1-based) of a document converted from a PDF: the addressed read "
            "starts at that page's first character instead of at offset (give one or the other); "
            "0 reads from offset."
        ),
        json_schema_extra={"minimum": 0, "maximum": INTEGER_MAX},
    )
    limit_chars: int = Field(
        default=4_000,
        description="Addressed-read content window from 1 to 10000 characters at the MCP boundary.",
        json_schema_extra={"minimum": LIMIT_CHARS_MIN, "maximum": LIMIT_CHARS_MAX},
    )
    max_results: int = Field(
        default=10,
        description="Maximum query results from 1 to 50.",
        json_schema_extra={"minimum": MAX_RESULTS_MIN, "maximum": MAX_RESULTS_MAX},
    )
    mode: Text = Field(
        default="hybrid",
        description=(
            "Query scoring mode: hybrid, lexical, semantic, or rrf. Unrecognized text is normalized "
            "to hybrid by the MCP handler."
        ),
        json_schema_extra={"examples": list(MODES)},
    )
    alpha: float = Field(
        default=0.5,
        allow_inf_nan=False,
        description=("Hybrid lexical weight, clamped to 0.0 through 1.0; the semantic weight is 1-alpha."),
        json_schema_extra={"minimum": 0.0, "maximum": 1.0},
    )
    as_of: AsOf | None = Field(default=None, description=AS_OF_DESCRIPTION)
    consistent: bool = Field(
        default=False,
        description=(
            "Ranked query only: also match the published revisions the search index has not taken "
            "yet (read from the store, chunked and ranked by the same rules, in place of any older "
            "revision the index holds), so an item just published is found at once; pending_index "
            "says how many there were. Adds nothing with as_of."
        ),
    )

    @field_validator("knowledge_base_id", "knowledge_item_id", "knowledge_revision_id")
    @classmethod
    def _id_is_well_formed(cls, value: str, info: ValidationInfo) -> str:
        prefix = _ID_PREFIXES[str(info.field_name)]
        if value and not ids.is_well_formed(value, prefix):
            raise PydanticCustomError("id_shape", ids.shape_of(prefix))
        return value

    @model_validator(mode="before")
    @classmethod
    def _null_means_default(cls, data: Any) -> Any:
        if isinstance(data, dict):
            return {key: value for key, value in data.items() if value is not None}
        return data


def _absent(value: object) -> bool:
    return value is None


class Locator(BaseModel):
    """A span of a revision: ``content[offset:offset + length]``, and where it is in the original
    document when the revision has segments (``knowledge.domain.segments``). The segment covering
    the span's best match of the query (a search result's; else ``offset``, as in a read) gives
    ``page`` (a PDF page, 1-based), ``sheet`` and ``rows`` (a spreadsheet's sheet and its
    ``{"first", "last"}`` row range, 1-based as the spreadsheet numbers them) and ``section`` (the
    heading the span is under). A field the segment does not name is left out of the JSON, so a
    revision without segments has locators of exactly ``offset`` and ``length``."""

    offset: int
    length: int
    page: int | None = Field(default=None, exclude_if=_absent)
    sheet: str | None = Field(default=None, exclude_if=_absent)
    rows: RowRange | None = Field(default=None, exclude_if=_absent)
    section: str | None = Field(default=None, exclude_if=_absent)

    @classmethod
    def within(
        cls, segments: Sequence[Segment], offset: int, length: int, *, focus: int | None = None
    ) -> Locator:
        """The locator of ``[offset, offset + length)`` named by the segment covering ``focus``
        (where the span's best match starts) or, without one, ``offset``."""
        segment = segment_at(segments, offset if focus is None else focus)
        if segment is None:
            return cls(offset=offset, length=length)
        rows = RowRange(first=segment.rows[0], last=segment.rows[1]) if segment.rows else None
        return cls(
            offset=offset,
            length=length,
            page=segment.page,
            sheet=segment.sheet,
            rows=rows,
            section=segment.section,
        )


class SourceRef(BaseModel):
    uri: str | None = None
    title: str | None = None


class Scores(BaseModel):
    """``final`` is the mode's score (lexical, semantic: the raw score; hybrid: alpha·lex + (1−alpha)·sem
    over the normalized legs; rrf: Σ 1/(60 + rank)). Raw lexical scores are BM25; raw semantic scores
    are cosine similarity in [−1, 1]; ``*_normalized`` is a leg's score over its best candidate's
    score, clipped to [0, 1] (``knowledge.domain.retrieval.fusion``). A leg that did not return the item has
    nulls."""

    final: float
    lexical: float | None = None
    lexical_normalized: float | None = None
    lexical_rank: int | None = None
    semantic: float | None = None
    semantic_normalized: float | None = None
    semantic_rank: int | None = None


class SearchResult(BaseModel):
    """One ranked item: its current revision, an excerpt of at most 320 characters that is exactly
    ``content[locator.offset:locator.offset + locator.length]``, and how to cite it.
    ``duplicate_item_ids`` are the other visible items whose passage is exactly this one's; they take
    no result of their own."""

    knowledge_base_id: str
    knowledge_item_id: str
    knowledge_revision_id: str
    title: str
    excerpt: str
    locator: Locator
    source: SourceRef
    citation: str
    reference: str
    published_at: datetime | None
    duplicate_item_ids: list[str] = Field(default_factory=list)
    scores: Scores


class LexicalLegReport(BaseModel):
    """The BM25 leg: ``terms`` is how many distinct terms the query has after analysis (0 when it
    holds only stop words or punctuation: the leg had nothing to match), ``candidates`` how many
    items it returned before the read-time truth check."""

    terms: int
    candidates: int


class SemanticLegReport(BaseModel):
    """The kNN leg: ``candidates`` is how many items it returned before the read-time truth check."""

    candidates: int


class LegReports(BaseModel):
    """What each leg of the mode had to work with; a leg the mode does not use is ``null``."""

    lexical: LexicalLegReport | None = None
    semantic: SemanticLegReport | None = None


PENDING_INDEX_LIMIT = 100
"""The unindexed writes a search reads at most (``PendingIndex.writes`` counts up to it): the
caller's own notes for a memory search, the tenant's newest pending items for a knowledge search."""


class PendingIndex(BaseModel):
    """Read-your-own-writes (DESIGN §9): acknowledged writes that the search index has not taken yet
    when the search ran, read from the table (the source of truth), counted up to
    ``PENDING_INDEX_LIMIT``: the caller's own notes (``search_memory``, ``recall_context``), or the
    published items of the caller's tenant it may read under the query's filters whose current
    revision the knowledge index has not taken (``search_knowledge``). ``included`` is true when
    the search asked for ``consistent: true`` and matched and ranked them with the indexed ones;
    otherwise a note or item that the answer lacks may be one of them: not yet searchable rather
    than absent."""

    writes: int = Field(ge=0)
    included: bool = False


class KnowledgeSearchResponse(BaseModel):
    type: Literal["knowledge_search"] = "knowledge_search"
    query: str
    mode: str
    alpha: float
    results: list[SearchResult]
    legs: LegReports = Field(default_factory=LegReports)
    degraded: bool = Field(default=False, exclude_if=lambda degraded: not degraded)
    """True when the semantic leg failed (the embedding model or the index's k-NN search was
    unavailable) and a hybrid query was answered by its lexical leg alone; left out of the JSON when
    false, so a healthy answer has exactly the contract's fields."""
    as_of: datetime | None = Field(default=None, exclude_if=lambda moment: moment is None)
    """The moment answered as of (UTC), when the query named one; left out otherwise."""
    pending_index: PendingIndex = Field(default_factory=lambda: PendingIndex(writes=0))
    """The published items of the caller's tenant that the caller may see under this query's
    filters and whose current revision the index had not taken yet (up to
    ``PENDING_INDEX_LIMIT``), and whether they were ranked (``consistent``)."""


class KnowledgeReadResponse(BaseModel):
    """An addressed read: ``content`` is the revision's ``[content_offset, content_offset + len)``
    window of at most ``content_limit`` characters out of ``content_total_chars``."""

    type: Literal["knowledge"] = "knowledge"
    owner: str
    team: str | None
    scope: str
    knowledge_base_id: str
    knowledge_item_id: str
    knowledge_revision_id: str
    title: str
    content: str
    locator: Locator
    source: SourceRef
    reference: str
    content_offset: int
    content_limit: int
    content_total_chars: int
    content_truncated: bool
    is_current: bool
    current_revision_id: str | None
    as_of: datetime | None = Field(default=None, exclude_if=lambda moment: moment is None)
    """The moment answered as of (UTC), when the read named one: the revision read is the one that
    was current then (unless one was named), ``is_current`` and ``current_revision_id`` are as of
    then too; left out otherwise."""


class ErrorDetail(BaseModel):
    code: str
    message: str
    retryable: bool = False
    details: dict[str, Any] = Field(default_factory=dict)


class ErrorResponse(BaseModel):
    """Every error: ``type`` is ``knowledge_unavailable`` when the runtime switch is off."""

    type: Literal["error", "knowledge_unavailable"] = "error"
    error: ErrorDetail
