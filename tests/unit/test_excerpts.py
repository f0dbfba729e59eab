from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from knowledge.domain.excerpts import EXCERPT_MAX_CHARS, Excerpt, citation, make_excerpt, reference

FILLER = (
    "The service keeps every revision immutable and stores its content in fixed pages. "
    "Agents read bounded windows of a revision and follow locators back to the source. "
)
REVISION_PREFIX = "# Notes\n\nPreamble before the chunk.\n\n"


def _revision_with(chunk: str) -> tuple[str, int]:
    """A revision whose content holds ``chunk`` after a prefix; returns the content and the chunk offset."""
    return REVISION_PREFIX + chunk + "\n\nTrailing text.", len(REVISION_PREFIX)


def _assert_exact(content: str, excerpt: Excerpt, max_chars: int = EXCERPT_MAX_CHARS) -> None:
    assert content[excerpt.start : excerpt.end] == excerpt.text
    assert excerpt.length == len(excerpt.text) <= max_chars
    assert excerpt.text == excerpt.text.strip()


def test_make_excerpt_short_chunk_is_returned_whole_and_stripped() -> None:
    content, offset = _revision_with("  Fusion ranks items by score.  ")

    excerpt = make_excerpt(content[offset : offset + 32], offset, "fusion")

    _assert_exact(content, excerpt)
    assert excerpt.text == "Fusion ranks items by score."
    assert excerpt.start == offset + 2


def test_make_excerpt_match_deep_in_long_chunk_is_inside_the_excerpt() -> None:
    chunk = FILLER * 20 + "The zebra index answers striped queries quickly. " + FILLER * 5
    content, offset = _revision_with(chunk)

    excerpt = make_excerpt(chunk, offset, "zebra")

    _assert_exact(content, excerpt)
    assert "zebra" in excerpt.text
    assert excerpt.start > offset + len(FILLER) * 10
    assert len(excerpt.text) >= 250


def test_make_excerpt_cuts_on_word_boundaries() -> None:
    chunk = FILLER * 10 + "A pelican watches the harbour. " + FILLER * 10
    content, offset = _revision_with(chunk)

    excerpt = make_excerpt(chunk, offset, "pelican")

    _assert_exact(content, excerpt)
    assert content[excerpt.start - 1].isspace()
    assert content[excerpt.end].isspace()


@pytest.mark.parametrize("max_chars", [1, 17, 80, 320])
def test_make_excerpt_respects_max_chars(max_chars: int) -> None:
    chunk = FILLER * 8
    content, offset = _revision_with(chunk)

    excerpt = make_excerpt(chunk, offset, "locators source", max_chars=max_chars)

    _assert_exact(content, excerpt, max_chars)
    assert excerpt.text


def test_make_excerpt_prefers_the_cluster_with_most_distinct_terms() -> None:
    chunk = (
        "Hybrid scoring appears here alone. "
        + FILLER * 6
        + "Hybrid fusion with reciprocal rank appears here together. "
        + FILLER * 6
    )
    content, offset = _revision_with(chunk)

    excerpt = make_excerpt(chunk, offset, "hybrid reciprocal rank fusion", max_chars=120)

    _assert_exact(content, excerpt, 120)
    assert "Hybrid fusion with reciprocal rank" in excerpt.text


def test_make_excerpt_matches_case_insensitively_by_stem_prefix() -> None:
    chunk = FILLER * 6 + "INDEXES are rebuilt nightly. " + FILLER * 6
    content, offset = _revision_with(chunk)

    excerpt = make_excerpt(chunk, offset, "Indexing", max_chars=100)

    _assert_exact(content, excerpt, 100)
    assert "INDEXES" in excerpt.text


def test_make_excerpt_ignores_stopwords_when_content_words_exist() -> None:
    chunk = "This is the thing. " * 10 + FILLER * 4 + "A walrus appears. " + FILLER * 4
    content, offset = _revision_with(chunk)

    excerpt = make_excerpt(chunk, offset, "this is the walrus", max_chars=80)

    assert "walrus" in excerpt.text
    _assert_exact(content, excerpt, 80)


@pytest.mark.parametrize("query", ["", "nothing-matches-here", "   "])
def test_make_excerpt_without_match_returns_the_chunk_beginning(query: str) -> None:
    chunk = "\n  " + FILLER * 6
    content, offset = _revision_with(chunk)

    excerpt = make_excerpt(chunk, offset, query, max_chars=100)

    _assert_exact(content, excerpt, 100)
    assert excerpt.start == offset + 3
    assert excerpt.text.startswith("The service keeps")
    assert content[excerpt.end].isspace()


@pytest.mark.parametrize("max_chars", [1, 3])
def test_make_excerpt_window_shorter_than_first_word_still_has_text(max_chars: int) -> None:
    content, offset = _revision_with("  Supercalifragilistic words follow here.")

    excerpt = make_excerpt(content[offset:], offset, "", max_chars=max_chars)

    _assert_exact(content, excerpt, max_chars)
    assert excerpt.text == "Supercalifragilistic"[:max_chars]


def test_make_excerpt_cjk_without_spaces_cuts_between_characters() -> None:
    chunk = (
        "検索エンジンは文書を索引します" * 30 + "量子計算の話題です" + "検索エンジンは文書を索引します" * 30
    )
    content, offset = _revision_with(chunk)

    excerpt = make_excerpt(chunk, offset, "量子計算", max_chars=60)

    _assert_exact(content, excerpt, 60)
    assert "量子計算" in excerpt.text
    assert len(excerpt.text) >= 55


def test_make_excerpt_single_word_longer_than_window_is_cut_inside() -> None:
    chunk = "start " + "x" * 1000 + " end"
    content, offset = _revision_with(chunk)

    excerpt = make_excerpt(chunk, offset, "x", max_chars=50)

    _assert_exact(content, excerpt, 50)
    assert excerpt.text == "x" * 50


def test_make_excerpt_does_not_split_combining_marks() -> None:
    chunk = "e\u0301" * 400
    content, offset = _revision_with(chunk)

    excerpt = make_excerpt(chunk, offset, "", max_chars=41)

    _assert_exact(content, excerpt, 41)
    assert excerpt.text == "e\u0301" * 20


def test_make_excerpt_invalid_max_chars_raises_value_error() -> None:
    with pytest.raises(ValueError, match="max_chars"):
        make_excerpt("text", 0, "text", max_chars=0)


@settings(max_examples=300, deadline=None)
@given(
    chunk=st.text(alphabet=st.sampled_from("ab cd\nXé漢字。.\u0301"), max_size=900),
    query=st.text(alphabet=st.sampled_from("ab cdX漢字"), max_size=12),
    max_chars=st.integers(min_value=1, max_value=400),
    prefix=st.text(max_size=20),
)
def test_make_excerpt_any_input_is_an_exact_bounded_substring(
    chunk: str, query: str, max_chars: int, prefix: str
) -> None:
    content = prefix + chunk

    excerpt = make_excerpt(chunk, len(prefix), query, max_chars=max_chars)

    _assert_exact(content, excerpt, max_chars)
    assert len(prefix) <= excerpt.start <= excerpt.end <= len(content)


def test_reference_formats_the_knowledge_uri() -> None:
    assert reference("kb_1", "ki_2", "kr_3", 10, 42) == "knowledge://kb_1/ki_2@kr_3#10-42"


def test_citation_with_every_part_is_one_line() -> None:
    published = datetime(2026, 3, 4, 23, 30, tzinfo=timezone(timedelta(hours=-5)))

    line = citation("Search guide", "Team wiki", "https://wiki.example/search", "kr_9", published)

    assert line == '"Search guide" — Team wiki, revision kr_9, published 2026-03-05'


@pytest.mark.parametrize(
    ("source_title", "source_uri", "published", "expected"),
    [
        (None, "https://x.example/a", None, '"T" — https://x.example/a, revision kr_1'),
        ("  ", None, datetime(2026, 1, 2, tzinfo=UTC), '"T", revision kr_1, published 2026-01-02'),
        (None, None, datetime(2026, 1, 2, 5), '"T", revision kr_1, published 2026-01-02'),
    ],
)
def test_citation_omits_missing_parts(
    source_title: str | None, source_uri: str | None, published: datetime | None, expected: str
) -> None:
    assert citation("T", source_title, source_uri, "kr_1", published) == expected
