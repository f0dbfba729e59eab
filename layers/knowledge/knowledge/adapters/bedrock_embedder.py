"""Amazon Titan Text Embeddings V2 on Amazon Bedrock: the ``Embedder`` used on AWS.

Request (``bedrock-runtime`` ``InvokeModel``, JSON body): ``{"inputText": str, "dimensions": 256 |
512 | 1024, "normalize": true}``; response body: ``{"embedding": [float, ...], "inputTextTokenCount":
int, "embeddingsByType": {"float": [...]}}`` (Bedrock user guide, "Amazon Titan Embeddings G1 - Text",
V2 request/response). Titan V2 takes one non-empty text per call, up to 8,192 tokens or 50,000
characters, so a batch is embedded by a small pool of concurrent calls.
"""

from __future__ import annotations

import array
import json
import math
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError, HTTPClientError, NoCredentialsError
from botocore.exceptions import ConnectionError as BotocoreConnectionError

from knowledge.errors import DependencyUnavailableError
from knowledge.observability import logger

if TYPE_CHECKING:
    from mypy_boto3_bedrock_runtime import BedrockRuntimeClient

    from knowledge.settings import Settings

TITAN_V2_MODEL_ID = "amazon.titan-embed-text-v2:0"
TITAN_V2_DIMENSIONS = (256, 512, 1024)
MAX_INPUT_CHARS = 50_000
"""Titan V2's input limit in characters. Longer texts are cut to this many code points on purpose:
chunks are a few hundred tokens, so only a pathological input gets here, and its head is the best
embedding we can still get rather than a rejected request."""

_TRANSIENT_CODES = frozenset(
    {
        "ThrottlingException",
        "ServiceUnavailableException",
        "ModelTimeoutException",
        "InternalServerException",
        "ModelNotReadyException",
        "ModelErrorException",
        "ServiceQuotaExceededException",
    }
)
_CAUSES = {
    "AccessDeniedException": (
        "The embedding model refused the request: model access is not enabled for this account and "
        "region, or this service's role may not invoke the model."
    ),
    "ValidationException": (
        "The embedding model rejected the request as invalid: check the configured model id and "
        "dimension, and that model access is enabled for this account and region."
    ),
    "ResourceNotFoundException": (
        "The configured embedding model does not exist in this region: check the model id."
    ),
}
_UNAVAILABLE = "The embedding model is unavailable or throttled; retry later."


def create_bedrock_client(region_name: str | None = None, max_attempts: int = 5) -> BedrockRuntimeClient:
    """A ``bedrock-runtime`` client with botocore's standard retry mode (exponential backoff with jitter,
    throttling and transient errors retried) for up to ``max_attempts`` attempts per call, the first
    included (botocore's ``total_max_attempts``; its ``max_attempts`` would count retries only)."""
    config = Config(
        retries={"mode": "standard", "total_max_attempts": max_attempts},
        connect_timeout=5,
        read_timeout=60,
    )
    return boto3.client("bedrock-runtime", region_name=region_name, config=config)


class BedrockEmbedder:
    """``Embedder`` over Titan Text Embeddings V2: L2-normalized float32 vectors of ``dimension`` floats.

    ``dimension`` is 256, 512 or 1024 (anything else: ``ValueError``). Up to ``max_workers`` texts are
    embedded concurrently. ``client`` is injected in tests; otherwise one is built with
    ``create_bedrock_client(region_name, max_attempts)``. Vectors are re-normalized here even though
    the request asks Bedrock to normalize, so cosine is the dot product whatever the service returns.

    Errors: ``DependencyUnavailableError`` for every failure of the service: throttling, outages,
    timeouts and connection errors (retry later), and access or validation errors, whose message
    names the cause since callers cannot fix them. ``ValueError`` for an empty text, which Titan
    rejects.
    """

    def __init__(
        self,
        model_id: str = TITAN_V2_MODEL_ID,
        dimension: int = 1024,
        client: BedrockRuntimeClient | None = None,
        max_workers: int = 4,
        *,
        region_name: str | None = None,
        max_attempts: int = 5,
    ) -> None:
        if dimension not in TITAN_V2_DIMENSIONS:
            raise ValueError(f"dimension must be one of {TITAN_V2_DIMENSIONS}, got {dimension}")
        if max_workers < 1:
            raise ValueError(f"max_workers must be at least 1, got {max_workers}")
        self._model_id = model_id
        self._dimension = dimension
        self._max_workers = max_workers
        self._client = client or create_bedrock_client(region_name, max_attempts)

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dimension(self) -> int:
        return self._dimension

    def forget(self, texts: Sequence[str]) -> None:
        """No cache of its own: nothing to drop."""

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One unit vector per text, in input order; ``[]`` for no texts.

        Raises ``DependencyUnavailableError`` if any text fails; no partial result is returned.
        """
        if not texts:
            return []
        inputs = [self._prepare(text) for text in texts]
        if len(inputs) == 1 or self._max_workers == 1:
            return [self._embed_one(text) for text in inputs]
        pool = ThreadPoolExecutor(
            max_workers=min(self._max_workers, len(inputs)), thread_name_prefix="bedrock-embed"
        )
        try:
            return list(pool.map(self._embed_one, inputs))
        finally:
            # After a failure the whole call fails, so texts not yet sent are not worth paying for.
            pool.shutdown(wait=True, cancel_futures=True)

    def _prepare(self, text: str) -> str:
        if not text:
            raise ValueError("Titan Text Embeddings V2 cannot embed an empty text")
        if len(text) > MAX_INPUT_CHARS:
            logger.warning(
                "embedding input truncated",
                extra={"model_id": self._model_id, "chars": len(text), "limit": MAX_INPUT_CHARS},
            )
            return text[:MAX_INPUT_CHARS]
        return text

    def _embed_one(self, text: str) -> list[float]:
        body = json.dumps({"inputText": text, "dimensions": self._dimension, "normalize": True})
        try:
            response = self._client.invoke_model(
                modelId=self._model_id,
                body=body,
                contentType="application/json",
                accept="application/json",
            )
            payload = json.loads(response["body"].read())
        except ClientError as error:
            raise _translate(error, self._model_id) from error
        except (BotocoreConnectionError, HTTPClientError) as error:
            logger.warning(
                "embedding model unreachable",
                extra={"model_id": self._model_id, "error_type": type(error).__name__},
            )
            raise DependencyUnavailableError(_UNAVAILABLE) from error
        except NoCredentialsError as error:
            logger.error("embedding model has no AWS credentials", extra={"model_id": self._model_id})
            raise DependencyUnavailableError(
                "The embedding model cannot be called: this service has no AWS credentials."
            ) from error
        return self._vector_from(payload)

    def _vector_from(self, payload: Any) -> list[float]:
        embedding = payload.get("embedding") if isinstance(payload, dict) else None
        if not isinstance(embedding, list) or len(embedding) != self._dimension:
            logger.error(
                "embedding response has an unexpected shape",
                extra={
                    "model_id": self._model_id,
                    "expected_dimension": self._dimension,
                    "received": len(embedding) if isinstance(embedding, list) else None,
                },
            )
            raise DependencyUnavailableError(
                "The embedding model returned a vector of an unexpected size: check the configured "
                "model id and dimension."
            )
        norm = math.sqrt(math.fsum(float(value) * float(value) for value in embedding))
        if not math.isfinite(norm) or norm == 0.0:
            raise DependencyUnavailableError(
                "The embedding model returned a vector that cannot be normalized."
            )
        # Through float32, so a vector is the same whether it comes from here or from a cache.
        return array.array("f", (float(value) / norm for value in embedding)).tolist()


def _translate(error: ClientError, model_id: str) -> DependencyUnavailableError:
    code = str(error.response.get("Error", {}).get("Code", ""))
    status = error.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    if code in _CAUSES:
        logger.error(
            "embedding model refused the request",
            extra={"model_id": model_id, "error_code": code, "http_status": status},
        )
        return DependencyUnavailableError(_CAUSES[code])
    logger.warning(
        "embedding model call failed",
        extra={
            "model_id": model_id,
            "error_code": code,
            "http_status": status,
            "transient": code in _TRANSIENT_CODES,
        },
    )
    return DependencyUnavailableError(_UNAVAILABLE)


def build(settings: Settings) -> BedrockEmbedder:
    """The model ``BEDROCK_MODEL_ID`` at ``EMBEDDING_DIMENSION``; ``ValueError`` without either."""
    model_id, dimension = settings.bedrock_model_id, settings.embedding_dimension
    if model_id is None or dimension is None:
        raise ValueError("EMBEDDER=bedrock needs BEDROCK_MODEL_ID and EMBEDDING_DIMENSION.")
    return BedrockEmbedder(model_id=model_id, dimension=dimension)
