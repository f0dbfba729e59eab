"""The local AWS endpoint's item operations and ``GetRecords`` answer as DynamoDB does, read through
boto3, now that they are written as JSON directly (``moto_patches.json_answers``) instead of through
moto's generic serializer."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from botocore.exceptions import ClientError

from knowledge_local.account import aws_client
from knowledge_local.emulator.aws_server import AwsServer
from knowledge_local.emulator.moto_patches import backend_names

TABLE = "answers"
ITEM: dict[str, Any] = {
    "PK": {"S": "note#1"},
    "SK": {"S": "v#1"},
    "text": {"S": "zürich ✓"},
    "count": {"N": "42"},
    "ratio": {"N": "-0.125"},
    "blob": {"B": b"\x00\xffraw"},
    "flag": {"BOOL": True},
    "nothing": {"NULL": True},
    "list": {"L": [{"S": "a"}, {"N": "1"}]},
    "map": {"M": {"inner": {"SS": ["x", "y"]}}},
    "numbers": {"NS": ["1", "2"]},
    "blobs": {"BS": [b"\x01", b"\x02"]},
}


@pytest.fixture(scope="module")
def dynamodb() -> Iterator[Any]:
    with AwsServer(port=0) as aws:
        client = aws_client("dynamodb", aws.url)
        client.create_table(
            TableName=TABLE,
            BillingMode="PAY_PER_REQUEST",
            AttributeDefinitions=[
                {"AttributeName": "PK", "AttributeType": "S"},
                {"AttributeName": "SK", "AttributeType": "S"},
            ],
            KeySchema=[
                {"AttributeName": "PK", "KeyType": "HASH"},
                {"AttributeName": "SK", "KeyType": "RANGE"},
            ],
            StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
        )
        yield client, aws


def _normalized(item: dict[str, Any]) -> dict[str, Any]:
    """``item`` with its sets sorted (DynamoDB does not keep a set's order)."""
    result: dict[str, Any] = {}
    for name, value in item.items():
        kind, inner = next(iter(value.items()))
        if kind in ("SS", "NS", "BS"):
            inner = sorted(inner)
        elif kind == "M":
            inner = _normalized(inner)
        result[name] = {kind: inner}
    return result


def test_item_operations_with_every_attribute_type_read_back_what_was_written(dynamodb: Any) -> None:
    client, _ = dynamodb
    key = {"PK": ITEM["PK"], "SK": ITEM["SK"]}

    put = client.put_item(TableName=TABLE, Item=ITEM, ReturnConsumedCapacity="TOTAL")
    got = client.get_item(TableName=TABLE, Key=key)
    queried = client.query(
        TableName=TABLE,
        KeyConditionExpression="PK = :pk",
        ExpressionAttributeValues={":pk": ITEM["PK"]},
    )
    batch = client.batch_get_item(RequestItems={TABLE: {"Keys": [key]}})
    transact = client.transact_get_items(TransactItems=[{"Get": {"TableName": TABLE, "Key": key}}])
    scanned = client.scan(TableName=TABLE)

    assert put["ConsumedCapacity"] == {"TableName": TABLE, "CapacityUnits": 1.0}
    assert _normalized(got["Item"]) == _normalized(ITEM)
    assert queried["Count"] == queried["ScannedCount"] == 1
    assert "LastEvaluatedKey" not in queried
    assert _normalized(queried["Items"][0]) == _normalized(ITEM)
    assert [_normalized(item) for item in batch["Responses"][TABLE]] == [_normalized(ITEM)]
    assert batch["UnprocessedKeys"] == {}
    assert _normalized(transact["Responses"][0]["Item"]) == _normalized(ITEM)
    assert [_normalized(item) for item in scanned["Items"]] == [_normalized(ITEM)]


def test_update_and_delete_return_the_values_asked_for(dynamodb: Any) -> None:
    client, _ = dynamodb
    key = {"PK": {"S": "note#2"}, "SK": {"S": "v#1"}}
    client.put_item(TableName=TABLE, Item={**key, "count": {"N": "1"}})

    updated = client.update_item(
        TableName=TABLE,
        Key=key,
        UpdateExpression="SET #c = #c + :one",
        ExpressionAttributeNames={"#c": "count"},
        ExpressionAttributeValues={":one": {"N": "1"}},
        ReturnValues="ALL_NEW",
    )
    deleted = client.delete_item(TableName=TABLE, Key=key, ReturnValues="ALL_OLD")
    missing = client.get_item(TableName=TABLE, Key=key)

    assert updated["Attributes"] == {**key, "count": {"N": "2"}}
    assert deleted["Attributes"] == {**key, "count": {"N": "2"}}
    assert "Item" not in missing


def test_batch_and_transaction_writes_apply_and_errors_keep_their_details(dynamodb: Any) -> None:
    client, _ = dynamodb
    first = {"PK": {"S": "note#3"}, "SK": {"S": "v#1"}}
    second = {"PK": {"S": "note#3"}, "SK": {"S": "v#2"}}

    new_only = "attribute_not_exists(PK)"

    written = client.batch_write_item(RequestItems={TABLE: [{"PutRequest": {"Item": first}}]})
    transacted = client.transact_write_items(
        TransactItems=[{"Put": {"TableName": TABLE, "Item": second, "ConditionExpression": new_only}}]
    )
    with pytest.raises(ClientError) as cancelled:
        client.transact_write_items(
            TransactItems=[
                {
                    "Put": {
                        "TableName": TABLE,
                        "Item": second,
                        "ConditionExpression": new_only,
                        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                    }
                }
            ]
        )

    assert written["UnprocessedItems"] == {}
    assert "ResponseMetadata" in transacted
    assert client.get_item(TableName=TABLE, Key=first)["Item"] == first
    error = cancelled.value.response
    assert error["Error"]["Code"] == "TransactionCanceledException"
    assert error["CancellationReasons"] == [
        {"Code": "ConditionalCheckFailed", "Message": "The conditional request failed", "Item": second}
    ]


def test_stream_records_carry_images_and_a_creation_time(dynamodb: Any) -> None:
    client, aws = dynamodb
    streams = aws_client("dynamodbstreams", aws.url)
    arn = client.describe_table(TableName=TABLE)["Table"]["LatestStreamArn"]
    shard = streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"][0]["ShardId"]
    iterator = streams.get_shard_iterator(StreamArn=arn, ShardId=shard, ShardIteratorType="LATEST")[
        "ShardIterator"
    ]
    key = {"PK": {"S": "note#4"}, "SK": {"S": "v#1"}}
    client.put_item(TableName=TABLE, Item={**key, "text": {"S": "first"}})
    client.put_item(TableName=TABLE, Item={**key, "text": {"S": "second"}})

    answer = streams.get_records(ShardIterator=iterator)
    empty = streams.get_records(ShardIterator=answer["NextShardIterator"])

    records = answer["Records"]
    assert [record["eventName"] for record in records] == ["INSERT", "MODIFY"]
    assert records[1]["dynamodb"]["Keys"] == key
    assert records[1]["dynamodb"]["OldImage"] == {**key, "text": {"S": "first"}}
    assert records[1]["dynamodb"]["NewImage"] == {**key, "text": {"S": "second"}}
    assert int(records[0]["dynamodb"]["SequenceNumber"]) < int(records[1]["dynamodb"]["SequenceNumber"])
    created = records[0]["dynamodb"]["ApproximateCreationDateTime"]
    assert isinstance(created, datetime)
    assert abs(created.astimezone(UTC) - datetime.now(UTC)) < timedelta(minutes=1)
    assert empty["Records"] == []
    assert empty["NextShardIterator"]


def test_backend_names_answer_motos_own_listing_after_install() -> None:
    from moto import backends

    backend_names.install()
    backend_names.install()

    assert tuple(backends.list_of_moto_modules()) == tuple(backend_names.MOTO_LIST_OF_MODULES())
    assert {"dynamodb", "dynamodbstreams", "sqs"} <= set(backends.list_of_moto_modules())
