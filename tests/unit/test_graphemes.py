from __future__ import annotations

import regex
from hypothesis import given
from hypothesis import strategies as st

from knowledge.domain.retrieval.graphemes import ClusterEdges, is_grapheme_boundary

FLAG = "🇫🇷"


def test_is_grapheme_boundary_pairs_regional_indicators_from_the_start_of_a_long_run() -> None:
    text = "x" + FLAG * 40

    boundaries = [index for index in range(len(text) + 1) if is_grapheme_boundary(text, index)]

    assert boundaries == [0, *range(1, len(text) + 1, 2)]


@given(
    st.lists(st.sampled_from(["a", " ", "🇫", "🇷", "\u200d", "👍", "🏽", "e\u0301", "\r\n", "漢"])).map(
        "".join
    )
)
def test_cluster_edges_are_the_starts_of_extended_grapheme_clusters(text: str) -> None:
    edges = ClusterEdges(text)
    expected = {match.start() for match in regex.finditer(r"\X", text)} | {len(text)}

    assert {index for index in range(len(text) + 1) if index in edges} == expected


def test_cluster_edges_snap_to_the_nearest_boundaries() -> None:
    text = "a" + FLAG + "b"
    edges = ClusterEdges(text)

    assert (edges.at_or_before(2), edges.at_or_after(2), edges.after(1), edges.after(4)) == (1, 3, 3, 4)
