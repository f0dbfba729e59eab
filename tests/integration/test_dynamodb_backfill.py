"""The one-off backfill of the notes' listing keys (``knowledge.adapters.dynamodb.backfill``) on
moto: notes an earlier version wrote without them are listed afterwards, a second run updates
nothing, other records are left alone."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import boto3

from knowledge.adapters.dynamodb.backfill import backfill_archived_item_listing, backfill_note_listing, main
from knowledge.adapters.dynamodb.knowledge_store import DynamoDBKnowledgeStore
from knowledge.domain.models import Scope, Source
from tests.conftest import TABLE_NAME
from tests.integration.store_contract.test_bundles import _note
from tests.support.store import REGION

TENANT = "acme"
NOW = datetime(2026, 6, 1, tzinfo=UTC)


def _written_by_an_earlier_version(store: DynamoDBKnowledgeStore, client: Any, content: str) -> str:
    note = _note(store, content, tenant_id=TENANT)
    client.update_item(
        TableName=TABLE_NAME,
        Key={"PK": {"S": f"T#{TENANT}#NOTE#{note.note_id}"}, "SK": {"S": "META"}},
        UpdateExpression="REMOVE GSI1PK, GSI1SK",
    )
    return note.note_id


def test_notes_without_listing_keys_are_listed_after_the_backfill(table: Any) -> None:
    client = boto3.client("dynamodb", region_name=REGION)
    store = DynamoDBKnowledgeStore(TABLE_NAME, dynamodb_client=client)
    old = sorted(_written_by_an_earlier_version(store, client, f"fact {n}") for n in range(3))
    base = store.create_base(TENANT, name="handbook", owner_id="ops", scope=Scope.TENANT, team_id=None)
    assert store.list_notes(TENANT, limit=10, next_token=None).entries == []

    assert backfill_note_listing(client, TABLE_NAME) == 3

    assert [note.note_id for note in store.list_notes(TENANT, limit=10, next_token=None).entries] == old
    assert backfill_note_listing(client, TABLE_NAME) == 0
    assert store.get_base(TENANT, base.knowledge_base_id) == base
    assert main(["--table", TABLE_NAME]) == 0


def test_items_archived_without_listing_keys_are_found_by_a_base_listing_after_the_backfill(
    table: Any,
) -> None:
    client = boto3.client("dynamodb", region_name=REGION)
    store = DynamoDBKnowledgeStore(TABLE_NAME, dynamodb_client=client)
    base = store.create_base(TENANT, name="handbook", owner_id="ops", scope=Scope.TENANT, team_id=None)
    archived = []
    for number in range(3):
        item, _ = store.create_item(
            TENANT,
            base.knowledge_base_id,
            title=f"Page {number}",
            content=f"Page {number} text.",
            source=Source(),
            external_id=None,
            publish=True,
        )
        if number < 2:
            store.archive_item(TENANT, item.knowledge_item_id, expected_version=item.version)
            archived.append(item.knowledge_item_id)
            # An earlier version took an archived item off GSI1 altogether.
            client.update_item(
                TableName=TABLE_NAME,
                Key={"PK": {"S": f"T#{TENANT}#ITEM#{item.knowledge_item_id}"}, "SK": {"S": "META"}},
                UpdateExpression="REMOVE GSI1PK, GSI1SK",
            )
        else:
            live = item.knowledge_item_id

    def listed() -> list[str]:
        page = store.list_archived_items(TENANT, base.knowledge_base_id, limit=10, next_token=None)
        return [item.knowledge_item_id for item in page.entries]

    assert listed() == []

    assert backfill_archived_item_listing(client, TABLE_NAME) == 2

    assert listed() == sorted(archived)
    assert [
        item.knowledge_item_id
        for item in store.list_items(TENANT, base.knowledge_base_id, limit=10, next_token=None).entries
    ] == [live]
    assert backfill_archived_item_listing(client, TABLE_NAME) == 0
