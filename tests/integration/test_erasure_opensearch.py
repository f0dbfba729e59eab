"""Tenant erasure with the chunk index and the knowledge history index on a real OpenSearch node
(``tests/unit/services/test_erasure.py``): the dry run deletes nothing and equals the receipt, and
both indexes lose every document of the erased tenant and keep the other tenant's."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator

import pytest
from opensearchpy import OpenSearch

from knowledge.adapters.opensearch.engine import build_opensearch_client
from knowledge.adapters.opensearch.passages import OpenSearchIndex
from knowledge.ports import SearchIndex
from tests.unit.services.test_erasure import ErasureWorld, check_erasure


@pytest.fixture
def run(opensearch_url: str) -> Iterator[ErasureWorld]:
    client: OpenSearch = build_opensearch_client(opensearch_url, auth="none", region="us-east-1")
    created: list[str] = []

    def factory(kind: str) -> Callable[[], SearchIndex]:
        def build() -> SearchIndex:
            name = f"erasure-{kind}-{uuid.uuid4().hex[:12]}"
            created.append(name)
            return OpenSearchIndex(client, name, refresh=True)

        return build

    yield ErasureWorld(index_factory=factory("chunks"), history_factory=factory("history"))
    for name in created:
        client.indices.delete(index=name, ignore_unavailable=True)


def test_an_erasure_on_opensearch_equals_its_dry_run_and_empties_only_its_tenant(run: ErasureWorld) -> None:
    check_erasure(run)
