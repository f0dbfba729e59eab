"""moto transactions rolled back by journal (``knowledge_local.emulator.moto_patches.transactions``)
answer and store exactly what moto's own table-copying implementation does, on the knowledge
table of the template."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws
from moto.dynamodb.models import DynamoDBBackend

from knowledge_local.emulator.moto_patches import transactions
from tests.support.template import create_table_kwargs

TABLE = "journal"
Scenario = Callable[[Any], None]


def _key(pk: str, sk: str = "META") -> dict[str, Any]:
    return {"PK": {"S": pk}, "SK": {"S": sk}}


def _put(pk: str, sk: str = "META", **attributes: Any) -> dict[str, Any]:
    item = {**_key(pk, sk), **{name: {"S": str(value)} for name, value in attributes.items()}}
    return {"Put": {"TableName": TABLE, "Item": item}}


def _put_new(pk: str, sk: str = "META", **attributes: Any) -> dict[str, Any]:
    action = _put(pk, sk, **attributes)
    action["Put"]["ConditionExpression"] = "attribute_not_exists(PK)"
    return action


def _update(pk: str, value: str, *, expected: str | None = None, all_old: bool = False) -> dict[str, Any]:
    update: dict[str, Any] = {
        "TableName": TABLE,
        "Key": _key(pk),
        "UpdateExpression": "SET #v = :v",
        "ExpressionAttributeNames": {"#v": "v"},
        "ExpressionAttributeValues": {":v": {"S": value}},
    }
    if expected is not None:
        update["ConditionExpression"] = "#v = :expected"
        update["ExpressionAttributeValues"][":expected"] = {"S": expected}
    if all_old:
        update["ReturnValuesOnConditionCheckFailure"] = "ALL_OLD"
    return {"Update": update}


def _delete(pk: str, sk: str = "META") -> dict[str, Any]:
    return {"Delete": {"TableName": TABLE, "Key": _key(pk, sk)}}


def _check_absent(pk: str) -> dict[str, Any]:
    return {
        "ConditionCheck": {
            "TableName": TABLE,
            "Key": _key(pk),
            "ConditionExpression": "attribute_not_exists(PK)",
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }
    }


def _seed(client: Any) -> None:
    client.put_item(
        TableName=TABLE, Item={**_key("a"), "v": {"S": "1"}, "GSI1PK": {"S": "base"}, "GSI1SK": {"S": "a"}}
    )
    client.put_item(TableName=TABLE, Item={**_key("b"), "v": {"S": "1"}})
    client.put_item(TableName=TABLE, Item={**_key("b", "PAGE#1"), "v": {"S": "page"}})


SCENARIOS: dict[str, list[dict[str, Any]]] = {
    "all succeed": [
        _put_new("c", GSI1PK="base", GSI1SK="c"),
        _update("a", "2", expected="1"),
        _delete("b", "PAGE#1"),
        _check_absent("z"),
    ],
    "a version race cancels with the current item": [
        _put_new("c", GSI1PK="base", GSI1SK="c"),
        _put("b", "PAGE#2", v="page"),
        _update("a", "3", expected="2", all_old=True),
    ],
    "a taken key cancels after earlier writes": [
        _update("a", "2", expected="1"),
        _delete("b", "PAGE#1"),
        _put_new("b"),
    ],
    "an update that creates an item is undone": [
        _update("new", "1"),
        _check_absent("b"),
    ],
    "two actions on one item are refused": [
        _put("c"),
        _update("c", "1"),
    ],
    "a key without its sort key is refused": [
        _put("c"),
        {"Delete": {"TableName": TABLE, "Key": {"PK": {"S": "a"}}}},
    ],
    "an unknown table is refused": [
        _put("c"),
        {"Put": {"TableName": "absent", "Item": _key("x")}},
    ],
}


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Callable[[Callable[..., None]], dict[str, Any]]:
    monkeypatch.setenv("AWS_ACCOUNT_ID_ENDPOINT_MODE", "disabled")

    def outcome(implementation: Callable[..., None], actions: list[dict[str, Any]]) -> dict[str, Any]:
        """Seed a fresh table, run ``actions`` with ``implementation``; what a client can observe."""
        monkeypatch.setattr(DynamoDBBackend, "transact_write_items", implementation)
        with mock_aws():
            client = boto3.client("dynamodb", region_name="us-east-1")
            streams = boto3.client("dynamodbstreams", region_name="us-east-1")
            client.create_table(**create_table_kwargs("KnowledgeTable", TABLE))
            _seed(client)
            try:
                client.transact_write_items(TransactItems=actions)
                error: dict[str, Any] | None = None
            except ClientError as failure:
                error = {
                    "code": failure.response["Error"]["Code"],
                    "message": failure.response["Error"]["Message"],
                    "reasons": failure.response.get("CancellationReasons"),
                }
            return {
                "error": error,
                "items": sorted(client.scan(TableName=TABLE, ConsistentRead=True)["Items"], key=json.dumps),
                "listed": client.query(
                    TableName=TABLE,
                    IndexName="GSI1",
                    KeyConditionExpression="GSI1PK = :pk",
                    ExpressionAttributeValues={":pk": {"S": "base"}},
                )["Items"],
                "stream": _stream(client, streams),
            }

    return lambda implementation: {
        name: outcome(implementation, actions) for name, actions in SCENARIOS.items()
    }


def _stream(client: Any, streams: Any) -> list[dict[str, Any]]:
    """Every record of the table's stream, without the fields that differ on every run."""
    arn = client.describe_table(TableName=TABLE)["Table"]["LatestStreamArn"]
    shard = streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"][0]["ShardId"]
    iterator = streams.get_shard_iterator(StreamArn=arn, ShardId=shard, ShardIteratorType="TRIM_HORIZON")
    records = streams.get_records(ShardIterator=iterator["ShardIterator"], Limit=1000)["Records"]
    return [
        {
            "event": record["eventName"],
            "keys": record["dynamodb"]["Keys"],
            "old": record["dynamodb"].get("OldImage"),
            "new": record["dynamodb"].get("NewImage"),
            "sequence": record["dynamodb"]["SequenceNumber"],
        }
        for record in records
    ]


def test_journaled_transactions_answer_and_store_what_moto_does(
    aws: Callable[[Callable[..., None]], dict[str, Any]],
) -> None:
    expected = aws(transactions.MOTO_TRANSACT_WRITE_ITEMS)

    observed = aws(transactions.transact_write_items)

    assert observed == expected


def test_journaled_transactions_scenarios_cover_success_cancellation_and_refusal(
    aws: Callable[[Callable[..., None]], dict[str, Any]],
) -> None:
    observed = aws(transactions.transact_write_items)

    codes = {name: (outcome["error"] or {}).get("code") for name, outcome in observed.items()}
    assert codes == {
        "all succeed": None,
        "a version race cancels with the current item": "TransactionCanceledException",
        "a taken key cancels after earlier writes": "TransactionCanceledException",
        "an update that creates an item is undone": "TransactionCanceledException",
        "two actions on one item are refused": "ValidationException",
        "a key without its sort key is refused": "ValidationException",
        "an unknown table is refused": "ResourceNotFoundException",
    }
    race = observed["a version race cancels with the current item"]["error"]["reasons"]
    assert race[2]["Code"] == "ConditionalCheckFailed"
    assert race[2]["Item"]["v"] == {"S": "1"}
    assert [record["event"] for record in observed["all succeed"]["stream"]][-3:] == [
        "INSERT",
        "MODIFY",
        "REMOVE",
    ]
    seeded = observed["two actions on one item are refused"]
    assert len(seeded["items"]) == 3
    assert len(seeded["stream"]) == 3
