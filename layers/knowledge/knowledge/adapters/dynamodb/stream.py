"""DynamoDB Streams records of the knowledge table → ``StoreChange`` (the indexer's input).

A record is the Lambda event source shape: ``{"eventName": "INSERT"|"MODIFY"|"REMOVE",
"dynamodb": {"Keys", "OldImage"?, "NewImage"?, "SequenceNumber", ...}, ...}`` with images in
low-level attribute values (the table's ``StreamViewType`` is ``NEW_AND_OLD_IMAGES``). Images are
decoded by the store's own codec, so a stream image and a ``GetItem`` answer can never disagree.

A record deleted by DynamoDB TTL arrives as a ``REMOVE`` whose ``userIdentity`` is
``{"type": "Service", "principalId": "dynamodb.amazonaws.com"}``; a writer's delete has no
``userIdentity``. That is the only way to tell the two apart, and it becomes ``StoreChange.expired``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from knowledge.adapters.dynamodb.codec import decode_record
from knowledge.domain.changes import ChangeKind, StoreChange

TTL_IDENTITY = {"type": "Service", "principalId": "dynamodb.amazonaws.com"}
"""The ``userIdentity`` of a stream record written by a TTL deletion."""


def decode_stream_record(record: Mapping[str, Any]) -> StoreChange:
    """The change one stream record reports.

    Raises ``ValueError`` for an unknown ``eventName`` and pydantic's ``ValidationError`` for an
    image of a known entity that does not decode (a broken record must fail, not pass unnoticed).
    """
    kind = ChangeKind(str(record.get("eventName", "")))
    stream: Mapping[str, Any] = record.get("dynamodb") or {}
    old, new = stream.get("OldImage"), stream.get("NewImage")
    return StoreChange(
        kind=kind,
        old=decode_record(old) if old else None,
        new=decode_record(new) if new else None,
        expired=kind is ChangeKind.REMOVE and _by_ttl(record.get("userIdentity")),
    )


def _by_ttl(identity: object) -> bool:
    if not isinstance(identity, Mapping):
        return False
    return all(identity.get(name) == value for name, value in TTL_IDENTITY.items())
