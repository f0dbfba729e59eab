"""Stream retention on the local AWS endpoint
(``knowledge_local.emulator.moto_patches.stream_retention``): records every reader has passed are
dropped, a batch stays readable until its reader moves on, iterators expire, and moto keeps no
record of replaced items."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError
from moto.dynamodb.models.dynamo_type import Item
from moto.dynamodb.models.table import StreamRecord

from knowledge_local.account import aws_client
from knowledge_local.emulator.aws_server import AwsServer
from knowledge_local.emulator.moto_patches import stream_retention

CREATE_TABLE = {
    "BillingMode": "PAY_PER_REQUEST",
    "AttributeDefinitions": [{"AttributeName": "PK", "AttributeType": "S"}],
    "KeySchema": [{"AttributeName": "PK", "KeyType": "HASH"}],
    "StreamSpecification": {"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
}


class _Table:
    """A fresh streamed table on the local AWS endpoint (moto's state lives as long as the process)."""

    def __init__(self, aws: AwsServer) -> None:
        self.name = f"retained-{uuid.uuid4().hex[:12]}"
        self.client = aws_client("dynamodb", aws.url)
        self.client.create_table(TableName=self.name, **CREATE_TABLE)

    def put(self, *keys: str) -> None:
        for key in keys:
            self.client.put_item(TableName=self.name, Item={"PK": {"S": key}})


class _Stream:
    """The table's stream, read through the AWS endpoint."""

    def __init__(self, aws: AwsServer, table: _Table) -> None:
        self.client = aws_client("dynamodbstreams", aws.url)
        self.arn = table.client.describe_table(TableName=table.name)["Table"]["LatestStreamArn"]
        description = self.client.describe_stream(StreamArn=self.arn)["StreamDescription"]
        self.shard = description["Shards"][0]["ShardId"]

    def iterator(self, kind: str, sequence_number: str | None = None) -> str:
        arguments = {"StreamArn": self.arn, "ShardId": self.shard, "ShardIteratorType": kind}
        if sequence_number is not None:
            arguments["SequenceNumber"] = sequence_number
        return str(self.client.get_shard_iterator(**arguments)["ShardIterator"])

    def read(self, iterator: str) -> tuple[list[str], list[str], str]:
        """One ``GetRecords``: the keys and sequence numbers read, and the next iterator."""
        answer = self.client.get_records(ShardIterator=iterator, Limit=1000)
        records = answer["Records"]
        keys = [record["dynamodb"]["Keys"]["PK"]["S"] for record in records]
        return keys, [record["dynamodb"]["SequenceNumber"] for record in records], answer["NextShardIterator"]


@pytest.fixture(scope="module")
def aws() -> Iterator[AwsServer]:
    with AwsServer(port=0) as server:
        yield server


@pytest.fixture
def table(aws: AwsServer) -> _Table:
    return _Table(aws)


@pytest.fixture
def stream(aws: AwsServer, table: _Table) -> _Stream:
    return _Stream(aws, table)


def test_stream_retention_drops_records_once_their_reader_moved_past_them(
    table: _Table, stream: _Stream
) -> None:
    reader = stream.iterator("TRIM_HORIZON")
    table.put("one", "two", "three")
    first, numbers, reader = stream.read(reader)
    _, _, reader = stream.read(reader)  # the reader moves past its batch

    table.put("four")
    late_keys, _, _ = stream.read(stream.iterator("TRIM_HORIZON"))
    keys, later_numbers, _ = stream.read(reader)

    assert first == ["one", "two", "three"]
    assert late_keys == ["four"]
    assert keys == ["four"]
    assert int(later_numbers[0]) == int(numbers[-1]) + 1


def test_stream_retention_keeps_a_batch_until_its_reader_reads_on(table: _Table, stream: _Stream) -> None:
    reader = stream.iterator("TRIM_HORIZON")
    table.put("one", "two", "three")
    _, numbers, _ = stream.read(reader)  # read, then failed: its next iterator is never read

    again, _, _ = stream.read(stream.iterator("AT_SEQUENCE_NUMBER", numbers[1]))

    assert again == ["two", "three"]


def test_stream_retention_refuses_a_position_whose_records_were_dropped(
    table: _Table, stream: _Stream
) -> None:
    reader = stream.iterator("TRIM_HORIZON")
    table.put("one", "two")
    _, numbers, reader = stream.read(reader)
    stream.read(reader)

    with pytest.raises(ClientError) as refused:
        stream.read(stream.iterator("AT_SEQUENCE_NUMBER", numbers[0]))

    assert refused.value.response["Error"]["Code"] == "TrimmedDataAccessException"


def test_stream_retention_keeps_every_record_while_nobody_reads(aws: AwsServer, table: _Table) -> None:
    table.put("one", "two", "three")
    stream = _Stream(aws, table)

    keys, _, _ = stream.read(stream.iterator("TRIM_HORIZON"))

    assert keys == ["one", "two", "three"]


def test_stream_retention_expires_iterators_after_their_lifetime(
    stream: _Stream, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(stream_retention, "ITERATOR_LIFETIME_SECONDS", 0.0)
    reader = stream.iterator("TRIM_HORIZON")

    with pytest.raises(ClientError) as refused:
        stream.read(reader)

    assert refused.value.response["Error"]["Code"] == "ExpiredIteratorException"


def test_aws_server_keeps_no_record_of_replaced_items_or_read_records(table: _Table, stream: _Stream) -> None:
    reader = stream.iterator("TRIM_HORIZON")
    for version in range(50):
        table.client.put_item(
            TableName=table.name, Item={"PK": {"S": "same"}, "version": {"N": str(version)}}
        )
        _, _, reader = stream.read(reader)

    tracked: list[Any] = [*Item.instances_tracked, *StreamRecord.instances_tracked]  # type: ignore[attr-defined]

    assert tracked == []
