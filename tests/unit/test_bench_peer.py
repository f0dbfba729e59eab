"""bench.peer's synthetic corpus and our engine's ranking; LanceDB itself is not needed here."""

from __future__ import annotations

import numpy as np

from bench.cost import Line, totals
from bench.peer import Corpus, Ours, percentiles, synthetic_chunks


def _base(rows: int = 5, dimension: int = 8) -> Corpus:
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(rows, dimension)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    texts = [f"alpha beta gamma delta epsilon zeta eta theta iota kappa topic{row}" for row in range(rows)]
    return Corpus(items=[], docs=[f"d{row}" for row in range(rows)], texts=texts, vectors=vectors)


def test_synthetic_chunks_larger_than_base_copies_with_perturbation() -> None:
    base = _base()

    corpus = synthetic_chunks(base, 12)

    assert len(corpus.items) == len(corpus.texts) == corpus.vectors.shape[0] == 12
    assert len(set(corpus.docs)) == 12
    assert np.allclose(corpus.vectors[:5], base.vectors)
    assert corpus.texts[:5] == base.texts
    cosines = np.sum(corpus.vectors[5:10] * base.vectors, axis=1)
    assert np.all(cosines < 1.0)
    assert np.all(cosines > 0.5)
    assert all(text.endswith(" copy1") for text in corpus.texts[5:10])
    assert all(text.endswith(" copy2") for text in corpus.texts[10:])


def test_synthetic_chunks_same_seed_same_corpus() -> None:
    first, second = synthetic_chunks(_base(), 9, seed=3), synthetic_chunks(_base(), 9, seed=3)

    assert first.texts == second.texts
    assert np.array_equal(first.vectors, second.vectors)


def test_ours_semantic_query_of_a_chunk_vector_ranks_its_document_first() -> None:
    corpus = synthetic_chunks(_base(), 5)
    engine = Ours(corpus, corpus.vectors.shape[1])

    ranking = engine.search("semantic", "topic3", corpus.vectors[3])

    assert ranking[0] == corpus.docs[3]
    assert engine.search("lexical", "topic3", corpus.vectors[3]) == [corpus.docs[3]]


def test_percentiles_in_milliseconds() -> None:
    figures = percentiles([step / 1000 for step in range(1, 101)])

    assert round(figures["p50"], 1) == 50.5
    assert figures["p50"] < figures["p95"] < figures["p99"] <= 100.0


def test_cost_totals_add_every_line() -> None:
    lines = [Line("a", "", read_units=2, tokens=10), Line("b", "", read_units=3, write_units=1)]

    total = totals(lines)

    assert (total.read_units, total.write_units, total.tokens) == (5, 1, 10)
    assert abs(total.cost() - sum(line.cost() for line in lines)) < 1e-15
