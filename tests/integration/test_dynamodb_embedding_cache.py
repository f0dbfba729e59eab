"""DynamoDBEmbeddingCache on the project table under moto."""

from __future__ import annotations

import array
from collections.abc import Sequence
from typing import Any

import boto3
import pytest

from knowledge.adapters.embedding_cache import CachedEmbedder, DynamoDBEmbeddingCache, embedding_key


def _float32(vector: Sequence[float]) -> list[float]:
    return array.array("f", vector).tolist()


class WordEmbedder:
    """Deterministic 4-dimensional vectors; records every text it embeds."""

    model_id = "test/word-embedder"
    dimension = 4

    def __init__(self) -> None:
        self.embedded: list[str] = []

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.embedded.extend(texts)
        return [[float(len(text)), 1.0, 0.5, float(text.count(" "))] for text in texts]


class FlakyBatchClient:
    """Wraps a DynamoDB client; the first call of each batch operation handles only half of its keys
    or items and returns the rest as unprocessed, as DynamoDB does under load."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.throttled: set[str] = set()

    def batch_get_item(self, RequestItems: dict[str, Any]) -> dict[str, Any]:  # noqa: N803
        if "get" in self.throttled:
            return dict(self.inner.batch_get_item(RequestItems=RequestItems))
        self.throttled.add("get")
        ((table, request),) = RequestItems.items()
        keys = request["Keys"]
        half = len(keys) // 2
        response = dict(self.inner.batch_get_item(RequestItems={table: {**request, "Keys": keys[:half]}}))
        response["UnprocessedKeys"] = {table: {**request, "Keys": keys[half:]}}
        return response

    def batch_write_item(self, RequestItems: dict[str, Any]) -> dict[str, Any]:  # noqa: N803
        if "write" in self.throttled:
            return dict(self.inner.batch_write_item(RequestItems=RequestItems))
        self.throttled.add("write")
        ((table, requests),) = RequestItems.items()
        half = len(requests) // 2
        self.inner.batch_write_item(RequestItems={table: requests[:half]})
        return {"UnprocessedItems": {table: requests[half:]}}


@pytest.fixture
def client(table: Any) -> Any:
    return boto3.client("dynamodb", region_name="us-east-1")


@pytest.fixture
def table_name(table: Any) -> str:
    return str(table.name)


def test_dynamodb_cache_put_then_get_round_trips_float32(client: Any, table_name: str) -> None:
    vectors = {"k1": [0.1, -0.2, 0.3], "k2": [1.0, 0.0, 0.0]}
    DynamoDBEmbeddingCache(table_name, client).put_many(vectors)

    found = DynamoDBEmbeddingCache(table_name, client).get_many(["k2", "absent", "k1", "k2"])

    assert found == {key: _float32(vector) for key, vector in vectors.items()}


def test_dynamodb_cache_item_layout_binary_vector_and_model(client: Any, table: Any, table_name: str) -> None:
    DynamoDBEmbeddingCache(table_name, client, model_id="test/model").put_many({"abc": [0.5] * 384})

    item = table.get_item(Key={"PK": "EMB#abc", "SK": "META"})["Item"]

    assert len(item["vector"].value) == 384 * 4
    assert item["model_id"] == "test/model"
    assert item["dimension"] == 384


def test_dynamodb_cache_more_than_one_batch_all_stored_and_found(client: Any, table_name: str) -> None:
    vectors = {f"key-{index}": [float(index), 0.5] for index in range(230)}
    cache = DynamoDBEmbeddingCache(table_name, client)

    cache.put_many(vectors)
    found = cache.get_many(list(vectors))

    assert found == vectors


def test_dynamodb_cache_unprocessed_keys_and_items_retried(client: Any, table_name: str) -> None:
    vectors = {f"key-{index}": [float(index)] for index in range(20)}
    flaky = FlakyBatchClient(client)
    cache = DynamoDBEmbeddingCache(table_name, flaky, base_delay_seconds=0.001)  # type: ignore[arg-type]

    cache.put_many(vectors)
    found = cache.get_many(list(vectors))

    assert flaky.throttled == {"get", "write"}
    assert found == vectors


def test_dynamodb_cache_missing_table_degrades_to_misses(aws: None) -> None:
    cache = DynamoDBEmbeddingCache("no-such-table", boto3.client("dynamodb", region_name="us-east-1"))

    cache.put_many({"key": [1.0]})

    assert cache.get_many(["key"]) == {}


def test_cached_embedder_over_dynamodb_never_embeds_unchanged_text_twice(
    client: Any, table: Any, table_name: str
) -> None:
    first_inner, second_inner = WordEmbedder(), WordEmbedder()
    first = CachedEmbedder(first_inner, DynamoDBEmbeddingCache(table_name, client)).embed(
        ["a chunk of text", "another chunk", "a chunk of text"]
    )

    second = CachedEmbedder(second_inner, DynamoDBEmbeddingCache(table_name, client)).embed(
        ["another chunk", "a new chunk", "a chunk of text"]
    )

    assert first_inner.embedded == ["a chunk of text", "another chunk"]
    assert second_inner.embedded == ["a new chunk"]
    assert second[0] == first[1]
    assert second[2] == first[0]
    key = embedding_key(WordEmbedder.model_id, WordEmbedder.dimension, "a new chunk")
    assert table.get_item(Key={"PK": f"EMB#{key}", "SK": "META"}).get("Item") is not None
