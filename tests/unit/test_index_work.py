"""How a revision is cut into index parts (``knowledge.domain.retrieval.index_work``)."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from knowledge.domain.retrieval.index_work import (
    BOUNDARY_REACH_CHARS,
    PART_TARGET_CHARS,
    part_count,
    part_span,
    part_window,
)


def spans(text: str) -> list[tuple[int, int]]:
    """Every part's span, each computed from only the window its part reads, as the worker does."""
    total = len(text)
    found = []
    for part in range(part_count(total)):
        offset, limit = part_window(part, total)
        found.append(part_span(text[offset : offset + limit], offset, part=part, total_chars=total))
    return found


def test_part_count_rounds_up_and_gives_an_empty_revision_one_part() -> None:
    assert part_count(0) == 1
    assert part_count(1) == 1
    assert part_count(PART_TARGET_CHARS) == 1
    assert part_count(PART_TARGET_CHARS + 1) == 2
    assert part_count(500_000) == 63


def test_boundaries_move_back_to_the_paragraph_break_before_them() -> None:
    paragraph = "Pumps and valves of plant four are checked every morning. " * 9 + "\n\n"
    text = paragraph * (3 * PART_TARGET_CHARS // len(paragraph))
    cut = spans(text)

    assert len(cut) == part_count(len(text)) == 3
    for (_, end), (start, _) in itertools.pairwise(cut):
        assert end == start
        assert text[start - 2 : start] == "\n\n"
        assert (
            start % PART_TARGET_CHARS > PART_TARGET_CHARS - BOUNDARY_REACH_CHARS
            or start % PART_TARGET_CHARS == 0
        )


def test_a_boundary_without_any_break_in_reach_stays_nominal() -> None:
    text = "x" * (2 * PART_TARGET_CHARS + 5)
    assert spans(text) == [
        (0, PART_TARGET_CHARS),
        (PART_TARGET_CHARS, 2 * PART_TARGET_CHARS),
        (2 * PART_TARGET_CHARS, len(text)),
    ]


_PIECES = st.sampled_from(["word ", "sentence. ", "line\n", "\n\n", "x" * 700, "ü", "字", " "])


@settings(max_examples=60, deadline=None)
@given(
    pieces=st.lists(_PIECES, max_size=120), filler=st.integers(min_value=0, max_value=3 * PART_TARGET_CHARS)
)
def test_parts_tile_the_revision_and_stay_bounded(pieces: list[str], filler: int) -> None:
    text = ("y" * filler) + "".join(pieces) * 20
    cut = spans(text)

    assert cut[0][0] == 0
    assert cut[-1][1] == len(text)
    assert all(end == start for (_, end), (start, _) in itertools.pairwise(cut))
    assert all(0 <= end - start < PART_TARGET_CHARS + BOUNDARY_REACH_CHARS for start, end in cut)
    assert all(end > start for start, end in cut) or len(text) == 0
