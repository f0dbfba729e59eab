"""DynamoDB Streams records of the knowledge table → ``StoreChange`` (the indexer's input).

A record is the Lambda event source shape: ``{"eventName": "INSERT"|"MODIFY"|"REMOVE",
"dynamodb": {"Keys", "OldImage"?, "NewImage"?, "SequenceNumber", ...}, ...}`` with images in
low-level attribute values (the table's ``StreamViewType`` is ``NEW_AND_OLD_IMAGES``). Images are
decoded by the store's own codec, so a stream image and a ``GetItem`` answer can never disagree.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from knowledge.adapters.dynamodb.codec import decode_record
from knowledge.domain.changes import ChangeKind, StoreChange


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
    )
