"""Safe cut points inside text: never inside an extended grapheme cluster (UAX #29).

Two tools for two sizes of text. ``ClusterEdges`` segments a short text exactly, with the ``regex``
module's ``\\X`` (every rule of UAX #29: flags of two regional indicators, emoji ZWJ sequences, Hangul
jamo, Indic conjuncts); excerpts use it. The functions below are a cheap, local approximation for
whole revisions (the chunker), covering what documents commonly contain: CR LF, combining and spacing
marks (categories Mn, Mc, Me, which include variation selectors), zero-width-joiner emoji sequences,
emoji skin-tone modifiers, emoji tag sequences and regional-indicator pairs (counted from the start
of their run, up to ``MAX_REGIONAL_RUN``). Hangul conjoining jamo and Indic conjunct rules are not
modelled there; precomposed Hangul syllables, the common form, are single code points.
Offsets are code points (Python ``str`` indices).
"""

from __future__ import annotations

import unicodedata
from bisect import bisect_left, bisect_right

import regex

ZERO_WIDTH_JOINER = "\u200d"
MAX_CLUSTER = 32
"""Code points a cut may be moved to stay between clusters; longer "clusters" (Zalgo text) are split."""
MAX_REGIONAL_RUN = 4_096
"""Regional indicators counted back to pair a flag; a longer run of flags is paired from its cap."""
_CLUSTER = regex.compile(r"\X")


class ClusterEdges:
    """The exact grapheme cluster boundaries of ``text`` (``\\X``), ends included. Linear in the text:
    meant for chunks and excerpts, not whole revisions."""

    def __init__(self, text: str) -> None:
        self._edges: list[int] = [match.start() for match in _CLUSTER.finditer(text)] + [len(text)]

    def __contains__(self, index: object) -> bool:
        if not isinstance(index, int):
            return False
        position = bisect_left(self._edges, index)
        return position < len(self._edges) and self._edges[position] == index

    def at_or_before(self, index: int) -> int:
        """The last boundary at or before ``index`` (0 at the latest)."""
        return self._edges[max(0, bisect_right(self._edges, index) - 1)]

    def at_or_after(self, index: int) -> int:
        """The first boundary at or after ``index`` (the text's end at the latest)."""
        return self._edges[min(len(self._edges) - 1, bisect_left(self._edges, index))]

    def after(self, index: int) -> int:
        """The first boundary strictly after ``index`` (the text's end at the latest)."""
        return self._edges[min(len(self._edges) - 1, bisect_right(self._edges, index))]


_EXTENDING_CATEGORIES = frozenset({"Mn", "Mc", "Me"})
_EMOJI_MODIFIERS = range(0x1F3FB, 0x1F400)
_EMOJI_TAGS = range(0xE0020, 0xE0080)
_REGIONAL_INDICATORS = range(0x1F1E6, 0x1F200)


def is_grapheme_boundary(text: str, index: int) -> bool:
    """True when cutting ``text`` at ``index`` keeps every user-perceived character whole.

    The ends of the text (``index <= 0`` or ``index >= len(text)``) are always boundaries.
    """
    if index <= 0 or index >= len(text):
        return True
    before, after = text[index - 1], text[index]
    if before == "\r" and after == "\n":
        return False
    if ZERO_WIDTH_JOINER in (before, after):
        return False
    if unicodedata.category(after) in _EXTENDING_CATEGORIES:
        return False
    code = ord(after)
    if code in _EMOJI_MODIFIERS or code in _EMOJI_TAGS:
        return False
    if code in _REGIONAL_INDICATORS and ord(before) in _REGIONAL_INDICATORS:
        return _regional_run_before(text, index) % 2 == 0
    return True


def boundary_at_or_before(text: str, index: int, floor: int) -> int:
    """The nearest boundary in ``(floor, index]``, searching at most ``MAX_CLUSTER`` code points back.

    Returns ``index`` unchanged when none is found within that distance, and ``floor`` when the search
    reaches it (the caller decides what to do with an empty span).
    """
    for candidate in range(index, max(floor, index - MAX_CLUSTER), -1):
        if is_grapheme_boundary(text, candidate):
            return candidate
    return floor if index - floor <= MAX_CLUSTER else index


def boundary_after(text: str, index: int) -> int:
    """The first boundary strictly after ``index`` (at most ``MAX_CLUSTER`` code points on)."""
    limit = min(len(text), index + MAX_CLUSTER)
    for candidate in range(index + 1, limit + 1):
        if is_grapheme_boundary(text, candidate):
            return candidate
    return limit


def _regional_run_before(text: str, index: int) -> int:
    """How many regional indicators directly precede ``index`` (flags pair them left to right)."""
    count = 0
    position = index - 1
    while position >= 0 and count < MAX_REGIONAL_RUN and ord(text[position]) in _REGIONAL_INDICATORS:
        count += 1
        position -= 1
    return count
