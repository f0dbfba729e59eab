"""What only the OpenSearch adapters meet, on a real node: an index whose mapping refuses our
documents, an index deleted under a running service, and a kNN tie that runs far past ``k``."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from knowledge.adapters.opensearch import queries as dsl
from knowledge.adapters.opensearch.engine import build_opensearch_client
from knowledge.adapters.opensearch.passages import OpenSearchIndex
from knowledge.domain.retrieval.hits import Leg
from knowledge.errors import IndexConfigurationError
from tests.support.index import DIMENSION, MODEL_ID, axis, item, leg_hits, query


@pytest.fixture
def client(opensearch_url: str) -> Any:
    return build_opensearch_client(opensearch_url, auth="none", region="us-east-1")


@pytest.fixture
def name(client: Any) -> Iterator[str]:
    created = f"engine-{uuid.uuid4().hex[:12]}"
    yield created
    client.indices.delete(index=created, ignore_unavailable=True)


def test_upsert_into_an_index_whose_mapping_refuses_our_documents_is_a_configuration_error(
    client: Any, name: str
) -> None:
    # Created by hand with our _meta but without a field the strict mapping must hold.
    body = dsl.index_body(model_id=MODEL_ID, dimension=DIMENSION)
    del body["mappings"]["properties"]["chunk_text"]
    client.indices.create(index=name, body=body)
    index = OpenSearchIndex(client, name, refresh=True)
    index.ensure_ready(model_id=MODEL_ID, dimension=DIMENSION)

    with pytest.raises(IndexConfigurationError, match="rejected a document"):
        index.upsert(item("ki_1", ("refused words",)))


def test_search_of_an_index_deleted_under_the_service_is_a_configuration_error(
    client: Any, name: str
) -> None:
    index = OpenSearchIndex(client, name, refresh=True)
    index.ensure_ready(model_id=MODEL_ID, dimension=DIMENSION)
    client.indices.delete(index=name)

    with pytest.raises(IndexConfigurationError, match="does not exist"):
        index.search(query("anything"))


def test_knn_tie_far_past_k_is_cut_by_item_id(client: Any, name: str) -> None:
    index = OpenSearchIndex(client, name, refresh=True)
    index.ensure_ready(model_id=MODEL_ID, dimension=DIMENSION)
    # 40 items with the same vector: the first kNN fetch (k + 1 = 4) is widened three times.
    ids = [f"ki_{(17 * n) % 40:02d}" for n in range(40)]
    index.upsert_many([item(item_id, ("same",), vectors=[axis(0)]) for item_id in ids])

    hits = leg_hits(index.search(query(leg=Leg.SEMANTIC, vector=axis(0), k=3)), Leg.SEMANTIC)

    assert hits == [("ki_00", 0), ("ki_01", 0), ("ki_02", 0)]
