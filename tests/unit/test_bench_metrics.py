from __future__ import annotations

import math

import pytest

from bench.metrics import ndcg_at_k, recall_at_k


def test_ndcg_at_k_perfect_ranking_is_one() -> None:
    assert ndcg_at_k(["a", "b", "x"], {"a": 1, "b": 1}) == pytest.approx(1.0)


def test_ndcg_at_k_relevant_at_rank_two_matches_formula() -> None:
    # One relevant document at rank 2: DCG = 1/log2(3), IDCG = 1/log2(2) = 1.
    assert ndcg_at_k(["x", "a"], {"a": 1}) == pytest.approx(1 / math.log2(3))


def test_ndcg_at_k_relevant_below_cutoff_scores_zero() -> None:
    ranking = [f"d{i}" for i in range(10)] + ["a"]
    assert ndcg_at_k(ranking, {"a": 1}, k=10) == 0.0


def test_recall_at_k_counts_relevant_in_top_k() -> None:
    assert recall_at_k(["a", "x", "b"], {"a": 1, "b": 1, "c": 1}, k=2) == pytest.approx(1 / 3)
    assert recall_at_k(["a", "x", "b"], {"a": 1, "b": 1, "c": 1}, k=3) == pytest.approx(2 / 3)
