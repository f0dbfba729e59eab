"""Item purge, base purge and tenant erasure with the chunk index and the knowledge history index on
a real OpenSearch node (``tests/unit/services/test_item_purge.py``, ``test_base_deletes.py``,
``test_erasure.py``): each dry run writes nothing and equals the receipt, and both indexes lose
every document of what was purged (so ``as_of`` searches no longer find it) and keep the rest; an
erased tenant's own export, imported back, is indexed again above the tombstones the erasure left in
every index, note indexes included."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from opensearchpy import OpenSearch

from knowledge.adapters.opensearch.engine import build_opensearch_client
from knowledge.adapters.opensearch.notes import OpenSearchNoteIndex
from knowledge.adapters.opensearch.passages import OpenSearchIndex
from tests.support.knowledge_history import KnowledgeWorld
from tests.unit.services.test_base_deletes import check_base_purge
from tests.unit.services.test_erasure import ErasureWorld, check_erasure, check_reimport
from tests.unit.services.test_item_purge import check_item_purge

Factory = Callable[[str], Callable[[], Any]]


@pytest.fixture
def factory(opensearch_url: str) -> Iterator[Factory]:
    """Builders of fresh indexes on the node (``factory("chunks")()``; ``"notes"`` and
    ``"note-history"`` build note indexes), deleted afterwards."""
    client: OpenSearch = build_opensearch_client(opensearch_url, auth="none", region="us-east-1")
    created: list[str] = []

    def of_kind(kind: str) -> Callable[[], Any]:
        def build() -> Any:
            name = f"purge-{kind}-{uuid.uuid4().hex[:12]}"
            created.append(name)
            if kind in ("notes", "note-history"):
                return OpenSearchNoteIndex(client, name, refresh=True, history=kind == "note-history")
            return OpenSearchIndex(client, name, refresh=True)

        return build

    yield of_kind
    for name in created:
        client.indices.delete(index=name, ignore_unavailable=True)


@pytest.fixture
def world(factory: Factory) -> KnowledgeWorld:
    return KnowledgeWorld(index_factory=factory("chunks"), history_factory=factory("history"))


def test_purge_item_on_opensearch_dry_run_equals_the_receipt_and_both_indexes_lose_it(
    world: KnowledgeWorld,
) -> None:
    check_item_purge(world)


def test_purge_base_on_opensearch_dry_run_equals_the_receipt_and_both_indexes_lose_every_item(
    world: KnowledgeWorld,
) -> None:
    check_base_purge(world)


def test_an_erasure_on_opensearch_equals_its_dry_run_and_empties_only_its_tenant(factory: Factory) -> None:
    check_erasure(ErasureWorld(index_factory=factory("chunks"), history_factory=factory("history")))


def test_an_erased_tenants_export_imports_back_above_the_tombstones_on_opensearch(factory: Factory) -> None:
    check_reimport(
        ErasureWorld(
            index_factory=factory("chunks"),
            history_factory=factory("history"),
            note_indexes=(factory("notes"), factory("note-history")),
        )
    )
