"""Messages of the ingest queue (DESIGN §6): one JSON object per SQS message body, told apart by ``op``.

Every message is signed with its sender's bearer token, in the SQS message attribute
``Authorization`` (``Bearer <token>``, DataType ``String``): the consumer authenticates it as the
authorizer does and writes as the token's principal (tenant, subject, teams), never as the body
says. The body's ``tenant_id``, ``subject_id`` and ``team_ids`` are optional statements of whom the
producer means to write as; when given they must agree with the token, or the message is rejected.

- ``{"op": "upsert", "tenant_id"?, "subject_id"?, "team_ids"?, "knowledge_base_id", "external_id",
  "title", "content", "source": {"uri", "title"}, "publish": true, "segments"?: [...]}``: the item
  with ``external_id`` in the base gets this content (a new item, or a new revision when the
  content, title, source or segments differ); ``segments`` as the write API takes them
  (``knowledge.contract.segments``);
- ``{"op": "archive", "tenant_id"?, "subject_id"?, "team_ids"?, "knowledge_base_id",
  "external_id"}``: that item is archived;
- ``{"op": "remember", "tenant_id"?, "subject_id"?, "team_ids"?, ...}`` with the arguments of the
  ``remember`` tool (DESIGN §9), written as the token's subject;
- ``{"op": "forget", "tenant_id"?, "subject_id"?, "team_ids"?, "note_id", "mode"}``: ``forget_memory``.

Unknown fields, wrong types (strict JSON types), strings that are not valid Unicode (a lone
surrogate escape, ``knowledge.domain.text``) and identifiers holding control, bidirectional or
invisible characters (``knowledge.domain.identifiers``) are refused, so a producer's mistake is a
poison message in the dead-letter queue rather than silently dropped data.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, field_validator, model_validator

from knowledge.contract.memory import ForgetMemoryArguments, RememberArguments
from knowledge.contract.segments import Segments, to_segments
from knowledge.domain import ids
from knowledge.domain.identifiers import Identifier, identifier_problem
from knowledge.domain.memory.notes import LABEL_MAX_CHARS
from knowledge.domain.models import EXTERNAL_ID_MAX_CHARS, TENANT_ID_PATTERN, TITLE_MAX_CHARS, Source
from knowledge.domain.segments import segments_problem
from knowledge.domain.sources import SafeSource
from knowledge.domain.text import Text

_TENANT_ID = re.compile(TENANT_ID_PATTERN)

TenantId = Annotated[Identifier, Field(pattern=TENANT_ID_PATTERN)]


class _Writer(BaseModel):
    """Whom a message means to write as; the token decides, and each field given must agree with it
    (``team_ids``: the token's teams, in any order)."""

    tenant_id: TenantId | None = None
    subject_id: Annotated[Identifier, Field(min_length=1, max_length=LABEL_MAX_CHARS)] | None = None
    team_ids: list[Identifier] | None = None


class _Message(_Writer):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    knowledge_base_id: Text
    external_id: Identifier = Field(min_length=1, max_length=EXTERNAL_ID_MAX_CHARS)

    @field_validator("knowledge_base_id")
    @classmethod
    def _base_id_is_well_formed(cls, value: str) -> str:
        if not ids.is_well_formed(value, ids.KB_PREFIX):
            raise ValueError("must be a knowledge base id (kb_ followed by a ULID)")
        return value


class UpsertMessage(_Message):
    """Content for the item with ``external_id``; ``publish`` (default true) makes it current."""

    op: Literal["upsert"]
    title: Text = Field(min_length=1, max_length=TITLE_MAX_CHARS)
    content: Text
    source: SafeSource = Source()
    publish: bool = True
    segments: Segments | None = None

    @model_validator(mode="after")
    def _segments_fit(self) -> UpsertMessage:
        problem = segments_problem(to_segments(self.segments), len(self.content)) if self.segments else None
        if problem is not None:
            raise ValueError(f"segments: {problem}")
        return self


class ArchiveMessage(_Message):
    """Archive the item with ``external_id``; an unknown or already archived one is a no-op."""

    op: Literal["archive"]


class RememberMessage(RememberArguments, _Writer):
    """``remember`` as the token's subject; redelivery finds a duplicate (or an unchanged keyed note)."""

    op: Literal["remember"]

    def arguments(self) -> RememberArguments:
        return RememberArguments.model_validate(
            self.model_dump(exclude_unset=True, exclude={"op", *_Writer.model_fields})
        )


class ForgetMessage(ForgetMemoryArguments, _Writer):
    """``forget_memory`` as the token's subject; a note already gone or forgotten is a no-op. A
    queued message has nobody to answer, so ``dry_run`` may only be ``false``."""

    op: Literal["forget"]
    dry_run: Literal[False] = False

    def arguments(self) -> ForgetMemoryArguments:
        return ForgetMemoryArguments.model_validate(
            self.model_dump(exclude_unset=True, exclude={"op", *_Writer.model_fields})
        )


AnyMessage = UpsertMessage | ArchiveMessage | RememberMessage | ForgetMessage
IngestMessage = Annotated[AnyMessage, Field(discriminator="op")]

INGEST_MESSAGE: TypeAdapter[AnyMessage] = TypeAdapter(IngestMessage)
"""Validates a message body: ``INGEST_MESSAGE.validate_json(body)`` (pydantic ``ValidationError``)."""


def is_tenant_id(value: str) -> bool:
    """True when ``value`` can be a tenant id (see ``TENANT_ID_PATTERN``), an identifier of
    visible characters (``knowledge.domain.identifiers``)."""
    return _TENANT_ID.match(value) is not None and identifier_problem(value) is None
