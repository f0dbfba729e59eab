"""``knowledge.domain.segments``: the segment covering an offset, a page's start, and bounds."""

from __future__ import annotations

import pytest

from knowledge.domain.segments import (
    MAX_SEGMENTS,
    Segment,
    decode_segments,
    encode_segments,
    name_chars,
    page_offset,
    segment_at,
    segments_problem,
)

SEGMENTS = (Segment(offset=5, page=1), Segment(offset=20, page=2), Segment(offset=40, page=4))


@pytest.mark.parametrize(("offset", "page"), [(0, None), (5, 1), (19, 1), (20, 2), (39, 2), (1_000, 4)])
def test_segment_at_offset_names_the_last_segment_starting_at_or_before(
    offset: int, page: int | None
) -> None:
    found = segment_at(SEGMENTS, offset)
    assert (found.page if found else None) == page


def test_segment_at_without_segments_is_none() -> None:
    assert segment_at((), 3) is None


def test_page_offset_of_a_page_and_a_missing_page() -> None:
    assert page_offset(SEGMENTS, 2) == 20
    assert page_offset(SEGMENTS, 3) is None


def test_segments_problem_accepts_ascending_segments_inside_the_content() -> None:
    assert segments_problem(SEGMENTS, 41) is None
    assert segments_problem((Segment(offset=0),), 0) is None


@pytest.mark.parametrize(
    ("segments", "total", "problem"),
    [
        ((Segment(offset=3), Segment(offset=3)), 10, "strictly ascending"),
        ((Segment(offset=10),), 10, "within the content"),
        ((Segment(offset=0, page=0),), 10, "page starts at 1"),
        ((Segment(offset=0, rows=(5, 4)),), 10, "rows are [first, last]"),
        ((Segment(offset=0, section="x" * 201),), 10, "at most 200 characters"),
        (tuple(Segment(offset=number) for number in range(MAX_SEGMENTS + 1)), 10**6, "at most 5,000"),
        (
            tuple(Segment(offset=number, section=f"{number:0200d}") for number in range(151)),
            10**6,
            "30,000 characters of section and sheet names",
        ),
    ],
)
def test_segments_problem_names_what_is_wrong(
    segments: tuple[Segment, ...], total: int, problem: str
) -> None:
    assert problem in (segments_problem(segments, total) or "")


def test_name_chars_counts_a_repeated_sheet_once() -> None:
    blocks = [Segment(offset=number, sheet="Budget", rows=(number, number)) for number in range(1, 50)]
    assert name_chars(blocks) == len("Budget")


def test_encode_segments_round_trips_and_names_a_repeated_sheet_once() -> None:
    segments = (
        Segment(offset=0, sheet="Budget", section="Budget"),
        Segment(offset=10, sheet="Budget", rows=(2, 30)),
        Segment(offset=90, sheet="Budget", rows=(31, 40)),
        Segment(offset=120, page=3, section="Überblick"),
        Segment(offset=150),
    )
    encoded = encode_segments(segments)
    assert encoded.count("Budget") == 2
    assert decode_segments(encoded) == segments
    assert decode_segments(encode_segments(())) == ()
