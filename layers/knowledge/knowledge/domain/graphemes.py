"""Safe cut points inside text: a cheap approximation of extended grapheme clusters (UAX #29).

Covers what documents commonly contain: CR LF, combining and spacing marks (categories Mn, Mc, Me,
which include variation selectors), zero-width-joiner emoji sequences, emoji skin-tone modifiers,
emoji tag sequences and regional-indicator pairs (flags). Hangul conjoining jamo and Indic conjunct
rules are not modelled; precomposed Hangul syllables, the common form, are single code points.
Offsets are code points (Python ``str`` indices).
"""

from __future__ import annotations

import unicodedata

ZERO_WIDTH_JOINER = "\u200d"
MAX_CLUSTER = 32
"""Code points a cut may be moved to stay between clusters; longer "clusters" (Zalgo text) are split."""

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
    while position >= 0 and count < MAX_CLUSTER and ord(text[position]) in _REGIONAL_INDICATORS:
        count += 1
        position -= 1
    return count
