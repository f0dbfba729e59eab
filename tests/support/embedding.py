"""A deterministic, dependency-free embedder for tests: hashed bag of lowercase word stems.

Texts sharing words get high cosine similarity, which is enough to exercise the semantic leg
without loading the ONNX model.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Sequence

from knowledge.errors import DependencyUnavailableError

_WORD = re.compile(r"\w+", re.UNICODE)


class HashingEmbedder:
    def __init__(self, dimension: int = 64) -> None:
        self._dimension = dimension
        self.calls = 0
        self.texts_embedded = 0

    @property
    def model_id(self) -> str:
        return f"tests/hashing-{self._dimension}"

    @property
    def dimension(self) -> int:
        return self._dimension

    def forget(self, texts: Sequence[str]) -> None:
        """No cache of its own: nothing to drop."""

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls += 1
        self.texts_embedded += len(texts)
        return [self._one(text) for text in texts]

    def _one(self, text: str) -> list[float]:
        vector = [0.0] * self._dimension
        for word in _WORD.findall(text.lower()):
            stem = word[:5]
            digest = hashlib.blake2b(stem.encode(), digest_size=4).digest()
            vector[int.from_bytes(digest, "big") % self._dimension] += 1.0
        norm = math.sqrt(sum(value * value for value in vector))
        if norm == 0.0:
            vector[0] = 1.0
            return vector
        return [value / norm for value in vector]


class FailingEmbedder(HashingEmbedder):
    """``HashingEmbedder`` that fails any call holding a text with ``marker``, as a throttled model
    would (``DependencyUnavailableError``)."""

    def __init__(self, marker: str) -> None:
        super().__init__()
        self._marker = marker

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if any(self._marker in text for text in texts):
            raise DependencyUnavailableError("The embedding model is throttled.")
        return super().embed(texts)
