"""``IndexerFunction`` on records taken from real table changes (moto DynamoDB Streams).

Writes go through the store (or the write API's service), the table's stream is read with boto3
``dynamodbstreams`` and fed to the real handler as Lambda events; the search index is the
``EmbeddedIndex`` with the ``HashingEmbedder``, installed with ``use_container``.
"""

from __future__ import annotations

import json
import random
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from knowledge.adapters.dynamodb.stream import decode_stream_record
from knowledge.adapters.embedded.passages import EmbeddedIndex
from knowledge.adapters.embedding_cache import DynamoDBEmbeddingCache
from knowledge.bootstrap import Container, use_container
from knowledge.contract.writes import CreateRevisionRequest
from knowledge.domain.changes import IndexAction
from knowledge.domain.models import BaseStatus, KnowledgeBase, KnowledgeItem, Principal, Source
from knowledge.errors import ConflictError
from knowledge.services.indexing import IndexingService
from knowledge.settings import Settings
from tests.conftest import TABLE_NAME
from tests.support.admin import AdminClient
from tests.support.embedding import FailingEmbedder
from tests.support.events import load_event
from tests.support.rest import SearchWorld, found_items, new_world
from tests.support.store import serialized_dynamodb
from tests.support.streams import (
    StreamReader,
    apply_to_table,
    drain,
    indexed_revisions,
    run_indexer,
)
from tests.support.template import resource

TENANT = "acme"
BLUE_GREEN = "# Release\n\nRoll out with the blue green switch and watch the health dashboard.\n"
CANARY = "# Release\n\nRoll out with a canary that takes five percent of the traffic first.\n"


@pytest.fixture
def world(table: Any) -> Iterator[SearchWorld]:
    built = new_world(settings=Settings(table_name=TABLE_NAME))
    yield built
    use_container(None)


@pytest.fixture
def reader(world: SearchWorld) -> StreamReader:
    return StreamReader()


@pytest.fixture
def agent(world: SearchWorld) -> str:
    return world.token(TENANT)


def _create(
    world: SearchWorld, base: KnowledgeBase, title: str, content: str, *, publish: bool = True
) -> KnowledgeItem:
    item, _ = world.store.create_item(
        base.tenant_id,
        base.knowledge_base_id,
        title=title,
        content=content,
        source=Source(uri=f"https://wiki.example.com/{title.lower().replace(' ', '-')}"),
        external_id=None,
        publish=publish,
    )
    return item


def _revise(world: SearchWorld, item: KnowledgeItem, content: str, *, publish: bool = True) -> KnowledgeItem:
    updated, _ = world.store.add_revision(
        item.tenant_id,
        item.knowledge_item_id,
        content=content,
        title=None,
        source=None,
        publish=publish,
        expected_version=item.version,
    )
    return updated


def _container(world: SearchWorld) -> Container:
    assert world.container is not None
    return world.container


def _indexing(world: SearchWorld) -> IndexingService:
    return _container(world).indexing


def _write_idempotency_record(world: SearchWorld, base: KnowledgeBase) -> None:
    """A write API call with an ``Idempotency-Key``: its record lands in the knowledge table."""
    admin = AdminClient(world.token(TENANT, "curator-9", scopes=["knowledge:admin"]))
    reply = admin.call(
        "POST", f"/v1/knowledge-bases/{base.knowledge_base_id}/reindex", headers={"Idempotency-Key": "k-1"}
    )
    assert reply.status == 200, reply.text


def _revisions_found(world: SearchWorld, agent: str, query: str) -> set[str]:
    found = set()
    for mode in ("lexical", "semantic", "hybrid"):
        reply = world.search(agent, query, mode=mode)
        found |= {result["knowledge_revision_id"] for result in reply.body["results"]}
    return found


# -- publish and archive --------------------------------------------------------------------------


def test_indexer_publish_new_revision_is_found_and_old_never(
    world: SearchWorld, reader: StreamReader, agent: str
) -> None:
    base = world.base(TENANT)
    first = _create(world, base, "Release process", BLUE_GREEN)
    drain(reader)
    assert _revisions_found(world, agent, "blue green switch") == {first.current_revision_id}

    second = _revise(world, first, CANARY)
    before_indexing = _revisions_found(world, agent, "blue green switch")
    drain(reader)

    assert before_indexing == set()
    assert _revisions_found(world, agent, "canary traffic") == {second.current_revision_id}
    assert _revisions_found(world, agent, "blue green switch") <= {second.current_revision_id}
    stored = world.store.get_item(TENANT, first.knowledge_item_id)
    assert stored is not None
    assert stored.indexed_revision_id == second.current_revision_id
    assert indexed_revisions(world.index, TENANT) == {first.knowledge_item_id: second.current_revision_id}


def test_indexer_archive_removes_item_from_search_and_addressed_read(
    world: SearchWorld, reader: StreamReader, agent: str
) -> None:
    base = world.base(TENANT)
    item = _create(world, base, "Release process", BLUE_GREEN)
    drain(reader)
    assert world.read(agent, item.knowledge_item_id).status == 200

    archived = world.store.archive_item(TENANT, item.knowledge_item_id, expected_version=item.version)
    drain(reader)

    assert _revisions_found(world, agent, "blue green switch") == set()
    assert world.read(agent, item.knowledge_item_id).code == "knowledge_resource_unavailable"
    assert indexed_revisions(world.index, TENANT) == {}
    stored = world.store.get_item(TENANT, item.knowledge_item_id)
    assert stored is not None
    assert archived.indexed_revision_id == item.current_revision_id
    assert (stored.indexed_revision_id, stored.version) == (None, archived.version)


def test_indexer_draft_revision_leaves_published_one_searchable(
    world: SearchWorld, reader: StreamReader, agent: str
) -> None:
    base = world.base(TENANT)
    item = _create(world, base, "Release process", BLUE_GREEN)
    _revise(world, item, CANARY, publish=False)
    drain(reader)

    assert indexed_revisions(world.index, TENANT) == {item.knowledge_item_id: item.current_revision_id}
    assert _revisions_found(world, agent, "canary traffic") <= {item.current_revision_id}


def test_indexer_draft_item_is_not_indexed(world: SearchWorld, reader: StreamReader) -> None:
    base = world.base(TENANT)
    _create(world, base, "Release process", BLUE_GREEN, publish=False)

    drain(reader)

    assert indexed_revisions(world.index, TENANT) == {}


def test_indexer_own_indexed_marks_are_ignored_so_the_stream_settles(
    world: SearchWorld, reader: StreamReader
) -> None:
    base = world.base(TENANT)
    item = _create(world, base, "Release process", BLUE_GREEN)
    assert run_indexer(reader.read()) == []

    marks = reader.read()
    actions = [_indexing(world).apply(decode_stream_record(record)) for record in marks]

    # The item's indexed mark, and the removal of its unindexed mark (read-your-own-writes).
    assert [(record["eventName"], record["dynamodb"]["Keys"]["SK"]["S"]) for record in marks] == [
        ("MODIFY", "META"),
        ("REMOVE", f"ITEM#{item.knowledge_item_id}"),
    ]
    assert actions == [IndexAction.IGNORED, IndexAction.IGNORED]
    assert reader.read() == []


# -- bases ----------------------------------------------------------------------------------------


def test_indexer_base_deactivation_removes_items_and_reactivation_restores_them(
    world: SearchWorld, reader: StreamReader, agent: str
) -> None:
    base = world.base(TENANT)
    other = world.base(TENANT, name="Other")
    items = [_create(world, base, f"Runbook {n}", BLUE_GREEN) for n in range(3)]
    kept = _create(world, other, "Kept", BLUE_GREEN)
    drain(reader)

    inactive = world.store.update_base(
        TENANT, base.knowledge_base_id, expected_version=base.version, status=BaseStatus.INACTIVE
    )
    drain(reader)
    assert indexed_revisions(world.index, TENANT) == {kept.knowledge_item_id: kept.current_revision_id}

    world.store.update_base(
        TENANT, base.knowledge_base_id, expected_version=inactive.version, status=BaseStatus.ACTIVE
    )
    drain(reader)
    assert indexed_revisions(world.index, TENANT) == {
        entry.knowledge_item_id: entry.current_revision_id for entry in [*items, kept]
    }
    # Every item holds the same text: one result lists the others as copies of its passage.
    assert found_items(world.search(agent, "blue green", mode="lexical")) == {
        entry.knowledge_item_id for entry in [*items, kept]
    }


def test_indexer_base_rename_changes_nothing(world: SearchWorld, reader: StreamReader) -> None:
    base = world.base(TENANT)
    item = _create(world, base, "Release process", BLUE_GREEN)
    drain(reader)

    world.store.update_base(TENANT, base.knowledge_base_id, expected_version=base.version, name="Renamed")
    records = reader.read()
    actions = [_indexing(world).apply(decode_stream_record(record)) for record in records]

    assert actions == [IndexAction.IGNORED]
    assert indexed_revisions(world.index, TENANT) == {item.knowledge_item_id: item.current_revision_id}


# -- replays --------------------------------------------------------------------------------------


def _history(world: SearchWorld) -> dict[str, str]:
    """Items, revisions, publishes, a rollback, an archive and a deactivated base; the expected index."""
    base = world.base(TENANT)
    closed = world.base(TENANT, name="Closed")
    expected = {}
    rolled = _create(world, base, "Rolled back", BLUE_GREEN)
    second = _revise(world, rolled, CANARY)
    rolled_back = world.store.publish_revision(
        TENANT, rolled.knowledge_item_id, str(rolled.current_revision_id), expected_version=second.version
    )
    expected[rolled.knowledge_item_id] = str(rolled_back.current_revision_id)
    revised = _create(world, base, "Revised", BLUE_GREEN)
    for n in range(3):
        revised = _revise(world, revised, f"{CANARY} Step {n}.")
    expected[revised.knowledge_item_id] = str(revised.current_revision_id)
    gone = _create(world, base, "Archived", BLUE_GREEN)
    world.store.archive_item(TENANT, gone.knowledge_item_id, expected_version=gone.version)
    _create(world, base, "Draft", BLUE_GREEN, publish=False)
    _create(world, closed, "In a closed base", CANARY)
    world.store.update_base(
        TENANT, closed.knowledge_base_id, expected_version=closed.version, status=BaseStatus.INACTIVE
    )
    return expected


def _reinstall_with_empty_index(world: SearchWorld) -> None:
    world.index = EmbeddedIndex()
    world.install()


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_indexer_shuffled_duplicated_replay_ends_at_newest_state(
    world: SearchWorld, reader: StreamReader, seed: int
) -> None:
    expected = _history(world)
    records = reader.read()
    rng = random.Random(seed)
    replay = records + rng.sample(records, len(records) // 2) + records[-5:]
    rng.shuffle(replay)

    assert run_indexer(replay, batch_size=7) == []

    assert indexed_revisions(world.index, TENANT) == expected
    for item_id, revision_id in expected.items():
        item = world.store.get_item(TENANT, item_id)
        assert item is not None
        assert item.indexed_revision_id == revision_id


def test_indexer_replay_after_indexing_changes_nothing(world: SearchWorld, reader: StreamReader) -> None:
    expected = _history(world)
    records = reader.read()
    assert run_indexer(records) == []
    reader.read()  # the indexer's own marks

    replay = list(reversed(records)) * 2
    assert run_indexer(replay, batch_size=5) == []

    assert indexed_revisions(world.index, TENANT) == expected
    _reinstall_with_empty_index(world)
    assert run_indexer(list(reversed(records))) == []
    assert indexed_revisions(world.index, TENANT) == expected


# -- concurrency ----------------------------------------------------------------------------------

PUBLISHERS = 20


def test_indexer_twenty_concurrent_publishers_index_ends_at_winner(
    world: SearchWorld, reader: StreamReader, agent: str
) -> None:
    base = world.base(TENANT)
    item = _create(world, base, "Contended", BLUE_GREEN)
    curator = Principal(tenant_id=TENANT, subject_id="owner-1", scopes=frozenset({"knowledge:write"}))
    curation = _container(world).curation
    start = threading.Barrier(PUBLISHERS)
    conflicts: list[tuple[int, int | None]] = []

    def publish(writer: int) -> tuple[int, str]:
        start.wait(timeout=30)
        while True:
            current = world.store.get_item(TENANT, item.knowledge_item_id)
            assert current is not None
            request = CreateRevisionRequest(
                content=f"Writer{writer:02d} wrote this revision.",
                publish=True,
                expected_version=current.version,
            )
            try:
                answer = curation.add_revision(curator, item.knowledge_item_id, request)
            except ConflictError as error:
                conflicts.append((current.version, error.current_version))
                continue
            return answer.version, answer.knowledge_revision_id

    with serialized_dynamodb(), ThreadPoolExecutor(max_workers=PUBLISHERS) as pool:
        wins = list(pool.map(publish, range(PUBLISHERS)))
        drain(reader)

    versions = sorted(version for version, _ in wins)
    assert versions == list(range(2, PUBLISHERS + 2))
    assert all(current is not None and current > tried for tried, current in conflicts)
    winner = dict(wins)[PUBLISHERS + 1]
    stored = world.store.get_item(TENANT, item.knowledge_item_id)
    assert stored is not None
    assert stored.version == PUBLISHERS + 1
    assert stored.current_revision_id == winner
    assert stored.indexed_revision_id == winner
    assert indexed_revisions(world.index, TENANT) == {item.knowledge_item_id: winner}
    assert _revisions_found(world, agent, "wrote this revision") == {winner}


# -- failures and foreign records -----------------------------------------------------------------


def test_indexer_failing_record_is_reported_alone(world: SearchWorld, reader: StreamReader) -> None:
    world.embedder = FailingEmbedder("Unlucky")
    world.install()
    base = world.base(TENANT)
    good = [_create(world, base, f"Runbook {n}", BLUE_GREEN) for n in range(2)]
    bad = _create(world, base, "Unlucky runbook", BLUE_GREEN)
    records = reader.read()
    bad_records = [
        record["dynamodb"]["SequenceNumber"]
        for record in records
        if record["dynamodb"].get("NewImage", {}).get("knowledge_item_id", {}).get("S")
        == bad.knowledge_item_id
        and record["dynamodb"]["NewImage"]["entity"]["S"] == "item"
    ]

    failures = run_indexer(records)

    assert failures == bad_records
    assert indexed_revisions(world.index, TENANT) == {
        entry.knowledge_item_id: entry.current_revision_id for entry in good
    }


def test_indexer_ignores_tokens_guards_pages_revisions_cache_and_idempotency_records(
    world: SearchWorld, reader: StreamReader
) -> None:
    base = world.base(TENANT)
    world.store.create_item(
        TENANT,
        base.knowledge_base_id,
        title="Draft",
        content="x" * 120_000,
        source=Source(),
        external_id="draft-1",
        publish=False,
    )
    world.token(TENANT)
    DynamoDBEmbeddingCache(TABLE_NAME).put_many({"abc": [0.5, 0.5]})
    _write_idempotency_record(world, base)
    records = [
        record
        for record in reader.read()
        if record["dynamodb"]["NewImage"].get("entity", {}).get("S") not in ("base", "item")
    ]

    actions = {_indexing(world).apply(decode_stream_record(record)) for record in records}

    assert len(records) >= 6  # pages, revision, guard, token, cache record, idempotency record
    assert actions == {IndexAction.IGNORED}
    assert len(world.index) == 0


# -- events/ and the template ---------------------------------------------------------------------


def _records(name: str) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = load_event(name)["Records"]
    return records


def test_indexer_event_files_replayed_onto_a_table_follow_the_item(world: SearchWorld) -> None:
    agent = world.token(TENANT)
    inserted = _records("indexer_item_insert")
    item_id = inserted[3]["dynamodb"]["NewImage"]["knowledge_item_id"]["S"]

    for name, indexed in (
        ("indexer_item_insert", True),
        ("indexer_item_modify", True),
        ("indexer_item_archive", False),
    ):
        records = _records(name)
        apply_to_table(records)
        assert run_indexer(records) == []
        item = world.store.get_item(TENANT, item_id)
        assert item is not None
        expected = {item_id: item.current_revision_id} if indexed else {}
        assert indexed_revisions(world.index, TENANT) == expected

    assert world.read(agent, item_id).code == "knowledge_resource_unavailable"


def test_indexer_base_deactivation_event_file_removes_the_base(world: SearchWorld) -> None:
    for name in ("indexer_item_insert", "indexer_item_modify"):
        apply_to_table(_records(name))
        assert run_indexer(_records(name)) == []
    assert len(indexed_revisions(world.index, TENANT)) == 1

    records = _records("indexer_base_deactivate")
    apply_to_table(records)

    assert run_indexer(records) == []
    assert indexed_revisions(world.index, TENANT) == {}


def _filter_patterns() -> list[dict[str, Any]]:
    events = resource("IndexerFunction")["Properties"]["Events"]
    stream = next(event for event in events.values() if event["Type"] == "DynamoDB")
    return [json.loads(entry["Pattern"]) for entry in stream["Properties"]["FilterCriteria"]["Filters"]]


def test_indexer_template_filter_admits_item_and_base_meta_records_only(
    world: SearchWorld, reader: StreamReader
) -> None:
    from moto.events.models import EventPattern

    base = world.base(TENANT)
    item = _create(world, base, "Release process", BLUE_GREEN)
    world.store.archive_item(TENANT, item.knowledge_item_id, expected_version=item.version)
    world.store.update_base(TENANT, base.knowledge_base_id, expected_version=base.version, name="Renamed")
    world.token(TENANT)
    DynamoDBEmbeddingCache(TABLE_NAME).put_many({"abc": [0.5, 0.5]})
    _write_idempotency_record(world, base)
    patterns = [EventPattern.load(json.dumps(pattern)) for pattern in _filter_patterns()]

    admitted = [
        (
            record["eventName"],
            (record["dynamodb"].get("NewImage") or record["dynamodb"]["OldImage"])["entity"]["S"],
        )
        for record in reader.read()
        if any(pattern.matches_event(record) for pattern in patterns)
    ]

    assert admitted == [
        ("INSERT", "base"),
        ("INSERT", "item"),
        ("MODIFY", "item"),
        ("MODIFY", "base"),
    ]
