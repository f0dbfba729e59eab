"""Item purge with the chunk index and the knowledge history index on a real OpenSearch node
(``tests/unit/services/test_item_purge.py``): the dry run writes nothing and equals the receipt,
and both indexes lose every document of the item, so ``as_of`` searches no longer find it."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator

import pytest
from opensearchpy import OpenSearch

from knowledge.adapters.opensearch.engine import build_opensearch_client
from knowledge.adapters.opensearch.passages import OpenSearchIndex
from knowledge.ports import SearchIndex
from tests.support.knowledge_history import KnowledgeWorld
from tests.unit.services.test_base_deletes import check_base_purge
from tests.unit.services.test_item_purge import check_item_purge


@pytest.fixture
def world(opensearch_url: str) -> Iterator[KnowledgeWorld]:
    client: OpenSearch = build_opensearch_client(opensearch_url, auth="none", region="us-east-1")
    created: list[str] = []

    def factory(kind: str) -> Callable[[], SearchIndex]:
        def build() -> SearchIndex:
            name = f"purge-{kind}-{uuid.uuid4().hex[:12]}"
            created.append(name)
            return OpenSearchIndex(client, name, refresh=True)

        return build

    yield KnowledgeWorld(index_factory=factory("chunks"), history_factory=factory("history"))
    for name in created:
        client.indices.delete(index=name, ignore_unavailable=True)


def test_purge_item_on_opensearch_dry_run_equals_the_receipt_and_both_indexes_lose_it(
    world: KnowledgeWorld,
) -> None:
    check_item_purge(world)


def test_purge_base_on_opensearch_dry_run_equals_the_receipt_and_both_indexes_lose_every_item(
    world: KnowledgeWorld,
) -> None:
    check_base_purge(world)
