from __future__ import annotations

import itertools
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from knowledge.domain.retrieval.chunking import (
    Chunker,
    TokenizerUnavailableError,
    embedding_text,
    load_encoding,
)
from knowledge.domain.retrieval.graphemes import is_grapheme_boundary
from knowledge.domain.retrieval.hits import Chunk

SENTENCES = [
    "Hybrid retrieval mixes BM25 scores with kNN similarity.",
    "Each leg returns its own candidates before fusion.",
    "Min-max normalization maps every leg onto the unit interval.",
    "Reciprocal rank fusion ignores raw scores entirely.",
    "Ties are broken by item id so that the order is stable.",
    "Stale revisions are dropped by the read-time truth check.",
    "Excerpts point back into the revision with exact offsets.",
]


def _prose(sentences: int, offset: int = 0) -> str:
    return " ".join(SENTENCES[(offset + i) % len(SENTENCES)] for i in range(sentences))


_SMALL = Chunker(max_tokens=16, overlap_tokens=4)


@pytest.fixture(scope="module")
def chunker() -> Chunker:
    return Chunker(max_tokens=60, overlap_tokens=12)


@pytest.fixture(scope="module")
def flat() -> Chunker:
    return Chunker(max_tokens=60, overlap_tokens=0)


def _assert_invariants(text: str, chunks: list[Chunk], chunker: Chunker) -> None:
    assert [chunk.ordinal for chunk in chunks] == list(range(len(chunks)))
    for chunk in chunks:
        assert text[chunk.start : chunk.end] == chunk.text
        assert chunk.text.strip() == chunk.text != ""
        assert chunker.count_tokens(chunk.text) <= chunker.max_tokens
    for before, after in itertools.pairwise(chunks):
        assert before.start < after.start
        assert before.end < after.end
    covered = [False] * len(text)
    for chunk in chunks:
        covered[chunk.start : chunk.end] = [True] * (chunk.end - chunk.start)
    assert all(covered[i] for i, character in enumerate(text) if not character.isspace())


@pytest.mark.parametrize("text", ["", "   ", "\n\n\t \r\n  \u3000"])
def test_split_empty_or_blank_text_returns_no_chunks(chunker: Chunker, text: str) -> None:
    assert chunker.split(text) == []


def test_split_short_document_is_one_chunk_without_outer_whitespace(chunker: Chunker) -> None:
    text = "\n\n  # Title\n\nOne short paragraph.  \n\n"

    chunks = chunker.split(text)

    body = "# Title\n\nOne short paragraph."
    assert [(chunk.start, chunk.end, chunk.text) for chunk in chunks] == [(4, 4 + len(body), body)]


def test_split_sections_that_do_not_fit_together_start_at_their_headings(flat: Chunker) -> None:
    sections = [f"## Part {n}\n\n{_prose(3, n)}" for n in range(4)]
    text = "\n\n".join(sections)

    chunks = flat.split(text)

    _assert_invariants(text, chunks, flat)
    assert [chunk.start for chunk in chunks] == [text.index(f"## Part {n}") for n in range(4)]


def test_split_small_sections_merge_into_one_chunk(chunker: Chunker) -> None:
    text = "# A\n\nAlpha.\n\n# B\n\nBeta.\n\n# C\n\nGamma."

    assert [chunk.text for chunk in chunker.split(text)] == [text]


def test_split_heading_followed_by_long_paragraph_stays_with_its_text(chunker: Chunker) -> None:
    text = "Intro line.\n\n# Heading\n\n" + _prose(12)

    chunks = chunker.split(text)

    _assert_invariants(text, chunks, chunker)
    heading = text.index("# Heading")
    assert chunks[0].text == "Intro line."
    assert chunks[1].start == heading
    assert len(chunks[1].text) > len("# Heading") + 100


def test_split_consecutive_headings_are_not_separated(flat: Chunker) -> None:
    text = "# Guide\n\n## Install\n\n" + _prose(10)

    chunks = flat.split(text)

    assert chunks[0].text.startswith("# Guide\n\n## Install\n\nHybrid")


def test_split_setext_heading_starts_a_section(flat: Chunker) -> None:
    text = _prose(6) + "\n\nSecond part\n-----------\n\n" + _prose(6, 3)

    chunks = flat.split(text)

    assert text.index("Second part") in [chunk.start for chunk in chunks]


def test_split_prefers_paragraph_boundary_over_sentence(flat: Chunker) -> None:
    first, second = _prose(3), _prose(3, 3)
    text = f"{first}\n\n{second}"

    chunks = flat.split(text)

    assert [chunk.text for chunk in chunks] == [first, second]


def test_split_giant_paragraph_cuts_at_sentence_ends(chunker: Chunker) -> None:
    text = _prose(60)

    chunks = chunker.split(text)

    _assert_invariants(text, chunks, chunker)
    assert len(chunks) > 5
    assert all(chunk.text.endswith(".") for chunk in chunks)
    assert all(chunk.start == 0 or text[chunk.start - 1] == " " for chunk in chunks)


@pytest.mark.parametrize("fence", ["```", "~~~~"])
def test_split_fenced_code_that_fits_is_never_split(flat: Chunker, fence: str) -> None:
    code = "\n".join(f"# step {n}\nvalue_{n} = compute({n}) + offset" for n in range(3))
    block = f"{fence}python\n{code}\n{fence}"
    text = f"{_prose(4)}\n\n{block}\n\n{_prose(3)}"

    chunks = flat.split(text)

    _assert_invariants(text, chunks, flat)
    assert flat.count_tokens(block) <= flat.max_tokens < flat.count_tokens(text)
    assert sum(block in chunk.text for chunk in chunks) == 1
    assert all(block in chunk.text or fence not in chunk.text for chunk in chunks)
    assert not any(chunk.text.startswith("# step") for chunk in chunks)


def test_split_fenced_code_exactly_at_budget_is_kept_whole_despite_edge_merges() -> None:
    # Encoded with its surroundings the closing fence merges with the blank line after it ("`\n\n"),
    # one token more than the block alone: the block still fits and must not be split.
    chunker = Chunker(max_tokens=40, overlap_tokens=8)
    block = "```\nalphaalphaalphaalphaalphabeta.alphax = 1# Hx = 1x = 1x = 1漢字gammabeta.alphaalpha\n```"
    text = f"\n\n{block}\n\n"

    chunks = chunker.split(text)

    assert chunker.count_tokens(block) == chunker.max_tokens
    assert [chunk.text for chunk in chunks] == [block]


def test_split_fenced_code_larger_than_budget_is_split_at_line_ends(flat: Chunker) -> None:
    code = "\n".join(f"result_{n} = transform(records[{n}], limit={n * 7})" for n in range(40))
    text = f"```\n{code}\n```"

    chunks = flat.split(text)

    _assert_invariants(text, chunks, flat)
    assert len(chunks) > 3
    assert all(chunk.end == len(text) or text[chunk.end] == "\n" for chunk in chunks)


def test_split_overlap_repeats_a_sentence_of_the_previous_chunk() -> None:
    chunker = Chunker(max_tokens=60, overlap_tokens=16)
    text = _prose(40)

    chunks = chunker.split(text)

    for before, after in itertools.pairwise(chunks):
        shared = text[after.start : before.end]
        assert 0 < chunker.count_tokens(shared) <= chunker.overlap_tokens
        assert shared in SENTENCES


def test_split_overlap_longer_than_a_sentence_snaps_to_a_word(chunker: Chunker) -> None:
    text = _prose(40)

    chunks = chunker.split(text)

    for before, after in itertools.pairwise(chunks):
        shared = text[after.start : before.end]
        assert 0 < chunker.count_tokens(shared) <= chunker.overlap_tokens
        assert text[after.start - 1] == " "


def test_split_without_overlap_chunks_are_disjoint(flat: Chunker) -> None:
    text = _prose(40)

    chunks = flat.split(text)

    assert all(before.end < after.start for before, after in itertools.pairwise(chunks))


def test_split_chunk_starting_a_section_has_no_overlap(chunker: Chunker) -> None:
    text = f"{_prose(5)}\n\n## Next\n\n{_prose(5, 2)}"

    chunks = chunker.split(text)

    heading = text.index("## Next")
    assert heading in [chunk.start for chunk in chunks]
    assert all(chunk.end < heading for chunk in chunks if chunk.start < heading)


def test_split_cjk_without_spaces_cuts_between_characters(chunker: Chunker) -> None:
    text = "検索エンジンは文書を索引して質問に答える仕組みです" * 40

    chunks = chunker.split(text)

    _assert_invariants(text, chunks, chunker)
    assert len(chunks) > 10
    assert min(chunker.count_tokens(chunk.text) for chunk in chunks[:-1]) >= chunker.max_tokens // 2


def test_split_cjk_prefers_sentence_ends(chunker: Chunker) -> None:
    text = "検索エンジンは文書を索引します。質問に答える仕組みです！" * 30

    chunks = chunker.split(text)

    _assert_invariants(text, chunks, chunker)
    assert all(chunk.text[-1] in "。！" for chunk in chunks)


def test_split_single_huge_word_is_cut_within_budget(chunker: Chunker) -> None:
    text = "prefix " + "abcdefghijklmnopqrstuvwxyz0123456789" * 2800 + " suffix"

    chunks = chunker.split(text)

    _assert_invariants(text, chunks, chunker)
    assert len(text) > 100_000
    assert chunks[-1].text.endswith(" suffix")


def test_split_never_cuts_inside_combining_marks_or_emoji_sequences(chunker: Chunker) -> None:
    text = ("cafe\u0301" + "👩🏽\u200d💻" + "👨\u200d👩\u200d👧" + "🇯🇵" + "n\u0303") * 120

    chunks = chunker.split(text)

    _assert_invariants(text, chunks, chunker)
    assert all(is_grapheme_boundary(text, c.start) and is_grapheme_boundary(text, c.end) for c in chunks)


def test_split_windows_newlines_keep_offsets_and_paragraphs(flat: Chunker) -> None:
    first, second = _prose(3), _prose(3, 3)
    text = f"# Title\r\n\r\n{first}\r\n\r\n{second}\r\n"

    chunks = flat.split(text)

    _assert_invariants(text, chunks, flat)
    assert [chunk.text for chunk in chunks] == [f"# Title\r\n\r\n{first}", second]


def test_split_list_items_are_cut_between_items(flat: Chunker) -> None:
    text = "\n".join(f"- item {n}: the leg returns candidates filtered by visibility" for n in range(30))

    chunks = flat.split(text)

    _assert_invariants(text, chunks, flat)
    assert all(chunk.text.startswith("- item") for chunk in chunks)


def test_split_special_token_text_counts_as_ordinary_text(chunker: Chunker) -> None:
    text = "Documents may contain <|endoftext|> literally."

    assert [chunk.text for chunk in chunker.split(text)] == [text]


def test_split_lone_surrogate_keeps_offsets(chunker: Chunker) -> None:
    text = "before \ud800 after " + _prose(20)

    chunks = chunker.split(text)

    assert chunks[0].text.startswith("before \ud800 after")
    assert all(text[chunk.start : chunk.end] == chunk.text for chunk in chunks)


def test_split_one_million_characters_covers_the_text_exactly(chunker: Chunker) -> None:
    paragraphs = [f"## Section {n}\n\n{_prose(5 + n % 9, n)}" for n in range(2000)]
    text = "\n\n".join(paragraphs)
    text = (text * (1_000_000 // len(text) + 1))[:1_000_000]

    chunks = chunker.split(text)

    assert chunks[-1].end == len(text.rstrip())
    assert all(left.start < right.start for left, right in itertools.pairwise(chunks))
    assert all(text[chunk.start : chunk.end] == chunk.text for chunk in chunks[::97])


@pytest.mark.parametrize(("max_tokens", "overlap_tokens"), [(0, 0), (10, 6), (10, -1)])
def test_chunker_invalid_sizes_raise_value_error(max_tokens: int, overlap_tokens: int) -> None:
    with pytest.raises(ValueError, match="tokens"):
        Chunker(max_tokens=max_tokens, overlap_tokens=overlap_tokens)


def test_load_encoding_unknown_vocabulary_names_the_cache_and_make_install() -> None:
    with pytest.raises(TokenizerUnavailableError, match=r"TIKTOKEN_CACHE_DIR.*make install"):
        load_encoding("no_such_base")


def test_chunker_other_encoding_counts_with_it() -> None:
    chunker = Chunker(max_tokens=40, overlap_tokens=8, encoding_name="o200k_base")
    text = _prose(20)

    _assert_invariants(text, chunker.split(text), chunker)


@pytest.mark.parametrize(
    ("title", "expected"),
    [("Search guide", "Search guide\n\nBody text."), ("  ", "Body text.")],
)
def test_embedding_text_prepends_title(title: str, expected: str) -> None:
    assert embedding_text(title, "Body text.") == expected


@pytest.mark.parametrize(
    ("text", "index", "boundary"),
    [
        ("a\r\nb", 2, False),
        ("e\u0301x", 1, False),
        ("e\u0301x", 2, True),
        ("👨\u200d👩", 1, False),
        ("👨\u200d👩", 2, False),
        ("👩🏽", 1, False),
        ("🇯🇵🇫🇷", 1, False),
        ("🇯🇵🇫🇷", 2, True),
        ("🇯🇵🇫🇷", 3, False),
        ("漢字", 1, True),
        ("ab", 0, True),
    ],
)
def test_is_grapheme_boundary_known_sequences(text: str, index: int, boundary: bool) -> None:
    assert is_grapheme_boundary(text, index) is boundary


# Hypothesis: any text keeps the offset and coverage invariants; text built from Markdown-ish atoms
# (whose clusters are all shorter than the budget) also keeps every chunk within max_tokens.
_ATOMS = st.sampled_from(
    [
        "word",
        "retrieval",
        " ",
        "  ",
        "\n",
        "\n\n",
        "\r\n",
        "\t",
        ". ",
        "! ",
        "# ",
        "## H\n",
        "```",
        "~~~\n",
        "- ",
        "1. ",
        "===\n",
        "e\u0301",
        "👨\u200d👩\u200d👧",
        "🇯🇵",
        "漢字",
        "検索。",
        "、",
        "x" * 40,
        "1234567",
        "<|endoftext|>",
    ]
)


@settings(max_examples=300, deadline=None)
@given(text=st.text(max_size=400))
def test_split_any_text_keeps_offsets_and_coverage(chunker: Chunker, text: str) -> None:
    chunks = chunker.split(text)

    assert [chunk.ordinal for chunk in chunks] == list(range(len(chunks)))
    assert all(text[c.start : c.end] == c.text and c.text.strip() == c.text != "" for c in chunks)
    assert all(a.start < b.start and a.end < b.end for a, b in itertools.pairwise(chunks))
    spans = "".join("x" if any(c.start <= i < c.end for c in chunks) else "." for i in range(len(text)))
    assert all(spans[i] == "x" for i, character in enumerate(text) if not character.isspace())


@settings(max_examples=300, deadline=None)
@given(atoms=st.lists(_ATOMS, max_size=120))
def test_split_markdown_like_text_stays_within_budget(atoms: list[str]) -> None:
    chunker = _SMALL
    text = "".join(atoms)

    _assert_invariants(text, chunker.split(text), chunker)


def test_split_invariants_hold_on_a_real_markdown_page(chunker: Chunker) -> None:
    page = re.sub(
        r"\n{3,}", "\n\n", "\n\n".join(f"# H{n}\n\n```\ncode {n}\n```\n\n{_prose(n)}" for n in range(9))
    )

    _assert_invariants(page, chunker.split(page), chunker)
