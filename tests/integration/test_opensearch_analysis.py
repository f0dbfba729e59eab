"""The two index adapters analyze text alike: the embedded index's terms equal, term for term, what
the OpenSearch mapping's analyzers answer through ``_analyze`` on a real node (single CJK
characters, Hangul bigrams, full-width forms and accents included), for indexed text and for
queries."""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from knowledge.adapters import opensearch_queries as dsl
from knowledge.adapters.embedded_index import index_terms
from knowledge.adapters.opensearch_engine import build_opensearch_client
from tests.support import multilingual

TEXTS = [
    "The zebras were running across the plains",
    "Don't stop: U.S.A. 3.14 snake_case user@example.com www.example.org",
    "Résumé du CAFÉ à Paris — the user's cafés",
    "Die Hauptstraße und Ærøskøbing, Łódź, İstanbul",
    "Ｔｈｅ ＡＰＩ gateway and ﾀﾜｰ",
    "東京タワーは雨の日も営業しています。",
    "混合检索结合关键词检索和向量检索",
    "Python3の使い方を学ぶ",
    "서울의 날씨는 맑습니다",
    "deploy 🚀 now",
    *(passage.text for passage in multilingual.PASSAGES),
]


@pytest.fixture(scope="module")
def analyzed(opensearch_url: str) -> Iterator[Any]:
    """``(analyzer, text) -> terms`` through ``_analyze`` on an index created with our settings."""
    client = build_opensearch_client(opensearch_url, auth="none", region="us-east-1")
    name = f"analysis-{uuid.uuid4().hex[:12]}"
    client.indices.create(index=name, body=dsl.index_body(model_id="m", dimension=2))

    def terms(analyzer: str, text: str) -> list[str]:
        answer = client.indices.analyze(index=name, body={"analyzer": analyzer, "text": text})
        return [token["token"] for token in answer["tokens"]]

    yield terms
    client.indices.delete(index=name, ignore_unavailable=True)


@pytest.mark.parametrize("text", TEXTS)
def test_indexed_text_terms_equal_the_opensearch_text_analyzer(analyzed: Any, text: str) -> None:
    assert Counter(index_terms(text)) == Counter(analyzed(dsl.TEXT_ANALYZER, text))


@pytest.mark.parametrize("text", TEXTS + [probe.query for probe in multilingual.PROBES])
def test_query_terms_equal_the_opensearch_query_analyzer(analyzed: Any, text: str) -> None:
    assert Counter(index_terms(text, query=True)) == Counter(analyzed(dsl.QUERY_ANALYZER, text))
