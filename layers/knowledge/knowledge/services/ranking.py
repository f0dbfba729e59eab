"""Ranked, truth-checked, duplicate-free results of a query (DESIGN §4, "Fusion" and "Read-time truth").

One page is a prefix of the same query's sequence of results, never a ranking of its own, so a page
of 5 is the first 5 of a page of 50 for the same index state:

1. Each leg returns ``CANDIDATE_DEPTH`` chunk candidates, whatever the page size; fusion ranks them
   (its normalization sees the same candidates every time).
2. The read-time truth check walks the fused items in order and keeps the current, visible ones. It
   reads their truth (item, base and revision) a window at a time, one batched store read
   (``CatalogStore.read_candidates``) per window: a window holds half as many candidates again as
   results are missing (``window``) and every later candidate sharing a passage with one of them,
   so a page whose candidates are fresh costs one read; stale candidates cost one more read per
   window.
3. An item whose passage (the chunk its excerpt comes from) equals the passage of a result above it
   takes no slot of its own: the result above lists it in ``duplicates``. Every visible copy among
   the candidates is listed, also when it ranks below the page's last result.
4. Only when the candidates run out before the page is full (stale hits dropped, many chunks per
   item) and a leg may hold more, the legs are asked again at ``retrieval.REFILL_DEPTH``
   (``retrieval.retrieve`` runs the rounds, ``ItemPage`` fills the page); the items found
   there rank after every earlier candidate, in the fused order of the deeper round, and a copy
   there of a passage already shown is left out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from knowledge.domain.access.visibility import can_see
from knowledge.domain.as_of import item_state_at
from knowledge.domain.models import ItemStatus, KnowledgeBase, KnowledgeItem, Principal, Revision
from knowledge.domain.retrieval.fusion import FusedHit, fuse
from knowledge.domain.retrieval.hits import LegHits, SearchMode
from knowledge.domain.retrieval.truth import CandidateKey
from knowledge.ports import CatalogStore

WINDOW_MIN = 5
"""Fused candidates whose truth one store read covers at least."""


def window(missing: int) -> int:
    """How many fused candidates one round reads to fill ``missing`` results: half as many again,
    for stale or duplicate hits, and at least ``WINDOW_MIN`` (15 for a page of 10)."""
    return max(WINDOW_MIN, missing + (missing + 1) // 2)


@dataclass
class Accepted:
    """A fused hit that passed the truth check, with its item, base and revision as the store holds
    them, and the ids of the visible items whose passage is the same, best first."""

    hit: FusedHit
    item: KnowledgeItem
    base: KnowledgeBase
    revision: Revision
    duplicates: list[str] = field(default_factory=list)

    @property
    def passage(self) -> str:
        return passage_key(self.hit)

    @property
    def slot(self) -> str:
        """What a result owns a slot by: its passage, or its item when the passage is empty (an item
        without text is found by its title, and no two such items are copies)."""
        return self.passage or f"item:{self.item.knowledge_item_id}"


def passage_key(hit: FusedHit) -> str:
    """What makes two results the same passage: the text of the chunk they are excerpted from, without
    surrounding whitespace."""
    return hit.chunk.text.strip()


class ItemPage:
    """The page of a knowledge search being filled (``retrieval.Page``): ``add`` takes a round's hits,
    fuses them by ``mode`` and ``alpha`` and keeps the current, visible ones for ``principal`` (see
    the module doc); ``results`` are the page so far, best first."""

    def __init__(
        self,
        store: CatalogStore,
        principal: Principal,
        mode: SearchMode,
        alpha: float,
        wanted: int,
        as_of: datetime | None = None,
    ) -> None:
        """``as_of``: keep the hits whose revision was their item's current published one at that
        moment (``_verified``) instead of now."""
        self._as_of = as_of
        self._store = store
        self._principal = principal
        self._mode = mode
        self._alpha = alpha
        self._wanted = wanted
        self.results: list[Accepted] = []
        self._earlier_passages: set[str] = set()
        self._placed: set[str] = set()

    def add(self, hits: LegHits) -> int:
        """Fill the page from one round: items an earlier round placed are left out, and so is a copy
        of a passage already shown; returns the results held."""
        fused = [
            hit for hit in fuse(hits, self._mode, self._alpha) if hit.knowledge_item_id not in self._placed
        ]
        fresh = [hit for hit in fused if passage_key(hit) not in self._earlier_passages]
        self.results += _page(
            self._store, self._principal, fresh, self._wanted - len(self.results), self._as_of
        )
        self._placed.update(hit.knowledge_item_id for hit in fused)
        self._earlier_passages.update(result.passage for result in self.results if result.passage)
        return len(self.results)


def _page(
    store: CatalogStore,
    principal: Principal,
    fused: Sequence[FusedHit],
    wanted: int,
    as_of: datetime | None = None,
) -> list[Accepted]:
    """Up to ``wanted`` current, visible results from ``fused`` in order, one per passage, each listing
    the visible copies of its passage anywhere in ``fused``; one store read per window (module doc)."""
    kept: dict[str, Accepted] = {}
    verdicts: dict[str, Accepted | None] = {}
    position = 0
    while position < len(fused) and len(kept) < wanted:
        candidates = fused[position : position + window(wanted - len(kept))]
        position += len(candidates)
        passages = {passage_key(hit) for hit in candidates} - {""}
        copies = [hit for hit in fused[position:] if passage_key(hit) in passages]
        verdicts.update(
            _verified(
                store,
                principal,
                [hit for hit in (*candidates, *copies) if hit.knowledge_item_id not in verdicts],
                as_of,
            )
        )
        for hit in candidates:
            entry = verdicts[hit.knowledge_item_id]
            if entry is None:
                continue
            owner = kept.get(entry.slot)
            if owner is not None:
                owner.duplicates.append(entry.item.knowledge_item_id)
            elif len(kept) < wanted:
                kept[entry.slot] = entry
    for hit in fused[position:]:
        entry = verdicts.get(hit.knowledge_item_id)
        if entry is not None and entry.slot in kept:
            kept[entry.slot].duplicates.append(entry.item.knowledge_item_id)
    return list(kept.values())


def _verified(
    store: CatalogStore, principal: Principal, hits: Sequence[FusedHit], as_of: datetime | None = None
) -> dict[str, Accepted | None]:
    """Each hit's item id → the hit accepted, when its base is visible and active, its item published
    and its revision the item's current one, else ``None`` (DESIGN §4, read-time truth). With
    ``as_of`` (DESIGN §11) the item's state at that moment must be published with the hit's revision
    current (``domain.as_of.item_state_at``; one state listing per item whose base passed), the
    base still visible and active now."""
    if not hits:
        return {}
    records = store.read_candidates(
        principal.tenant_id,
        [
            CandidateKey(hit.knowledge_base_id, hit.knowledge_item_id, hit.knowledge_revision_id)
            for hit in hits
        ],
    )
    verdicts: dict[str, Accepted | None] = {}
    for hit in hits:
        item = records.items.get(hit.knowledge_item_id)
        base = records.bases.get(hit.knowledge_base_id)
        revision = records.revisions.get((hit.knowledge_item_id, hit.knowledge_revision_id))
        verdicts[hit.knowledge_item_id] = (
            Accepted(hit=hit, item=item, base=base, revision=revision)
            if item is not None
            and base is not None
            and revision is not None
            and (
                _was_current(store, principal, hit, item, base, as_of)
                if as_of is not None
                else _is_current(principal, hit, item, base)
            )
            else None
        )
    return verdicts


def _was_current(
    store: CatalogStore,
    principal: Principal,
    hit: FusedHit,
    item: KnowledgeItem,
    base: KnowledgeBase,
    as_of: datetime,
) -> bool:
    if item.knowledge_base_id != hit.knowledge_base_id or not can_see(principal, base):
        return False
    state = item_state_at(item, store.list_item_states(principal.tenant_id, item.knowledge_item_id), as_of)
    return (
        state is not None
        and state.status is ItemStatus.PUBLISHED
        and state.current_revision_id == hit.knowledge_revision_id
    )


def _is_current(principal: Principal, hit: FusedHit, item: KnowledgeItem, base: KnowledgeBase) -> bool:
    return (
        item.status is ItemStatus.PUBLISHED
        and item.current_revision_id == hit.knowledge_revision_id
        and item.knowledge_base_id == hit.knowledge_base_id
        and can_see(principal, base)
    )
