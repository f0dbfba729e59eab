from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from knowledge.domain.retrieval.excerpts import EXCERPT_MAX_CHARS, Excerpt, citation, make_excerpt, reference

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


@pytest.mark.parametrize("source_title", ["HTTP/2", "http/2", "  HTTP/2 "])
def test_citation_source_title_repeating_the_title_gives_way_to_the_uri(source_title: str) -> None:
    line = citation("HTTP/2", source_title, "guides/http2.md", "kr_1", None)

    assert line == '"HTTP/2" — guides/http2.md, revision kr_1'


def test_citation_source_title_repeating_the_title_without_uri_is_left_out() -> None:
    assert citation("HTTP/2", "HTTP/2", None, "kr_1", None) == '"HTTP/2", revision kr_1'


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


# Grapheme clusters, tables, accents

FLAGS = "🇫🇷🇩🇪🇯🇵🇧🇷"


def _cluster_edges(text: str) -> set[int]:
    return {match.start() for match in regex.finditer(r"\X", text)} | {len(text)}


def test_make_excerpt_long_run_of_flags_never_ends_in_half_a_flag() -> None:
    chunk = "Flags " + FLAGS * 60 + " zebra " + FLAGS * 60
    content, offset = _revision_with(chunk)

    excerpt = make_excerpt(chunk, offset, "zebra", max_chars=101)

    _assert_exact(content, excerpt, 101)
    assert "zebra" in excerpt.text
    assert {excerpt.start - offset, excerpt.end - offset} <= _cluster_edges(chunk)


def test_make_excerpt_keeps_emoji_sequences_whole() -> None:
    family = "👩\u200d👩\u200d👧\u200d👦"
    chunk = (family + "👍🏽") * 80 + " zebra " + ("👍🏽" + family) * 80
    content, offset = _revision_with(chunk)

    excerpt = make_excerpt(chunk, offset, "zebra", max_chars=90)

    _assert_exact(content, excerpt, 90)
    assert {excerpt.start - offset, excerpt.end - offset} <= _cluster_edges(chunk)


@settings(max_examples=300, deadline=None)
@given(
    chunk=st.lists(
        st.sampled_from(["a", "b", " ", "\n", "🇫", "🇷", "🇩", "\u200d", "👍", "🏽", "e\u0301", "\r\n", "|"]),
        max_size=600,
    ).map("".join),
    query=st.sampled_from(["", "a", "b", "ab"]),
    max_chars=st.integers(min_value=40, max_value=320),
)
def test_make_excerpt_edges_are_grapheme_cluster_boundaries(chunk: str, query: str, max_chars: int) -> None:
    excerpt = make_excerpt(chunk, 0, query, max_chars=max_chars)

    _assert_exact(chunk, excerpt, max_chars)
    assert {excerpt.start, excerpt.end} <= _cluster_edges(chunk)


TABLE_HEADER = "| Method | Grind | Brew time |\n| --- | :---: | ---: |\n"
TABLE_ROWS = [f"| Method {n} | medium {n} | {n} minutes |\n" for n in range(12)]


def test_make_excerpt_in_a_table_starts_at_the_header_row_when_it_fits() -> None:
    chunk = FILLER * 3 + "\n\n" + TABLE_HEADER + "".join(TABLE_ROWS[:4]) + "| Siphon | fine | 2 minutes |\n"
    chunk += "".join(TABLE_ROWS[4:]) + "\n" + FILLER * 3
    content, offset = _revision_with(chunk)

    excerpt = make_excerpt(chunk, offset, "siphon", max_chars=320)

    _assert_exact(content, excerpt)
    assert excerpt.text.startswith(TABLE_HEADER)
    assert "| Siphon | fine | 2 minutes |" in excerpt.text
    assert excerpt.text.endswith("|")


def test_make_excerpt_in_a_table_starts_at_a_row_when_the_header_does_not_fit() -> None:
    chunk = TABLE_HEADER + "".join(TABLE_ROWS * 2) + "| Siphon | fine | 2 minutes |\n" + "".join(TABLE_ROWS)
    content, offset = _revision_with(chunk)

    excerpt = make_excerpt(chunk, offset, "siphon", max_chars=200)

    _assert_exact(content, excerpt, 200)
    assert content[excerpt.start - 1] == "\n"
    assert excerpt.text.startswith("| ")
    assert "| Siphon | fine | 2 minutes |" in excerpt.text
    assert excerpt.text.endswith("|")


def test_make_excerpt_in_body_rows_without_header_starts_at_a_row() -> None:
    chunk = "".join(TABLE_ROWS * 2) + "| Siphon | fine | 2 minutes |\n" + "".join(TABLE_ROWS)
    content, offset = _revision_with(chunk)

    excerpt = make_excerpt(chunk, offset, "siphon", max_chars=150)

    _assert_exact(content, excerpt, 150)
    assert content[excerpt.start - 1] == "\n"
    assert "Siphon" in excerpt.text


def test_make_excerpt_pipes_outside_a_table_are_prose() -> None:
    chunk = FILLER * 4 + "Pipe the output: grep zebra | sort | uniq to count. " + FILLER * 4
    content, offset = _revision_with(chunk)

    excerpt = make_excerpt(chunk, offset, "zebra", max_chars=120)

    _assert_exact(content, excerpt, 120)
    assert "zebra" in excerpt.text
    assert not excerpt.text.startswith("|")


def test_make_excerpt_matches_accents_and_case_alike() -> None:
    chunk = FILLER * 6 + "Le Café de Flore ouvre tôt. " + FILLER * 6
    content, offset = _revision_with(chunk)

    excerpt = make_excerpt(chunk, offset, "cafe", max_chars=100)

    _assert_exact(content, excerpt, 100)
    assert "Café" in excerpt.text


def test_make_excerpt_focus_is_where_most_query_terms_meet() -> None:
    text = (
        "Check the pitch bearings first.\n\n## Cable\n\nDivers found scour pits near the seabed anchor today."
    )
    excerpt = make_excerpt(text, 1_000, "scour pits seabed anchor")
    assert excerpt.focus == 1_000 + text.index("scour pits")


def test_make_excerpt_without_a_match_has_no_focus() -> None:
    assert make_excerpt("Nothing relevant here.", 0, "zebra").focus is None
