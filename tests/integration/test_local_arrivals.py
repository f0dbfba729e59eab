"""Arrival signals: moto tells the runtime when a message or a stream record arrives
(``moto_patches.arrivals``), and a poller told so polls at once instead of after its idle wait."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from knowledge_local.account import aws_client
from knowledge_local.emulator.aws_server import AwsServer
from knowledge_local.emulator.moto_patches import arrivals
from knowledge_local.emulator.pollers.poller import Poller

IDLE_SECONDS = 30.0


class _Counter:
    def __init__(self) -> None:
        self.count = 0
        self._lock = threading.Lock()

    def __call__(self) -> None:
        with self._lock:
            self.count += 1


class _SlowPoller(Poller):
    """Polls, then asks to wait ``IDLE_SECONDS``; records when each poll ran."""

    def __init__(self) -> None:
        super().__init__("slow")
        self.polls: list[float] = []
        self.polled = threading.Event()

    def poll_once(self) -> float:
        self.polls.append(time.monotonic())
        self.polled.set()
        return IDLE_SECONDS


@pytest.fixture(scope="module")
def aws() -> Iterator[AwsServer]:
    with AwsServer(port=0) as server:
        yield server


def test_on_message_is_called_for_each_message_of_its_queue_only(aws: AwsServer) -> None:
    sqs = aws_client("sqs", aws.url)
    watched = sqs.create_queue(QueueName="watched")["QueueUrl"]
    other = sqs.create_queue(QueueName="other")["QueueUrl"]
    counter = _Counter()
    stop = arrivals.on_message("watched", counter)

    sqs.send_message(QueueUrl=watched, MessageBody="one")
    sqs.send_message_batch(
        QueueUrl=watched, Entries=[{"Id": "a", "MessageBody": "two"}, {"Id": "b", "MessageBody": "three"}]
    )
    sqs.send_message(QueueUrl=other, MessageBody="not watched")
    stop()
    sqs.send_message(QueueUrl=watched, MessageBody="after stop")

    assert counter.count == 3


def test_on_stream_record_is_called_for_each_write_of_its_table(aws: AwsServer) -> None:
    dynamodb: Any = aws_client("dynamodb", aws.url)
    dynamodb.create_table(
        TableName="streamed-arrivals",
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": "PK", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "PK", "KeyType": "HASH"}],
        StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_IMAGE"},
    )
    counter = _Counter()
    stop = arrivals.on_stream_record("streamed-arrivals", counter)

    dynamodb.put_item(TableName="streamed-arrivals", Item={"PK": {"S": "a"}})
    dynamodb.transact_write_items(
        TransactItems=[
            {"Put": {"TableName": "streamed-arrivals", "Item": {"PK": {"S": "b"}}}},
            {"Put": {"TableName": "streamed-arrivals", "Item": {"PK": {"S": "c"}}}},
        ]
    )
    stop()
    dynamodb.put_item(TableName="streamed-arrivals", Item={"PK": {"S": "d"}})

    assert counter.count == 3


def test_poller_woken_during_its_idle_wait_polls_at_once() -> None:
    poller = _SlowPoller()
    poller.start()
    try:
        assert poller.polled.wait(5)
        poller.polled.clear()

        poller.wake()

        assert poller.polled.wait(5), "the wake did not end the idle wait"
        assert poller.polls[1] - poller.polls[0] < IDLE_SECONDS / 2
    finally:
        poller.stop()


def test_poller_stop_ends_its_idle_wait() -> None:
    poller = _SlowPoller()
    poller.start()
    assert poller.polled.wait(5)
    started = time.monotonic()

    poller.stop(timeout=5)

    assert time.monotonic() - started < 5
    assert len(poller.polls) == 1
