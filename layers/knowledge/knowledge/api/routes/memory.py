"""REST routes of the memory tools (DESIGN §9), one router per function:

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

from typing import TYPE_CHECKING, Annotated, Any

from aws_lambda_powertools.event_handler import Request, Response, content_types
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Body, Query
from aws_lambda_powertools.event_handler.openapi.types import OpenAPIResponse
from aws_lambda_powertools.metrics import MetricUnit
from pydantic import BaseModel, Field

from knowledge.api.http import openapi_error_responses
from knowledge.api.idempotency import Answer
from knowledge.api.principal import CallerPrincipal
from knowledge.api.query_parameters import CANONICAL_INTEGER, NextToken
from knowledge.api.writes import IdempotencyKey, write_route
from knowledge.bootstrap import get_container
from knowledge.contract.memory import (
    ForgetMemoryArguments,
    MemoryContextResponse,
    MemoryForgottenResponse,
    MemoryResponse,
    MemorySearchResponse,
    NoteVersionsResponse,
    NoteView,
    PinMemoryArguments,
    PinsResponse,
    PinView,
    RecallContextArguments,
    RememberArguments,
    SearchMemoryArguments,
    UnpinMemoryArguments,
    UnpinnedResponse,
)
from knowledge.domain.memory.notes import VERSIONS_LIMIT_MAX
from knowledge.domain.memory.pins import PINS_LIMIT_MAX
from knowledge.domain.models import Permission, Principal
from knowledge.observability import metrics

if TYPE_CHECKING:  # the services are imported when the container builds them (first request)
    from knowledge.services.notes import NoteService

REMEMBER_PATH = "/v1/tools/remember"
SEARCH_MEMORY_PATH = "/v1/tools/search_memory"
FORGET_MEMORY_PATH = "/v1/tools/forget_memory"
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

WRITE_ERRORS = (400, 401, 403, 404, 409, 500, 503)
GOVERNED = (
    " A note others see (`team` or `tenant` scope, before or after the write) also needs `memory:share`, "
    "and another principal's note `memory:admin` (403 `insufficient_scope`, `details.required_scope`)."
)
READ_ERRORS = (400, 401, 403, 404, 500, 503)
Limit = Annotated[
    Annotated[int, Field(ge=1, le=VERSIONS_LIMIT_MAX), CANONICAL_INTEGER] | None,
    Query(description=f"Page size, 1 to {VERSIONS_LIMIT_MAX}."),
]
PinsLimit = Annotated[
    Annotated[int, Field(ge=1, le=PINS_LIMIT_MAX), CANONICAL_INTEGER] | None,
    Query(description=f"Page size, 1 to {PINS_LIMIT_MAX}."),
]


def _notes() -> NoteService:
    return get_container().notes


def _responses(success: int, description: str, *errors: int) -> dict[int, OpenAPIResponse]:
    return {success: {"description": description}, **openapi_error_responses(*errors)}


def _json(status: int, body: BaseModel) -> Response[Any]:
    return Response(
        status_code=status, content_type=content_types.APPLICATION_JSON, body=body.model_dump(mode="json")
    )


def _may_write(principal: Principal, request: Request) -> None:
    _notes().authorize(principal, Permission.MEMORY_WRITE)


def _note_still_readable(principal: Principal, answer: Answer) -> None:
    """A stored ``memory`` answer may be replayed only while its note can be read: a note forgotten
    since (soft, redact or hard) or expired is ``MemoryUnavailableError``, so a replay never brings
    back content the caller asked to forget."""
    note = answer.body.get("note")
    if isinstance(note, dict) and isinstance(note.get("note_id"), str):
        _notes().readable(principal, note["note_id"])


@write_route(
    remember_router,
    "POST",
    REMEMBER_PATH,
    check=_may_write,
    body=RememberArguments,
    on_replay=_note_still_readable,
    operation_id="remember",
    summary="Keep a durable fact the agent was asked to remember (a note, never knowledge).",
    description=(
        "Needs `memory:write`. A new note (201 `created`), a `duplicate` of a visible current note with "
        "the same scope, path and content (200, nothing written), or, with `semantic_key` or "
        "`memory_id`, a new version of that note (`updated`, or `unchanged`). A stale "
        "`expected_version` is 409 `memory_conflict` with `details.current_version`." + GOVERNED
    ),
    tags=[TAG],
    status_code=201,
    responses=_responses(
        201, "The note was created; 200 for updated, unchanged or duplicate.", *WRITE_ERRORS
    ),
)
def remember(
    arguments: Annotated[RememberArguments, Body()],
    principal: CallerPrincipal,
    idempotency_key: IdempotencyKey = None,
) -> Response[MemoryResponse]:
    remembered = get_container().pins.remember(principal, arguments)
    metrics.add_metric(name="MemoryRemembered", unit=MetricUnit.Count, value=1)
    return _json(201 if remembered.created else 200, remembered.response)


@search_memory_router.post(
    SEARCH_MEMORY_PATH,
    operation_id="search_memory",
    summary="Strict, targeted retrieval over the caller's notes (never knowledge).",
    description=(
        "Needs `memory:read`. The same legs, fusion and read-time truth check as search_knowledge, over "
        "the caller's visible, active, unexpired notes (superseded ones only with `include_superseded`)."
    ),
    tags=[TAG],
    responses=_responses(200, "Ranked notes (memory_search).", *READ_ERRORS),
)
def search_memory(
    arguments: Annotated[SearchMemoryArguments, Body()], principal: CallerPrincipal
) -> MemorySearchResponse:
    response = get_container().memory_search.search_memory(principal, arguments)
    metrics.add_metric(name="SearchMemoryAnswered", unit=MetricUnit.Count, value=1)
    return response


@search_memory_router.get(
    NOTE_PATH,
    operation_id="get_note",
    summary="One note at its current version (superseded notes too).",
    tags=[TAG],
    responses=_responses(200, "The note.", *READ_ERRORS),
)
def get_note(note_id: str, principal: CallerPrincipal) -> NoteView:
    return _notes().get_note(principal, note_id)


@search_memory_router.get(
    NOTE_VERSIONS_PATH,
    operation_id="list_note_versions",
    summary="The note's immutable versions, newest first.",
    tags=[TAG],
    responses=_responses(200, "One page of versions.", *READ_ERRORS),
)
def list_note_versions(
    note_id: str, principal: CallerPrincipal, limit: Limit = None, next_token: NextToken = None
) -> NoteVersionsResponse:
    return _notes().list_versions(principal, note_id, limit=limit, next_token=next_token)


@write_route(
    forget_memory_router,
    "POST",
    FORGET_MEMORY_PATH,
    check=_may_write,
    body=ForgetMemoryArguments,
    operation_id="forget_memory",
    summary="Forget a note: soft (restorable), redact (every version's content replaced) or hard.",
    description=(
        "Needs `memory:write`. Absent, unauthorized and forgotten notes answer 404 `memory_unavailable`."
        + GOVERNED
    ),
    tags=[TAG],
    responses=_responses(200, "The note was forgotten (memory_forgotten).", *WRITE_ERRORS),
)
def forget_memory(
    arguments: Annotated[ForgetMemoryArguments, Body()],
    principal: CallerPrincipal,
    idempotency_key: IdempotencyKey = None,
) -> Response[MemoryForgottenResponse]:
    return _json(200, _notes().forget(principal, arguments))


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
    responses=_responses(200, "The restored note (memory, result restored or unchanged).", *WRITE_ERRORS),
)
def restore_note(
    note_id: str, principal: CallerPrincipal, idempotency_key: IdempotencyKey = None
) -> Response[MemoryResponse]:
    return _json(200, _notes().restore(principal, note_id))


@recall_context_router.post(
    RECALL_CONTEXT_PATH,
    operation_id="recall_context",
    summary="A token-budgeted context pack of the caller's notes, pins first (never knowledge).",
    description=(
        "Needs `memory:read`. Pins first (pin order, at most half of `max_tokens`), then the best notes "
        "for `query` (without one: importance, then recency), whole notes only, near-duplicates dropped. "
        "`budget.used_tokens` is the exact cl100k_base count of `text`, never above `max_tokens`. Each "
        "item and block names whose note it is: `owner_id` and `own`, and `own` or `shared by <owner>` "
        "in the block's header."
    ),
    tags=[TAG],
    responses=_responses(200, "The context pack (memory_context).", *READ_ERRORS),
)
def recall_context(
    arguments: Annotated[RecallContextArguments, Body()], principal: CallerPrincipal
) -> MemoryContextResponse:
    response = get_container().recall.recall_context(principal, arguments)
    metrics.add_metric(name="RecallContextAnswered", unit=MetricUnit.Count, value=1)
    return response


def _may_pin(principal: Principal, request: Request) -> None:
    get_container().pins.authorize_write(principal)


def _pin_still_applies(principal: Principal, answer: Answer) -> None:
    """A stored ``pin_memory`` answer is replayed only while that pin is still the note's."""
    body = answer.body
    if isinstance(body.get("note_id"), str) and isinstance(body.get("pin_id"), str):
        get_container().pins.replayable(principal, body["note_id"], body["pin_id"])


@write_route(
    pin_memory_router,
    "POST",
    PIN_MEMORY_PATH,
    check=_may_pin,
    body=PinMemoryArguments,
    on_replay=_pin_still_applies,
    operation_id="pin_memory",
    summary="Pin a note: recall_context brings it first, for everyone who can see it.",
    description=(
        "Needs `memory:write` and a note the caller can read that is not superseded. Pinning a pinned "
        "note again answers the same pin (200), with the given `reason`, `order` or `expires_at`." + GOVERNED
    ),
    tags=[TAG],
    status_code=201,
    responses=_responses(201, "The note was pinned; 200 when it already was.", *WRITE_ERRORS),
)
def pin_memory(
    arguments: Annotated[PinMemoryArguments, Body()],
    principal: CallerPrincipal,
    idempotency_key: IdempotencyKey = None,
) -> Response[PinView]:
    pinned = get_container().pins.pin(principal, arguments)
    return _json(201 if pinned.created else 200, pinned.pin)


@pin_memory_router.get(
    PINS_PATH,
    operation_id="list_pins",
    summary="The pins that apply to the caller, in pin order.",
    tags=[TAG],
    responses=_responses(200, "One page of pins.", *READ_ERRORS),
)
def list_pins(
    principal: CallerPrincipal, limit: PinsLimit = None, next_token: NextToken = None
) -> PinsResponse:
    return get_container().pins.list_pins(principal, limit=limit, next_token=next_token)


@write_route(
    unpin_memory_router,
    "POST",
    UNPIN_MEMORY_PATH,
    check=_may_pin,
    body=UnpinMemoryArguments,
    operation_id="unpin_memory",
    summary="Remove a note's pin.",
    description="Needs `memory:write`. A note without a pin answers `removed: false`." + GOVERNED,
    tags=[TAG],
    responses=_responses(200, "The pin is gone (unpinned).", *WRITE_ERRORS),
)
def unpin_memory(
    arguments: Annotated[UnpinMemoryArguments, Body()],
    principal: CallerPrincipal,
    idempotency_key: IdempotencyKey = None,
) -> Response[UnpinnedResponse]:
    return _json(200, get_container().pins.unpin(principal, arguments))
