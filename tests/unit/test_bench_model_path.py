"""``bench.model_path``'s own parts: rates from rounds, the cosine check, the relevance corpus (no
model, no data set)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from bench.model_path import MODEL_REFERENCE, TODAY, VARIANTS, Speed, corpus_subset, lowest_cosine
from bench.relevance import Split


def test_speed_rate_is_count_over_median_round() -> None:
    speed = Speed(seconds={"notes": [4.0, 1.0, 2.0]})

    assert speed.rate("notes", 100) == 50.0


def test_lowest_cosine_finds_worst_text_over_every_set() -> None:
    unit = np.array([[1.0, 0.0], [0.0, 1.0]], dtype=np.float32)
    turned = np.array([[1.0, 0.0], [0.6, 0.8]], dtype=np.float32)
    left = Speed(vectors={"notes": unit, "scifact": unit})
    right = Speed(vectors={"notes": unit, "scifact": turned})

    assert lowest_cosine(left, left) == 1.0
    assert abs(lowest_cosine(left, right) - 0.8) < 1e-6


def test_variants_start_from_today_and_name_a_reference_per_model() -> None:
    names = [variant.name for variant in VARIANTS]

    assert names[0] == TODAY
    assert VARIANTS[0].options == {}
    assert len(set(names)) == len(names)
    assert {variant.model for variant in VARIANTS} == set(MODEL_REFERENCE)
    assert set(MODEL_REFERENCE.values()) <= set(names)


def _corpus(folder: Path, count: int) -> Path:
    lines = [json.dumps({"_id": f"d{n}", "title": f"T{n}", "text": f"text {n}"}) for n in range(count)]
    (folder / "corpus.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def test_corpus_subset_keeps_judged_documents_and_fills_with_seeded_distractors(tmp_path: Path) -> None:
    data = _corpus(tmp_path, 50)
    split = Split(queries={"q1": "a", "q2": "b"}, qrels={"q1": {"d7": 1}, "q2": {"d40": 1, "d3": 1}})

    subset = corpus_subset(data, split, 10)

    ids = [doc["_id"] for doc in subset]
    assert len(ids) == 10
    assert {"d3", "d7", "d40"} <= set(ids)
    assert ids == sorted(ids, key=lambda doc_id: int(doc_id[1:]))
    assert corpus_subset(data, split, 10) == subset
    assert len(corpus_subset(data, split, 0)) == 50
    assert [doc["_id"] for doc in corpus_subset(data, split, 1)] == ["d3", "d7", "d40"]
