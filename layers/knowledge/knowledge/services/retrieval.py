"""The one retrieval loop of both corpora (DESIGN §4 and §9): ``retrieve`` runs ``search_knowledge``'s
ranking over items and ``search_memory``'s (and ``recall_context``'s) over notes.

1. The semantic leg needs the query's embedding. When the embedder fails
   (``DependencyUnavailableError``), a search running both legs degrades to its lexical leg; a
   search without a lexical leg to fall back to raises.
2. Each leg returns ``CANDIDATE_DEPTH`` candidates whatever the page size. The corpus' page
   (``Page.add``) fuses a round's hits and keeps the candidates that pass its read-time truth check.
   Only when the page is still short and a leg came back full, the legs are asked once more at
   ``REFILL_DEPTH``; how the deeper round joins the first is the page's (``ranking`` for items: its
   results rank after the first round's; ``memory_search`` for notes: the deeper round replaces it).
3. A search running both legs lets the index report a failed semantic leg as data (the round's
   ``failed``, with the lexical leg's hits of the same ``_msearch``): that round goes on with its
   lexical hits and any later round runs the lexical leg alone, so a degraded search costs no
   extra index round trip. A refill round whose semantic leg fails ranks again, lexical-only, from
   the first round, as an index that raises the failure instead (``DependencyUnavailableError``
   with ``details.leg == "semantic"``) does. Any other failure is raised.

A degraded answer is what the same search gives over its lexical leg alone, with ``degraded: true``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from knowledge.contract.search import MODES, Scores
from knowledge.domain.retrieval.fusion import LegScore
from knowledge.domain.retrieval.hits import CANDIDATE_DEPTH, Leg, SearchMode
from knowledge.errors import DependencyUnavailableError
from knowledge.ports import Embedder

REFILL_DEPTH = 1_000
"""Candidates per leg of the one deeper round that refills a page the first round left short."""
BOTH_LEGS = frozenset({Leg.LEXICAL, Leg.SEMANTIC})
LEXICAL_ONLY = frozenset({Leg.LEXICAL})


class Hits(Protocol):
    """One round's answer of an index: each leg's hits and the leg it failed (``LegHits``,
    ``NoteLegHits``)."""

    @property
    def lexical(self) -> Sequence[object]: ...

    @property
    def semantic(self) -> Sequence[object]: ...

    @property
    def failed(self) -> Leg | None: ...


H = TypeVar("H", bound=Hits)
H_contra = TypeVar("H_contra", bound=Hits, contravariant=True)


class Page(Protocol[H_contra]):
    """A corpus' page being filled: fusion and the read-time truth check of each round's hits."""

    def add(self, hits: H_contra) -> int:
        """Take one round's hits (the first round's, then the refill's); the results held now."""
        ...


P = TypeVar("P", bound=Page[Any])


@dataclass(frozen=True)
class Round:
    """What one round asks the index: the legs to run, the query vector (``None`` without the semantic
    leg), the legs whose failure it may report as data, and the candidates per leg."""

    legs: frozenset[Leg]
    vector: list[float] | None
    tolerate: frozenset[Leg]
    k: int


@dataclass(frozen=True)
class Retrieval(Generic[H, P]):
    """A filled page, the first round's hits (what each leg had to work with) and whether the search
    degraded to its lexical leg."""

    page: P
    first: H
    degraded: bool


def retrieve(
    embedder: Embedder,
    text: str,
    legs: frozenset[Leg],
    wanted: int,
    search: Callable[[Round], H],
    new_page: Callable[[], P],
) -> Retrieval[H, P]:
    """Fill a page of ``wanted`` results for ``text`` over ``legs`` (see the module doc): ``search``
    asks the corpus' index for one round, ``new_page`` starts an empty page.

    Raises ``DependencyUnavailableError`` when the embedder or the index fails and the search cannot
    degrade (a semantic-only search, a failed lexical leg, a failed index call).
    """
    vector = None
    degraded = False
    if Leg.SEMANTIC in legs:
        try:
            vector = embedder.embed([text])[0]
        except DependencyUnavailableError:
            if not can_degrade(legs):
                raise
            legs, degraded = LEXICAL_ONLY, True
    try:
        return _rounds(legs, vector, wanted, search, new_page, degraded=degraded)
    except DependencyUnavailableError as error:
        if not (can_degrade(legs) and semantic_leg_failed(error)):
            raise
    return _rounds(LEXICAL_ONLY, None, wanted, search, new_page, degraded=True)


def _rounds(
    legs: frozenset[Leg],
    vector: list[float] | None,
    wanted: int,
    search: Callable[[Round], H],
    new_page: Callable[[], P],
    *,
    degraded: bool,
) -> Retrieval[H, P]:
    tolerate = frozenset({Leg.SEMANTIC}) if can_degrade(legs) else frozenset()
    page = new_page()
    first: H | None = None
    for depth in (CANDIDATE_DEPTH, REFILL_DEPTH):
        hits = search(Round(legs, vector, tolerate, depth))
        if hits.failed is not None:
            if hits.failed not in tolerate:
                raise DependencyUnavailableError(
                    "The search index could not run the search.", {"leg": hits.failed.value}
                )
            if first is not None:  # the refill's semantic leg failed: rank lexical-only from the start
                return _rounds(LEXICAL_ONLY, None, wanted, search, new_page, degraded=True)
            legs, vector, tolerate, degraded = LEXICAL_ONLY, None, frozenset(), True
        if first is None:
            first = hits
        held = page.add(hits)
        exhausted = len(hits.lexical) < depth and len(hits.semantic) < depth
        if held >= wanted or exhausted:
            break
    assert first is not None
    return Retrieval(page=page, first=first, degraded=degraded)


def normalize_mode(mode: str) -> SearchMode:
    """One of the four modes (case and surrounding space ignored); anything else is ``hybrid``."""
    cleaned = mode.strip().lower()
    return SearchMode(cleaned) if cleaned in MODES else SearchMode.HYBRID


def legs_for(mode: SearchMode) -> frozenset[Leg]:
    """The legs a search mode runs (both corpora)."""
    if mode is SearchMode.LEXICAL:
        return LEXICAL_ONLY
    if mode is SearchMode.SEMANTIC:
        return frozenset({Leg.SEMANTIC})
    return BOTH_LEGS


def can_degrade(legs: frozenset[Leg]) -> bool:
    """A search may fall back to its lexical leg when it runs both legs (hybrid or rrf with terms)."""
    return legs == BOTH_LEGS


def semantic_leg_failed(error: DependencyUnavailableError) -> bool:
    """The index reported that the semantic (k-NN) leg alone failed (``details.leg``)."""
    return error.details.get("leg") == Leg.SEMANTIC.value


def scores_of(final: float, lexical: LegScore | None, semantic: LegScore | None) -> Scores:
    """The ``scores`` object of a result: the final score and each leg's raw score, normalized
    score and rank (nulls for a leg that did not return the hit)."""
    return Scores(
        final=final,
        lexical=lexical.raw if lexical else None,
        lexical_normalized=lexical.normalized if lexical else None,
        lexical_rank=lexical.rank if lexical else None,
        semantic=semantic.raw if semantic else None,
        semantic_normalized=semantic.normalized if semantic else None,
        semantic_rank=semantic.rank if semantic else None,
    )
