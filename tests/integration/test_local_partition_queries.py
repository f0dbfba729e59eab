"""Queries read only the partition asked for, of the table or of an index
(``knowledge_local.emulator.moto_patches.partition_queries``), and answer exactly what moto's own whole-table
implementation does."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws
from moto.dynamodb.models.table import Table

from knowledge_local.emulator.moto_patches import partition_queries
from tests.support.template import create_table_kwargs

TABLE = "partitions"


def _seed(client: Any) -> None:
    for item in ("a", "b", "c"):
        client.put_item(
            TableName=TABLE,
            Item={
                "PK": {"S": f"ITEM#{item}"},
                "SK": {"S": "META"},
                "GSI1PK": {"S": "BASE"},
                "GSI1SK": {"S": item},
            },
        )
        for page in range(5):
            client.put_item(
                TableName=TABLE,
                Item={"PK": {"S": f"ITEM#{item}"}, "SK": {"S": f"PAGE#{page:06d}"}, "n": {"N": str(page)}},
            )


def _key(condition: str, **values: str) -> dict[str, Any]:
    return {
        "KeyConditionExpression": condition,
        "ExpressionAttributeValues": {f":{name}": {"S": value} for name, value in values.items()},
    }


QUERIES: dict[str, dict[str, Any]] = {
    "partition": _key("PK = :pk", pk="ITEM#b"),
    "begins_with": _key("PK = :pk AND begins_with(SK, :prefix)", pk="ITEM#b", prefix="PAGE#"),
    "between": _key(
        "PK = :pk AND SK BETWEEN :low AND :high", pk="ITEM#c", low="PAGE#000001", high="PAGE#000003"
    ),
    "backwards with a limit": {**_key("PK = :pk", pk="ITEM#a"), "ScanIndexForward": False, "Limit": 2},
    "second page": {
        **_key("PK = :pk", pk="ITEM#a"),
        "Limit": 2,
        "ExclusiveStartKey": {"PK": {"S": "ITEM#a"}, "SK": {"S": "PAGE#000000"}},
    },
    "filtered and projected": {
        **_key("PK = :pk", pk="ITEM#b"),
        "FilterExpression": "n > :two",
        "ProjectionExpression": "SK, n",
        "ExpressionAttributeValues": {":pk": {"S": "ITEM#b"}, ":two": {"N": "2"}},
    },
    "absent partition": _key("PK = :pk", pk="ITEM#z"),
    "index": {"IndexName": "GSI1", **_key("GSI1PK = :pk", pk="BASE")},
    "index range and paging": {
        "IndexName": "GSI1",
        **_key("GSI1PK = :pk AND GSI1SK > :after", pk="BASE", after="a"),
        "Limit": 1,
    },
    "index backwards": {"IndexName": "GSI1", **_key("GSI1PK = :pk", pk="BASE"), "ScanIndexForward": False},
    "absent index partition": {"IndexName": "GSI1", **_key("GSI1PK = :pk", pk="NONE")},
    "sort key alone is refused": _key("SK = :sk", sk="META"),
}


def _answers(monkeypatch: pytest.MonkeyPatch, implementation: Callable[..., Any]) -> dict[str, Any]:
    monkeypatch.setattr(Table, "query", implementation)
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        client.create_table(**create_table_kwargs("KnowledgeTable", TABLE))
        _seed(client)
        answers: dict[str, Any] = {}
        for name, arguments in QUERIES.items():
            try:
                answer = client.query(TableName=TABLE, **arguments)
                answers[name] = {
                    key: answer.get(key) for key in ("Items", "Count", "ScannedCount", "LastEvaluatedKey")
                }
            except ClientError as error:
                answers[name] = error.response["Error"]
        return answers


def test_partition_queries_answer_what_moto_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    expected = _answers(monkeypatch, partition_queries.MOTO_QUERY)

    observed = _answers(monkeypatch, partition_queries.query)

    assert observed == expected
    assert [item["SK"]["S"] for item in observed["between"]["Items"]] == [
        "PAGE#000001",
        "PAGE#000002",
        "PAGE#000003",
    ]
    assert observed["sort key alone is refused"]["Code"] == "ValidationException"


@pytest.mark.parametrize("name", ["begins_with", "index"])
def test_partition_queries_never_sort_the_whole_table(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    def refuse(_: Table) -> list[Any]:
        raise AssertionError("the whole table was read")

    monkeypatch.setattr(Table, "query", partition_queries.query)
    monkeypatch.setattr(Table, "all_items", refuse)
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        client.create_table(**create_table_kwargs("KnowledgeTable", TABLE))
        _seed(client)

        answer = client.query(TableName=TABLE, **QUERIES[name])

    assert answer["Count"] == {"begins_with": 5, "index": 3}[name]
