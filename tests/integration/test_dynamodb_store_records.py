"""DynamoDBKnowledgeStore records on the table: what the port does not show (token TTL, next tokens
bound to their partition)."""

from __future__ import annotations

import base64
import json
import math
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from knowledge.domain.access.bearer_tokens import hash_token, new_token
from knowledge.domain.models import TokenRecord
from knowledge.errors import RequestValidationError
from tests.conftest import TABLE_NAME
from tests.support.store import make_base, make_store, new_client

TENANT = "tenant-a"
NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def _forged(payload: Any) -> str:
    return base64.urlsafe_b64encode(json.dumps(payload).encode()).decode().rstrip("=")


def test_list_items_forged_key_outside_partition_raises_request_validation(table: Any) -> None:
    store = make_store()
    base = make_base(store, TENANT)
    binding = f"items:T#{TENANT}#KB#{base.knowledge_base_id}"
    forged = _forged(
        {
            "l": binding,
            "k": {"PK": "T#tenant-b#ITEM#x", "SK": "META", "GSI1PK": "T#tenant-b#KB#y", "GSI1SK": "ITEM#x"},
        }
    )

    with pytest.raises(RequestValidationError):
        store.list_items(TENANT, base.knowledge_base_id, limit=1, next_token=forged)


def test_put_token_stores_ttl_expiration_and_never_the_token(table: Any) -> None:
    token = new_token()
    expires_at = NOW + timedelta(minutes=5, milliseconds=500)
    record = TokenRecord(
        token_hash=hash_token(token),
        tenant_id=TENANT,
        subject_id="agent-7",
        scopes=frozenset({"knowledge:read"}),
        created_at=NOW,
        expires_at=expires_at,
    )

    make_store().put_token(record)

    raw = new_client().get_item(
        TableName=TABLE_NAME, Key={"PK": {"S": f"TOKEN#{record.token_hash}"}, "SK": {"S": "META"}}
    )["Item"]
    assert int(raw["expiration"]["N"]) == math.ceil(expires_at.timestamp())
    assert token not in json.dumps(raw)
