"""Embedding caches and CachedEmbedder: unchanged text is never embedded twice."""

from __future__ import annotations

import array
import hashlib
import math
import sqlite3
import stat
import threading
from collections.abc import Sequence
from pathlib import Path

import pytest

from knowledge.adapters.embedding_cache import (
    CachedEmbedder,
    InProcessEmbeddingCache,
    SqliteEmbeddingCache,
    embedding_key,
    pack_vector,
    unpack_vector,
)


class CountingEmbedder:
    """A deterministic embedder that records every text it is asked to embed."""

    def __init__(self, model_id: str = "test/hash-embedder", dimension: int = 8) -> None:
        self._model_id = model_id
        self._dimension = dimension
        self.embedded: list[str] = []
        self.calls = 0

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dimension(self) -> int:
        return self._dimension

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls += 1
        self.embedded.extend(texts)
        return [self.vector_for(text) for text in texts]

    def vector_for(self, text: str) -> list[float]:
        digest = hashlib.sha256(f"{self._model_id}:{text}".encode()).digest()
        raw = [byte - 127.5 for byte in digest[: self._dimension]]
        norm = math.sqrt(sum(value * value for value in raw))
        return [value / norm for value in raw]


def test_embedding_key_same_inputs_same_hex_digest() -> None:
    key = embedding_key("model", 384, "text")

    assert key == embedding_key("model", 384, "text")
    assert len(key) == 64
    assert int(key, 16) >= 0


@pytest.mark.parametrize(
    "other",
    [("other-model", 384, "text"), ("model", 256, "text"), ("model", 384, "text "), ("model3", 84, "text")],
)
def test_embedding_key_any_part_changed_differs(other: tuple[str, int, str]) -> None:
    assert embedding_key(*other) != embedding_key("model", 384, "text")


def test_pack_vector_round_trip_float32_little_endian() -> None:
    vector = [0.1, -0.25, 1.0, 3.4e38]

    blob = pack_vector(vector)

    assert len(blob) == 16
    assert blob[4:8] == b"\x00\x00\x80\xbe"  # -0.25 as little-endian IEEE 754 single
    assert unpack_vector(blob) == array.array("f", vector).tolist()


def test_in_memory_cache_put_then_get_returns_float32_vectors() -> None:
    cache = InProcessEmbeddingCache()
    cache.put_many({"a": [0.1, 0.2], "b": [0.3, 0.4]})

    found = cache.get_many(["a", "missing", "b"])

    assert found == {"a": array.array("f", [0.1, 0.2]).tolist(), "b": array.array("f", [0.3, 0.4]).tolist()}


def test_in_memory_cache_over_capacity_evicts_least_recently_used() -> None:
    cache = InProcessEmbeddingCache(max_entries=2)
    cache.put_many({"a": [1.0], "b": [2.0]})
    cache.get_many(["a"])  # "b" is now the least recently used

    cache.put_many({"c": [3.0]})

    assert set(cache.get_many(["a", "b", "c"])) == {"a", "c"}
    assert len(cache) == 2


def test_in_memory_cache_zero_capacity_raises_value_error() -> None:
    with pytest.raises(ValueError, match="max_entries"):
        InProcessEmbeddingCache(max_entries=0)


def test_sqlite_cache_reopened_file_returns_stored_vectors(tmp_path: Path) -> None:
    path = tmp_path / "nested" / "embeddings.sqlite"
    with SqliteEmbeddingCache(path) as cache:
        cache.put_many({"k1": [0.5, -0.5, 0.25], "k2": [1.0, 0.0, 0.0]})

    with SqliteEmbeddingCache(path) as reopened:
        found = reopened.get_many(["k2", "k1", "absent"])
        assert len(reopened) == 2

    assert found == {"k1": [0.5, -0.5, 0.25], "k2": [1.0, 0.0, 0.0]}


def test_sqlite_cache_file_uses_wal_and_float32_blobs(tmp_path: Path) -> None:
    path = tmp_path / "embeddings.sqlite"
    with SqliteEmbeddingCache(path) as cache:
        cache.put_many({"key": [0.1] * 384})

    connection = sqlite3.connect(path)
    try:
        (mode,) = connection.execute("PRAGMA journal_mode").fetchone()
        (blob,) = connection.execute("SELECT vector FROM embedding WHERE key = 'key'").fetchone()
    finally:
        connection.close()
    assert mode == "wal"
    assert len(blob) == 384 * 4


def test_sqlite_cache_file_and_its_wal_files_are_the_owners_alone(tmp_path: Path) -> None:
    path = tmp_path / "embeddings.sqlite"
    path.write_bytes(b"")
    path.chmod(0o644)  # a cache an earlier version left readable by others

    with SqliteEmbeddingCache(path) as cache:
        cache.put_many({"key": [0.1] * 8})
        files = sorted(tmp_path.iterdir())
        modes = {file.name: stat.S_IMODE(file.stat().st_mode) for file in files}

    assert modes == {
        "embeddings.sqlite": 0o600,
        "embeddings.sqlite-shm": 0o600,
        "embeddings.sqlite-wal": 0o600,
    }


def test_sqlite_cache_more_keys_than_one_select_all_found(tmp_path: Path) -> None:
    vectors = {f"key-{index}": [float(index)] for index in range(1_234)}
    with SqliteEmbeddingCache(tmp_path / "embeddings.sqlite") as cache:
        cache.put_many(vectors)

        found = cache.get_many(list(vectors))

    assert found == vectors


def test_sqlite_cache_concurrent_threads_lose_nothing(tmp_path: Path) -> None:
    cache = SqliteEmbeddingCache(tmp_path / "embeddings.sqlite")
    errors: list[BaseException] = []

    def work(worker: int) -> None:
        try:
            for batch in range(20):
                keys = [f"w{worker}-b{batch}-{index}" for index in range(5)]
                cache.put_many({key: [float(worker), float(batch)] for key in keys})
                assert set(cache.get_many(keys)) == set(keys)
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=work, args=(worker,)) for worker in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    assert len(cache) == 4 * 20 * 5
    cache.close()


def test_cached_embedder_duplicate_texts_in_one_call_embedded_once() -> None:
    inner = CountingEmbedder()
    embedder = CachedEmbedder(inner, InProcessEmbeddingCache())

    vectors = embedder.embed(["alpha", "beta", "alpha", "alpha", "beta"])

    assert sorted(inner.embedded) == ["alpha", "beta"]
    assert vectors[0] == vectors[2] == vectors[3]
    assert vectors[1] == vectors[4]
    assert vectors[0] != vectors[1]


def test_cached_embedder_duplicate_texts_returned_as_independent_lists() -> None:
    embedder = CachedEmbedder(CountingEmbedder(), InProcessEmbeddingCache())
    vectors = embedder.embed(["alpha", "alpha"])

    vectors[0][0] = 42.0

    assert vectors[1][0] != 42.0
    assert embedder.embed(["alpha"])[0] == vectors[1]


def test_cached_embedder_second_call_embeds_only_new_text() -> None:
    inner = CountingEmbedder()
    embedder = CachedEmbedder(inner, InProcessEmbeddingCache())
    first = embedder.embed(["alpha", "beta"])

    second = embedder.embed(["beta", "gamma", "alpha"])

    assert inner.embedded == ["alpha", "beta", "gamma"]
    assert second == [first[1], second[1], first[0]]


def test_cached_embedder_mixed_hits_and_misses_keep_input_order() -> None:
    inner = CountingEmbedder()
    embedder = CachedEmbedder(inner, InProcessEmbeddingCache())
    embedder.embed(["b", "d"])
    texts = ["a", "b", "c", "d", "e"]

    vectors = embedder.embed(texts)

    expected = [array.array("f", inner.vector_for(text)).tolist() for text in texts]
    assert vectors == expected


def test_cached_embedder_hit_identical_to_miss() -> None:
    embedder = CachedEmbedder(CountingEmbedder(), InProcessEmbeddingCache())

    (miss,) = embedder.embed(["same text"])
    (hit,) = embedder.embed(["same text"])

    assert hit == miss


def test_cached_embedder_shared_sqlite_file_never_embeds_unchanged_text_twice(tmp_path: Path) -> None:
    path = tmp_path / "embeddings.sqlite"
    first_inner = CountingEmbedder()
    with SqliteEmbeddingCache(path) as cache:
        first = CachedEmbedder(first_inner, cache).embed(["one", "two", "three"])

    second_inner = CountingEmbedder()
    with SqliteEmbeddingCache(path) as cache:
        second = CachedEmbedder(second_inner, cache).embed(["three", "one", "four", "two"])

    assert first_inner.embedded == ["one", "two", "three"]
    assert second_inner.embedded == ["four"]
    assert second[0] == first[2]
    assert second[1] == first[0]
    assert second[3] == first[1]


def test_cached_embedder_other_model_same_cache_embeds_again() -> None:
    cache = InProcessEmbeddingCache()
    CachedEmbedder(CountingEmbedder("model-a"), cache).embed(["text"])
    other = CountingEmbedder("model-b")

    CachedEmbedder(other, cache).embed(["text"])

    assert other.embedded == ["text"]


def test_cached_embedder_empty_input_returns_empty_without_embedding() -> None:
    inner = CountingEmbedder()

    assert CachedEmbedder(inner, InProcessEmbeddingCache()).embed([]) == []
    assert inner.calls == 0


def test_cached_embedder_all_hits_calls_inner_not_at_all() -> None:
    inner = CountingEmbedder()
    embedder = CachedEmbedder(inner, InProcessEmbeddingCache())
    embedder.embed(["a", "b"])

    embedder.embed(["b", "a", "b"])

    assert inner.calls == 1


def test_cached_embedder_cached_vector_of_wrong_size_embedded_again() -> None:
    inner = CountingEmbedder(dimension=8)
    cache = InProcessEmbeddingCache()
    cache.put_many({embedding_key(inner.model_id, inner.dimension, "text"): [1.0, 0.0]})

    (vector,) = CachedEmbedder(inner, cache).embed(["text"])

    assert inner.embedded == ["text"]
    assert len(vector) == 8


def test_cached_embedder_reports_inner_model_and_dimension() -> None:
    embedder = CachedEmbedder(CountingEmbedder("m", 16), InProcessEmbeddingCache())

    assert (embedder.model_id, embedder.dimension) == ("m", 16)
