"""Excerpts, references and citations of search results (DESIGN §4, "Results").

An excerpt is a window of a chunk around the densest cluster of distinct query terms, cut on word
boundaries (between any two characters in scripts written without spaces, such as Chinese and
Japanese), never inside a grapheme cluster (``\\X``: a flag's two regional indicators stay together),
with no whitespace at either end and no ellipses. Its offsets are code points of the revision, so
``content[excerpt.start:excerpt.end] == excerpt.text`` and ``{offset: start, length: end - start}`` is
a locator an addressed read can start from.

Inside a Markdown table the window starts at a row, and at the table's header row (with its
delimiter row) when the header and the matched rows fit the bound together; it ends at a row end
when one is in reach.

Matching is deliberately simple and language-agnostic: case- and accent-insensitive
(``analysis.fold``); a query word matches words of the chunk that start with its stem (``indexing``
matches ``indexes``); words of unspaced scripts match by character bigrams; common English stopwords
are ignored unless the query has nothing else.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from pydantic import BaseModel, ConfigDict, Field

from knowledge.domain.retrieval.analysis import fold
from knowledge.domain.retrieval.graphemes import ClusterEdges
from knowledge.domain.retrieval.stopwords import LUCENE_ENGLISH_STOP_WORDS, QUESTION_WORDS

EXCERPT_MAX_CHARS = 320
"""The longest excerpt a search result carries (code points)."""

_WORD = re.compile(r"\w+")
_UNSPACED = "\u0e00-\u0eff\u1000-\u109f\u3040-\u30ff\u3100-\u312f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_SCRIPT_RUN = re.compile(f"[{_UNSPACED}]+|[^{_UNSPACED}]+")
_UNSPACED_CHARACTER = re.compile(f"[{_UNSPACED}]")
_SUFFIXES = ("ations", "ation", "ings", "ing", "ies", "ied", "es", "ed", "ly", "s")
_MIN_STEM = 3
_STOPWORDS = LUCENE_ENGLISH_STOP_WORDS | QUESTION_WORDS
_SNAP_DISTANCE = 40
"""Code points an excerpt edge may move inwards to reach a word boundary before a plain cut is used."""
_FOCUS_CHARS = 100
"""The span in which the most distinct query terms mark an excerpt's ``focus``: about a sentence, so
one stray match of a term (a stem inside a longer word) does not move the focus away from the
phrase the query names."""
_DELIMITER_ROW = re.compile(r"\s*\|?\s*:?-+:?\s*(?:\|\s*:?-+:?\s*)*\|?\s*")


class Excerpt(BaseModel):
    """``text == content[start:end]`` of the revision (code points); ``length`` is ``end - start``.
    ``focus`` is where the excerpt's best match of the query starts (a revision offset inside the
    excerpt): the start of the shortest span of at most ``_FOCUS_CHARS`` holding the most distinct
    query terms, ``None`` when no query term matched."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    text: str
    start: int = Field(ge=0)
    end: int = Field(ge=0)
    focus: int | None = None

    @property
    def length(self) -> int:
        return self.end - self.start


@dataclass(frozen=True)
class _Match:
    start: int
    end: int
    term: int


def make_excerpt(
    chunk_text: str, chunk_start: int, query: str, max_chars: int = EXCERPT_MAX_CHARS
) -> Excerpt:
    """At most ``max_chars`` code points of ``chunk_text`` around the best match of ``query``.

    ``chunk_start`` is the chunk's offset in its revision; the excerpt's offsets are revision offsets.
    The whole (stripped) chunk is returned when it fits; with no match, its beginning. Raises
    ``ValueError`` when ``max_chars < 1``.
    """
    if max_chars < 1:
        raise ValueError("max_chars must be at least 1")
    edges = ClusterEdges(chunk_text)
    matches = _matches(chunk_text, query)
    cluster = _densest(matches, max_chars)
    if len(chunk_text) <= max_chars:
        low, high = 0, len(chunk_text)
    else:
        low, high = _table_window(chunk_text, cluster, max_chars, edges) or _window(
            chunk_text, cluster, max_chars, edges
        )
    low, high = _strip(chunk_text, low, high, edges)
    focus = next(
        (
            chunk_start + found[0]
            for found in (_focus(matches), cluster)
            if found is not None and low <= found[0] < high
        ),
        None,
    )
    return Excerpt(text=chunk_text[low:high], start=chunk_start + low, end=chunk_start + high, focus=focus)


def reference(
    knowledge_base_id: str, knowledge_item_id: str, knowledge_revision_id: str, start: int, end: int
) -> str:
    """The stable address of a span: ``knowledge://{kb}/{item}@{revision}#{start}-{end}`` (code points)."""
    return f"knowledge://{knowledge_base_id}/{knowledge_item_id}@{knowledge_revision_id}#{start}-{end}"


def citation(
    title: str,
    source_title: str | None,
    source_uri: str | None,
    revision_id: str,
    published_at: datetime | None,
) -> str:
    """One readable line: ``"{title}" — {source}, revision {id}, published {YYYY-MM-DD}``.

    ``source`` is the source's title, unless it only repeats ``title`` (ignoring case and spacing,
    as when a document's title is also its source's): then the source's URI. Missing parts are
    left out; the publication date is taken in UTC.
    """
    head = f'"{title.strip()}"' if title.strip() else ""
    source_name = (source_title or "").strip()
    if _same_words(source_name, title):
        source_name = ""
    source = source_name or (source_uri or "").strip()
    if source:
        head = f"{head} — {source}" if head else source
    parts = [head] if head else []
    parts.append(f"revision {revision_id}")
    if published_at is not None:
        moment = published_at.astimezone(UTC) if published_at.tzinfo else published_at
        parts.append(f"published {moment.date().isoformat()}")
    return ", ".join(parts)


def _same_words(first: str, second: str) -> bool:
    return " ".join(first.casefold().split()) == " ".join(second.casefold().split())


def _terms(query: str) -> tuple[list[str], list[str]]:
    """``(stems, bigrams)``: stems of spaced words, character bigrams of unspaced runs, deduplicated."""
    words: list[str] = []
    bigrams: list[str] = []
    for word in _WORD.findall(fold(query)):
        for run in _SCRIPT_RUN.findall(word):
            if _UNSPACED_CHARACTER.match(run):
                bigrams.extend(run[i : i + 2] for i in range(max(1, len(run) - 1)))
            else:
                words.append(run)
    content = [word for word in words if word not in _STOPWORDS]
    stems = [_stem(word) for word in content or words]
    return list(dict.fromkeys(stems)), list(dict.fromkeys(bigrams))


def _stem(word: str) -> str:
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= _MIN_STEM:
            return word[: -len(suffix)]
    return word


def _matches(text: str, query: str) -> list[_Match]:
    """Every occurrence of a query term in ``text``, by start offset."""
    stems, bigrams = _terms(query)
    found: list[_Match] = []
    if stems:
        for word in _WORD.finditer(text):
            folded = fold(word.group())
            term = next((index for index, stem in enumerate(stems) if folded.startswith(stem)), None)
            if term is not None:
                found.append(_Match(word.start(), word.end(), term))
    for offset, bigram in enumerate(bigrams, start=len(stems)):
        position = text.find(bigram)
        while position >= 0:
            found.append(_Match(position, position + len(bigram), offset))
            position = text.find(bigram, position + 1)
    return sorted(found, key=lambda match: (match.start, match.end))


def _densest(matches: Sequence[_Match], max_chars: int) -> tuple[int, int] | None:
    """The span of the window of matches (at most ``max_chars`` long) with the most distinct terms,
    then the most matches; the earliest wins ties. ``None`` when there is no match."""
    best: tuple[int, int, int, int] | None = None  # distinct terms, matches, start, end
    terms: Counter[int] = Counter()
    first = 0
    for last, match in enumerate(matches):
        terms[match.term] += 1
        while match.end - matches[first].start > max_chars and first < last:
            terms[matches[first].term] -= 1
            if not terms[matches[first].term]:
                del terms[matches[first].term]
            first += 1
        if best is None or (len(terms), last - first + 1) > best[:2]:
            best = (len(terms), last - first + 1, matches[first].start, match.end)
    return None if best is None else (best[2], min(best[3], best[2] + max_chars))


def _focus(matches: Sequence[_Match]) -> tuple[int, int] | None:
    """The span of at most ``_FOCUS_CHARS`` holding the most distinct terms, then the shortest such
    span (so a stray match of a term elsewhere does not stretch it); the earliest wins ties."""
    best: tuple[int, int, int, int] | None = None  # distinct terms, -span, start, end
    terms: Counter[int] = Counter()
    first = 0
    for last, match in enumerate(matches):
        terms[match.term] += 1
        while first < last and (
            match.end - matches[first].start > _FOCUS_CHARS or terms[matches[first].term] > 1
        ):
            terms[matches[first].term] -= 1
            if not terms[matches[first].term]:
                del terms[matches[first].term]
            first += 1
        span = match.end - matches[first].start
        if best is None or (len(terms), -span) > best[:2]:
            best = (len(terms), -span, matches[first].start, match.end)
    return None if best is None else (best[2], best[3])


def _window(
    text: str, cluster: tuple[int, int] | None, max_chars: int, edges: ClusterEdges
) -> tuple[int, int]:
    """A span of at most ``max_chars`` holding ``cluster`` (a third of the spare room before it),
    its edges moved inwards to word boundaries."""
    if cluster is None:
        lead = len(text) - len(text.lstrip())
        return lead, _snap_end(text, min(lead + 1, len(text)), min(lead + max_chars, len(text)), edges)
    first, last = cluster
    spare = max_chars - (last - first)
    low = max(0, first - spare // 3)
    high = min(len(text), low + max_chars)
    low = max(0, high - max_chars)
    return _snap_start(text, low, first, edges), _snap_end(text, last, high, edges)


def _table_window(
    text: str, cluster: tuple[int, int] | None, max_chars: int, edges: ClusterEdges
) -> tuple[int, int] | None:
    """The window when ``cluster`` starts in a Markdown table: from the header row if the header and
    the cluster fit ``max_chars`` together, else from the row the cluster starts in; to the last row
    end in reach. ``None`` outside tables, or when the cluster does not fit from its row."""
    if cluster is None:
        return None
    first, last = cluster
    rows = _table_rows(text, first)
    if rows is None:
        return None
    header, row = rows
    low = header if header is not None and last - header <= max_chars else row
    if last - low > max_chars:
        return None
    high = min(len(text), low + max_chars)
    row_end = text.rfind("\n", last, high + 1) if high < len(text) else high
    return low, row_end if row_end >= last else _snap_end(text, last, high, edges)


def _table_rows(text: str, position: int) -> tuple[int | None, int] | None:
    """``(header start, row start)`` when ``position`` lies on a row of a Markdown table: a block of
    lines holding ``|`` whose second line is a delimiter row (``| --- | :-: |``), or whose lines all
    start with ``|`` (body rows of a table that starts before ``text``: the header start is then
    ``None``). ``None`` when ``position`` is not on a table row."""
    row = text.rfind("\n", 0, position) + 1
    if "|" not in _line(text, row):
        return None
    starts = [row]
    while starts[-1] > 0:
        previous = text.rfind("\n", 0, starts[-1] - 1) + 1
        if "|" not in _line(text, previous):
            break
        starts.append(previous)
    top_down = starts[::-1]
    if len(top_down) > 1 and _DELIMITER_ROW.fullmatch(_line(text, top_down[1])):
        return top_down[0], top_down[0] if row == top_down[1] else row
    if all(_line(text, start).lstrip().startswith("|") for start in top_down):
        return None, row
    return None


def _line(text: str, start: int) -> str:
    end = text.find("\n", start)
    return text[start : end if end >= 0 else len(text)]


def _snap_start(text: str, low: int, floor: int, edges: ClusterEdges) -> int:
    """The first word boundary in ``[low, min(floor, low + _SNAP_DISTANCE)]``, else a cluster boundary."""
    for position in range(low, min(floor, low + _SNAP_DISTANCE) + 1):
        if _is_word_boundary(text, position, edges):
            return position
    boundary = edges.at_or_after(low)
    return boundary if boundary <= floor else low  # a cluster longer than the window is cut


def _snap_end(text: str, ceiling: int, high: int, edges: ClusterEdges) -> int:
    """The last word boundary in ``[max(ceiling, high - _SNAP_DISTANCE), high]``, else a cluster one."""
    for position in range(high, max(ceiling, high - _SNAP_DISTANCE) - 1, -1):
        if _is_word_boundary(text, position, edges):
            return position
    boundary = edges.at_or_before(high)
    return boundary if boundary >= ceiling else high  # a cluster longer than the window is cut


def _is_word_boundary(text: str, position: int, edges: ClusterEdges) -> bool:
    if position <= 0 or position >= len(text):
        return True
    before, after = text[position - 1], text[position]
    spaced = before.isspace() or after.isspace()
    unspaced = bool(_UNSPACED_CHARACTER.match(before) or _UNSPACED_CHARACTER.match(after))
    return (spaced or unspaced) and position in edges


def _strip(text: str, low: int, high: int, edges: ClusterEdges) -> tuple[int, int]:
    """``[low, high)`` without the clusters that start with whitespace at either end."""
    while low < high and text[low].isspace():
        low = min(edges.after(low), high)
    while high > low and text[high - 1].isspace():
        high = max(edges.at_or_before(high - 1), low)
    return low, high
