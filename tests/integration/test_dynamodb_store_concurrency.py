"""DynamoDBKnowledgeStore under concurrent writers: one winner per version; losers learn its version."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from knowledge.adapters.dynamodb.knowledge_store import DynamoDBKnowledgeStore
from knowledge.domain.models import KnowledgeItem, Revision, Source
from knowledge.errors import ConflictError
from tests.support.store import make_base, make_store, new_client, raw_items, serialized_dynamodb

TENANT = "tenant-a"
WRITERS = 20


@pytest.fixture
def serialized(table: Any) -> Iterator[None]:
    with serialized_dynamodb():
        yield


def _race(clients: list[Any], calls: list[Callable[[], Any]]) -> list[Any]:
    """Run every call at once; each returns its result or its ``ConflictError``.

    Each writer's first ``TransactWriteItems`` waits until every writer has reached its own, so all
    of them have read the same item version and the race is decided by DynamoDB's conditions.
    """
    start, commit = threading.Barrier(len(calls)), threading.Barrier(len(calls))
    for client in clients:
        held: list[bool] = []

        def hold(held: list[bool] = held, **_: Any) -> None:
            if not held:
                held.append(True)
                commit.wait(timeout=30)

        client.meta.events.register("before-call.dynamodb.TransactWriteItems", hold)

    def run(call: Callable[[], Any]) -> Any:
        start.wait(timeout=30)
        try:
            return call()
        except ConflictError as error:
            return error

    with ThreadPoolExecutor(max_workers=len(calls)) as pool:
        return list(pool.map(run, calls))


def _publish_call(
    store: DynamoDBKnowledgeStore, item: KnowledgeItem, revision: Revision, n: int
) -> Callable[[], Any]:
    if n % 2:
        return lambda: store.publish_revision(
            TENANT, item.knowledge_item_id, revision.knowledge_revision_id, expected_version=item.version
        )
    return lambda: store.add_revision(
        TENANT,
        item.knowledge_item_id,
        content=f"writer {n} " * 300,
        title=None,
        source=None,
        publish=True,
        expected_version=item.version,
    )[0]


def test_publish_twenty_writers_on_one_version_exactly_one_wins(serialized: None) -> None:
    setup = make_store(page_size_chars=1_000)
    base = make_base(setup, TENANT)
    item, draft = setup.create_item(
        TENANT,
        base.knowledge_base_id,
        title="Contended",
        content="draft " * 500,
        source=Source(),
        external_id=None,
        publish=False,
    )
    clients = [new_client() for _ in range(WRITERS)]
    stores = [make_store(client, page_size_chars=1_000) for client in clients]

    outcomes = _race(clients, [_publish_call(store, item, draft, n) for n, store in enumerate(stores)])

    winners = [outcome for outcome in outcomes if isinstance(outcome, KnowledgeItem)]
    losers = [outcome for outcome in outcomes if isinstance(outcome, ConflictError)]
    assert len(winners) == 1
    assert len(losers) == WRITERS - 1
    winner = winners[0]
    assert winner.version == item.version + 1
    assert {loser.current_version for loser in losers} == {winner.version}
    assert setup.get_item(TENANT, item.knowledge_item_id) == winner
    sealed = setup.list_revisions(TENANT, item.knowledge_item_id, limit=50, next_token=None).entries
    assert winner.current_revision_id in {revision.knowledge_revision_id for revision in sealed}
    assert len(raw_items("PAGE#")) == sum(revision.page_count for revision in sealed)


def test_create_item_concurrent_creators_of_one_external_id_create_one_item(serialized: None) -> None:
    setup = make_store()
    base = make_base(setup, TENANT)
    clients = [new_client() for _ in range(10)]
    stores = [make_store(client) for client in clients]

    def create(store: DynamoDBKnowledgeStore) -> Callable[[], Any]:
        return lambda: store.create_item(
            TENANT,
            base.knowledge_base_id,
            title="Shared",
            content="same document",
            source=Source(),
            external_id="doc-42",
            publish=True,
        )[0]

    outcomes = _race(clients, [create(store) for store in stores])

    winners = [outcome for outcome in outcomes if isinstance(outcome, KnowledgeItem)]
    losers = [outcome for outcome in outcomes if isinstance(outcome, ConflictError)]
    assert (len(winners), len(losers)) == (1, 9)
    assert {loser.current_version for loser in losers} == {1}
    assert setup.find_item_by_external_id(TENANT, base.knowledge_base_id, "doc-42") == winners[0]
    listed = setup.list_items(TENANT, base.knowledge_base_id, limit=20, next_token=None).entries
    assert listed == winners
    assert len(raw_items("REV#")) == 1
