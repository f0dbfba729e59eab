"""BedrockEmbedder against botocore's Stubber (real InvokeModel shapes) and fake clients; no network."""

from __future__ import annotations

import io
import json
import math
import threading
import time
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import EndpointConnectionError, ReadTimeoutError
from botocore.response import StreamingBody
from botocore.stub import Stubber

from knowledge.adapters.bedrock_embedder import (
    MAX_INPUT_CHARS,
    TITAN_V2_MODEL_ID,
    BedrockEmbedder,
    create_bedrock_client,
)
from knowledge.errors import DependencyUnavailableError


class JsonBody:
    """Matches a request ``body`` by its decoded JSON, whatever the serializer's spacing."""

    def __init__(self, expected: dict[str, Any]) -> None:
        self.expected = expected

    def __eq__(self, actual: object) -> bool:
        return isinstance(actual, (str, bytes)) and json.loads(actual) == self.expected

    def __hash__(self) -> int:
        return hash(json.dumps(self.expected, sort_keys=True))

    def __repr__(self) -> str:
        return f"JsonBody({self.expected!r})"


def titan_response(embedding: list[float], tokens: int = 5) -> dict[str, Any]:
    """An InvokeModel response carrying a Titan Text Embeddings V2 body."""
    raw = json.dumps(
        {"embedding": embedding, "inputTextTokenCount": tokens, "embeddingsByType": {"float": embedding}}
    ).encode()
    return {"body": StreamingBody(io.BytesIO(raw), len(raw)), "contentType": "application/json"}


def expected_request(text: str, dimension: int, model_id: str = TITAN_V2_MODEL_ID) -> dict[str, Any]:
    return {
        "modelId": model_id,
        "body": JsonBody({"inputText": text, "dimensions": dimension, "normalize": True}),
        "contentType": "application/json",
        "accept": "application/json",
    }


@pytest.fixture
def client() -> Any:
    return boto3.client("bedrock-runtime", region_name="us-east-1")


@pytest.fixture
def stubber(client: Any) -> Iterator[Stubber]:
    with Stubber(client) as stub:
        yield stub
        stub.assert_no_pending_responses()


def test_bedrock_embedder_response_vector_parsed_and_normalized(client: Any, stubber: Stubber) -> None:
    raw = [3.0, 4.0] + [0.0] * 254
    stubber.add_response("invoke_model", titan_response(raw), expected_request("hello", 256))
    embedder = BedrockEmbedder(dimension=256, client=client)

    (vector,) = embedder.embed(["hello"])

    assert len(vector) == 256
    assert vector[:3] == pytest.approx([0.6, 0.8, 0.0])
    assert math.sqrt(math.fsum(value * value for value in vector)) == pytest.approx(1.0, abs=1e-6)


def test_bedrock_embedder_request_body_exactly_as_documented(client: Any, stubber: Stubber) -> None:
    model_id = "amazon.titan-embed-text-v2:0"
    for text in ("first text", "zweiter Text"):
        stubber.add_response(
            "invoke_model", titan_response([1.0] * 512), expected_request(text, 512, model_id)
        )
    embedder = BedrockEmbedder(model_id=model_id, dimension=512, client=client, max_workers=1)

    vectors = embedder.embed(["first text", "zweiter Text"])

    assert [len(vector) for vector in vectors] == [512, 512]
    assert (embedder.model_id, embedder.dimension) == (model_id, 512)


def test_bedrock_embedder_text_over_limit_sent_truncated(client: Any, stubber: Stubber) -> None:
    text = "a" * MAX_INPUT_CHARS + "b" * 10_000
    stubber.add_response(
        "invoke_model", titan_response([1.0] * 256), expected_request("a" * MAX_INPUT_CHARS, 256)
    )

    vectors = BedrockEmbedder(dimension=256, client=client).embed([text])

    assert len(vectors) == 1


@pytest.mark.parametrize("dimension", [256, 512, 1024])
def test_bedrock_embedder_titan_dimension_accepted(client: Any, dimension: int) -> None:
    assert BedrockEmbedder(dimension=dimension, client=client).dimension == dimension


@pytest.mark.parametrize("dimension", [0, 128, 384, 1536])
def test_bedrock_embedder_other_dimension_raises_value_error(client: Any, dimension: int) -> None:
    with pytest.raises(ValueError, match="dimension"):
        BedrockEmbedder(dimension=dimension, client=client)


def test_bedrock_embedder_response_of_wrong_size_raises_dependency_unavailable(
    client: Any, stubber: Stubber
) -> None:
    stubber.add_response("invoke_model", titan_response([0.1] * 1024), expected_request("text", 256))

    with pytest.raises(DependencyUnavailableError, match="unexpected size"):
        BedrockEmbedder(dimension=256, client=client).embed(["text"])


@pytest.mark.parametrize(
    ("code", "status"),
    [
        ("ThrottlingException", 429),
        ("ServiceUnavailableException", 503),
        ("ModelTimeoutException", 408),
        ("InternalServerException", 500),
    ],
)
def test_bedrock_embedder_transient_error_maps_to_retryable_dependency_unavailable(
    client: Any, stubber: Stubber, code: str, status: int
) -> None:
    stubber.add_client_error("invoke_model", service_error_code=code, http_status_code=status)

    with pytest.raises(DependencyUnavailableError) as caught:
        BedrockEmbedder(client=client).embed(["text"])

    assert caught.value.code == "dependency_unavailable"
    assert caught.value.retryable is True
    assert "retry later" in caught.value.message


@pytest.mark.parametrize(
    ("code", "status", "cause"),
    [
        ("AccessDeniedException", 403, "model access is not enabled"),
        ("ValidationException", 400, "model access is enabled"),
    ],
)
def test_bedrock_embedder_access_or_validation_error_names_cause(
    client: Any, stubber: Stubber, code: str, status: int, cause: str
) -> None:
    stubber.add_client_error(
        "invoke_model", service_error_code=code, service_message="internal detail", http_status_code=status
    )

    with pytest.raises(DependencyUnavailableError) as caught:
        BedrockEmbedder(client=client).embed(["text"])

    assert cause in caught.value.message
    assert "internal detail" not in caught.value.message


class FailingClient:
    """A client whose every call fails at the transport, as botocore reports it."""

    def __init__(self, error: Exception) -> None:
        self.error = error

    def invoke_model(self, **kwargs: Any) -> dict[str, Any]:
        raise self.error


@pytest.mark.parametrize(
    "error",
    [
        EndpointConnectionError(endpoint_url="https://bedrock-runtime.us-east-1.amazonaws.com"),
        ReadTimeoutError(endpoint_url="https://bedrock-runtime.us-east-1.amazonaws.com"),
    ],
)
def test_bedrock_embedder_connection_error_maps_to_dependency_unavailable(error: Exception) -> None:
    embedder = BedrockEmbedder(client=FailingClient(error))  # type: ignore[arg-type]

    with pytest.raises(DependencyUnavailableError) as caught:
        embedder.embed(["text"])

    assert caught.value.retryable is True


class EchoClient:
    """Answers like Titan with a one-hot vector at the integer the text names, after a delay that
    makes later texts finish first; records the largest number of calls in flight."""

    def __init__(self, dimension: int) -> None:
        self.dimension = dimension
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()

    def invoke_model(self, **kwargs: Any) -> dict[str, Any]:
        request = json.loads(kwargs["body"])
        with self._lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        position = int(request["inputText"])
        time.sleep(0.002 * (10 - position % 10))
        with self._lock:
            self.in_flight -= 1
        embedding = [0.0] * request["dimensions"]
        embedding[position] = 2.0
        return titan_response(embedding)


def test_bedrock_embedder_concurrent_calls_keep_input_order() -> None:
    client = EchoClient(256)
    texts = [str(position) for position in range(20)]

    vectors = BedrockEmbedder(dimension=256, client=client, max_workers=4).embed(texts)  # type: ignore[arg-type]

    assert [vector.index(1.0) for vector in vectors] == list(range(20))
    assert 1 < client.max_in_flight <= 4


def test_bedrock_embedder_empty_input_returns_empty_list(client: Any, stubber: Stubber) -> None:
    assert BedrockEmbedder(client=client).embed([]) == []


def test_bedrock_embedder_empty_text_raises_value_error(client: Any, stubber: Stubber) -> None:
    with pytest.raises(ValueError, match="empty"):
        BedrockEmbedder(client=client).embed(["text", ""])


def test_create_bedrock_client_uses_standard_retries() -> None:
    client = create_bedrock_client("eu-west-1", max_attempts=7)

    assert client.meta.config.retries == {"mode": "standard", "total_max_attempts": 7}
    assert client.meta.region_name == "eu-west-1"
