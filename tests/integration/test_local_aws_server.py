"""The local AWS endpoint: moto's server, with DynamoDB requests serialized."""

from __future__ import annotations

import socket
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from botocore.exceptions import ClientError

from knowledge_local.aws_server import AwsServer
from knowledge_local.provisioning import aws_client

TABLE = {
    "TableName": "concurrency",
    "BillingMode": "PAY_PER_REQUEST",
    "AttributeDefinitions": [{"AttributeName": "PK", "AttributeType": "S"}],
    "KeySchema": [{"AttributeName": "PK", "KeyType": "HASH"}],
}


def _failing_transactions(client: Any, count: int) -> int:
    failed = 0
    for number in range(count):
        try:
            client.transact_write_items(
                TransactItems=[
                    {"Put": {"TableName": "concurrency", "Item": {"PK": {"S": f"tx-{number}"}}}},
                    {
                        "ConditionCheck": {
                            "TableName": "concurrency",
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


def test_aws_server_port_in_use_raises_os_error() -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]

        with pytest.raises(OSError, match="in use"):
            AwsServer(port=port).start()
