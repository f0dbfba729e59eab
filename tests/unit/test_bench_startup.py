"""``bench.startup``: the model's share is measured on what the runtime's seed embeds."""

from __future__ import annotations

import pytest

from bench.startup import seed_texts
from knowledge.domain.retrieval.index_work import part_count
from knowledge_local.config import load_settings
from knowledge_local.stack import LocalStack
from tests.support.template import TEMPLATE


def test_seed_texts_are_the_chunks_of_the_documents_the_runtime_seeds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("KNOWLEDGE_SEED_DIR", raising=False)
    plan = LocalStack(load_settings(), template=TEMPLATE).seed_plan()

    documents, texts = seed_texts()

    assert plan is not None
    assert documents == len(plan.documents)
    parts = sum(part_count(len(document.content)) for document in plan.documents)
    assert parts <= len(texts) <= 40 * parts  # a part of 8,000 characters holds a few dozen chunks at most
    assert all(text.strip() for text in texts)
