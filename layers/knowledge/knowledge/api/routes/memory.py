"""REST routes of the memory tools (DESIGN §9), one router per function; each tool is declared once
(a ``Tool`` in ``TOOLS``) for REST, OpenAPI and MCP:

| route | function | scope | answer |
|---|---|---|---|
| ``POST /v1/tools/remember`` | RememberFunction | memory:write (+) | 201 created, else 200 ``memory`` |
| ``POST /v1/tools/search_memory`` | SearchMemoryFunction | memory:read | 200 ``memory_search`` |
| ``GET /v1/notes/{note_id}`` | SearchMemoryFunction | memory:read | 200 the note |
| ``GET /v1/notes/{note_id}/versions`` | SearchMemoryFunction | memory:read | 200 ``{versions, next_token}`` |
| ``POST /v1/tools/forget_memory`` | ForgetMemoryFunction | memory:write (+) | 200 ``memory_forgotten`` |
| ``POST /v1/notes/{note_id}/restore`` | ForgetMemoryFunction | memory:write (+) | 200 ``memory`` |
| ``POST /v1/tools/recall_context`` | RecallContextFunction | memory:read | 200 ``memory_context`` |
| ``POST /v1/tools/pin_memory`` | PinMemoryFunction | memory:write (+) | 201 new pin, else 200 ``pin`` |
| ``GET /v1/pins`` | PinMemoryFunction | memory:read | 200 ``{pins, next_token}`` |
| ``POST /v1/tools/unpin_memory`` | UnpinMemoryFunction | memory:write (+) | 200 ``unpinned`` |

(+): and, by the governance matrix (``knowledge.domain.memory.rights``), ``memory:share`` for a note
others see and ``memory:admin`` for another principal's note, checked by the services once the note
is found.

Writes are ``write_route``s: the scope is checked before any ``Idempotency-Key`` record is read,
and a repeated key answers the first answer (answers are bound to the caller) only while the note it
shows is still readable by the caller: once the note is forgotten (soft, redacted or hard), deleted
or expired, a replay of ``remember`` or restore is 404 ``memory_unavailable``, never the stored
content. Errors are mapped by
``knowledge.api.http`` (unknown fields: ``memory_invalid_request``).
"""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler import Request, Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Query
from pydantic import Field

from knowledge.api.http import (
    READ_ERRORS,
    WRITE_ERRORS,
    json_response,
    route_responses,
)
from knowledge.api.idempotency import Answer
from knowledge.api.principal import CallerPrincipal
from knowledge.api.query_parameters import CANONICAL_BOOLEAN, CANONICAL_INTEGER, NextToken
from knowledge.api.services import (
    MemorySearch,
    Notes,
    Pins,
    memory_search_service,
    note_service,
    pin_service,
    recall_service,
)
from knowledge.api.tools import Tool, Write, tool_route
from knowledge.api.writes import IdempotencyKey, write_route
from knowledge.contract.memory import (
    NOTES_LIMIT_MAX,
    ForgetMemoryArguments,
    MemoryContextResponse,
    MemoryForgottenResponse,
    MemoryResponse,
    MemorySearchResponse,
    MemoryTypeName,
    NoteListResponse,
    NoteVersionsResponse,
    NoteView,
    PinMemoryArguments,
    PinsResponse,
    PinView,
    RecallContextArguments,
    RememberArguments,
    ScopeName,
    SearchMemoryArguments,
    UnpinMemoryArguments,
    UnpinnedResponse,
)
from knowledge.domain.memory.notes import PATH_MAX_CHARS, VERSIONS_LIMIT_MAX
from knowledge.domain.memory.pins import PINS_LIMIT_MAX
from knowledge.domain.models import Permission, Principal
from knowledge.errors import MemoryInvalidRequestError

REMEMBER_PATH = "/v1/tools/remember"
SEARCH_MEMORY_PATH = "/v1/tools/search_memory"
FORGET_MEMORY_PATH = "/v1/tools/forget_memory"
NOTES_PATH = "/v1/notes"
NOTE_PATH = "/v1/notes/<note_id>"
NOTE_VERSIONS_PATH = "/v1/notes/<note_id>/versions"
NOTE_RESTORE_PATH = "/v1/notes/<note_id>/restore"
RECALL_CONTEXT_PATH = "/v1/tools/recall_context"
PIN_MEMORY_PATH = "/v1/tools/pin_memory"
UNPIN_MEMORY_PATH = "/v1/tools/unpin_memory"
PINS_PATH = "/v1/pins"
TAG = "memory"

remember_router = Router()  # type: ignore[no-untyped-call]  # Powertools leaves Router.__init__ unannotated
search_memory_router = Router()  # type: ignore[no-untyped-call]
forget_memory_router = Router()  # type: ignore[no-untyped-call]
recall_context_router = Router()  # type: ignore[no-untyped-call]
pin_memory_router = Router()  # type: ignore[no-untyped-call]
unpin_memory_router = Router()  # type: ignore[no-untyped-call]

GOVERNED = (
    " A note others see (`team` or `tenant` scope, before or after the write) also needs `memory:share`, "
    "and another principal's note `memory:admin` (403 `insufficient_scope`, `details.required_scope`)."
)
Limit = Annotated[
    Annotated[int, Field(ge=1, le=VERSIONS_LIMIT_MAX), CANONICAL_INTEGER] | None,
    Query(description=f"Page size, 1 to {VERSIONS_LIMIT_MAX}."),
]
NotesLimit = Annotated[
    Annotated[int, Field(ge=1, le=NOTES_LIMIT_MAX), CANONICAL_INTEGER] | None,
    Query(description=f"At most this many notes, 1 to {NOTES_LIMIT_MAX} (default {NOTES_LIMIT_MAX})."),
]
PinsLimit = Annotated[
    Annotated[int, Field(ge=1, le=PINS_LIMIT_MAX), CANONICAL_INTEGER] | None,
    Query(description=f"Page size, 1 to {PINS_LIMIT_MAX}."),
]


def _may_write(principal: Principal, request: Request) -> None:
    note_service().authorize(principal, Permission.MEMORY_WRITE)


def _note_still_readable(principal: Principal, answer: Answer) -> None:
    """A stored ``memory`` answer may be replayed only while its note can be read: a note forgotten
    since (soft, redact or hard) or expired is ``MemoryUnavailableError``, so a replay never brings
    back content the caller asked to forget."""
    note = answer.body.get("note")
    if isinstance(note, dict) and isinstance(note.get("note_id"), str):
        note_service().readable(principal, note["note_id"])


def _may_pin(principal: Principal, request: Request) -> None:
    pin_service().authorize_write(principal)


def _pin_still_applies(principal: Principal, answer: Answer) -> None:
    """A stored ``pin_memory`` answer is replayed only while that pin is still the note's."""
    body = answer.body
    if isinstance(body.get("note_id"), str) and isinstance(body.get("pin_id"), str):
        pin_service().replayable(principal, body["note_id"], body["pin_id"])


# -- the tools ------------------------------------------------------------------------------------

REMEMBER = Tool(
    name="remember",
    title="Remember a fact",
    path=REMEMBER_PATH,
    arguments=RememberArguments,
    response=MemoryResponse,
    summary="Keep a durable fact the agent was asked to remember (a note, never knowledge).",
    description=(
        "Persist a durable fact the user explicitly asked you to remember (a note, never a knowledge "
        "revision). Without memory_id or semantic_key it creates a note, unless a visible current note "
        "with the same scope, path and content exists (result duplicate). With semantic_key (a stable "
        "name for the fact) or memory_id it writes a new version of that note (updated, or unchanged). "
        "supersedes retires older notes from search; expires_at or ttl_seconds makes a note expire; "
        "pin true also pins it. Your own private notes need memory:write; a team or tenant note (one "
        "others see) also needs memory:share, and another principal's note memory:admin. "
        "indexed says whether search already finds this version (false until the indexer takes it: "
        "search_memory with consistent true finds it meanwhile). "
        'Returns JSON text {"type":"memory","result":"created|updated|unchanged|duplicate","note":{...},'
        '"indexed":true|false}.'
    ),
    service=pin_service,
    run=lambda pins, principal, arguments: pins.remember(principal, arguments),
    answer=lambda remembered: remembered.response,
    created=lambda remembered: bool(remembered.created),
    write=Write(check=_may_write, on_replay=_note_still_readable),
    invalid_request=MemoryInvalidRequestError,
    tag=TAG,
    success="The note was created; 200 for updated, unchanged or duplicate.",
    errors=WRITE_ERRORS,
    metric="MemoryRemembered",
)

SEARCH_MEMORY = Tool(
    name="search_memory",
    title="Search memory",
    path=SEARCH_MEMORY_PATH,
    arguments=SearchMemoryArguments,
    response=MemorySearchResponse,
    summary="Strict, targeted retrieval over the caller's notes (never knowledge).",
    description=(
        "Strict, targeted retrieval over your own visible notes (never knowledge): hybrid BM25 and "
        "vector search with filters by scope, team_id, agent_id, memory_type and path_prefix. Expired, "
        "forgotten and (unless include_superseded) superseded notes never appear. as_of (ISO-8601 with "
        "a zone, not in the future) answers as of that moment: the note versions current and unexpired "
        "then, with today's visibility; hard-forgotten and redacted notes never come back. A note you "
        "just wrote is searchable once the indexer takes it (seconds); consistent true also matches your "
        "own notes not indexed yet, read from the store and ranked by the same rules (it adds nothing "
        "with as_of). pending_index counts those (writes) and says whether they were included, so an "
        "empty answer with writes > 0 may mean not indexed yet rather than not found. Returns JSON text "
        '{"type":"memory_search","results":[{note_id, version, content, path, ..., score}],'
        '"pending_index":{writes, included}} (with as_of echoed when given).'
    ),
    service=memory_search_service,
    run=lambda memory_search, principal, arguments: memory_search.search_memory(principal, arguments),
    invalid_request=MemoryInvalidRequestError,
    tag=TAG,
    success="Ranked notes (memory_search).",
    errors=READ_ERRORS,
    metric="SearchMemoryAnswered",
)

RECALL_CONTEXT = Tool(
    name="recall_context",
    title="Recall context",
    path=RECALL_CONTEXT_PATH,
    arguments=RecallContextArguments,
    response=MemoryContextResponse,
    summary="A token-budgeted context pack of the caller's notes, pins first (never knowledge).",
    description=(
        "Build a context pack from your notes (never knowledge) to paste into your prompt: pinned notes "
        "first (within half of max_tokens), then the notes most relevant to query (without a query: the "
        "most important, then the most recent), whole notes only, near-duplicates dropped, never above "
        "max_tokens (cl100k_base tokens). Each block's header says whose note it is: own, or shared by "
        "its owner (weigh shared text accordingly). as_of (ISO-8601 with a zone) builds the pack the "
        "caller would have got then: pins as they stood, note versions current then, today's "
        "visibility. consistent true also considers your own notes not indexed yet (pending_index "
        "counts them, as in search_memory). Returns JSON text "
        '{"type":"memory_context","text","items":[{note_id, version, path, memory_type, scope, owner_id, '
        'own, pinned, tokens, score}],"budget":{max_tokens, used_tokens, tokenizer, max_items},'
        '"coverage":{candidates, included, dropped:[{note_id, reason}]},"pending_index":{writes, included}}.'
    ),
    service=recall_service,
    run=lambda recall, principal, arguments: recall.recall_context(principal, arguments),
    invalid_request=MemoryInvalidRequestError,
    tag=TAG,
    success="The context pack (memory_context).",
    errors=READ_ERRORS,
    metric="RecallContextAnswered",
)

PIN_MEMORY = Tool(
    name="pin_memory",
    title="Pin a memory",
    path=PIN_MEMORY_PATH,
    arguments=PinMemoryArguments,
    response=PinView,
    summary="Pin a note: recall_context brings it first, for everyone who can see it.",
    description=(
        "Pin a note so recall_context always brings it first, for everyone who can see the note; order "
        "(0 first) then pin time decide among pins. Pinning again returns the same pin. A team or tenant "
        "note also needs memory:share, and another principal's note memory:admin. Returns JSON "
        'text {"type":"pin","pin_id","note_id","reason","order","expires_at","created_at","indexed"} '
        "(indexed: whether search already holds the note at its current version)."
    ),
    service=pin_service,
    run=lambda pins, principal, arguments: pins.pin(principal, arguments),
    answer=lambda pinned: pinned.pin,
    created=lambda pinned: bool(pinned.created),
    write=Write(check=_may_pin, on_replay=_pin_still_applies),
    invalid_request=MemoryInvalidRequestError,
    tag=TAG,
    success="The note was pinned; 200 when it already was.",
    errors=WRITE_ERRORS,
)

UNPIN_MEMORY = Tool(
    name="unpin_memory",
    title="Unpin a memory",
    path=UNPIN_MEMORY_PATH,
    arguments=UnpinMemoryArguments,
    response=UnpinnedResponse,
    summary="Remove a note's pin.",
    description=(
        "Remove a note's pin (a team or tenant note also needs memory:share, and another principal's note "
        'memory:admin). Returns JSON text {"type":"unpinned","note_id","removed","indexed"} (removed is '
        "false when the note had no pin; indexed as for pin_memory)."
    ),
    service=pin_service,
    run=lambda pins, principal, arguments: pins.unpin(principal, arguments),
    write=Write(check=_may_pin),
    invalid_request=MemoryInvalidRequestError,
    tag=TAG,
    success="The pin is gone (unpinned).",
    errors=WRITE_ERRORS,
)

FORGET_MEMORY = Tool(
    name="forget_memory",
    title="Forget a memory",
    path=FORGET_MEMORY_PATH,
    arguments=ForgetMemoryArguments,
    response=MemoryForgottenResponse,
    summary="Forget a note: soft (restorable), redact (every version's content replaced) or hard.",
    description=(
        "Forget one note: soft hides it (restorable), redact replaces the content of every version with "
        "[redacted], hard deletes it with its versions and index entries. A team or tenant note also "
        "needs memory:share, and another principal's note memory:admin. dry_run true changes nothing and "
        "answers what would go. Returns JSON text "
        '{"type":"memory_forgotten","note_id","mode","indexed":true,"dry_run","receipt"}: the receipt '
        "lists per store (table, index, pins, embedding_cache, queued_messages) the records that went (or "
        "would), with ids, count and state (index documents are scheduled: the indexer removes them; "
        "every search leaves a forgotten note out at once)."
    ),
    service=note_service,
    run=lambda notes, principal, arguments: notes.forget(principal, arguments),
    write=Write(check=_may_write),
    invalid_request=MemoryInvalidRequestError,
    tag=TAG,
    success="The note was forgotten (memory_forgotten).",
    errors=WRITE_ERRORS,
    destructive=True,
    idempotent=False,
)

TOOLS = (REMEMBER, SEARCH_MEMORY, RECALL_CONTEXT, PIN_MEMORY, UNPIN_MEMORY, FORGET_MEMORY)
"""The tools this module declares, in the order MCP lists them."""

# -- routes ---------------------------------------------------------------------------------------

remember = tool_route(remember_router, REMEMBER)
search_memory = tool_route(search_memory_router, SEARCH_MEMORY)
forget_memory = tool_route(forget_memory_router, FORGET_MEMORY)
recall_context = tool_route(recall_context_router, RECALL_CONTEXT)
pin_memory = tool_route(pin_memory_router, PIN_MEMORY)
unpin_memory = tool_route(unpin_memory_router, UNPIN_MEMORY)


@search_memory_router.get(
    NOTE_PATH,
    operation_id="get_note",
    summary="One note at its current version (superseded notes too).",
    tags=[TAG],
    responses=route_responses(200, "The note.", *READ_ERRORS),
)
def get_note(note_id: str, principal: CallerPrincipal, notes: Notes) -> NoteView:
    return notes.get_note(principal, note_id)


@search_memory_router.get(
    NOTES_PATH,
    operation_id="list_notes",
    summary="The caller's visible notes, most important first (as the note index holds them).",
    description=(
        "Each note at its current version, checked against the store as search results are; a note "
        "written a moment ago appears once the indexer takes it. Filters: `path_prefix`, "
        "`memory_type`, `scope`, `include_superseded`."
    ),
    tags=[TAG],
    responses=route_responses(200, "The notes.", *READ_ERRORS),
)
def list_notes(
    principal: CallerPrincipal,
    memory_search: MemorySearch,
    path_prefix: Annotated[
        str | None, Query(max_length=PATH_MAX_CHARS, description="Only notes at this path or below it.")
    ] = None,
    memory_type: Annotated[MemoryTypeName | None, Query(description="Only notes of this type.")] = None,
    scope: Annotated[ScopeName | None, Query(description="Only notes of this scope.")] = None,
    include_superseded: Annotated[
        bool, CANONICAL_BOOLEAN, Query(description="Also superseded notes (`true` or `false`).")
    ] = False,
    limit: NotesLimit = None,
) -> NoteListResponse:
    return memory_search.list_notes(
        principal,
        path_prefix=path_prefix,
        memory_type=memory_type,
        scope=scope,
        include_superseded=include_superseded,
        limit=limit or NOTES_LIMIT_MAX,
    )


@search_memory_router.get(
    NOTE_VERSIONS_PATH,
    operation_id="list_note_versions",
    summary="The note's immutable versions, newest first.",
    tags=[TAG],
    responses=route_responses(200, "One page of versions.", *READ_ERRORS),
)
def list_note_versions(
    note_id: str, principal: CallerPrincipal, notes: Notes, limit: Limit = None, next_token: NextToken = None
) -> NoteVersionsResponse:
    return notes.list_versions(principal, note_id, limit=limit, next_token=next_token)


@write_route(
    forget_memory_router,
    "POST",
    NOTE_RESTORE_PATH,
    check=_may_write,
    on_replay=_note_still_readable,
    operation_id="restore_note",
    summary="Bring back a softly forgotten note (a new version).",
    description="Needs `memory:write`. A redacted note cannot come back (400 `memory_invalid_request`)."
    + GOVERNED,
    tags=[TAG],
    responses=route_responses(
        200, "The restored note (memory, result restored or unchanged).", *WRITE_ERRORS
    ),
)
def restore_note(
    note_id: str, principal: CallerPrincipal, notes: Notes, idempotency_key: IdempotencyKey = None
) -> Response[MemoryResponse]:
    return json_response(200, notes.restore(principal, note_id))


@pin_memory_router.get(
    PINS_PATH,
    operation_id="list_pins",
    summary="The pins that apply to the caller, in pin order.",
    tags=[TAG],
    responses=route_responses(200, "One page of pins.", *READ_ERRORS),
)
def list_pins(
    principal: CallerPrincipal, pins: Pins, limit: PinsLimit = None, next_token: NextToken = None
) -> PinsResponse:
    return pins.list_pins(principal, limit=limit, next_token=next_token)
