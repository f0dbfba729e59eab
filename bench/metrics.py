"""Ranking metrics as BEIR reports them (pytrec_eval semantics).

nDCG@k: DCG = Σ_{i=1..k} (2^rel_i − 1) / log2(i + 1) over the ranking, divided by the DCG of the ideal
ranking of the judged documents (Järvelin & Kekäläinen 2002); with binary judgments the
exponential and linear gains coincide. Recall@k: relevant documents in the top k over all relevant
documents. Queries without relevant documents are skipped, as BEIR does.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence


def ndcg_at_k(ranking: Sequence[str], judgments: Mapping[str, int], k: int = 10) -> float:
    """nDCG@k in [0, 1] of ``ranking`` (document ids, best first) against graded ``judgments``."""
    gains = [2 ** judgments.get(doc, 0) - 1 for doc in ranking[:k]]
    dcg = sum(gain / math.log2(position + 2) for position, gain in enumerate(gains))
    ideal = sorted((2**grade - 1 for grade in judgments.values() if grade > 0), reverse=True)[:k]
    idcg = sum(gain / math.log2(position + 2) for position, gain in enumerate(ideal))
    return dcg / idcg if idcg > 0 else 0.0


def recall_at_k(ranking: Sequence[str], judgments: Mapping[str, int], k: int) -> float:
    """Share in [0, 1] of the relevant documents (grade > 0) found in the top ``k`` of ``ranking``."""
    relevant = {doc for doc, grade in judgments.items() if grade > 0}
    if not relevant:
        return 0.0
    return len(relevant.intersection(ranking[:k])) / len(relevant)


def mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0
