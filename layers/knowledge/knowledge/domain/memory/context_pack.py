"""The context pack of ``recall_context`` (DESIGN §9): notes rendered as text an agent can paste into
its prompt, inside a token budget.

Rendering: one block per note, blocks separated by one blank line; a block is a header line and the
note's content (surrounding white space removed)::

    ## decision · 2026-11-30 · pinned · own · /projects/alpha
    Billing runs on Postgres, not DynamoDB.

    ## fact · 2026-11-29 · pinned · shared by alice · /ops
    Deploys are frozen on Fridays.

The header names the note's memory type, the UTC date of its current version, ``pinned`` for a pin,
whose note it is — ``own`` when its owner is the caller (``viewer``), else ``shared by`` and the
owner's subject — and last its path (which always starts with ``/``, so it can never be read as
``pinned``). In the owner and the path, white space runs (line breaks of every kind included) are
one space and a ``·`` is escaped (``\\·``), so the header stays one line of the fields above; the
content is split at every kind of line break (``str.splitlines``) and a line that starts with
``#``, after any white space, is escaped with a backslash (``\\#``), so no note can forge a
header or its owner.
Nothing else is added (no preamble), so an empty pack is the empty string.

Packing (``pack``): pins first, in pin order, while the pin section fits in half of ``max_tokens``
(else ``pin_budget``); then the ranked candidates in order, each included when it fits whole in
what is left of ``max_tokens`` (else ``budget``: later, smaller ones may still fit). A candidate
whose embedding has cosine similarity ≥ 0.95 with an included note's is ``duplicate``; once
``max_items`` notes are in, every other candidate is ``max_items``. Checks run in that order:
``max_items``, ``duplicate``, then the budget.

Token counts are tiktoken ``cl100k_base`` counts (``encode_ordinary``: special-token text counts as
text). A block's header starts with ``##`` after a blank line, where the tokenizer's pre-split
always starts a new piece, and BPE never merges across pieces; so the count of the joined text is
the sum of each block's count with its separator (the last block's without), and a pack is built
with one count per candidate. ``pack`` recounts the final text and, if the sum ever disagreed,
packs again counting every tentative text whole, so ``used_tokens`` is always the exact count.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Literal

from knowledge.domain.memory.notes import Note

if TYPE_CHECKING:
    import tiktoken

SEPARATOR = "\n\n"
DUPLICATE_COSINE = 0.95
"""Cosine similarity at or above which a note repeats one already in the pack."""
TOKENIZER = "cl100k_base"

DropReason = Literal["budget", "pin_budget", "duplicate", "max_items"]
TokenCounter = Callable[[str], int]


@dataclass(frozen=True)
class Candidate:
    """A note that may enter the pack: ``score`` is its fused relevance (or importance without a
    query; ``None`` for a pin), ``vector`` its content's embedding (any length > 0)."""

    note: Note
    pinned: bool
    score: float | None
    vector: Sequence[float]


@dataclass(frozen=True)
class Packed:
    candidate: Candidate
    tokens: int
    """The token count of the note's block alone."""


@dataclass(frozen=True)
class Pack:
    text: str
    used_tokens: int
    included: list[Packed]
    dropped: list[tuple[str, DropReason]]
    """``(note_id, reason)`` for every candidate left out, in the order they were considered."""


def count_cl100k(text: str) -> int:
    """tiktoken's ``cl100k_base`` count of ``text`` (special-token text counted as text); the
    vocabulary is read once, from the offline cache (``TokenizerUnavailableError`` without it)."""
    return len(_cl100k().encode_ordinary(text))


@cache
def _cl100k() -> tiktoken.Encoding:
    from knowledge.domain.retrieval.chunking import load_encoding

    return load_encoding(TOKENIZER)


def render(note: Note, *, pinned: bool, viewer: str) -> str:
    """One note's block for the caller whose subject is ``viewer``: the header line, then its
    content (lines starting with ``#`` escaped)."""
    fields = [note.memory_type.value, note.updated_at.date().isoformat()]
    if pinned:
        fields.append("pinned")
    fields.append(owner_label(note, viewer))
    fields.append(_header_value(note.path))
    lines = note.content.strip().splitlines()
    content = "\n".join("\\" + line if line.lstrip().startswith("#") else line for line in lines)
    return f"## {' · '.join(fields)}\n{content}"


def owner_label(note: Note, viewer: str) -> str:
    """Whose ``note`` is, as its block's header says it to the caller ``viewer``: ``own``, or
    ``shared by <owner subject>``."""
    if note.owner_id == viewer:
        return "own"
    return "shared by " + _header_value(note.owner_id)


def _header_value(value: str) -> str:
    """``value`` fit for one field of a header line: white space runs (line breaks of every kind
    included) as one space, and the field separator ``·`` escaped (``\\·``), so that no owner or
    path can add a field or a line."""
    return " ".join(value.split()).replace(SEPARATOR_DOT, "\\" + SEPARATOR_DOT)


SEPARATOR_DOT = "·"
"""What separates a header's fields (with a space on each side)."""


def pack(
    pins: Sequence[Candidate],
    ranked: Sequence[Candidate],
    *,
    max_tokens: int,
    max_items: int,
    count: TokenCounter,
    viewer: str,
) -> Pack:
    """The pack of ``pins`` (in pin order) then ``ranked`` (best first) within ``max_tokens`` (≥ 1)
    and ``max_items`` (≥ 1), for the caller whose subject is ``viewer``; a note appearing in both is
    considered once, as a pin. ``count`` is the tokenizer's count of a text."""
    ranked = _without(ranked, {candidate.note.note_id for candidate in pins})
    result = _pack(pins, ranked, max_tokens, max_items, count, viewer, exact=False)
    if count(result.text) != result.used_tokens:
        result = _pack(pins, ranked, max_tokens, max_items, count, viewer, exact=True)
    return result


def _pack(
    pins: Sequence[Candidate],
    ranked: Sequence[Candidate],
    max_tokens: int,
    max_items: int,
    count: TokenCounter,
    viewer: str,
    *,
    exact: bool,
) -> Pack:
    blocks: list[str] = []
    included: list[Packed] = []
    dropped: list[tuple[str, DropReason]] = []
    closed = 0  # tokens of the included blocks, each with its separator
    used = 0
    unit_vectors: list[list[float]] = []
    for section, limit, reason in ((pins, max_tokens // 2, "pin_budget"), (ranked, max_tokens, "budget")):
        for candidate in section:
            note_id = candidate.note.note_id
            if len(included) >= max_items:
                dropped.append((note_id, "max_items"))
                continue
            vector = _unit(candidate.vector)
            if any(_dot(vector, other) >= DUPLICATE_COSINE for other in unit_vectors):
                dropped.append((note_id, "duplicate"))
                continue
            block = render(candidate.note, pinned=candidate.pinned, viewer=viewer)
            alone = count(block)
            tentative = count(SEPARATOR.join([*blocks, block])) if exact else closed + alone
            if tentative > limit:
                dropped.append((note_id, reason))  # type: ignore[arg-type]  # a DropReason literal
                continue
            blocks.append(block)
            included.append(Packed(candidate, alone))
            unit_vectors.append(vector)
            used = tentative
            closed += count(block + SEPARATOR)
    return Pack(text=SEPARATOR.join(blocks), used_tokens=used, included=included, dropped=dropped)


def _without(candidates: Sequence[Candidate], note_ids: set[str]) -> list[Candidate]:
    return [candidate for candidate in candidates if candidate.note.note_id not in note_ids]


def _unit(vector: Sequence[float]) -> list[float]:
    norm = math.sqrt(sum(value * value for value in vector))
    return [value / norm for value in vector] if norm > 0 else [0.0 for _ in vector]


def _dot(left: Sequence[float], right: Sequence[float]) -> float:
    return float(sum(map(operator.mul, left, right)))
