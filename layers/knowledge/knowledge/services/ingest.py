"""Queue ingestion (DESIGN §6): apply one message of the ingest queue to the store, idempotently.

SQS delivers at least once, so every message may arrive again (and in any order with its
neighbours). An upsert is idempotent by (base, ``external_id``, content): when the item's latest
revision already has the message's content hash, title and source, a redelivery creates nothing;
it only publishes that revision when ``publish`` asks for it and it is not current yet. An archive
of an unknown or already archived ``external_id`` succeeds without doing anything.

Failures raise, so the consumer reports the message as a batch item failure and SQS redelivers it
until ``maxReceiveCount`` moves it to the dead-letter queue:

- ``MessageRejectedError`` (``validation_error``): the body is not a valid message, or its content
  is too long. The reason (error types and field names, never values) is logged.
- ``MemoryInvalidRequestError``: a memory message's argument is out of bounds (``remember`` with
  ``ttl_seconds`` above its maximum, say); logged as rejected with its fields and problems.
- ``ResourceUnavailableError``: the base does not exist in the message's tenant.
- ``ConflictError``: concurrent writers kept changing the item (after ``MAX_ATTEMPTS`` re-reads).
- ``DependencyUnavailableError``: the store is down or throttled.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import ValidationError

from knowledge.domain.ingest_messages import (
    INGEST_MESSAGE,
    AnyMessage,
    ArchiveMessage,
    ForgetMessage,
    RememberMessage,
    UpsertMessage,
)
from knowledge.domain.models import KnowledgeItem, Permission, Principal
from knowledge.errors import (
    ConflictError,
    KnowledgeError,
    MemoryInvalidRequestError,
    MemoryUnavailableError,
    RequestValidationError,
    ResourceUnavailableError,
)
from knowledge.observability import logger
from knowledge.ports import CatalogStore
from knowledge.services.notes import NoteService
from knowledge.services.pins import PinService
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
    """The message can never be applied as it is (malformed, or its content is too long)."""


class IngestService:
    """Applies ingest-queue messages to the store. Thread-safe if the store is."""

    def __init__(self, store: CatalogStore, notes: NoteService, *, max_content_chars: int) -> None:
        self._store = store
        self._notes = notes
        self._pins = PinService(notes.store, notes, notes.clock)  # remember's ``pin: true``
        self._max_content_chars = max_content_chars

    def ingest(self, body: str, *, message_id: str) -> IngestAction:
        """Validate one message body and apply it; raises as listed in the module docs."""
        message = self._parse(body, message_id)
        if isinstance(message, RememberMessage | ForgetMessage):
            return self._memory(message, message_id)
        log = {
            "message_id": message_id,
            "op": message.op,
            "tenant_id": message.tenant_id,
            "knowledge_base_id": message.knowledge_base_id,
        }
        item: KnowledgeItem | None
        try:
            if self._store.get_base(message.tenant_id, message.knowledge_base_id) is None:
                raise ResourceUnavailableError("The knowledge base does not exist in this tenant.")
            if isinstance(message, UpsertMessage):
                item, action = self._upsert(message)
            else:
                item, action = self._archive(message)
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

    def _memory(self, message: RememberMessage | ForgetMessage, message_id: str) -> IngestAction:
        """A memory message, as its tool would apply it for the message's subject."""
        writer = Principal(
            tenant_id=message.tenant_id,
            subject_id=message.subject_id,
            team_ids=frozenset(message.team_ids),
            scopes=frozenset({Permission.MEMORY_WRITE.value}),
        )
        log = {"message_id": message_id, "op": message.op, "tenant_id": message.tenant_id}
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

    def _upsert(self, message: UpsertMessage) -> tuple[KnowledgeItem, IngestAction]:
        document = Document(
            external_id=message.external_id,
            title=message.title,
            content=message.content,
            source=message.source,
            publish=message.publish,
        )
        upserted = upsert_by_external_id(self._store, message.tenant_id, message.knowledge_base_id, document)
        return upserted.item, IngestAction(upserted.outcome.value)

    def _archive(self, message: ArchiveMessage) -> tuple[KnowledgeItem | None, IngestAction]:
        for _ in range(MAX_ATTEMPTS):
            item = self._store.find_item_by_external_id(
                message.tenant_id, message.knowledge_base_id, message.external_id
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


def _problems(error: ValidationError) -> list[dict[str, Any]]:
    """Where and what, never the offending value (it may be content)."""
    return [
        {"field": ".".join(str(part) for part in problem["loc"]) or "body", "problem": problem["type"]}
        for problem in error.errors(include_input=False, include_url=False)
    ]
