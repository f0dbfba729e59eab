"""The local AWS endpoint: moto's server, with DynamoDB requests serialized and streams kept whole
across rolled-back transactions."""

from __future__ import annotations

import socket
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from botocore.exceptions import ClientError

from knowledge.adapters.dynamodb.knowledge_store import DynamoDBKnowledgeStore
from knowledge.domain.models import KnowledgeItem, Scope, Source
from knowledge.errors import ConflictError
from knowledge_local.account import aws_client
from knowledge_local.emulator.aws_server import AwsServer
from tests.support.template import create_table_kwargs

TABLE = {
    "TableName": "concurrency",
    "BillingMode": "PAY_PER_REQUEST",
    "AttributeDefinitions": [{"AttributeName": "PK", "AttributeType": "S"}],
    "KeySchema": [{"AttributeName": "PK", "KeyType": "HASH"}],
}


STREAMED_TABLE = {
    **TABLE,
    "TableName": "streamed",
    "StreamSpecification": {"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
}
KNOWLEDGE_TABLE = "knowledge-local"


class _OpenIterator:
    """One shard iterator of a table's stream, opened at ``TRIM_HORIZON`` and read onwards."""

    def __init__(self, aws: AwsServer, table_name: str) -> None:
        self._streams = aws_client("dynamodbstreams", aws.url)
        arn = aws_client("dynamodb", aws.url).describe_table(TableName=table_name)["Table"]["LatestStreamArn"]
        shard = self._streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"][0]["ShardId"]
        self._iterator = self._streams.get_shard_iterator(
            StreamArn=arn, ShardId=shard, ShardIteratorType="TRIM_HORIZON"
        )["ShardIterator"]

    def read(self) -> list[dict[str, Any]]:
        """Every record since the last read."""
        records: list[dict[str, Any]] = []
        while True:
            answer = self._streams.get_records(ShardIterator=self._iterator, Limit=1000)
            self._iterator = answer["NextShardIterator"]
            records.extend(answer["Records"])
            if not answer["Records"]:
                return records


def _failing_transactions(client: Any, count: int, table: str = "concurrency") -> int:
    """Run ``count`` transactions that put an item, then fail a condition (moto rolls them back)."""
    failed = 0
    for number in range(count):
        try:
            client.transact_write_items(
                TransactItems=[
                    {"Put": {"TableName": table, "Item": {"PK": {"S": f"tx-{number}"}}}},
                    {
                        "ConditionCheck": {
                            "TableName": table,
                            "Key": {"PK": {"S": "absent"}},
                            "ConditionExpression": "attribute_exists(PK)",
                        }
                    },
                ]
            )
        except ClientError:
            failed += 1
    return failed


def _puts(client: Any, writer: int, count: int) -> None:
    for number in range(count):
        client.put_item(TableName="concurrency", Item={"PK": {"S": f"writer-{writer}-{number}"}})


def test_aws_server_failed_transactions_never_undo_concurrent_writes() -> None:
    with AwsServer(port=0) as aws:
        clients = [aws_client("dynamodb", aws.url) for _ in range(4)]
        clients[0].create_table(**TABLE)

        with ThreadPoolExecutor(max_workers=4) as pool:
            failures = [pool.submit(_failing_transactions, clients[number], 40) for number in (0, 1)]
            writes = [pool.submit(_puts, clients[number], number, 40) for number in (2, 3)]
            for future in writes:
                future.result()
        stored = clients[0].scan(TableName="concurrency", Select="COUNT")["Count"]

    assert [future.result() for future in failures] == [40, 40]
    assert stored == 80


def test_aws_server_failed_transaction_keeps_open_stream_iterators_reading() -> None:
    with AwsServer(port=0) as aws:
        client = aws_client("dynamodb", aws.url)
        client.create_table(**STREAMED_TABLE)
        stream = _OpenIterator(aws, "streamed")
        client.put_item(TableName="streamed", Item={"PK": {"S": "before"}})
        first = stream.read()

        assert _failing_transactions(client, 1, table="streamed") == 1
        client.put_item(TableName="streamed", Item={"PK": {"S": "after"}})
        second = stream.read()

    assert [record["dynamodb"]["Keys"]["PK"]["S"] for record in first] == ["before"]
    assert [record["dynamodb"]["Keys"]["PK"]["S"] for record in second] == ["after"]
    assert int(second[0]["dynamodb"]["SequenceNumber"]) == int(first[0]["dynamodb"]["SequenceNumber"]) + 1


def _race_creators(stores: list[DynamoDBKnowledgeStore], clients: list[Any], base_id: str) -> list[Any]:
    """Both stores create an item with one new ``external_id``; each waits at its transaction until
    both have checked that the id is free, so one transaction fails on the id's guard."""
    both_checked = threading.Barrier(len(stores))

    def hold(**_: Any) -> None:
        both_checked.wait(timeout=30)

    for client in clients:
        client.meta.events.register("before-call.dynamodb.TransactWriteItems", hold)

    def create(store: DynamoDBKnowledgeStore) -> Any:
        try:
            return store.create_item(
                "tenant-a",
                base_id,
                title="Shared",
                content="one document, two writers",
                source=Source(),
                external_id="shared.md",
                publish=True,
            )[0]
        except ConflictError as error:
            return error

    with ThreadPoolExecutor(max_workers=len(stores)) as pool:
        return list(pool.map(create, stores))


def test_aws_server_racing_upserts_of_one_external_id_leave_the_stream_flowing() -> None:
    with AwsServer(port=0) as aws:
        setup_client = aws_client("dynamodb", aws.url)
        setup_client.create_table(**create_table_kwargs("KnowledgeTable", KNOWLEDGE_TABLE))
        setup = DynamoDBKnowledgeStore(KNOWLEDGE_TABLE, dynamodb_client=setup_client)
        base = setup.create_base("tenant-a", name="Race", owner_id="owner", scope=Scope.TENANT, team_id=None)
        stream = _OpenIterator(aws, KNOWLEDGE_TABLE)
        clients = [aws_client("dynamodb", aws.url) for _ in range(2)]
        stores = [DynamoDBKnowledgeStore(KNOWLEDGE_TABLE, dynamodb_client=client) for client in clients]

        outcomes = _race_creators(stores, clients, base.knowledge_base_id)
        later, _ = setup.create_item(
            "tenant-a",
            base.knowledge_base_id,
            title="Later",
            content="published after the race",
            source=Source(),
            external_id="later.md",
            publish=True,
        )
        streamed = {
            record["dynamodb"]["NewImage"]["knowledge_item_id"]["S"]
            for record in stream.read()
            if "knowledge_item_id" in record["dynamodb"].get("NewImage", {})
        }

    winners = [outcome for outcome in outcomes if isinstance(outcome, KnowledgeItem)]
    assert len(winners) == 1
    assert sum(isinstance(outcome, ConflictError) for outcome in outcomes) == 1
    assert streamed == {winners[0].knowledge_item_id, later.knowledge_item_id}


def test_aws_server_port_in_use_raises_os_error() -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]

        with pytest.raises(OSError, match="in use"):
            AwsServer(port=port).start()
