"""Content-addressed embedding caches and ``CachedEmbedder``: unchanged text is never embedded twice.

A cache maps ``embedding_key(model_id, dimension, text)`` (hex sha256) to a vector stored as
little-endian float32. Three ``EmbeddingCache`` implementations:

- ``InProcessEmbeddingCache``: LRU in the process (tests, warm Lambda containers);
- ``SqliteEmbeddingCache``: a SQLite file, so benchmarks and local runs embed nothing on a second run;
- ``DynamoDBEmbeddingCache``: items of the knowledge table, shared by every Lambda.

A cache is an optimization: a failing backend (throttled table, locked file) is logged and degrades
to misses or skipped writes, so embedding still works, only slower.
"""

from __future__ import annotations

import array
import hashlib
import json
import math
import os
import random
import sqlite3
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from knowledge.observability import logger
from knowledge.ports import Embedder, EmbeddingCache

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from knowledge.settings import Settings


def embedding_key(model_id: str, dimension: int, text: str) -> str:
    """Hex sha256 (64 characters) of the model id, the dimension and the text.

    The three are hashed as one JSON array, so no two different triples share an encoding.
    """
    material = json.dumps([model_id, dimension, text], ensure_ascii=False)
    return hashlib.sha256(material.encode("utf-8", "surrogatepass")).hexdigest()


def pack_vector(vector: Sequence[float]) -> bytes:
    """``len(vector) * 4`` bytes: the vector as little-endian IEEE 754 float32."""
    values = array.array("f", vector)
    if sys.byteorder == "big":
        values.byteswap()
    return values.tobytes()


def unpack_vector(blob: bytes) -> list[float]:
    """The inverse of ``pack_vector``. ``ValueError`` if the length is not a multiple of 4."""
    values = array.array("f")
    values.frombytes(blob)
    if sys.byteorder == "big":
        values.byteswap()
    return values.tolist()


def _chunks(items: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


class InProcessEmbeddingCache:
    """``EmbeddingCache`` in process memory, least recently used entries evicted past ``max_entries``.

    Vectors are kept packed (1.5 KB for 384 floats), so 50,000 entries take about 80 MB.
    Thread-safe.
    """

    def __init__(self, max_entries: int = 50_000) -> None:
        if max_entries < 1:
            raise ValueError(f"max_entries must be at least 1, got {max_entries}")
        self._max_entries = max_entries
        self._entries: OrderedDict[str, bytes] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def get_many(self, keys: Sequence[str]) -> dict[str, list[float]]:
        found: dict[str, bytes] = {}
        with self._lock:
            for key in keys:
                blob = self._entries.get(key)
                if blob is not None:
                    self._entries.move_to_end(key)
                    found[key] = blob
        return {key: unpack_vector(blob) for key, blob in found.items()}

    def put_many(self, vectors: Mapping[str, Sequence[float]]) -> None:
        packed = {key: pack_vector(vector) for key, vector in vectors.items()}
        with self._lock:
            for key, blob in packed.items():
                self._entries[key] = blob
                self._entries.move_to_end(key)
            while len(self._entries) > self._max_entries:
                self._entries.popitem(last=False)

    def delete_many(self, keys: Sequence[str]) -> None:
        with self._lock:
            for key in keys:
                self._entries.pop(key, None)


PRIVATE_FILE_MODE = 0o600


def _make_private_file(path: Path) -> None:
    """Create ``path`` (empty: an empty file is an empty SQLite database) or keep it, mode 0600."""
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT, PRIVATE_FILE_MODE)
    try:
        os.fchmod(descriptor, PRIVATE_FILE_MODE)
    finally:
        os.close(descriptor)


class SqliteEmbeddingCache:
    """``EmbeddingCache`` in a SQLite file (WAL journal), shared by threads and by processes.

    One table ``embedding(key TEXT PRIMARY KEY, vector BLOB)``; ``path`` and its parent folder are
    created on first use. The file is its owner's alone (mode 0600, also set on a file that
    exists), and SQLite gives its ``-wal`` and ``-shm`` files the database's mode: the cache holds
    vectors of private text. One connection per instance, serialized by a lock; other processes wait up
    to ``timeout_seconds`` for a writer. Call ``close()`` (or use ``with``) when done.
    """

    _SELECT_CHUNK = 500  # well under SQLite's 999 bound-parameter limit of older builds

    def __init__(self, path: str | Path, *, timeout_seconds: float = 30.0) -> None:
        self._path = Path(path)
        if str(path) != ":memory:":
            self._path.parent.mkdir(parents=True, exist_ok=True)
            _make_private_file(self._path)
        self._lock = threading.Lock()
        self._connection = sqlite3.connect(str(path), timeout=timeout_seconds, check_same_thread=False)
        with self._lock, self._connection:
            self._connection.execute("PRAGMA journal_mode=WAL")
            self._connection.execute("PRAGMA synchronous=NORMAL")
            self._connection.execute(
                "CREATE TABLE IF NOT EXISTS embedding"
                " (key TEXT PRIMARY KEY, vector BLOB NOT NULL) WITHOUT ROWID"
            )

    @property
    def path(self) -> Path:
        return self._path

    def __enter__(self) -> SqliteEmbeddingCache:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        with self._lock:
            self._connection.close()

    def __len__(self) -> int:
        with self._lock:
            (count,) = self._connection.execute("SELECT count(*) FROM embedding").fetchone()
        return int(count)

    def get_many(self, keys: Sequence[str]) -> dict[str, list[float]]:
        unique = list(dict.fromkeys(keys))
        rows: list[tuple[str, bytes]] = []
        try:
            with self._lock:
                for chunk in _chunks(unique, self._SELECT_CHUNK):
                    placeholders = ",".join("?" * len(chunk))
                    rows.extend(
                        self._connection.execute(
                            f"SELECT key, vector FROM embedding WHERE key IN ({placeholders})", tuple(chunk)
                        ).fetchall()
                    )
        except sqlite3.OperationalError as error:
            logger.warning("embedding cache read failed", extra={"cache": "sqlite", "error": str(error)})
            return {}
        return {key: unpack_vector(blob) for key, blob in rows}

    def put_many(self, vectors: Mapping[str, Sequence[float]]) -> None:
        if not vectors:
            return
        rows = [(key, pack_vector(vector)) for key, vector in vectors.items()]
        try:
            with self._lock, self._connection:
                self._connection.executemany(
                    "INSERT OR REPLACE INTO embedding (key, vector) VALUES (?, ?)", rows
                )
        except sqlite3.OperationalError as error:
            logger.warning("embedding cache write failed", extra={"cache": "sqlite", "error": str(error)})

    def delete_many(self, keys: Sequence[str]) -> None:
        try:
            with self._lock, self._connection:
                self._connection.executemany("DELETE FROM embedding WHERE key = ?", [(key,) for key in keys])
        except sqlite3.OperationalError as error:
            logger.warning("embedding cache delete failed", extra={"cache": "sqlite", "error": str(error)})


class DynamoDBEmbeddingCache:
    """``EmbeddingCache`` as items of the knowledge table, for Lambda.

    Item: ``PK = "EMB#{key}"``, ``SK = "META"``, ``vector`` (binary, little-endian float32),
    ``dimension`` (number) and, when given, ``model_id``. These items carry no tenant: the key is a
    hash of model and text, and vectors are only ever read by exact key. Stream consumers of the table
    see them and must ignore ``EMB#`` keys.

    Reads use ``BatchGetItem`` (100 keys a call), writes ``BatchWriteItem`` (25 items a call);
    unprocessed keys and items are retried with exponential backoff and jitter up to ``max_attempts``
    times, then treated as misses or skipped. DynamoDB errors are logged and degrade the same way.
    """

    _GET_CHUNK = 100
    _WRITE_CHUNK = 25

    def __init__(
        self,
        table_name: str,
        client: DynamoDBClient | None = None,
        *,
        model_id: str | None = None,
        max_attempts: int = 6,
        base_delay_seconds: float = 0.05,
    ) -> None:
        self._table_name = table_name
        self._client = client or boto3.client("dynamodb", config=Config(retries={"mode": "standard"}))
        self._model_id = model_id
        self._max_attempts = max(1, max_attempts)
        self._base_delay_seconds = base_delay_seconds

    def get_many(self, keys: Sequence[str]) -> dict[str, list[float]]:
        found: dict[str, list[float]] = {}
        unique = list(dict.fromkeys(keys))
        try:
            for chunk in _chunks(unique, self._GET_CHUNK):
                for item in self._batch_get([_key_attributes(key) for key in chunk]):
                    found[item["PK"]["S"].removeprefix("EMB#")] = unpack_vector(item["vector"]["B"])
        except (ClientError, BotoCoreError) as error:
            self._log_failure("embedding cache read failed", error)
        return found

    def put_many(self, vectors: Mapping[str, Sequence[float]]) -> None:
        items = [self._item(key, vector) for key, vector in vectors.items()]
        try:
            for chunk in _chunks(items, self._WRITE_CHUNK):
                self._batch_write([{"PutRequest": {"Item": item}} for item in chunk])
        except (ClientError, BotoCoreError) as error:
            self._log_failure("embedding cache write failed", error)

    def delete_many(self, keys: Sequence[str]) -> None:
        try:
            for chunk in _chunks(list(dict.fromkeys(keys)), self._WRITE_CHUNK):
                self._batch_write([{"DeleteRequest": {"Key": _key_attributes(key)}} for key in chunk])
        except (ClientError, BotoCoreError) as error:
            self._log_failure("embedding cache delete failed", error)

    def _item(self, key: str, vector: Sequence[float]) -> dict[str, Any]:
        item: dict[str, Any] = {
            **_key_attributes(key),
            "vector": {"B": pack_vector(vector)},
            "dimension": {"N": str(len(vector))},
        }
        if self._model_id is not None:
            item["model_id"] = {"S": self._model_id}
        return item

    def _batch_get(self, keys: list[dict[str, Any]]) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        request: dict[str, Any] = {
            self._table_name: {
                "Keys": keys,
                "ProjectionExpression": "#pk, #vector",
                "ExpressionAttributeNames": {"#pk": "PK", "#vector": "vector"},
            }
        }
        for attempt in range(self._max_attempts):
            if attempt:
                self._back_off(attempt)
            response = self._client.batch_get_item(RequestItems=request)
            items.extend(response.get("Responses", {}).get(self._table_name, []))
            request = dict(response.get("UnprocessedKeys") or {})
            if not request:
                return items
        logger.warning(
            "embedding cache read incomplete",
            extra={"cache": "dynamodb", "unprocessed": len(request[self._table_name]["Keys"])},
        )
        return items

    def _batch_write(self, requests: list[dict[str, Any]]) -> None:
        pending: dict[str, Any] = {self._table_name: requests}
        for attempt in range(self._max_attempts):
            if attempt:
                self._back_off(attempt)
            response = self._client.batch_write_item(RequestItems=pending)
            pending = dict(response.get("UnprocessedItems") or {})
            if not pending:
                return
        logger.warning(
            "embedding cache write incomplete",
            extra={"cache": "dynamodb", "unprocessed": len(pending[self._table_name])},
        )

    def _back_off(self, attempt: int) -> None:
        # Full jitter (AWS Architecture Blog, "Exponential Backoff And Jitter"), capped at one second.
        time.sleep(random.uniform(0, min(1.0, self._base_delay_seconds * 2**attempt)))

    def _log_failure(self, message: str, error: Exception) -> None:
        code = error.response.get("Error", {}).get("Code") if isinstance(error, ClientError) else None
        logger.warning(
            message,
            extra={"cache": "dynamodb", "error_code": code, "error_type": type(error).__name__},
        )


def _key_attributes(key: str) -> dict[str, Any]:
    return {"PK": {"S": f"EMB#{key}"}, "SK": {"S": "META"}}


class CachedEmbedder:
    """``Embedder`` that looks every text up in ``cache`` first and embeds only the misses.

    Keys are ``embedding_key(inner.model_id, inner.dimension, text)``, so switching model or dimension
    never reuses a vector. Misses are deduplicated within a call, embedded in one ``inner.embed`` call,
    stored, and returned with the hits in input order. Fresh vectors pass through float32 like stored
    ones, so a text gets the identical vector whether it was a hit or a miss.

    Errors: those of ``inner``; the cache itself never fails a call (see the module docstring).
    """

    def __init__(self, inner: Embedder, cache: EmbeddingCache) -> None:
        self._inner = inner
        self._cache = cache

    @property
    def model_id(self) -> str:
        return self._inner.model_id

    @property
    def dimension(self) -> int:
        return self._inner.dimension

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        model_id, dimension = self._inner.model_id, self._inner.dimension
        keys = [embedding_key(model_id, dimension, text) for text in texts]
        unique_keys = list(dict.fromkeys(keys))
        vectors = {
            key: vector
            for key, vector in self._cache.get_many(unique_keys).items()
            if _usable(vector, dimension)
        }
        misses = {key: text for key, text in zip(keys, texts, strict=True) if key not in vectors}
        if misses:
            embedded = self._inner.embed(list(misses.values()))
            fresh = {
                key: array.array("f", vector).tolist() for key, vector in zip(misses, embedded, strict=True)
            }
            self._cache.put_many(fresh)
            vectors.update(fresh)
        logger.debug(
            "embeddings resolved",
            extra={
                "model_id": model_id,
                "texts": len(texts),
                "unique": len(unique_keys),
                "embedded": len(misses),
            },
        )
        # Copies: duplicate texts must not share one mutable list.
        return [list(vectors[key]) for key in keys]

    def cached(self, texts: Sequence[str]) -> dict[str, list[float]]:
        """The cached vectors of ``texts`` by their cache keys (texts never embedded are left out);
        nothing is embedded."""
        model_id, dimension = self._inner.model_id, self._inner.dimension
        keys = list(dict.fromkeys(embedding_key(model_id, dimension, text) for text in texts))
        return {key: vector for key, vector in self._cache.get_many(keys).items() if len(vector) == dimension}

    def keep(self, vectors: Mapping[str, list[float]]) -> int:
        """Store ``vectors`` (cache key → vector) so the texts they embed are not embedded again;
        the number stored. A vector is left out unless it is a finite, non-zero one of this
        model's dimension, and a key the cache already holds keeps its row: rows are shared by
        every tenant, so what is kept never replaces what the model computed."""
        usable = {
            key: array.array("f", vector).tolist()
            for key, vector in vectors.items()
            if isinstance(vector, list) and _usable(vector, self._inner.dimension)
        }
        held = self._cache.get_many(list(usable)) if usable else {}
        kept = {key: vector for key, vector in usable.items() if key not in held}
        if kept:
            self._cache.put_many(kept)
        return len(kept)

    def forget(self, texts: Sequence[str]) -> None:
        """Drop the cached vectors of ``texts``; the next ``embed`` of them computes them again."""
        model_id, dimension = self._inner.model_id, self._inner.dimension
        self._cache.delete_many([embedding_key(model_id, dimension, text) for text in texts])


def _usable(vector: Sequence[float], dimension: int) -> bool:
    """A vector of ``dimension`` finite numbers, not all zero: one a search can take a cosine of
    (a cached row that is not is embedded again). A NaN or an infinity anywhere makes the sum
    not finite; a value that is no number raises ``TypeError``."""
    return len(vector) == dimension and math.isfinite(sum(vector)) and any(vector)


def build(settings: Settings, model: Embedder) -> CachedEmbedder:
    """``model`` behind the cache of ``settings``: a SQLite file at ``EMBEDDING_CACHE_PATH`` when it
    is set, else the knowledge table (``EMBEDDING_CACHE=table``) or process memory."""
    cache: EmbeddingCache
    if settings.embedding_cache_path is not None:
        cache = SqliteEmbeddingCache(settings.embedding_cache_path)
    elif settings.embedding_cache == "table":
        cache = DynamoDBEmbeddingCache(settings.table_name)
    else:
        cache = InProcessEmbeddingCache()
    return CachedEmbedder(model, cache)
