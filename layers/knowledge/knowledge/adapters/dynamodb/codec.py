"""Conversion between domain models and DynamoDB items, the only place that knows the record layout.

A record holds its keys (``PK``/``SK``, and ``GSI1PK``/``GSI1SK`` where listed), an ``entity``
discriminator, and one attribute per model field under the field's own name. ``None`` fields are
absent; timestamps are ISO-8601 UTC strings (``2026-01-31T12:00:00.000000Z``); sets of strings are
sorted lists (DynamoDB rejects empty sets); ``Source`` is a map. Tokens add ``expiration`` (epoch
seconds, the table's TTL attribute). Pages hold ``text``, a slice of the revision's content. Notes,
their versions and their claims carry ``expiration`` too, once the note has an ``expires_at``;
floats (a note's ``importance``) are stored as numbers.

Items travel as low-level attribute values (``{"S": "..."}``), converted with boto3's
``TypeSerializer`` / ``TypeDeserializer``, imported with boto3 by the first conversion (the stream
function decodes records at its first call, not at import).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from enum import StrEnum
from functools import cache
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel

from knowledge.adapters.dynamodb import keys
from knowledge.domain import segments
from knowledge.domain.as_of import ItemState
from knowledge.domain.memory.notes import Note, NoteClaim, expiration
from knowledge.domain.memory.pins import Pin, PinChange
from knowledge.domain.models import ItemStatus, KnowledgeBase, KnowledgeItem, Revision, TokenRecord

if TYPE_CHECKING:
    from boto3.dynamodb.types import TypeDeserializer, TypeSerializer

RawItem = dict[str, Any]
"""A DynamoDB item in low-level form: attribute name → attribute value (``{"S": ...}``, ``{"N": ...}``)."""

ModelT = TypeVar("ModelT", bound=BaseModel)


@cache
def _serializer() -> TypeSerializer:
    from boto3.dynamodb.types import TypeSerializer

    return TypeSerializer()


@cache
def _deserializer() -> TypeDeserializer:
    from boto3.dynamodb.types import TypeDeserializer

    return TypeDeserializer()


class Entity(StrEnum):
    """The ``entity`` attribute of every record."""

    BASE = "base"
    ITEM = "item"
    REVISION = "revision"
    PAGE = "page"
    EXTERNAL_ID = "external_id"
    TOKEN = "token"
    NOTE = "note"
    NOTE_VERSION = "note_version"
    NOTE_CLAIM = "note_claim"
    PIN = "pin"
    PIN_CHANGE = "pin_change"
    ITEM_STATE = "item_state"
    QUOTA = "quota"
    EXPIRY_COUNTED = "expiry_counted"
    UNINDEXED_NOTE = "unindexed_note"
    UNINDEXED_ITEM = "unindexed_item"


def timestamp(moment: datetime) -> str:
    """An aware datetime as an ISO-8601 UTC string with microseconds; naive datetimes raise ``ValueError``."""
    if moment.tzinfo is None:
        raise ValueError("timestamps must be timezone-aware")
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _plain(value: Any) -> Any:
    if isinstance(value, datetime):
        return timestamp(value)
    if isinstance(value, StrEnum):
        return value.value
    if isinstance(value, frozenset | set):
        return sorted(value)
    if isinstance(value, BaseModel):
        return {name: _plain(field) for name, field in value if field is not None}
    if isinstance(value, float):
        return Decimal(repr(value))
    return value


def _native(value: Any) -> Any:
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else value
    if isinstance(value, list):
        return [_native(element) for element in value]
    if isinstance(value, dict):
        return {name: _native(element) for name, element in value.items()}
    return value


def serialize(values: Mapping[str, Any]) -> RawItem:
    """Plain Python values → attribute values; ``None`` values are dropped (the attribute is absent)."""
    serializer = _serializer()
    return {name: serializer.serialize(_plain(value)) for name, value in values.items() if value is not None}


def deserialize(item: Mapping[str, Any]) -> dict[str, Any]:
    """Attribute values → plain Python values; integral numbers become ``int``."""
    deserializer = _deserializer()
    return {name: _native(deserializer.deserialize(value)) for name, value in item.items()}


def key(table_key: keys.TableKey) -> RawItem:
    """The ``PK``/``SK`` attribute values of a table key."""
    return {"PK": {"S": table_key.pk}, "SK": {"S": table_key.sk}}


def _record(entity: Entity, table_key: keys.TableKey, model: BaseModel, **extra: Any) -> RawItem:
    values: dict[str, Any] = {"PK": table_key.pk, "SK": table_key.sk, "entity": entity.value}
    values.update({name: field for name, field in model if field is not None})
    values.update(extra)
    return serialize(values)


def _model(model_type: type[ModelT], item: Mapping[str, Any]) -> ModelT:
    values = deserialize(item)
    return model_type.model_validate(
        {name: values[name] for name in model_type.model_fields if name in values}
    )


def encode_base(base: KnowledgeBase) -> RawItem:
    index = keys.base_index_key(base.tenant_id, base.knowledge_base_id)
    return _record(
        Entity.BASE,
        keys.base_key(base.tenant_id, base.knowledge_base_id),
        base,
        GSI1PK=index.pk,
        GSI1SK=index.sk,
    )


def decode_base(item: Mapping[str, Any]) -> KnowledgeBase:
    return _model(KnowledgeBase, item)


def encode_item(knowledge_item: KnowledgeItem) -> RawItem:
    """An item record; archived items are listed in their base's archived partition of GSI1
    (``keys.archived_item_index_key``), so base listings skip them and a base purge finds them."""
    index = item_index_key(knowledge_item)
    record_key = keys.item_key(knowledge_item.tenant_id, knowledge_item.knowledge_item_id)
    return _record(Entity.ITEM, record_key, knowledge_item, GSI1PK=index.pk, GSI1SK=index.sk)


def item_index_key(knowledge_item: KnowledgeItem) -> keys.TableKey:
    """The GSI1 key of an item record: under its base, or its base's archived items."""
    key = (
        keys.archived_item_index_key if knowledge_item.status is ItemStatus.ARCHIVED else keys.item_index_key
    )
    return key(knowledge_item.tenant_id, knowledge_item.knowledge_base_id, knowledge_item.knowledge_item_id)


def decode_item(item: Mapping[str, Any]) -> KnowledgeItem:
    return _model(KnowledgeItem, item)


def encode_revision(revision: Revision) -> RawItem:
    """A revision record; its segments, when it has any, are one compact JSON string
    (``segments.encode_segments``) in ``segments``, absent otherwise (and on older records)."""
    table_key = keys.revision_key(
        revision.tenant_id, revision.knowledge_item_id, revision.knowledge_revision_id
    )
    values: dict[str, Any] = {"PK": table_key.pk, "SK": table_key.sk, "entity": Entity.REVISION.value}
    values.update({name: field for name, field in revision if field is not None and name != "segments"})
    if revision.segments:
        values["segments"] = segments.encode_segments(revision.segments)
    return serialize(values)


def decode_revision(item: Mapping[str, Any]) -> Revision:
    values = deserialize(item)
    fields = {name: values[name] for name in Revision.model_fields if name in values}
    fields["segments"] = segments.decode_segments(values["segments"]) if "segments" in values else ()
    return Revision.model_validate(fields)


def encode_page(revision: Revision, number: int, text: str) -> RawItem:
    """Page ``number`` (from 0): code points ``[number·page_size, (number+1)·page_size)`` of the content."""
    table_key = keys.page_key(
        revision.tenant_id, revision.knowledge_item_id, revision.knowledge_revision_id, number
    )
    return serialize({"PK": table_key.pk, "SK": table_key.sk, "entity": Entity.PAGE.value, "text": text})


def decode_page(item: Mapping[str, Any]) -> tuple[int, str]:
    """``(page number, text)`` of a page record."""
    sort_key = item["SK"]["S"]
    return int(sort_key.rsplit("#", 1)[1]), str(item["text"]["S"])


def encode_external_id(
    tenant_id: str, knowledge_base_id: str, external_id: str, knowledge_item_id: str
) -> RawItem:
    table_key = keys.external_id_key(tenant_id, knowledge_base_id, external_id)
    return serialize(
        {
            "PK": table_key.pk,
            "SK": table_key.sk,
            "entity": Entity.EXTERNAL_ID.value,
            "tenant_id": tenant_id,
            "knowledge_base_id": knowledge_base_id,
            "knowledge_item_id": knowledge_item_id,
        }
    )


def decode_external_id(item: Mapping[str, Any]) -> str:
    """The id of the item that owns an external-id guard."""
    return str(item["knowledge_item_id"]["S"])


def encode_token(record: TokenRecord) -> RawItem:
    """A token record, listed under its tenant on GSI1; ``expiration`` (epoch seconds, rounded up)
    lets DynamoDB TTL purge it once expired. ``ancestor_token_ids`` is a list (root first)."""
    expiration = None if record.expires_at is None else math.ceil(record.expires_at.timestamp())
    index = keys.token_index_key(record.tenant_id, record.created_at, record.token_hash)
    return _record(
        Entity.TOKEN,
        keys.token_key(record.token_hash),
        record,
        expiration=expiration,
        GSI1PK=index.pk,
        GSI1SK=index.sk,
    )


def decode_token(item: Mapping[str, Any]) -> TokenRecord:
    return _model(TokenRecord, item)


def encode_note(note: Note) -> RawItem:
    """A note's ``META`` record at its current version (``pinned`` is never stored: the pin record
    says it), listed under its tenant on GSI1."""
    index = keys.note_index_key(note.tenant_id, note.note_id)
    return _record(
        Entity.NOTE,
        keys.note_key(note.tenant_id, note.note_id),
        note.model_copy(update={"pinned": False}),
        expiration=expiration(note.expires_at),
        GSI1PK=index.pk,
        GSI1SK=index.sk,
    )


def decode_note(item: Mapping[str, Any]) -> Note:
    return _model(Note, item)


def encode_note_version(note: Note) -> RawItem:
    """The immutable ``VER#{n:06d}`` record of one version (no ``indexed_version``: that is a mark)."""
    return _record(
        Entity.NOTE_VERSION,
        keys.note_version_key(note.tenant_id, note.note_id, note.version),
        note.model_copy(update={"indexed_version": None, "pinned": False}),
        expiration=expiration(note.expires_at),
    )


def encode_pin(pin: Pin) -> RawItem:
    """A note's ``PIN`` record, listed in its tenant's pins (GSI1); it expires with the pin."""
    index = keys.pin_index_key(pin.tenant_id, pin.order, pin.pin_id)
    return _record(
        Entity.PIN,
        keys.pin_key(pin.tenant_id, pin.note_id),
        pin,
        GSI1PK=index.pk,
        GSI1SK=index.sk,
        expiration=expiration(pin.expires_at),
    )


def decode_pin(item: Mapping[str, Any]) -> Pin:
    return _model(Pin, item)


def encode_item_state(state: ItemState) -> RawItem:
    """The immutable ``STATE#{version:06d}`` record of an item's state at one version."""
    return _record(
        Entity.ITEM_STATE, keys.item_state_key(state.tenant_id, state.knowledge_item_id, state.version), state
    )


def decode_item_state(item: Mapping[str, Any]) -> ItemState:
    return _model(ItemState, item)


def encode_pin_change(change: PinChange, change_id: str) -> RawItem:
    """A ``PINLOG#{at}#{id}`` record beside the note, listed in its tenant's pin changes (GSI1); the
    pin's fields when it was a pin, ``pinned: false`` for a removal. It never expires: the pin's
    own ``expires_at`` says when it stopped applying."""
    at = timestamp(change.at)
    index = keys.pin_change_index_key(change.tenant_id, change.note_id, at)
    values: dict[str, Any] = {
        "PK": keys.pin_change_key(change.tenant_id, change.note_id, at, change_id).pk,
        "SK": keys.pin_change_key(change.tenant_id, change.note_id, at, change_id).sk,
        "entity": Entity.PIN_CHANGE.value,
        "GSI1PK": index.pk,
        "GSI1SK": index.sk,
        "at": at,
        "pinned": change.pin is not None,
    }
    if change.pin is not None:
        values.update({name: field for name, field in change.pin if field is not None})
    else:
        values.update({"tenant_id": change.tenant_id, "note_id": change.note_id})
    return serialize(values)


def decode_pin_change(item: Mapping[str, Any]) -> PinChange:
    values = deserialize(item)
    pin = _model(Pin, item) if values.get("pinned") else None
    return PinChange(tenant_id=values["tenant_id"], note_id=values["note_id"], at=values["at"], pin=pin)


def encode_note_claim(note: Note, claim: NoteClaim) -> RawItem:
    """The record of a claim held by ``note``; it expires with the note."""
    table_key = keys.note_claim_key(note.tenant_id, claim.digest)
    return serialize(
        {
            "PK": table_key.pk,
            "SK": table_key.sk,
            "entity": Entity.NOTE_CLAIM.value,
            "tenant_id": note.tenant_id,
            "note_id": note.note_id,
            "kind": claim.kind,
            "expiration": expiration(note.expires_at),
        }
    )


def encode_unindexed_item(item: KnowledgeItem) -> RawItem:
    """The mark that ``item``'s current revision is not in the search index yet
    (``keys.unindexed_item_key``), naming that revision."""
    if item.current_revision_id is None:
        raise ValueError("only an item with a current revision can wait for the index")
    table_key = keys.unindexed_item_key(item.tenant_id, item.knowledge_item_id)
    return serialize(
        {
            "PK": table_key.pk,
            "SK": table_key.sk,
            "entity": Entity.UNINDEXED_ITEM.value,
            "knowledge_item_id": item.knowledge_item_id,
            "knowledge_revision_id": item.current_revision_id,
        }
    )


def encode_unindexed_note(note: Note) -> RawItem:
    """The mark that ``note`` is at a version the note index has not taken yet, under its owner
    (``keys.unindexed_note_key``); it expires with the note."""
    table_key = keys.unindexed_note_key(note.tenant_id, note.owner_id, note.note_id)
    return serialize(
        {
            "PK": table_key.pk,
            "SK": table_key.sk,
            "entity": Entity.UNINDEXED_NOTE.value,
            "note_id": note.note_id,
            "version": note.version,
            "expiration": expiration(note.expires_at),
        }
    )


@dataclass(frozen=True)
class Update:
    """The parts of an ``UpdateItem`` expression: ``SET #f = :f, ...`` and ``REMOVE #g, ...``."""

    expression: str
    names: dict[str, str]
    values: RawItem


def update(assign: Mapping[str, Any], remove: Iterable[str] = ()) -> Update:
    """An update that sets each attribute of ``assign`` (``None`` values are removed) and removes ``remove``.

    Placeholders are ``#{name}`` and ``:{name}``, so condition clauses may share ``#{name}``.
    """
    removed = [*(name for name, value in assign.items() if value is None), *remove]
    assigned = {name: value for name, value in assign.items() if value is not None}
    clauses = []
    if assigned:
        clauses.append("SET " + ", ".join(f"#{name} = :{name}" for name in assigned))
    if removed:
        clauses.append("REMOVE " + ", ".join(f"#{name}" for name in removed))
    return Update(
        expression=" ".join(clauses),
        names={f"#{name}": name for name in [*assigned, *removed]},
        values=serialize({f":{name}": value for name, value in assigned.items()}),
    )


def changes(previous: BaseModel, updated: BaseModel) -> dict[str, Any]:
    """The fields of ``updated`` that differ from ``previous`` (``None`` where a field was cleared)."""
    return {
        name: getattr(updated, name)
        for name in type(updated).model_fields
        if getattr(updated, name) != getattr(previous, name)
    }


def entity_of(item: Mapping[str, Any]) -> Entity | None:
    """The record's ``entity``, or ``None`` for a record this codec does not know."""
    try:
        return Entity(item.get("entity", {}).get("S"))
    except ValueError:
        return None


Record = KnowledgeBase | KnowledgeItem | Revision | TokenRecord | Note

_DECODERS: dict[Entity, Callable[[Mapping[str, Any]], Record]] = {
    Entity.BASE: decode_base,
    Entity.ITEM: decode_item,
    Entity.REVISION: decode_revision,
    Entity.TOKEN: decode_token,
    Entity.NOTE: decode_note,
}


def decode_record(item: Mapping[str, Any]) -> Record | None:
    """The domain model of any record, e.g. a stream image; ``None`` for pages, guards and unknown records."""
    entity = entity_of(item)
    decoder = _DECODERS.get(entity) if entity is not None else None
    return decoder(item) if decoder is not None else None
