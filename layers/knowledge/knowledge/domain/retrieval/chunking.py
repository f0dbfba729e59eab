"""Markdown-aware chunking of revisions into token-bounded spans with exact offsets (DESIGN §4).

A chunk ends at the strongest boundary its token budget reaches: the end of the text, then a section
(a Markdown heading, ATX or setext), then a paragraph (a blank line, or either edge of a fenced code
block), then a sentence (or the start of a list item), then a line break, then a word, and only when
none is in reach between two characters (never inside a grapheme cluster, see ``graphemes``). Weak
boundaries (paragraph to word) count only when they fill at least half of the budget, so chunks do
not shrink to a line; sections and code fences count at any fill, so a heading starts a chunk and a
fenced block that fits the budget is never split (one that does not fit is split like prose).

Consecutive chunks inside a section overlap by about ``overlap_tokens``, starting at a sentence (or
at least a word) boundary; a chunk that starts a section or follows a code fence does not overlap.

Tokens are counted with tiktoken's ``encode_ordinary`` (special-token text is ordinary text). The
text is encoded once and token starts are mapped to code-point offsets, so planning is linear; each
chunk is then re-encoded alone to prove it fits, because a cut inside a BPE piece can change counts.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import IntEnum
from functools import lru_cache
from itertools import accumulate
from operator import sub

import tiktoken

from knowledge.domain.retrieval.graphemes import boundary_after, boundary_at_or_before, is_grapheme_boundary
from knowledge.domain.retrieval.hits import Chunk

MIN_FILL = 0.5
"""Share of ``max_tokens`` a chunk must reach before it may end at a paragraph, sentence, line or word."""


class TokenizerUnavailableError(RuntimeError):
    """The tiktoken vocabulary could not be loaded (it is read offline from ``TIKTOKEN_CACHE_DIR``)."""


class _Level(IntEnum):
    """Boundary strength, weakest first."""

    WORD = 1
    LINE = 2
    SENTENCE = 3
    PARAGRAPH = 4
    SECTION = 5


_LEVELS_STRONGEST_FIRST = sorted(_Level, reverse=True)
_CONTINUATION_BYTES = bytes(range(0x80, 0xC0))
_SURROGATE = re.compile("[\ud800-\udfff]")
_WHITESPACE_RUN = re.compile(r"\s+")
_NON_SPACE = re.compile(r"\S")
_SENTENCE_END = frozenset(".!?…。！？")
_CLOSERS = frozenset("\"')]}»”’」』）】》")
_CJK_SENTENCE = re.compile(r"[。！？][」』）】》”’\"')]*(?=\S)")
_CJK_CLAUSE = re.compile(r"[、，；：](?=\S)")
_LIST_ITEM = re.compile(r"(?:[-*+]|\d{1,9}[.)])[ \t]")
_TEXT_LINE = re.compile(r"\S[^\n]*")
_ATX_HEADING = re.compile(r" {0,3}#{1,6}(?:[ \t]|$)")
_SETEXT_UNDERLINE = re.compile(r" {0,3}(?:=+|-+)[ \t]*$")
_FENCE_OPEN = re.compile(r" {0,3}(?:(`{3,})[^`]*|(~{3,}).*)$")
_FENCE_CLOSE = re.compile(r" {0,3}(`{3,}|~{3,})[ \t]*$")


def load_encoding(name: str) -> tiktoken.Encoding:
    """The tiktoken encoding ``name`` (e.g. ``cl100k_base``), read from the offline cache.

    Raises ``TokenizerUnavailableError`` when it cannot be loaded: the vocabulary must be seeded in
    ``$TIKTOKEN_CACHE_DIR`` (``make install`` and the layer build do it), since there is no network.
    """
    try:
        return tiktoken.get_encoding(name)
    except Exception as error:  # tiktoken raises ValueError, OSError or network errors alike
        raise TokenizerUnavailableError(
            f"Cannot load the tiktoken encoding {name!r}: seed its vocabulary in TIKTOKEN_CACHE_DIR "
            f"(run `make install`, or `python -m knowledge.vocab DIR` and set TIKTOKEN_CACHE_DIR=DIR)."
        ) from error


def embedding_text(title: str, chunk_text: str) -> str:
    """The text embedded for a chunk: the item title, a blank line, then the chunk (DESIGN §4)."""
    title = title.strip()
    return f"{title}\n\n{chunk_text}" if title else chunk_text


class Chunker:
    """Splits revision text into ``Chunk`` spans of at most ``max_tokens`` tokens.

    Guarantees, for any text: ``text[c.start:c.end] == c.text`` (code points); chunks are in order
    (starts and ends strictly increase) with ordinals ``0..n-1``; every non-whitespace character lies
    in some chunk; no chunk is empty, whitespace-only, or starts or ends with whitespace. Each chunk
    has at most ``max_tokens`` tokens, except a single grapheme cluster that alone exceeds it (an
    emoji sequence with ``max_tokens`` below its token count). Empty or blank text gives ``[]``.

    Raises ``ValueError`` for ``max_tokens < 1`` or an overlap outside ``[0, max_tokens // 2]``, and
    ``TokenizerUnavailableError`` when the encoding cannot be loaded.
    """

    def __init__(
        self, max_tokens: int = 200, overlap_tokens: int = 32, encoding_name: str = "cl100k_base"
    ) -> None:
        if max_tokens < 1:
            raise ValueError("max_tokens must be at least 1")
        if not 0 <= overlap_tokens <= max_tokens // 2:
            raise ValueError("overlap_tokens must be between 0 and half of max_tokens")
        self.max_tokens = max_tokens
        self.overlap_tokens = overlap_tokens
        self._encoding = load_encoding(encoding_name)

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` in this chunker's encoding (special-token text counts as ordinary text)."""
        return len(self._encoding.encode_ordinary(text))

    def split(self, text: str) -> list[Chunk]:
        """The chunks of ``text`` in order; offsets are code points of ``text``."""
        first = _NON_SPACE.search(text)
        if first is None:
            return []
        plan = _Plan.build(text, self._encoding, self.max_tokens)
        chunks: list[Chunk] = []
        start = lower = first.start()
        while True:
            start, cut, structural = self._next_cut(plan, start, lower)
            end = _strip_end(text, start, cut)
            chunks.append(Chunk(ordinal=len(chunks), start=start, end=end, text=text[start:end]))
            following = _NON_SPACE.search(text, cut)
            if following is None:
                return chunks
            lower = following.start()
            start = lower if structural else self._overlap_start(plan, start, cut, lower)

    def _next_cut(self, plan: _Plan, start: int, lower: int) -> tuple[int, int, bool]:
        """``(start, cut, structural)`` of the chunk beginning at ``start`` that must reach past ``lower``.

        ``start < lower`` when the chunk opens with overlap; the overlap is dropped when it leaves no
        room. The plan's counts are approximate either way (BPE merges differ at a span's edges), so
        a chunk that re-encodes too long is re-planned with a smaller budget.
        """
        budget = self.max_tokens
        while True:
            window = self._window(plan, start, lower, budget)
            if window.limit <= lower:
                if start < lower:
                    start, budget = lower, self.max_tokens
                    continue
                return start, boundary_after(plan.text, lower), False
            cut, structural = plan.choose(window)
            excess = self.count_tokens(plan.text[start : _strip_end(plan.text, start, cut)]) - self.max_tokens
            if excess <= 0:
                return start, cut, structural
            budget -= excess

    def _window(self, plan: _Plan, start: int, lower: int, budget: int) -> _Window:
        tokens = plan.tokens
        return _Window(
            lower=lower,
            fill_from=tokens.position_after(start, max(1, int(self.max_tokens * MIN_FILL))),
            limit=tokens.position_after(start, budget),
            stretch=tokens.position_after(start, budget + max(2, self.max_tokens // 50)),
        )

    def _overlap_start(self, plan: _Plan, start: int, cut: int, lower: int) -> int:
        """Where the chunk after ``cut`` starts: about ``overlap_tokens`` back, at a sentence or word."""
        if self.overlap_tokens == 0:
            return lower
        back = plan.tokens.position_before(cut, self.overlap_tokens)
        floor = max(start + 1, back, plan.last_structural(cut))
        strong = plan.first_of((_Level.PARAGRAPH, _Level.SENTENCE), floor)
        if strong < cut and 2 * plan.tokens.count(strong, cut) >= self.overlap_tokens:
            return strong
        earliest = min(strong, plan.first_of((_Level.LINE, _Level.WORD), floor))
        return earliest if earliest < cut else lower


@lru_cache(maxsize=4)
def _token_tables(encoding: tiktoken.Encoding) -> tuple[list[int], list[int]]:
    """Per token id: characters it starts (its non-continuation UTF-8 bytes), and 1 if its first byte
    continues a character begun by the previous token. Built once per encoding (about 0.1 s)."""
    characters = [0] * (encoding.max_token_value + 1)
    continues = [0] * (encoding.max_token_value + 1)
    for token in range(encoding.max_token_value + 1):
        try:
            piece = encoding.decode_single_token_bytes(token)
        except KeyError:  # ids of special tokens and gaps in the vocabulary
            continue
        characters[token] = len(piece.translate(None, _CONTINUATION_BYTES))
        continues[token] = int(bool(piece) and 0x80 <= piece[0] < 0xC0)
    return characters, continues


def _strip_end(text: str, start: int, cut: int) -> int:
    """``cut`` moved back over trailing whitespace, never before ``start``."""
    end = cut
    while end > start and text[end - 1].isspace():
        end -= 1
    return end


@dataclass(frozen=True)
class _TokenMap:
    """Code-point offset of every token start of a text encoded once; ``length`` is the text's length.

    A token that starts inside a character (multi-byte UTF-8 split across tokens) maps to the start of
    that character, so spans measured here never undercount.
    """

    starts: list[int]
    length: int

    @classmethod
    def encode(cls, text: str, encoding: tiktoken.Encoding) -> _TokenMap:
        # Lone surrogates (possible in JSON input) cannot be UTF-8 encoded; U+FFFD keeps every offset.
        tokens = encoding.encode_ordinary(_SURROGATE.sub("\ufffd", text))
        characters, continues = _token_tables(encoding)
        offsets = accumulate(map(characters.__getitem__, tokens), initial=0)
        return cls(list(map(sub, offsets, map(continues.__getitem__, tokens))), len(text))

    def _covering(self, position: int) -> int:
        """Index of the first token holding the character at ``position``."""
        index = max(0, bisect_right(self.starts, position) - 1)
        return bisect_left(self.starts, self.starts[index]) if self.starts else 0

    def position_after(self, start: int, tokens: int) -> int:
        """The furthest offset such that ``[start, offset)`` spans at most ``tokens`` tokens."""
        index = self._covering(start) + max(tokens, 0)
        return self.starts[index] if index < len(self.starts) else self.length

    def position_before(self, end: int, tokens: int) -> int:
        """The earliest token start such that ``[offset, end)`` spans about ``tokens`` tokens."""
        index = bisect_left(self.starts, end) - tokens
        return self.starts[max(0, index)] if self.starts else 0

    def count(self, start: int, end: int) -> int:
        """Tokens overlapping ``[start, end)``."""
        return bisect_left(self.starts, end) - self._covering(start)


@dataclass(frozen=True)
class _Window:
    """Where the chunk being planned may end (code points): after ``lower``; at a regular boundary
    in ``[fill_from, limit]``; at a structural one (or the end of the text) up to ``stretch``, a few
    tokens past ``limit``, since counts at the edges are approximate and every chunk is re-encoded."""

    lower: int
    fill_from: int
    limit: int
    stretch: int


@dataclass
class _Plan:
    """Everything the cutter needs about one text: token map and boundary candidates by level.

    Candidates are offsets of non-whitespace characters where a chunk may start. ``regular`` ones
    need ``MIN_FILL``; ``structural`` ones (section starts, code-fence edges) are taken at any fill.
    """

    text: str
    tokens: _TokenMap
    regular: dict[_Level, list[int]] = field(default_factory=dict)
    structural: dict[_Level, list[int]] = field(default_factory=dict)
    structural_all: list[int] = field(default_factory=list)

    @classmethod
    def build(cls, text: str, encoding: tiktoken.Encoding, max_tokens: int) -> _Plan:
        outline = _Outline.scan(text)
        fitting = [
            (start, end)
            for start, end in outline.fences
            if len(encoding.encode_ordinary(text[start:end].rstrip())) <= max_tokens
        ]
        regular = {level: _outside(positions, fitting) for level, positions in _text_boundaries(text).items()}
        fence_edges = sorted(
            {edge for start, end in outline.fences for edge in (start, _next_non_space(text, end))}
        )
        structural = {
            _Level.SECTION: outline.sections,
            _Level.PARAGRAPH: [edge for edge in fence_edges if edge < len(text)],
        }
        merged = sorted(set(structural[_Level.SECTION]) | set(structural[_Level.PARAGRAPH]))
        return cls(text, _TokenMap.encode(text, encoding), regular, structural, merged)

    def choose(self, window: _Window) -> tuple[int, bool]:
        """The furthest cut of the strongest level in ``window``, and whether it is structural."""
        lower = window.lower
        if window.stretch >= len(self.text):
            return len(self.text), True
        for level in _LEVELS_STRONGEST_FIRST:
            best_structural = self._furthest(self.structural.get(level, []), lower, window.stretch)
            regular_floor = max(lower, window.fill_from - 1)
            best_regular = self._furthest(self.regular.get(level, []), regular_floor, window.limit)
            if best_structural is not None and (best_regular is None or best_structural >= best_regular):
                return best_structural, True
            if best_regular is not None:
                return best_regular, False
        cut = boundary_at_or_before(self.text, window.limit, lower)
        return (cut if cut > lower else boundary_after(self.text, lower)), False

    def _furthest(self, positions: Sequence[int], lower: int, limit: int) -> int | None:
        """The last position in ``(lower, limit]`` that is a grapheme boundary, if any."""
        index = bisect_right(positions, limit) - 1
        while index >= 0 and positions[index] > lower:
            if is_grapheme_boundary(self.text, positions[index]):
                return positions[index]
            index -= 1
        return None

    def first_of(self, levels: Iterable[_Level], floor: int) -> int:
        """The first regular candidate of any of ``levels`` at or after ``floor`` (text length if none)."""
        return min(self._first(self.regular.get(level, []), floor) for level in levels)

    def _first(self, positions: Sequence[int], floor: int) -> int:
        index = bisect_left(positions, floor)
        while index < len(positions) and not is_grapheme_boundary(self.text, positions[index]):
            index += 1
        return positions[index] if index < len(positions) else len(self.text)

    def last_structural(self, cut: int) -> int:
        """The last section start or fence edge at or before ``cut`` (0 if none); overlap stops there."""
        index = bisect_right(self.structural_all, cut) - 1
        return self.structural_all[index] if index >= 0 else 0


def _text_boundaries(text: str) -> dict[_Level, list[int]]:
    """Paragraph, sentence, line and word starts found from whitespace runs and CJK punctuation."""
    found: dict[_Level, list[int]] = {level: [] for level in _Level}
    for run in _WHITESPACE_RUN.finditer(text):
        after = run.end()
        if after < len(text):
            found[_classify_run(text, run.start(), after, run.group())].append(after)
    found[_Level.SENTENCE] = sorted(found[_Level.SENTENCE] + [m.end() for m in _CJK_SENTENCE.finditer(text)])
    found[_Level.WORD] = sorted(found[_Level.WORD] + [m.end() for m in _CJK_CLAUSE.finditer(text)])
    return found


def _classify_run(text: str, start: int, after: int, run: str) -> _Level:
    line_breaks = run.count("\n") + run.count("\r") - run.count("\r\n")
    if line_breaks >= 2:
        return _Level.PARAGRAPH
    if _ends_sentence(text, start) or (line_breaks == 1 and _LIST_ITEM.match(text, after)):
        return _Level.SENTENCE
    return _Level.LINE if line_breaks == 1 else _Level.WORD


def _ends_sentence(text: str, end: int) -> bool:
    """True when ``text[:end]`` ends with sentence punctuation, possibly followed by closing quotes."""
    position = end - 1
    while position >= 0 and end - position <= 3 and text[position] in _CLOSERS:
        position -= 1
    return position >= 0 and text[position] in _SENTENCE_END


def _outside(positions: Iterable[int], spans: Sequence[tuple[int, int]]) -> list[int]:
    """``positions`` (sorted) without those strictly inside any of ``spans`` (sorted, disjoint)."""
    kept: list[int] = []
    index = 0
    for position in positions:
        while index < len(spans) and spans[index][1] <= position:
            index += 1
        if index < len(spans) and spans[index][0] < position < spans[index][1]:
            continue
        kept.append(position)
    return kept


def _next_non_space(text: str, position: int) -> int:
    found = _NON_SPACE.search(text, position)
    return found.start() if found else len(text)


@dataclass
class _Outline:
    """Markdown structure of a text: section starts and fenced code blocks ``(start, end)``.

    A section start is the first heading of a run of headings (blank lines between them allowed), so
    a heading is never cut off from the text it introduces. Fences follow CommonMark: an opening run
    of three or more backticks or tildes closes at a run of the same character at least as long; an
    unclosed fence runs to the end of the text. Headings inside fences are code, not structure.
    """

    sections: list[int] = field(default_factory=list)
    fences: list[tuple[int, int]] = field(default_factory=list)
    _fence: tuple[int, str, int] | None = None
    _paragraph: int | None = None
    _heading_before_paragraph: bool = False
    _after_heading: bool = False

    @classmethod
    def scan(cls, text: str) -> _Outline:
        outline = cls()
        previous_end = 0
        # Only lines with text are visited; blank lines are seen as extra line breaks between them.
        for line in _TEXT_LINE.finditer(text):
            start = text.rfind("\n", 0, line.start()) + 1
            if text.count("\n", previous_end, start) >= 2:
                outline._paragraph = None
            previous_end = line.end()
            outline._feed(text[start : line.end()].rstrip("\r"), start, min(line.end() + 1, len(text)))
        if outline._fence is not None:
            outline.fences.append((outline._fence[0], len(text)))
        return outline

    def _feed(self, line: str, start: int, end: int) -> None:
        if self._fence is not None:
            self._feed_fenced(line, end)
            return
        indent = len(line) - len(line.lstrip())
        if opening := _FENCE_OPEN.match(line):
            marker = opening.group(1) or opening.group(2)
            self._fence = (start + indent, marker[0], len(marker))
            self._paragraph, self._after_heading = None, False
        elif _ATX_HEADING.match(line):
            self._add_section(start + indent, self._after_heading)
        elif self._paragraph is not None and _SETEXT_UNDERLINE.match(line):
            self._add_section(self._paragraph, self._heading_before_paragraph)
        elif self._paragraph is None:
            self._paragraph, self._heading_before_paragraph = start + indent, self._after_heading
            self._after_heading = False

    def _feed_fenced(self, line: str, end: int) -> None:
        assert self._fence is not None
        start, character, length = self._fence
        closing = _FENCE_CLOSE.match(line)
        if closing and closing.group(1)[0] == character and len(closing.group(1)) >= length:
            self.fences.append((start, end))
            self._fence = None

    def _add_section(self, position: int, continues_headings: bool) -> None:
        if not continues_headings:
            self.sections.append(position)
        self._paragraph, self._after_heading = None, True
