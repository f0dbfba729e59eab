"""The local event source mappings over moto's server: the stream and queue pollers invoke a
recording function (tests/fixtures/pollers) as Lambda would, with its FilterCriteria, partial
batch responses and retries."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest
from botocore.exceptions import ClientError

from knowledge_local.account import aws_client
from knowledge_local.emulator.aws_server import AwsServer
from knowledge_local.emulator.pollers.poller import Poller
from knowledge_local.emulator.pollers.queue_poller import QueuePoller
from knowledge_local.emulator.pollers.stream_poller import StreamPoller
from knowledge_local.emulator.provisioning import Provisioned, provision
from knowledge_local.emulator.template.resources import load_stack
from tests.support.inline_invoker import InlineInvoker
from tests.support.recorder import RECORDER, Record

TEMPLATE = Path(__file__).resolve().parents[1] / "fixtures" / "pollers" / "template.yaml"
T = TypeVar("T")


@dataclass
class World:
    provisioned: Provisioned
    dynamodb: Any
    sqs: Any


def eventually(probe: Callable[[], T | None], timeout: float = 20.0) -> T:
    deadline = time.monotonic() + timeout
    while not (answer := probe()):
        assert time.monotonic() < deadline, "no answer in time"
        time.sleep(0.05)
    return answer


@pytest.fixture(scope="module")
def world() -> Iterator[World]:
    stack = load_stack(TEMPLATE)
    with AwsServer(port=0) as aws:
        provisioned = provision(stack, aws.url)
        pollers: list[Poller] = []
        invoker = InlineInvoker()  # the recorder is this process's
        sqs = aws_client("sqs", aws.url)

        def send_discarded(record: dict[str, Any]) -> None:
            sqs.send_message(QueueUrl=provisioned.queues["Discarded"].url, MessageBody=json.dumps(record))

        for source in stack.event_sources:
            poller: Poller
            if source.kind == "dynamodb":
                stream = provisioned.tables[source.source].stream_arn
                assert stream is not None
                poller = StreamPoller(
                    source, stream, aws_client("dynamodbstreams", aws.url), invoker, on_failure=send_discarded
                )
            else:
                queue = provisioned.queues[source.source]
                poller = QueuePoller(source, queue.url, queue.arn, sqs, invoker)
            poller.start()
            pollers.append(poller)
        try:
            yield World(provisioned, aws_client("dynamodb", aws.url), sqs)
        finally:
            for poller in pollers:
                poller.stop()


@pytest.fixture(autouse=True)
def _fresh_recorder() -> Iterator[None]:
    RECORDER.reset()
    yield
    RECORDER.reset()


# -- streams --------------------------------------------------------------------------------------


def _write(world: World, partition: str, *sort_keys: str) -> None:
    """One BatchWriteItem, so the records land in the stream together."""
    table = world.provisioned.tables["Table"].name
    world.dynamodb.batch_write_item(
        RequestItems={
            table: [{"PutRequest": {"Item": {"PK": {"S": partition}, "SK": {"S": key}}}} for key in sort_keys]
        }
    )


def _sort_keys(partition: str) -> list[str]:
    return [
        record["dynamodb"]["Keys"]["SK"]["S"]
        for record in RECORDER.records("StreamRecorder")
        if record["dynamodb"]["Keys"]["PK"]["S"] == partition
    ]


def test_stream_poller_delivers_lambda_dynamodb_records(world: World) -> None:
    _write(world, "delivered", "A")

    record = eventually(lambda: next(iter(RECORDER.records("StreamRecorder")), None))

    assert record["eventSource"] == "aws:dynamodb"
    assert record["eventName"] == "INSERT"
    assert record["eventVersion"] == "1.1"
    assert record["eventSourceARN"] == world.provisioned.tables["Table"].stream_arn
    assert record["dynamodb"]["NewImage"] == {"PK": {"S": "delivered"}, "SK": {"S": "A"}}
    assert isinstance(record["dynamodb"]["ApproximateCreationDateTime"], int)


def test_stream_poller_skips_records_its_filter_rejects(world: World) -> None:
    _write(world, "filtered", "SKIP", "KEEP")

    eventually(lambda: "KEEP" in _sort_keys("filtered"))

    assert _sort_keys("filtered") == ["KEEP"]


def test_stream_poller_retries_from_the_first_failed_record(world: World) -> None:
    failed_once: set[str] = set()

    def fails(function: str, record: Record) -> bool:
        key = record["dynamodb"]["Keys"]
        if key["PK"]["S"] == "partial" and key["SK"]["S"] == "B" and "B" not in failed_once:
            failed_once.add("B")
            return True
        return False

    RECORDER.fails = fails
    _write(world, "partial", "A", "B", "C")

    eventually(lambda: len(_sort_keys("partial")) >= 5)

    assert _sort_keys("partial") == ["A", "B", "C", "B", "C"]


def test_stream_poller_survives_a_function_that_raises(world: World) -> None:
    raised: list[bool] = []

    def raises(function: str, records: list[Record]) -> bool:
        if not raised:
            raised.append(True)
            return True
        return False

    RECORDER.raises = raises
    _write(world, "raising", "A")
    eventually(lambda: len(_sort_keys("raising")) >= 2)
    _write(world, "after-raising", "A")

    eventually(lambda: _sort_keys("after-raising"))

    assert _sort_keys("raising") == ["A", "A"]


def _failed_transaction(world: World, partition: str) -> None:
    """A transaction that puts an item, then fails its condition: moto rolls it back."""
    table = world.provisioned.tables["Table"].name
    absent = {"PK": {"S": "absent"}, "SK": {"S": "absent"}}
    with pytest.raises(ClientError, match="TransactionCanceledException"):
        world.dynamodb.transact_write_items(
            TransactItems=[
                {"Put": {"TableName": table, "Item": {"PK": {"S": partition}, "SK": {"S": "A"}}}},
                {
                    "ConditionCheck": {
                        "TableName": table,
                        "Key": absent,
                        "ConditionExpression": "attribute_exists(PK)",
                    }
                },
            ]
        )


def test_stream_poller_delivers_writes_after_a_rolled_back_transaction(world: World) -> None:
    _write(world, "before-rollback", "A")
    eventually(lambda: _sort_keys("before-rollback"))
    _failed_transaction(world, "rolled-back")

    _write(world, "after-rollback", "A")

    eventually(lambda: _sort_keys("after-rollback"))
    assert _sort_keys("rolled-back") == []


def test_stream_poller_discards_a_batch_after_its_retries_to_the_on_failure_queue(world: World) -> None:
    RECORDER.raises = lambda function, records: any(
        record["dynamodb"]["Keys"]["PK"]["S"] == "hopeless" for record in records
    )
    _write(world, "hopeless", "A")
    discarded = world.provisioned.queues["Discarded"].url

    messages = eventually(lambda: world.sqs.receive_message(QueueUrl=discarded).get("Messages"))
    _write(world, "after-hopeless", "A")
    eventually(lambda: _sort_keys("after-hopeless"))

    failure = json.loads(messages[0]["Body"])
    assert failure["requestContext"]["condition"] == "RetryAttemptsExhausted"
    assert failure["DDBStreamBatchInfo"]["batchSize"] == 1
    assert failure["DDBStreamBatchInfo"]["streamArn"] == world.provisioned.tables["Table"].stream_arn
    assert _sort_keys("hopeless") == ["A", "A", "A"]  # the first try and MaximumRetryAttempts: 2


# -- queues ---------------------------------------------------------------------------------------


def _bodies(kind: str) -> list[Record]:
    return [
        record for record in RECORDER.records("QueueRecorder") if json.loads(record["body"])["kind"] == kind
    ]


def _queue_empty(world: World, logical_id: str) -> bool:
    url = world.provisioned.queues[logical_id].url
    attributes = world.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    return (
        attributes["ApproximateNumberOfMessages"]
        == attributes["ApproximateNumberOfMessagesNotVisible"]
        == "0"
    )


def _send(world: World, *bodies: dict[str, Any], **extra: Any) -> None:
    url = world.provisioned.queues["Inbox"].url
    world.sqs.send_message_batch(
        QueueUrl=url,
        Entries=[
            {"Id": str(number), "MessageBody": json.dumps(body), **extra}
            for number, body in enumerate(bodies)
        ],
    )


def test_queue_poller_delivers_lambda_sqs_records_and_deletes_them(world: World) -> None:
    _send(world, {"kind": "work"}, MessageAttributes={"trace": {"DataType": "String", "StringValue": "t-1"}})

    record = eventually(lambda: next(iter(_bodies("work")), None))
    eventually(lambda: _queue_empty(world, "Inbox"))

    assert record["eventSource"] == "aws:sqs"
    assert record["eventSourceARN"] == world.provisioned.queues["Inbox"].arn
    assert record["attributes"]["ApproximateReceiveCount"] == "1"
    assert record["messageAttributes"] == {
        "trace": {"stringValue": "t-1", "stringListValues": [], "binaryListValues": [], "dataType": "String"}
    }


def test_queue_poller_redelivers_only_the_failed_message(world: World) -> None:
    RECORDER.fails = lambda function, record: (
        json.loads(record["body"])["kind"] == "flaky"
        and record["attributes"]["ApproximateReceiveCount"] == "1"
    )
    _send(world, {"kind": "steady"}, {"kind": "flaky"})

    eventually(lambda: len(_bodies("flaky")) >= 2)
    eventually(lambda: _queue_empty(world, "Inbox"))

    assert [record["attributes"]["ApproximateReceiveCount"] for record in _bodies("flaky")] == ["1", "2"]
    assert len(_bodies("steady")) == 1


def test_queue_poller_failing_message_moves_to_the_dead_letter_queue(world: World) -> None:
    RECORDER.fails = lambda function, record: json.loads(record["body"])["kind"] == "poison"
    _send(world, {"kind": "poison"})
    dead_letters = world.provisioned.queues["DeadLetters"].url

    moved = eventually(lambda: world.sqs.receive_message(QueueUrl=dead_letters).get("Messages"))

    assert json.loads(moved[0]["Body"]) == {"kind": "poison"}
    assert len(_bodies("poison")) == 2  # maxReceiveCount


def test_queue_poller_deletes_filtered_messages_without_an_invocation(world: World) -> None:
    _send(world, {"kind": "noise"})
    eventually(lambda: _queue_empty(world, "Inbox"))
    _send(world, {"kind": "signal"})

    eventually(lambda: _bodies("signal"))

    assert _bodies("noise") == []
