from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from knowledge.adapters.embedded.engine import index_terms
from knowledge.domain.retrieval.analysis import analyze, fold, query_terms


def test_analyze_keeps_words_whole_as_the_standard_tokenizer() -> None:
    assert analyze("Don't stop: U.S.A. 3.14 snake_case user@example.com") == [
        "don't",
        "stop",
        "u.s.a",
        "3.14",
        "snake_case",
        "user",
        "example.com",
    ]


def test_analyze_indexed_cjk_run_gives_characters_and_bigrams() -> None:
    assert analyze("東京都") == ["東", "東京", "京", "京都", "都"]


def test_analyze_query_cjk_run_gives_bigrams_only() -> None:
    assert analyze("東京都", query=True) == ["東京", "京都"]


def test_analyze_query_lone_cjk_character_is_kept() -> None:
    assert analyze("雨", query=True) == ["雨"]


def test_analyze_cjk_next_to_latin_is_its_own_run() -> None:
    assert analyze("Python3の使い方", query=True) == ["python3", "の使", "使い", "い方"]


def test_analyze_hangul_run_is_split_into_bigrams() -> None:
    assert analyze("서울의", query=True) == ["서울", "울의"]


def test_analyze_katakana_prolonged_sound_mark_stays_in_the_run() -> None:
    assert analyze("タワー", query=True) == ["タワ", "ワー"]


@pytest.mark.parametrize(
    ("text", "folded"),
    [
        ("Café", "cafe"),
        ("CAFÉ", "cafe"),
        ("cafe\u0301", "cafe"),
        ("Straße", "strasse"),
        ("Ærøskøbing", "aeroskobing"),
        ("İstanbul", "istanbul"),
        ("Łódź", "lodz"),
        ("ﬁle", "file"),
        ("Ｆｕｌｌ", "full"),
    ],
)
def test_fold_gives_the_ascii_form_two_spellings_share(text: str, folded: str) -> None:
    assert fold(text) == folded


def test_fold_leaves_letters_without_ascii_form_alone() -> None:
    assert fold("Αθήνα") == "αθήνα"


def test_analyze_folds_in_word_typographic_apostrophes_as_asciifolding() -> None:
    assert analyze("Alzheimer’s rock‘n’roll") == ["alzheimer's", "rock'n'roll"]


def test_index_terms_drop_the_possessive_after_a_typographic_apostrophe() -> None:
    assert index_terms("Alzheimer’s disease") == index_terms("Alzheimer's disease") == ["alzheim", "diseas"]


def test_analyze_half_width_katakana_is_normalized() -> None:
    assert analyze("ﾀﾜｰ", query=True) == analyze("タワー", query=True)


def test_analyze_drops_stop_words_after_folding() -> None:
    assert analyze("THÉ cat and the hat") == ["cat", "hat"]


def test_analyze_keeps_emoji_as_terms() -> None:
    assert analyze("deploy 🚀 now") == ["deploy", "🚀", "now"]


@pytest.mark.parametrize("query", ["", "   ", "the and of", "?!", '* : ( ) "', "it is not to be", "— … ·"])
def test_query_terms_stop_words_or_punctuation_only_is_empty(query: str) -> None:
    assert query_terms(query) == []


def test_query_terms_are_distinct_in_order() -> None:
    assert query_terms("backup the backup Backup restore") == ["backup", "restore"]


@given(st.text(max_size=200))
def test_analyze_any_text_gives_terms_without_whitespace(text: str) -> None:
    for query in (False, True):
        terms = analyze(text, query=query)
        assert all(term and not any(character.isspace() for character in term) for term in terms)
