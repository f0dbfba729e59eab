"""The local runtime's state on disk (``knowledge_local.emulator.durable_state``) on a real moto server: what
was acknowledged before a crash comes back exactly, whatever mix of journal and snapshot holds it.

A crash is simulated by closing the state without compacting (every acknowledged write is already
synced then, as after ``kill -9``) and emptying moto's table and queues, as a fresh process has them.
"""

from __future__ import annotations

import stat
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from knowledge_local.account import aws_client
from knowledge_local.emulator import snapshot
from knowledge_local.emulator.aws_server import AwsServer
from knowledge_local.emulator.durable_state import DurableState, Restored
from knowledge_local.emulator.journal import Record, encode, segments
from tests.support.template import create_table_kwargs


@dataclass
class Local:
    aws: AwsServer
    dynamodb: Any
    sqs: Any
    table: str
    kept_queue: str
    other_queue: str

    def queue_url(self, name: str) -> str:
        url: str = self.sqs.get_queue_url(QueueName=name)["QueueUrl"]
        return url

    def fresh(self) -> None:
        """Empty the table and the queues, as a new process finds them."""
        self.dynamodb.delete_table(TableName=self.table)
        self.dynamodb.create_table(**create_table_kwargs("KnowledgeTable", self.table))
        for name in (self.kept_queue, self.other_queue):
            self.sqs.delete_queue(QueueUrl=self.queue_url(name))
            self.sqs.create_queue(QueueName=name)

    def restore(self, directory: Path, **options: Any) -> tuple[DurableState, Restored]:
        state = DurableState(directory, **options)
        restored = state.restore(self.aws, tables=[self.table], kept_queues=[self.kept_queue])
        return state, restored

    def items(self) -> list[dict[str, Any]]:
        found = self.dynamodb.scan(TableName=self.table, ConsistentRead=True)["Items"]
        return sorted(found, key=lambda item: (item["PK"]["S"], item["SK"]["S"]))

    def messages(self, name: str) -> list[tuple[str, str, dict[str, Any]]]:
        received = self.sqs.receive_message(
            QueueUrl=self.queue_url(name), MaxNumberOfMessages=10, MessageAttributeNames=["All"]
        ).get("Messages", [])
        return sorted(
            (message["MessageId"], message["Body"], message.get("MessageAttributes", {}))
            for message in received
        )


@pytest.fixture
def local() -> Iterator[Local]:
    with AwsServer(port=0) as aws:
        dynamodb, sqs = aws_client("dynamodb", aws.url), aws_client("sqs", aws.url)
        suffix = uuid.uuid4().hex[:8]
        table, kept, other = f"durable-{suffix}", f"ingest-{suffix}", f"work-{suffix}"
        dynamodb.create_table(**create_table_kwargs("KnowledgeTable", table))
        sqs.create_queue(QueueName=kept)
        sqs.create_queue(QueueName=other)
        yield Local(aws, dynamodb, sqs, table, kept, other)


def _item(pk: str, **attributes: Any) -> dict[str, Any]:
    return {"PK": {"S": pk}, "SK": {"S": "META"}, **attributes}


def _mixed_writes(local: Local) -> None:
    """One of each kind of write, a non-idempotent one among them."""
    client, table = local.dynamodb, local.table
    client.put_item(TableName=table, Item=_item("a", text={"S": "first"}, blob={"B": b"\x00\xff"}))
    client.put_item(TableName=table, Item=_item("gone", text={"S": "forgotten text"}))
    for _ in range(3):
        client.update_item(
            TableName=table,
            Key={"PK": {"S": "a"}, "SK": {"S": "META"}},
            UpdateExpression="ADD hits :one",
            ExpressionAttributeValues={":one": {"N": "1"}},
        )
    client.delete_item(TableName=table, Key={"PK": {"S": "gone"}, "SK": {"S": "META"}})
    client.batch_write_item(
        RequestItems={table: [{"PutRequest": {"Item": _item(f"batch-{number}")}} for number in range(3)]}
    )
    client.transact_write_items(
        TransactItems=[
            {"Put": {"TableName": table, "Item": _item("t1")}},
            {
                "Update": {
                    "TableName": table,
                    "Key": {"PK": {"S": "a"}, "SK": {"S": "META"}},
                    "UpdateExpression": "SET #s = :s",
                    "ExpressionAttributeNames": {"#s": "status"},
                    "ExpressionAttributeValues": {":s": {"S": "revoked"}},
                }
            },
        ]
    )
    with pytest.raises(ClientError):  # refused: not journaled, not applied
        client.transact_write_items(
            TransactItems=[
                {"Put": {"TableName": table, "Item": _item("never")}},
                {
                    "ConditionCheck": {
                        "TableName": table,
                        "Key": {"PK": {"S": "absent"}, "SK": {"S": "META"}},
                        "ConditionExpression": "attribute_exists(PK)",
                    }
                },
            ]
        )


def test_durable_state_replays_every_acknowledged_write_after_a_crash(local: Local, tmp_path: Path) -> None:
    state, first = local.restore(tmp_path)
    _mixed_writes(local)
    before = local.items()
    state.close()  # a crash: no compaction
    local.fresh()

    again, restored = local.restore(tmp_path)
    after = local.items()
    again.close()

    assert first == Restored()
    assert (restored.writes, restored.failed) == (8, 0)
    assert after == before
    assert not any(item["PK"]["S"] in {"gone", "never"} for item in after)
    assert [item.get("hits") for item in after if item["PK"]["S"] == "a"] == [{"N": "3"}]


def test_durable_state_snapshot_and_later_journal_together_give_the_state_back(
    local: Local, tmp_path: Path
) -> None:
    state, _ = local.restore(tmp_path)
    _mixed_writes(local)
    state.compact()
    local.dynamodb.update_item(
        TableName=local.table,
        Key={"PK": {"S": "a"}, "SK": {"S": "META"}},
        UpdateExpression="ADD hits :one",
        ExpressionAttributeValues={":one": {"N": "1"}},
    )
    before = local.items()
    state.close()
    local.fresh()

    again, restored = local.restore(tmp_path)
    after = local.items()
    again.close()

    assert (restored.items, restored.writes) == (len(before), 1)
    assert after == before


def test_durable_state_segment_left_behind_by_a_compaction_is_not_applied_twice(
    local: Local, tmp_path: Path
) -> None:
    state, _ = local.restore(tmp_path)
    _mixed_writes(local)
    kept = {path.name: path.read_bytes() for _, path in segments(tmp_path)}
    state.compact()
    for name, content in kept.items():  # the compaction "crashed" before removing the old segments
        (tmp_path / name).write_bytes(content)
    before = local.items()
    state.close()
    local.fresh()

    again, restored = local.restore(tmp_path)
    after = local.items()
    again.close()

    assert restored.writes == 0
    assert after == before


def test_durable_state_drops_a_torn_last_record_and_keeps_the_rest(local: Local, tmp_path: Path) -> None:
    state, _ = local.restore(tmp_path)
    _mixed_writes(local)
    before = local.items()
    state.close()
    _, newest = segments(tmp_path)[-1]
    torn = encode(
        Record({"kind": "dynamodb", "target": "DynamoDB_20120810.PutItem", "region": "us-east-1"}, b"{")
    )
    with newest.open("ab") as segment:
        segment.write(torn[:-3])
    local.fresh()

    again, restored = local.restore(tmp_path)
    after = local.items()
    again.close()

    assert restored.torn_tail
    assert after == before


def test_durable_state_keeps_the_messages_of_kept_queues_only(local: Local, tmp_path: Path) -> None:
    state, _ = local.restore(tmp_path)
    kept_url, other_url = local.queue_url(local.kept_queue), local.queue_url(local.other_queue)
    attributes = {
        "Authorization": {"DataType": "String", "StringValue": "Bearer kn_x"},
        "Raw": {"DataType": "Binary", "BinaryValue": b"\x00\x01"},
    }
    sent = [
        local.sqs.send_message(
            QueueUrl=kept_url, MessageBody=f"document {number}", MessageAttributes=attributes
        )
        for number in range(3)
    ]
    local.sqs.send_message_batch(QueueUrl=kept_url, Entries=[{"Id": "b", "MessageBody": "batched"}])
    local.sqs.send_message(QueueUrl=other_url, MessageBody="rebuilt from the table")
    received = local.sqs.receive_message(QueueUrl=kept_url, MaxNumberOfMessages=10)["Messages"]
    done = next(message for message in received if message["MessageId"] == sent[0]["MessageId"])
    local.sqs.delete_message(QueueUrl=kept_url, ReceiptHandle=done["ReceiptHandle"])
    state.compact()
    local.sqs.send_message(QueueUrl=kept_url, MessageBody="after the snapshot")
    state.close()
    local.fresh()

    again, restored = local.restore(tmp_path)
    kept, other = local.messages(local.kept_queue), local.messages(local.other_queue)
    again.close()

    assert restored.messages == 4
    assert sorted(body for _, body, _ in kept) == [
        "after the snapshot",
        "batched",
        "document 1",
        "document 2",
    ]
    assert {message_id for message_id, _, _ in kept} >= {sent[1]["MessageId"], sent[2]["MessageId"]}
    assert [attrs for _, body, attrs in kept if body == "document 1"] == [attributes]
    assert other == []


def test_durable_state_large_journal_is_compacted_in_the_background(local: Local, tmp_path: Path) -> None:
    state, _ = local.restore(tmp_path, compact_bytes=2048)
    for number in range(40):
        local.dynamodb.put_item(TableName=local.table, Item=_item(f"k{number}", text={"S": "x" * 200}))
    before = local.items()
    state.close()  # waits for a compaction under way
    saved = snapshot.load(tmp_path, legacy_table=local.table)
    local.fresh()

    again, restored = local.restore(tmp_path)
    after = local.items()
    again.close()

    assert saved.journal_through > 1
    assert restored.items > 0
    assert after == before


def test_durable_state_files_are_readable_by_their_owner_only(local: Local, tmp_path: Path) -> None:
    state, _ = local.restore(tmp_path)
    local.dynamodb.put_item(TableName=local.table, Item=_item("a"))
    state.compact()
    state.close()

    files = [tmp_path / snapshot.SNAPSHOT_FILE, *(path for _, path in segments(tmp_path))]

    assert len(files) >= 2
    assert {stat.S_IMODE(path.stat().st_mode) for path in files} == {0o600}
