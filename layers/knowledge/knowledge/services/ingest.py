"""Queue ingestion (DESIGN §6): apply one message of the ingest queue to the store, idempotently.

SQS delivers at least once, so every message may arrive again (and in any order with its
neighbours). An upsert is idempotent by (base, ``external_id``, content): when the item's latest
revision already has the message's content hash, title and source, a redelivery creates nothing;
it only publishes that revision when ``publish`` asks for it and it is not current yet. An archive
of an unknown or already archived ``external_id`` succeeds without doing anything.

Every message is signed: its SQS message attribute ``Authorization`` holds the sender's bearer
token (``Bearer <token>``), authenticated as the authorizer does (``TokenService.authenticate``:
the hash lookup, expiry, revocation of the token or of any ancestor). The message is applied as the
token's principal, with the scope and access checks of the equivalent REST write: ``knowledge:write``
and a base the token sees (its tenant, its allow-list, the visibility rule) for ``upsert`` and
``archive``, ``memory:write`` for ``remember`` and ``forget`` (and the notes' governance rights,
``memory:share`` / ``memory:admin``, which the memory services check). The body's ``tenant_id``,
``subject_id`` and ``team_ids`` never choose whom to write as; given and different from the token's,
they reject the message.

Failures raise, so the consumer reports the message as a batch item failure and SQS redelivers it
until ``maxReceiveCount`` moves it to the dead-letter queue. Nothing is written before the token,
its scope and the body's principal fields have been checked:

- ``AuthenticationRequiredError`` (``details.reason``: ``missing``, ``unknown``, ``expired`` or
  ``revoked``): no ``Authorization`` attribute, or no valid token in it. Logged with the reason,
  never the token; the body is not even parsed.
- ``InsufficientScopeError``: the token lacks the scope the message's ``op`` needs.
- ``MessageRejectedError`` (``validation_error``): the body is not a valid message, its content
  is too long, or its ``tenant_id``, ``subject_id`` or ``team_ids`` disagree with the token.
  The reason (error types and field names, never values) is logged.
- ``MemoryInvalidRequestError``: a memory message's argument is out of bounds (``remember`` with
  ``ttl_seconds`` above its maximum, say); logged as rejected with its fields and problems.
- ``ResourceUnavailableError``: the base does not exist in the token's tenant, or the token may not
  see it (as the REST API answers both; an inactive base still takes content).
- ``ConflictError``: concurrent writers kept changing the item (after ``MAX_ATTEMPTS`` re-reads).
- ``DependencyUnavailableError``: the store is down or throttled.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import ValidationError

from knowledge.contract.ingest_messages import (
    INGEST_MESSAGE,
    AnyMessage,
    ArchiveMessage,
    ForgetMessage,
    RememberMessage,
    UpsertMessage,
)
from knowledge.contract.segments import to_segments
from knowledge.domain.access.visibility import can_see
from knowledge.domain.models import (
    BaseStatus,
    KnowledgeBase,
    KnowledgeItem,
    Permission,
    Principal,
    TokenRecord,
)
from knowledge.errors import (
    AuthenticationRequiredError,
    ConflictError,
    InsufficientScopeError,
    KnowledgeError,
    MemoryInvalidRequestError,
    MemoryUnavailableError,
    RequestValidationError,
    ResourceUnavailableError,
)
from knowledge.observability import logger
from knowledge.ports import CatalogStore
from knowledge.services.access import find_base, require_scope
from knowledge.services.notes import NoteService
from knowledge.services.pins import PinService
from knowledge.services.tokens import TokenService
from knowledge.services.upsert import MAX_ATTEMPTS, Document, upsert_by_external_id


class IngestAction(StrEnum):
    """What one message did."""

    CREATED = "created"
    REVISED = "revised"
    PUBLISHED = "published"
    UNCHANGED = "unchanged"
    ARCHIVED = "archived"
    ABSENT = "absent"
    """An archive of an external id that no live item holds, or a forget of a note that is gone."""
    REMEMBERED = "remembered"
    """A remember message applied (a note created, updated, found unchanged or a duplicate)."""
    FORGOTTEN = "forgotten"


class MessageRejectedError(RequestValidationError):
    """The message can never be applied as it is (malformed, its content too long, or its principal
    fields not the token's)."""


AUTHORIZATION_ATTRIBUTE = "Authorization"
"""The SQS message attribute holding the sender's bearer token (``Bearer <token>``, DataType String)."""

_REQUIRED_SCOPE = {
    "upsert": Permission.WRITE,
    "archive": Permission.WRITE,
    "remember": Permission.MEMORY_WRITE,
    "forget": Permission.MEMORY_WRITE,
}
"""The scope of each ``op``: the one the REST or MCP write it stands for requires."""


class IngestService:
    """Applies ingest-queue messages to the store. Thread-safe if the store is."""

    def __init__(
        self, store: CatalogStore, notes: NoteService, tokens: TokenService, *, max_content_chars: int
    ) -> None:
        self._store = store
        self._notes = notes
        self._tokens = tokens
        self._pins = PinService(notes.store, notes, notes.clock)  # remember's ``pin: true``
        self._max_content_chars = max_content_chars

    def ingest(self, body: str, *, message_id: str, authorization: str | None) -> IngestAction:
        """Authenticate one message by ``authorization`` (its ``Authorization`` attribute, ``None``
        when it has none), validate its body and apply it as the token's principal; raises as
        listed in the module docs."""
        principal = self._authenticate(authorization, message_id)
        message = self._parse(body, message_id)
        self._authorize(principal, message, message_id)
        if isinstance(message, RememberMessage | ForgetMessage):
            return self._memory(message, principal, message_id)
        log = {
            "message_id": message_id,
            "op": message.op,
            "tenant_id": principal.tenant_id,
            "knowledge_base_id": message.knowledge_base_id,
        }
        item: KnowledgeItem | None
        try:
            find_base(self._store, principal, message.knowledge_base_id, allowed=_may_ingest)
            if isinstance(message, UpsertMessage):
                item, action = self._upsert(principal, message)
            else:
                item, action = self._archive(principal, message)
        except KnowledgeError as error:
            logger.warning("ingest message failed", extra={**log, "error_code": error.code})
            raise
        logger.info(
            "ingest message applied",
            extra={
                **log,
                "action": action.value,
                "knowledge_item_id": item.knowledge_item_id if item else None,
                "version": item.version if item else None,
            },
        )
        return action

    def _authenticate(self, authorization: str | None, message_id: str) -> Principal:
        """The principal of the message's token; ``AuthenticationRequiredError`` without one."""
        outcome = self._tokens.authenticate(authorization)
        if isinstance(outcome, TokenRecord):
            return outcome.principal()
        error = AuthenticationRequiredError(outcome.message, {"reason": outcome.value})
        logger.warning(
            "ingest message rejected",
            extra={"message_id": message_id, "error_code": error.code, "reason": outcome.value},
        )
        raise error

    def _authorize(self, principal: Principal, message: AnyMessage, message_id: str) -> None:
        """The scope the message's ``op`` needs, and a body that names no other principal."""
        log = {"message_id": message_id, "op": message.op, "tenant_id": principal.tenant_id}
        try:
            require_scope(principal, _REQUIRED_SCOPE[message.op])
        except InsufficientScopeError as error:
            logger.warning(
                "ingest message rejected",
                extra={**log, "error_code": error.code, "required_scope": error.details["required_scope"]},
            )
            raise
        problems = [
            {"field": field, "problem": "differs_from_token"} for field in _disagreements(principal, message)
        ]
        if problems:
            logger.warning("ingest message rejected", extra={**log, "problems": problems})
            raise MessageRejectedError(
                "The message names a principal other than its token's.", {"fields": problems}
            )

    def _memory(
        self, message: RememberMessage | ForgetMessage, writer: Principal, message_id: str
    ) -> IngestAction:
        """A memory message, as its tool would apply it for the token's principal."""
        log = {"message_id": message_id, "op": message.op, "tenant_id": writer.tenant_id}
        try:
            if isinstance(message, RememberMessage):
                note = self._pins.remember(writer, message.arguments()).response.note
                action, note_id = IngestAction.REMEMBERED, note.note_id
            else:
                note_id = message.note_id
                self._notes.forget(writer, message.arguments())
                action = IngestAction.FORGOTTEN
        except MemoryUnavailableError:
            if not isinstance(message, ForgetMessage):
                raise
            action = IngestAction.ABSENT  # forgotten before (a redelivery) or never there
        except (MemoryInvalidRequestError, RequestValidationError) as error:
            # Can never apply as it is: logged as rejected, with fields and problems, never values.
            problems = error.details.get("fields", [])
            logger.warning(
                "ingest message rejected", extra={**log, "error_code": error.code, "problems": problems}
            )
            raise
        except KnowledgeError as error:
            logger.warning("ingest message failed", extra={**log, "error_code": error.code})
            raise
        except Exception as error:
            # An unexpected failure still leaves a reason (its type, never its message) in the log.
            logger.warning("ingest message failed", extra={**log, "error_type": type(error).__name__})
            raise
        logger.info("ingest message applied", extra={**log, "action": action.value, "note_id": note_id})
        return action

    def _parse(self, body: str, message_id: str) -> AnyMessage:
        try:
            message = INGEST_MESSAGE.validate_json(body)
        except ValidationError as error:
            problems = _problems(error)
            logger.warning("ingest message rejected", extra={"message_id": message_id, "problems": problems})
            # ``from None``: pydantic's own message quotes the input, which may be content.
            raise MessageRejectedError(
                "The message is not a valid ingest message.", {"fields": problems}
            ) from None
        if isinstance(message, UpsertMessage) and len(message.content) > self._max_content_chars:
            problem = {"field": "content", "problem": f"longer than {self._max_content_chars:,} characters"}
            logger.warning("ingest message rejected", extra={"message_id": message_id, "problems": [problem]})
            raise MessageRejectedError(
                f"content has {len(message.content):,} characters; the limit is "
                f"{self._max_content_chars:,} characters.",
                {"fields": [problem], "max_chars": self._max_content_chars},
            )
        return message

    def _upsert(self, principal: Principal, message: UpsertMessage) -> tuple[KnowledgeItem, IngestAction]:
        document = Document(
            external_id=message.external_id,
            title=message.title,
            content=message.content,
            source=message.source,
            publish=message.publish,
            segments=to_segments(message.segments),
        )
        upserted = upsert_by_external_id(
            self._store, principal.tenant_id, message.knowledge_base_id, document
        )
        return upserted.item, IngestAction(upserted.outcome.value)

    def _archive(
        self, principal: Principal, message: ArchiveMessage
    ) -> tuple[KnowledgeItem | None, IngestAction]:
        for _ in range(MAX_ATTEMPTS):
            item = self._store.find_item_by_external_id(
                principal.tenant_id, message.knowledge_base_id, message.external_id
            )
            if item is None:
                return None, IngestAction.ABSENT
            try:
                archived = self._store.archive_item(
                    item.tenant_id, item.knowledge_item_id, expected_version=item.version
                )
            except ConflictError:
                continue
            except ResourceUnavailableError:
                return None, IngestAction.ABSENT  # archived by someone else meanwhile
            return archived, IngestAction.ARCHIVED
        raise ConflictError(
            "The item kept changing while the message was applied; it will be retried.", current_version=None
        )


def _may_ingest(principal: Principal, base: KnowledgeBase) -> bool:
    """The visibility rule (tenant, allow-list, scope), except that an inactive base still takes
    content, indexed when it is active again."""
    return can_see(principal, base.model_copy(update={"status": BaseStatus.ACTIVE}))


def _disagreements(principal: Principal, message: AnyMessage) -> list[str]:
    """The body's principal fields that are given and are not the token's."""
    fields = []
    if message.tenant_id is not None and message.tenant_id != principal.tenant_id:
        fields.append("tenant_id")
    if message.subject_id is not None and message.subject_id != principal.subject_id:
        fields.append("subject_id")
    if message.team_ids is not None and frozenset(message.team_ids) != principal.team_ids:
        fields.append("team_ids")
    return fields


def _problems(error: ValidationError) -> list[dict[str, Any]]:
    """Where and what, never the offending value (it may be content)."""
    return [
        {"field": ".".join(str(part) for part in problem["loc"]) or "body", "problem": problem["type"]}
        for problem in error.errors(include_input=False, include_url=False)
    ]
