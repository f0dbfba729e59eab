"""The two index adapters analyze text alike: the embedded index's terms equal, term for term, what
the OpenSearch mapping's analyzers answer through ``_analyze`` on a real node (single CJK
characters, Hangul bigrams, full-width forms, accents and typographic apostrophes included), for
indexed text and for queries; except for the known differences pinned by the last test, so that a
change of either engine shows here."""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from knowledge.adapters.embedded.engine import index_terms
from knowledge.adapters.opensearch import queries as dsl
from knowledge.adapters.opensearch.engine import build_opensearch_client
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
    "Alzheimer’s and Parkinson‘s: O’Brien’s rock’n’roll, don’t, it’s, students’ l’homme",
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


# Tantivy's Snowball English (rust-stemmers) is a later Snowball release than Lucene 9.12's: it keeps
# the word families Lucene's conflates after the exceptional prefixes organ-, inter-, univers-,
# emerg- and later- (and evening / even), and cuts -ologist to -olog. NFKC folds the micro sign to
# Greek mu and a superscript to its digit, which Lucene's filters keep or drop. On SciFact they touch
# 1,076 of 5,183 abstracts and 9 of 1,109 queries (docs/benchmarks.md).
KNOWN_DIFFERENCES = [
    ("organism", "organism", "organ"),
    ("organization", "organiz", "organ"),
    ("interval", "interval", "interv"),
    ("international", "internat", "intern"),
    ("universal", "universal", "univers"),
    ("emergency", "emergenc", "emerg"),
    ("lateral", "lateral", "later"),
    ("evening", "evening", "even"),
    ("oncologist", "oncolog", "oncologist"),
    ("µg", "\u03bcg", "\u00b5g"),
    ("m²", "m2", "m"),
]


@pytest.mark.parametrize(("text", "embedded", "opensearch"), KNOWN_DIFFERENCES)
def test_analyzers_differ_on_these_known_words(
    analyzed: Any, text: str, embedded: str, opensearch: str
) -> None:
    assert index_terms(text) == index_terms(text, query=True) == [embedded]
    assert analyzed(dsl.TEXT_ANALYZER, text) == analyzed(dsl.QUERY_ANALYZER, text) == [opensearch]
