"""One-off backfills of keys that records written by an earlier version lack.

- ``backfill_note_listing``: the GSI1 keys (``T#{tenant}#NOTES`` / ``NOTE#{note}``) that list a
  tenant's notes for exports (``bundle_records.list_notes``); notes written before they existed
  are not listed until they get them (or are written again);
- ``backfill_archived_item_listing``: the GSI1 keys (``T#{tenant}#KB#{kb}#ARCHIVED`` /
  ``ITEM#{item}``) that list a base's archived items for base purges and tenant erasures; items
  archived before they existed carry no GSI1 keys and are found by neither.

Each is idempotent (a record already keyed is not read) and safe beside live traffic: an update is
conditioned on the record still existing. The local runtime runs them on every start with a
restored table; a deployment runs them once after the upgrade:

    python -m knowledge.adapters.dynamodb.backfill --table knowledge-prod-KnowledgeTable-XXXX
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import Any

from botocore.exceptions import ClientError

from knowledge.adapters.dynamodb import codec, keys
from knowledge.domain.models import ItemStatus


def backfill_note_listing(client: Any, table_name: str) -> int:
    """Give every note ``META`` record without GSI1 keys its listing keys; how many were updated.
    One Scan of the table (filtered, projected to the keys), one ``UpdateItem`` per note found."""
    return _key_records(
        client,
        table_name,
        "#entity = :entity AND attribute_not_exists(GSI1PK)",
        {":entity": {"S": codec.Entity.NOTE.value}},
        "tenant_id, note_id",
        lambda record: keys.note_index_key(record["tenant_id"]["S"], record["note_id"]["S"]),
    )


def backfill_archived_item_listing(client: Any, table_name: str) -> int:
    """Give every archived item ``META`` record without GSI1 keys its archived-listing keys; how
    many were updated. One Scan of the table (filtered, projected), one ``UpdateItem`` per item
    found, conditioned on the item still being archived."""
    return _key_records(
        client,
        table_name,
        "#entity = :entity AND #status = :archived AND attribute_not_exists(GSI1PK)",
        {":entity": {"S": codec.Entity.ITEM.value}, ":archived": {"S": ItemStatus.ARCHIVED.value}},
        "tenant_id, knowledge_base_id, knowledge_item_id",
        lambda record: keys.archived_item_index_key(
            record["tenant_id"]["S"], record["knowledge_base_id"]["S"], record["knowledge_item_id"]["S"]
        ),
        still="#status = :archived",
    )


def _key_records(
    client: Any,
    table_name: str,
    condition: str,
    values: dict[str, Any],
    fields: str,
    index_key: Callable[[dict[str, Any]], keys.TableKey],
    *,
    still: str | None = None,
) -> int:
    """Set ``GSI1PK``/``GSI1SK`` to ``index_key(record)`` on every record ``condition`` selects
    (while it exists and, with ``still``, while that holds); how many were updated."""
    names = {"#entity": "entity", "#status": "status"} if "#status" in condition else {"#entity": "entity"}
    updated = 0
    pages = client.get_paginator("scan").paginate(
        TableName=table_name,
        FilterExpression=condition,
        ProjectionExpression=f"PK, SK, {fields}",
        ExpressionAttributeNames=names,
        ExpressionAttributeValues=values,
    )
    for page in pages:
        for record in page.get("Items", []):
            index = index_key(record)
            update: dict[str, Any] = {
                "TableName": table_name,
                "Key": {"PK": record["PK"], "SK": record["SK"]},
                "UpdateExpression": "SET GSI1PK = :pk, GSI1SK = :sk",
                "ConditionExpression": "attribute_exists(PK)",
                "ExpressionAttributeValues": {":pk": {"S": index.pk}, ":sk": {"S": index.sk}},
            }
            if still is not None:
                update["ConditionExpression"] += f" AND {still}"
                update["ExpressionAttributeNames"] = {"#status": "status"}
                update["ExpressionAttributeValues"] |= {
                    key: value for key, value in values.items() if key in still
                }
            try:
                client.update_item(**update)
            except ClientError as error:
                if error.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
                    raise
                continue  # deleted or changed meanwhile
            updated += 1
    return updated


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Backfill keys an earlier version did not write.")
    parser.add_argument("--table", required=True, help="the knowledge table's name")
    arguments = parser.parse_args(argv)
    import boto3
    from botocore.config import Config

    client = boto3.client("dynamodb", config=Config(retries={"mode": "standard"}))
    sys.stdout.write(f"notes given their listing keys: {backfill_note_listing(client, arguments.table)}\n")
    archived = backfill_archived_item_listing(client, arguments.table)
    sys.stdout.write(f"archived items given their listing keys: {archived}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
