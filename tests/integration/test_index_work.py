"""Large revisions indexed in parts through the index work queue (moto SQS and DynamoDB Streams).

The stream consumer (``IndexerFunction``'s handler) only enqueues ``IndexWork``; the work consumer
(``IndexWorkerFunction``'s handler) is fed the queue's messages as Lambda SQS events, one at a time
(its ``BatchSize``), and deletes the ones it did not report failed, as the event source mapping does.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from knowledge.adapters.runtime_switch import StaticRuntimeSwitch
from knowledge.adapters.sqs_work_queue import SqsWorkQueue
from knowledge.bootstrap import build_container, use_container
from knowledge.domain.models import KnowledgeItem, Permission, Principal, Source
from knowledge.domain.retrieval.index_work import FANOUT_WINDOW, IndexWork, part_count
from tests.support.events import lambda_context
from tests.support.queues import sqs_event, sqs_record
from tests.support.rest import SearchWorld, found_items, load_handler, new_world
from tests.support.store import REGION
from tests.support.streams import StreamReader, run_indexer

LARGE_CHARS = 4_000_000
TAIL_WORD = "quetzalcoatl"


class WorkQueue:
    """The moto index work queue and a poller that feeds its messages to the work consumer."""

    def __init__(self) -> None:
        self.sqs = boto3.client("sqs", region_name=REGION)
        self.url = self.sqs.create_queue(QueueName="knowledge-test-index-work")["QueueUrl"]
        self.delivered: list[str] = []
        """Bodies of every message the consumer took, in order."""

    def deliver(self, body: str) -> list[str]:
        """Invoke the work consumer with one message body; the failed message ids."""
        answer = load_handler("index_worker")(sqs_event([sqs_record(body)]), lambda_context())
        self.delivered.append(body)
        return [entry["itemIdentifier"] for entry in answer["batchItemFailures"]]

    def poll_once(self) -> bool:
        """Deliver the next message; False when the queue is empty."""
        messages = self.sqs.receive_message(QueueUrl=self.url, MaxNumberOfMessages=1).get("Messages", [])
        if not messages:
            return False
        assert self.deliver(messages[0]["Body"]) == []
        self.sqs.delete_message(QueueUrl=self.url, ReceiptHandle=messages[0]["ReceiptHandle"])
        return True

    def drain(self) -> int:
        delivered = 0
        while self.poll_once():
            delivered += 1
        return delivered

    def waiting(self) -> int:
        attributes = self.sqs.get_queue_attributes(
            QueueUrl=self.url, AttributeNames=["ApproximateNumberOfMessages"]
        )["Attributes"]
        return int(attributes["ApproximateNumberOfMessages"])


@pytest.fixture
def queue(table: Any) -> WorkQueue:
    return WorkQueue()


@pytest.fixture
def world(queue: WorkQueue) -> Iterator[SearchWorld]:
    built = new_world()
    built.container = build_container(
        built.settings,
        store=built.store,
        index=built.index,
        embedder=built.embedder,
        runtime_switch=StaticRuntimeSwitch(True),
        work_queue=SqsWorkQueue(queue.url, sqs_client=queue.sqs),
    )
    use_container(built.container)
    yield built
    use_container(None)


def large_text(chars: int, tail: str) -> str:
    paragraph = "Routine maintenance notes about pumps, valves and the cooling loop of plant four.\n\n"
    body = paragraph * (chars // len(paragraph) + 1)
    ending = f"\n\nThe last section names the {tail} protocol.\n"
    return body[: chars - len(ending)] + ending


def publish(world: SearchWorld, tenant: str, title: str, content: str) -> KnowledgeItem:
    base = world.base(tenant)
    item, _ = world.store.create_item(
        tenant,
        base.knowledge_base_id,
        title=title,
        content=content,
        source=Source(uri="https://docs.example.com/log"),
        external_id=None,
        publish=True,
    )
    return item


def indexed_revision(world: SearchWorld, item: KnowledgeItem) -> str | None:
    current = world.store.get_item(item.tenant_id, item.knowledge_item_id)
    assert current is not None
    return current.indexed_revision_id


def test_large_revision_is_queued_in_parts_and_found_by_its_last_words(
    world: SearchWorld, queue: WorkQueue
) -> None:
    reader = StreamReader()
    large = publish(world, "acme", "Plant four log", large_text(LARGE_CHARS, TAIL_WORD))

    started = time.monotonic()
    assert run_indexer(reader.read()) == []
    enqueued_in = time.monotonic() - started
    assert queue.waiting() == FANOUT_WINDOW

    started = time.monotonic()
    parts = queue.drain()
    indexed_in = time.monotonic() - started
    world.index.refresh()

    assert parts == part_count(LARGE_CHARS) == 500
    assert indexed_revision(world, large) == large.current_revision_id
    assert found_items(world.search(world.token("acme"), TAIL_WORD, mode="lexical")) == {
        large.knowledge_item_id
    }
    chunks = len(world.index)
    print(
        f"\nlarge revision: stream consumer {enqueued_in:.2f} s, {parts} parts indexed in "
        f"{indexed_in:.1f} s, {chunks} chunks and passages, {chunks / indexed_in:.0f} chunks/s"
    )
    assert enqueued_in < 5.0


def delivered_items(queue: WorkQueue) -> list[str]:
    """The item of every message the consumer took, in order."""
    return [IndexWork.model_validate_json(body).knowledge_item_id for body in queue.delivered]


@pytest.mark.parametrize("tenant", ["acme", "globex"], ids=["same tenant", "another tenant"])
def test_small_document_is_indexed_between_the_parts_of_a_large_one(
    world: SearchWorld, queue: WorkQueue, tenant: str
) -> None:
    reader = StreamReader()
    large = publish(world, "acme", "Plant four log", large_text(200_000, TAIL_WORD))
    assert run_indexer(reader.read()) == []
    assert queue.poll_once()
    assert queue.poll_once()
    small = publish(world, tenant, "Badge office", "The badge office opens at nine on weekdays.")
    started = time.monotonic()
    assert run_indexer(reader.read()) == []

    taken = 0
    while indexed_revision(world, small) is None:
        assert queue.poll_once()
        taken += 1
    latency = time.monotonic() - started

    assert taken <= FANOUT_WINDOW + 1  # at most the large one's part queued before it, then itself
    assert indexed_revision(world, large) is None
    assert queue.waiting() == FANOUT_WINDOW
    assert found_items(world.search(world.token(tenant), "badge office", mode="lexical")) == {
        small.knowledge_item_id
    }
    print(f"\nsmall document indexed {latency:.2f} s after its publish, {taken} messages taken")
    queue.drain()
    order = delivered_items(queue)
    place = order.index(small.knowledge_item_id)
    assert order[:place].count(large.knowledge_item_id) >= 2
    assert order[place + 1 :].count(large.knowledge_item_id) == part_count(200_000) - place
    assert indexed_revision(world, large) == large.current_revision_id
    assert found_items(world.search(world.token("acme"), TAIL_WORD, mode="lexical")) == {
        large.knowledge_item_id
    }


def test_large_revisions_written_together_take_turns(world: SearchWorld, queue: WorkQueue) -> None:
    reader = StreamReader()
    first = publish(world, "acme", "Plant four log", large_text(40_000, "basilisk"))
    second = publish(world, "globex", "Plant five log", large_text(40_000, TAIL_WORD))
    assert run_indexer(reader.read()) == []

    assert queue.drain() == 2 * part_count(40_000)

    order = delivered_items(queue)
    assert order == [first.knowledge_item_id, second.knowledge_item_id] * part_count(40_000)
    assert indexed_revision(world, first) == first.current_revision_id
    assert indexed_revision(world, second) == second.current_revision_id
    assert found_items(world.search(world.token("globex"), TAIL_WORD, mode="lexical")) == {
        second.knowledge_item_id
    }


def test_replayed_and_duplicated_part_messages_change_nothing(world: SearchWorld, queue: WorkQueue) -> None:
    reader = StreamReader()
    large = publish(world, "acme", "Plant four log", large_text(300_000, TAIL_WORD))
    assert run_indexer(reader.read()) == []
    queue.drain()
    world.index.refresh()
    chunks = len(world.index)
    delivered = list(queue.delivered)

    for body in delivered + delivered[:2]:
        assert queue.deliver(body) == []
    queue.drain()
    world.index.refresh()

    assert len(world.index) == chunks
    assert queue.waiting() == 0
    assert indexed_revision(world, large) == large.current_revision_id
    assert found_items(world.search(world.token("acme"), TAIL_WORD, mode="lexical")) == {
        large.knowledge_item_id
    }


def test_late_part_of_an_older_revision_does_not_regress_the_index(
    world: SearchWorld, queue: WorkQueue
) -> None:
    reader = StreamReader()
    first = publish(world, "acme", "Plant four log", large_text(300_000, "basilisk"))
    assert run_indexer(reader.read()) == []
    old_parts = []
    while queue.waiting():
        messages = queue.sqs.receive_message(QueueUrl=queue.url, MaxNumberOfMessages=1)["Messages"]
        old_parts.append(messages[0]["Body"])
        queue.sqs.delete_message(QueueUrl=queue.url, ReceiptHandle=messages[0]["ReceiptHandle"])
    newer, _ = world.store.add_revision(
        "acme",
        first.knowledge_item_id,
        content=large_text(300_000, TAIL_WORD),
        title=None,
        source=None,
        publish=True,
        expected_version=first.version,
    )
    assert run_indexer(reader.read()) == []
    queue.drain()

    for body in old_parts:  # the older version's parts arrive after the newer one is complete
        assert queue.deliver(body) == []
    world.index.refresh()

    assert IndexWork.model_validate_json(old_parts[0]).version < newer.version
    assert indexed_revision(world, first) == newer.current_revision_id
    token = world.token("acme")
    assert found_items(world.search(token, TAIL_WORD, mode="lexical")) == {first.knowledge_item_id}
    assert found_items(world.search(token, "basilisk", mode="lexical")) == set()


def test_part_planned_for_another_part_layout_is_dropped_unwritten(
    world: SearchWorld, queue: WorkQueue
) -> None:
    reader = StreamReader()
    item = publish(world, "acme", "Plant four log", large_text(30_000, TAIL_WORD))
    assert run_indexer(reader.read()) == []
    planned = IndexWork.model_validate_json(
        queue.sqs.receive_message(QueueUrl=queue.url, MaxNumberOfMessages=1)["Messages"][0]["Body"]
    )
    older_layout = planned.model_copy(update={"part": 1, "parts": 2})  # 15,000-character parts

    assert queue.deliver(older_layout.model_dump_json()) == []
    world.index.refresh()

    assert len(world.index) == 0
    assert indexed_revision(world, item) is None


def test_malformed_work_message_is_reported_failed(world: SearchWorld, queue: WorkQueue) -> None:
    record = sqs_record({"tenant_id": "acme", "part": 3, "parts": 2})
    answer = load_handler("index_worker")(sqs_event([record]), lambda_context())
    assert answer == {"batchItemFailures": [{"itemIdentifier": record["messageId"]}]}


def test_reindex_counts_the_items_it_queues_and_they_become_searchable(
    world: SearchWorld, queue: WorkQueue
) -> None:
    base = world.base("acme")
    items = [
        world.store.create_item(
            "acme",
            base.knowledge_base_id,
            title=f"Pump log {n}",
            content=f"Pump {n} runs on the {TAIL_WORD} schedule.",
            source=Source(uri=f"https://docs.example.com/pump-{n}"),
            external_id=None,
            publish=True,
        )[0]
        for n in range(3)
    ]
    admin = Principal(tenant_id="acme", subject_id="owner-1", scopes=frozenset({Permission.ADMIN.value}))

    counts = world.container.curation.reindex_base(admin, base.knowledge_base_id)

    assert (counts.scanned, counts.queued, counts.indexed, counts.removed, counts.skipped) == (3, 3, 0, 0, 0)
    assert queue.drain() == 3
    world.index.refresh()
    assert [indexed_revision(world, item) for item in items] == [item.current_revision_id for item in items]
    assert found_items(world.search(world.token("acme"), TAIL_WORD, mode="lexical")) == {
        item.knowledge_item_id for item in items
    }
