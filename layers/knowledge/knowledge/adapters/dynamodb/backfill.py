"""One-off backfills of keys that records written by an earlier version lack.

- ``backfill_note_listing``: the GSI1 keys (``T#{tenant}#NOTES`` / ``NOTE#{note}``) that list a
  tenant's notes for exports (``bundle_records.list_notes``); notes written before they existed
  are not listed until they get them (or are written again).

Each is idempotent (a record already keyed is not read) and safe beside live traffic: an update is
conditioned on the record still existing. The local runtime runs them on every start with a
restored table; a deployment runs them once after the upgrade:

    python -m knowledge.adapters.dynamodb.backfill --table knowledge-prod-KnowledgeTable-XXXX
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from botocore.exceptions import ClientError

from knowledge.adapters.dynamodb import codec, keys


def backfill_note_listing(client: Any, table_name: str) -> int:
    """Give every note ``META`` record without GSI1 keys its listing keys; how many were updated.
    One Scan of the table (filtered, projected to the keys), one ``UpdateItem`` per note found."""
    updated = 0
    pages = client.get_paginator("scan").paginate(
        TableName=table_name,
        FilterExpression="#entity = :note AND attribute_not_exists(GSI1PK)",
        ProjectionExpression="PK, SK, tenant_id, note_id",
        ExpressionAttributeNames={"#entity": "entity"},
        ExpressionAttributeValues={":note": {"S": codec.Entity.NOTE.value}},
    )
    for page in pages:
        for record in page.get("Items", []):
            index = keys.note_index_key(record["tenant_id"]["S"], record["note_id"]["S"])
            try:
                client.update_item(
                    TableName=table_name,
                    Key={"PK": record["PK"], "SK": record["SK"]},
                    UpdateExpression="SET GSI1PK = :pk, GSI1SK = :sk",
                    ConditionExpression="attribute_exists(PK)",
                    ExpressionAttributeValues={":pk": {"S": index.pk}, ":sk": {"S": index.sk}},
                )
            except ClientError as error:
                if error.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
                    raise
                continue  # deleted meanwhile
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
