"""The memory tools' contract (DESIGN §9): arguments of ``remember``, ``search_memory``,
``recall_context``, ``forget_memory``, ``pin_memory`` and ``unpin_memory`` and every answer, the one
definition REST, MCP and the queue validate against.

Types are strict and unknown fields refused (``validation_error``), as are identifiers (``team_id``,
``agent_id``, ``semantic_key``, ``memory_id``, ``note_id``, ``supersedes``) holding control,
bidirectional or invisible characters (``knowledge.domain.identifiers``) and a ``search_memory``
``query`` over 2,000 characters (the bound of ``search_knowledge``, with the same error); bounds
(content 1–8,000 characters, ``content`` and ``semantic_key`` not blank, ``importance`` 0–1,
``limit`` 1–50, ``ttl_seconds`` 1–316,224,000, ``max_tokens`` 64–8,000, ``max_items`` 1–50, pin
``order`` 0–999,999, ``reason`` up to 500 characters, ``expected_version`` 1–2^53−1: every integer
is bounded, ``knowledge.domain.bounds``) and fields that need another (``team_id`` without
``scope: "team"``, ``expected_version`` without ``memory_id`` or ``semantic_key``, ``expires_at``
with ``ttl_seconds``) are published in the schema and enforced by the service, which answers
``memory_invalid_request``. ``null`` means "use the default" (but for ``forget_memory``'s ``mode``
and ``dry_run``, where it is refused). Timestamps are ISO-8601 UTC; lengths
count Unicode code points.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, model_validator

from knowledge.contract.deletion import DeletionReceipt
from knowledge.contract.search import (
    AS_OF_DESCRIPTION,
    MAX_RESULTS_MAX,
    MAX_RESULTS_MIN,
    MODES,
    QUERY_MAX_CHARS,
    AsOf,
    PendingIndex,
    Scores,
)
from knowledge.domain.bounds import VERSION_MAX, VERSION_MIN
from knowledge.domain.identifiers import Identifier, VisibleText
from knowledge.domain.memory.notes import (
    CONTENT_MAX_CHARS,
    DEFAULT_IMPORTANCE,
    LABEL_MAX_CHARS,
    PATH_MAX_CHARS,
)
from knowledge.domain.memory.notes import SEMANTIC_KEY_MAX_CHARS as KEY_MAX_CHARS
from knowledge.domain.memory.pins import ORDER_MAX, REASON_MAX_CHARS
from knowledge.domain.text import Text

ID_MAX_CHARS = 128
DEFAULT_SEARCH_LIMIT = 10
MAX_SUPERSEDES = 19
"""A remember supersedes at most this many notes (one commit holds the new note and them)."""
TTL_MAX_SECONDS = 10 * 366 * 86_400
MAX_TOKENS_MIN, MAX_TOKENS_MAX, DEFAULT_MAX_TOKENS = 64, 8_000, 1_200
MAX_ITEMS_MIN, MAX_ITEMS_MAX, DEFAULT_MAX_ITEMS = 1, 50, 8

ScopeName = Literal["private", "team", "tenant"]
MemoryTypeName = Literal["fact", "preference", "decision", "event", "working", "identity"]
ForgetModeName = Literal["soft", "redact", "hard"]


class _Arguments(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    @model_validator(mode="before")
    @classmethod
    def _null_means_default(cls, data: Any) -> Any:
        if isinstance(data, dict):
            return {key: value for key, value in data.items() if value is not None}
        return data


class RememberArguments(_Arguments):
    """``remember``: keep one durable fact the agent was asked to keep."""

    content: Text = Field(
        description=f"The fact to keep, 1 to {CONTENT_MAX_CHARS:,} characters.",
        json_schema_extra={"minLength": 1, "maxLength": CONTENT_MAX_CHARS},
    )
    path: VisibleText = Field(default="/", max_length=PATH_MAX_CHARS, description="A /-separated topic.")
    memory_type: MemoryTypeName = Field(default="fact", description="What kind of memory this is.")
    scope: ScopeName = Field(
        default="private", description="Who may see it: the writer, a team, or the whole tenant."
    )
    team_id: Identifier | None = Field(
        default=None, max_length=LABEL_MAX_CHARS, description="Required for team scope."
    )
    agent_id: Identifier | None = Field(
        default=None, max_length=LABEL_MAX_CHARS, description="The agent it is about."
    )
    importance: float = Field(
        default=DEFAULT_IMPORTANCE,
        allow_inf_nan=False,
        description="0.0 to 1.0.",
        json_schema_extra={"minimum": 0.0, "maximum": 1.0},
    )
    semantic_key: Identifier | None = Field(
        default=None,
        max_length=KEY_MAX_CHARS,
        description="A stable name for the fact (unique per tenant, owner and scope): remembering under "
        "it again updates the note.",
    )
    memory_id: Identifier | None = Field(
        default=None, max_length=ID_MAX_CHARS, description="A note to update."
    )
    expected_version: int | None = Field(
        default=None,
        description="With memory_id or semantic_key: the version last read (optimistic lock).",
        json_schema_extra={"minimum": VERSION_MIN, "maximum": VERSION_MAX},
    )
    supersedes: list[Identifier] = Field(
        default_factory=list,
        description="Notes this one replaces: they leave search (readable by id).",
        json_schema_extra={"maxItems": MAX_SUPERSEDES},
    )
    expires_at: AwareDatetime | None = Field(
        default=None,
        strict=False,  # JSON carries datetimes as ISO-8601 strings
        description="When the note expires (ISO-8601 with a zone); not with ttl_seconds.",
    )
    ttl_seconds: int | None = Field(
        default=None,
        description="Seconds until the note expires; not with expires_at.",
        json_schema_extra={"minimum": 1, "maximum": TTL_MAX_SECONDS},
    )
    pin: bool = Field(
        default=False,
        description="Also pin the note (order 0), so recall_context always brings it first.",
    )


class SearchMemoryArguments(_Arguments):
    """``search_memory``: strict, targeted retrieval over the caller's visible current notes."""

    query: Text = Field(
        max_length=QUERY_MAX_CHARS,
        description=f"What to look for, 1 to {QUERY_MAX_CHARS:,} characters.",
        json_schema_extra={"minLength": 1},
    )
    limit: int = Field(
        default=DEFAULT_SEARCH_LIMIT,
        description="Maximum results from 1 to 50.",
        json_schema_extra={"minimum": MAX_RESULTS_MIN, "maximum": MAX_RESULTS_MAX},
    )
    mode: Text = Field(
        default="hybrid",
        description="hybrid, lexical, semantic or rrf; anything else is hybrid.",
        json_schema_extra={"examples": list(MODES)},
    )
    alpha: float = Field(
        default=0.5,
        allow_inf_nan=False,
        description="Hybrid lexical weight, clamped to 0.0 through 1.0.",
        json_schema_extra={"minimum": 0.0, "maximum": 1.0},
    )
    scope: ScopeName | None = Field(default=None, description="Only notes of this scope.")
    team_id: Identifier | None = Field(
        default=None, max_length=LABEL_MAX_CHARS, description="Only this team's notes."
    )
    agent_id: Identifier | None = Field(
        default=None, max_length=LABEL_MAX_CHARS, description="Only this agent's notes."
    )
    memory_type: MemoryTypeName | None = Field(default=None, description="Only notes of this type.")
    path_prefix: VisibleText | None = Field(
        default=None, max_length=PATH_MAX_CHARS, description="Only notes at this path or below it."
    )
    include_superseded: bool = Field(default=False, description="Also superseded notes.")
    explain: bool = Field(default=False, description="Add every leg's scores to each result.")
    as_of: AsOf | None = Field(default=None, description=AS_OF_DESCRIPTION)
    consistent: bool = Field(
        default=False,
        description="Also match the caller's own notes written but not indexed yet (read from the "
        "store, ranked by the same rules), so a note just remembered is found at once; "
        "pending_index says how many there were.",
    )


class RecallContextArguments(_Arguments):
    """``recall_context``: a token-budgeted context pack of the caller's notes."""

    query: Text | None = Field(
        default=None,
        max_length=QUERY_MAX_CHARS,
        description="What the pack is for; without it the best notes are the most important, then "
        "the most recent.",
    )
    max_tokens: int = Field(
        default=DEFAULT_MAX_TOKENS,
        description=f"Token budget of the text (cl100k_base), {MAX_TOKENS_MIN} to {MAX_TOKENS_MAX:,}; "
        "pins use at most half of it.",
        json_schema_extra={"minimum": MAX_TOKENS_MIN, "maximum": MAX_TOKENS_MAX},
    )
    max_items: int = Field(
        default=DEFAULT_MAX_ITEMS,
        description=f"Most notes in the pack, {MAX_ITEMS_MIN} to {MAX_ITEMS_MAX}.",
        json_schema_extra={"minimum": MAX_ITEMS_MIN, "maximum": MAX_ITEMS_MAX},
    )
    scope: ScopeName | None = Field(default=None, description="Only notes of this scope.")
    team_id: Identifier | None = Field(
        default=None, max_length=LABEL_MAX_CHARS, description="Only this team's notes."
    )
    agent_id: Identifier | None = Field(
        default=None, max_length=LABEL_MAX_CHARS, description="Only this agent's notes."
    )
    memory_type: MemoryTypeName | None = Field(default=None, description="Only notes of this type.")
    path_prefix: VisibleText | None = Field(
        default=None, max_length=PATH_MAX_CHARS, description="Only notes at this path or below it."
    )
    as_of: AsOf | None = Field(default=None, description=AS_OF_DESCRIPTION)
    consistent: bool = Field(
        default=False,
        description="Also match the caller's own notes written but not indexed yet (read from the "
        "store, ranked by the same rules), so a note just remembered is found at once; "
        "pending_index says how many there were.",
    )


class PinMemoryArguments(_Arguments):
    """``pin_memory``: make a note always reach recall_context first."""

    note_id: Identifier = Field(max_length=ID_MAX_CHARS, description="The note to pin.")
    reason: Text | None = Field(
        default=None, max_length=REASON_MAX_CHARS, description="Why it must always be there."
    )
    order: int = Field(
        default=0,
        description=f"Pins are recalled by order (0 first, up to {ORDER_MAX:,}), then by pin time.",
        json_schema_extra={"minimum": 0, "maximum": ORDER_MAX},
    )
    expires_at: AwareDatetime | None = Field(
        default=None,
        strict=False,  # JSON carries datetimes as ISO-8601 strings
        description="When the pin stops applying (ISO-8601 with a zone).",
    )


class UnpinMemoryArguments(_Arguments):
    """``unpin_memory``: remove a note's pin."""

    note_id: Identifier = Field(max_length=ID_MAX_CHARS, description="The note to unpin.")


_NO_DEFAULT_FOR_NULL = frozenset({"mode", "dry_run"})
"""``forget_memory`` fields whose ``null`` is refused rather than read as the default."""


class ForgetMemoryArguments(_Arguments):
    """``forget_memory``: hide (soft), redact or delete (hard) one note."""

    note_id: Identifier = Field(max_length=ID_MAX_CHARS, description="The note to forget.")
    mode: ForgetModeName = Field(
        default="soft",
        description="soft: hidden, restorable; redact: every version's content replaced and out of the "
        "index; hard: the note, its versions, its pin and its index entry deleted.",
    )
    dry_run: bool = Field(
        default=False,
        description="true: answer what the call would remove (the receipt, dry_run true) and write nothing.",
    )

    @model_validator(mode="before")
    @classmethod
    def _null_means_default(cls, data: Any) -> Any:
        """``null`` means the default except for ``mode`` and ``dry_run``: a delete never guesses
        what its flags meant, so a ``null`` there is a ``validation_error`` naming the field."""
        if isinstance(data, dict):
            return {
                key: value for key, value in data.items() if value is not None or key in _NO_DEFAULT_FOR_NULL
            }
        return data


class NoteView(BaseModel):
    """A note as the memory tools answer it (one version)."""

    note_id: str
    version: int
    content: str
    path: str
    memory_type: str
    scope: str
    owner_id: str
    agent_id: str | None
    team_id: str | None
    importance: float
    semantic_key: str | None
    pinned: bool
    status: str
    supersedes: list[str]
    superseded_by: str | None
    expires_at: datetime | None
    created_at: datetime
    updated_at: datetime


class MemoryResponse(BaseModel):
    """``remember`` and ``restore``: what happened and the note as stored."""

    type: Literal["memory"] = "memory"
    result: Literal["created", "updated", "unchanged", "duplicate", "restored"]
    note: NoteView
    indexed: bool = True
    """Whether searches already reflect this write: the search index holds the note at this
    version (false until the indexer takes it; ``consistent: true`` searches find it meanwhile), or
    the write took the note out of search, which every read applies at once."""


class MemorySearchResult(BaseModel):
    note_id: str
    version: int
    content: str
    path: str
    memory_type: str
    scope: str
    owner_id: str
    agent_id: str | None
    team_id: str | None
    importance: float
    pinned: bool
    created_at: datetime
    updated_at: datetime
    expires_at: datetime | None
    superseded_by: str | None
    score: float
    scores: Scores | None = None


class MemorySearchResponse(BaseModel):
    type: Literal["memory_search"] = "memory_search"
    query: str
    mode: str
    alpha: float
    results: list[MemorySearchResult]
    degraded: bool = Field(default=False, exclude_if=lambda degraded: not degraded)
    """True when the semantic leg failed and a hybrid search was answered by its lexical leg alone;
    left out of the JSON when false."""
    as_of: datetime | None = Field(default=None, exclude_if=lambda moment: moment is None)
    """The moment answered as of (UTC), when the search named one; left out otherwise."""
    pending_index: PendingIndex = Field(default_factory=lambda: PendingIndex(writes=0))


class MemoryForgottenResponse(BaseModel):
    """``forget_memory``: the note, the mode and the receipt of what went (or, for a dry run, what
    would go), per store (``knowledge.contract.deletion``)."""

    type: Literal["memory_forgotten"] = "memory_forgotten"
    note_id: str
    mode: str
    indexed: bool = True
    """Whether searches already reflect this write: the search index holds the note at this
    version (false until the indexer takes it; ``consistent: true`` searches find it meanwhile), or
    the write took the note out of search, which every read applies at once."""
    dry_run: bool = False
    receipt: DeletionReceipt


NOTES_LIMIT_MAX = 200
"""``GET /v1/notes`` answers at most this many notes."""


class NoteListResponse(BaseModel):
    """``GET /v1/notes``: the caller's visible notes as the note index holds them, most important
    first, then most recently written, then by id; each at its current version."""

    type: Literal["notes"] = "notes"
    notes: list[NoteView]


class NoteVersionsResponse(BaseModel):
    """``GET /v1/notes/{note}/versions``: newest first, ``next_token`` while more follow."""

    versions: list[NoteView]
    next_token: str | None


class ContextItem(BaseModel):
    """One note of a pack: ``owner_id`` is the subject that wrote it and ``own`` whether that is the
    caller (else another principal shared it, as the block's header says: ``shared by``);
    ``scope`` is the note's; ``tokens`` counts its block alone; ``score`` is its fused relevance
    (its importance without a query), ``null`` for a pin."""

    note_id: str
    version: int
    path: str
    memory_type: str
    scope: str
    owner_id: str
    own: bool
    pinned: bool
    tokens: int
    score: float | None


class ContextBudget(BaseModel):
    max_tokens: int
    used_tokens: int
    tokenizer: Literal["cl100k_base"] = "cl100k_base"
    max_items: int


class DroppedNote(BaseModel):
    note_id: str
    reason: Literal["budget", "pin_budget", "duplicate", "max_items"]


class ContextCoverage(BaseModel):
    """``candidates``: the pins and ranked notes considered; ``dropped`` names every one left out."""

    candidates: int
    included: int
    dropped: list[DroppedNote]


class MemoryContextResponse(BaseModel):
    """``recall_context``: ``text`` to paste into a prompt (``used_tokens`` is its exact count)."""

    type: Literal["memory_context"] = "memory_context"
    text: str
    items: list[ContextItem]
    budget: ContextBudget
    coverage: ContextCoverage
    as_of: datetime | None = Field(default=None, exclude_if=lambda moment: moment is None)
    """The moment the pack was recalled as of (UTC), when the call named one; left out otherwise."""
    pending_index: PendingIndex = Field(default_factory=lambda: PendingIndex(writes=0))


class PinView(BaseModel):
    """``pin_memory``'s answer and one entry of ``GET /v1/pins``."""

    type: Literal["pin"] = "pin"
    pin_id: str
    note_id: str
    reason: str | None
    order: int
    expires_at: datetime | None
    created_at: datetime
    indexed: bool | None = Field(default=None, exclude_if=lambda indexed: indexed is None)
    """In ``pin_memory``'s answer: whether the search index holds the pinned note at its current
    version (left out of listings)."""


class PinsResponse(BaseModel):
    """``GET /v1/pins``: the caller's visible pins in pin order, ``next_token`` while more follow
    (a page may hold fewer than ``limit`` pins: those of notes the caller cannot see are left out)."""

    pins: list[PinView]
    next_token: str | None


class UnpinnedResponse(BaseModel):
    """``unpin_memory``: ``removed`` is false when the note had no pin (nothing to do)."""

    type: Literal["unpinned"] = "unpinned"
    note_id: str
    removed: bool
    indexed: bool = True
    """Whether the search index holds the note at its current version (a pin is not indexed: recall
    reads pins from the store)."""


def pin_problems(arguments: PinMemoryArguments, now: datetime) -> list[dict[str, str]]:
    """The bounds ``pin_memory``'s ``arguments`` break (``memory_invalid_request``)."""
    rules = [
        (not 0 <= arguments.order <= ORDER_MAX, "order", f"must be between 0 and {ORDER_MAX}"),
        (
            arguments.expires_at is not None and arguments.expires_at <= now,
            "expires_at",
            "must be in the future",
        ),
    ]
    return [{"field": field, "problem": problem} for broken, field, problem in rules if broken]


def recall_problems(arguments: RecallContextArguments) -> list[dict[str, str]]:
    """The bounds ``recall_context``'s ``arguments`` break (``memory_invalid_request``)."""
    rules = [
        (
            not MAX_TOKENS_MIN <= arguments.max_tokens <= MAX_TOKENS_MAX,
            "max_tokens",
            f"must be between {MAX_TOKENS_MIN} and {MAX_TOKENS_MAX}",
        ),
        (
            not MAX_ITEMS_MIN <= arguments.max_items <= MAX_ITEMS_MAX,
            "max_items",
            f"must be between {MAX_ITEMS_MIN} and {MAX_ITEMS_MAX}",
        ),
    ]
    return [{"field": field, "problem": problem} for broken, field, problem in rules if broken]


def remember_problems(arguments: RememberArguments, team_ids: frozenset[str]) -> list[dict[str, str]]:
    """The bounds and field dependencies ``arguments`` break (``memory_invalid_request``), as
    ``{"field", "problem"}`` entries; ``team_ids`` are the caller's teams."""
    ttl = arguments.ttl_seconds
    rules = [
        (not arguments.content.strip(), "content", "must not be blank"),
        (
            len(arguments.content) > CONTENT_MAX_CHARS,
            "content",
            f"must be at most {CONTENT_MAX_CHARS} characters",
        ),
        (
            arguments.semantic_key is not None and not arguments.semantic_key.strip(),
            "semantic_key",
            "must not be blank",
        ),
        (not 0.0 <= arguments.importance <= 1.0, "importance", "must be between 0.0 and 1.0"),
        (
            ttl is not None and not 1 <= ttl <= TTL_MAX_SECONDS,
            "ttl_seconds",
            f"must be between 1 and {TTL_MAX_SECONDS}",
        ),
        (
            arguments.expires_at is not None and ttl is not None,
            "ttl_seconds",
            "is not allowed with expires_at",
        ),
        (arguments.scope == "team" and arguments.team_id is None, "team_id", "is required for team scope"),
        (arguments.team_id is not None and arguments.scope != "team", "team_id", "needs scope team"),
        (
            arguments.team_id is not None and arguments.team_id not in team_ids,
            "team_id",
            "must be one of the caller's teams",
        ),
        (
            arguments.expected_version is not None
            and arguments.memory_id is None
            and arguments.semantic_key is None,
            "expected_version",
            "needs memory_id or semantic_key",
        ),
        (
            arguments.expected_version is not None
            and not VERSION_MIN <= arguments.expected_version <= VERSION_MAX,
            "expected_version",
            f"must be between {VERSION_MIN} and {VERSION_MAX}",
        ),
        (len(arguments.supersedes) > MAX_SUPERSEDES, "supersedes", f"names at most {MAX_SUPERSEDES} notes"),
    ]
    return [{"field": field, "problem": problem} for broken, field, problem in rules if broken]
