"""``IndexerFunction`` on batches of note records: the notes of one stream batch are read, embedded
and written to the note index together, with every outcome still per record.

The memory tools' real handlers write over moto DynamoDB; the table's stream is read with boto3
``dynamodbstreams`` and fed to the real indexer handler as Lambda events (one batch of up to 100
records, as the template's mapping sends them).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from knowledge.bootstrap import use_container
from tests.support.embedding import FailingEmbedder, HashingEmbedder
from tests.support.memory import forget, found, memory_token, remember
from tests.support.rest import SearchWorld, new_world
from tests.support.streams import StreamReader, drain, run_indexer


class _CountingEmbedder(HashingEmbedder):
    """Records how many texts each ``embed`` call received."""

    def __init__(self) -> None:
        super().__init__()
        self.sizes: list[int] = []

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.sizes.append(len(texts))
        return super().embed(texts)


@pytest.fixture
def world(table: Any) -> Iterator[SearchWorld]:
    built = new_world()
    yield built
    use_container(None)


@pytest.fixture
def stream(world: SearchWorld) -> StreamReader:
    return StreamReader()


def _remembered(token: str, contents: Sequence[str], **arguments: Any) -> list[dict[str, Any]]:
    notes = []
    for content in contents:
        reply = remember(token, content, **arguments)
        assert reply.status == 201, reply.text
        notes.append(reply.body["note"])
    return notes


def _note_records(records: Sequence[dict[str, Any]], note_id: str) -> list[str]:
    """Sequence numbers of the records of the note's own record (``META``) among ``records``."""
    return [
        record["dynamodb"]["SequenceNumber"]
        for record in records
        if record["dynamodb"].get("NewImage", {}).get("entity", {}).get("S") == "note"
        and record["dynamodb"]["NewImage"].get("note_id", {}).get("S") == note_id
    ]


def test_a_batch_of_notes_is_embedded_in_one_call_and_every_note_is_searchable(
    world: SearchWorld, stream: StreamReader
) -> None:
    embedder = _CountingEmbedder()
    world.embedder = embedder
    world.install()
    alice = memory_token(world, "alice")
    contents = [f"Release train {n} leaves from platform {n + 10} at dawn." for n in range(25)]
    _remembered(alice, contents)
    records = stream.read()
    embedder.sizes.clear()

    # One batch, as Lambda delivers it: the mapping's filter drops every record but the notes' META
    # before batching, which this unfiltered feed does not.
    failures = run_indexer(records, batch_size=len(records))

    assert failures == []
    # one call for the notes index and one for the note history index (the embedding cache in
    # front of the model answers the second for contents it has seen)
    assert embedder.sizes == [25, 25]
    for content in contents:
        assert found(alice, content, mode="lexical", limit=1) == [content]
    drain(stream)  # the indexer's own marks come back as records and change nothing
    assert sorted(found(alice, "release train platform dawn", mode="lexical", limit=50)) == sorted(contents)


def test_a_failing_note_of_a_batch_is_reported_alone_and_the_others_are_searchable(
    world: SearchWorld, stream: StreamReader
) -> None:
    world.embedder = FailingEmbedder("Unlucky")
    world.install()
    alice = memory_token(world, "alice")
    good = [f"The backup of shard {n} runs every night." for n in range(4)]
    _remembered(alice, good[:2])
    [bad] = _remembered(alice, ["Unlucky: the restore drill is on Friday."])
    _remembered(alice, good[2:])
    records = stream.read()

    failures = run_indexer(records)

    assert failures == _note_records(records, bad["note_id"])
    assert failures != []
    for content in good:
        assert found(alice, content, mode="lexical", limit=1) == [content]
    assert found(alice, "restore drill Friday", mode="lexical") == []


def test_a_batch_with_an_update_and_a_forget_ends_at_the_stores_state(
    world: SearchWorld, stream: StreamReader
) -> None:
    alice = memory_token(world, "alice")
    [first] = _remembered(alice, ["The deploy window opens at nine."], semantic_key="deploy.window")
    updated = remember(alice, "The deploy window opens at eleven.", semantic_key="deploy.window")
    assert updated.status == 200, updated.text
    [gone] = _remembered(alice, ["The canary cluster is called wren."])
    assert forget(alice, gone["note_id"]).status == 200
    records = stream.read()
    assert len(_note_records(records, first["note_id"])) == 2

    failures = run_indexer(records)

    assert failures == []
    assert found(alice, "deploy window opens", mode="lexical") == ["The deploy window opens at eleven."]
    assert found(alice, "canary cluster wren", mode="lexical") == []
    assert drain(stream) > 0  # the marks of the batch, ignored
    assert found(alice, "deploy window opens", mode="lexical") == ["The deploy window opens at eleven."]
