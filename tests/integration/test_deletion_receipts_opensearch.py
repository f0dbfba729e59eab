"""forget_memory's dry run and receipt with both note indexes on a real OpenSearch node: for every
mode the dry run writes nothing and the indexes lose exactly the documents the receipt names."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator

import pytest

from knowledge.adapters.opensearch.engine import build_opensearch_client
from knowledge.adapters.opensearch.notes import OpenSearchNoteIndex
from knowledge.ports import NoteIndex
from tests.unit.services.memory_world import MemoryWorld
from tests.unit.services.test_deletion_receipts import check_forget_receipt


@pytest.fixture
def world(opensearch_url: str) -> Iterator[MemoryWorld]:
    client = build_opensearch_client(opensearch_url, auth="none", region="us-east-1")
    created: list[str] = []

    def factory(history: bool) -> Callable[[], NoteIndex]:
        def build() -> NoteIndex:
            name = f"receipts-{'history' if history else 'notes'}-{uuid.uuid4().hex[:12]}"
            created.append(name)
            return OpenSearchNoteIndex(client, name, refresh=True, history=history)

        return build

    yield MemoryWorld(index_factory=factory(False), history_factory=factory(True))
    for name in created:
        client.indices.delete(index=name, ignore_unavailable=True)


@pytest.mark.parametrize(
    ("mode", "soft_first"),
    [("soft", False), ("redact", False), ("hard", False), ("redact", True), ("hard", True)],
)
def test_forget_on_opensearch_dry_run_lists_what_the_real_call_removes(
    world: MemoryWorld, mode: str, soft_first: bool
) -> None:
    check_forget_receipt(world, mode, soft_first=soft_first)
