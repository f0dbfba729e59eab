"""Random note histories for the ``as_of`` property (DESIGN §10 "Time"), played on a ``MemoryWorld``.

A history is a list of memory writes (remember, revise, supersede, forget in every mode, restore,
rescope, notes that expire, pin, unpin), one per second of the world's clock. After each write the
runner records what two callers get *live*: the owner (who may share) and a reader of the same
tenant (who sees tenant-scoped notes only): a lexical ``search_memory`` of the word every note
holds (with and without superseded notes) and a ``recall_context`` pack without a query. At the
end it asks the same reads ``as_of`` each of those moments.

The replay rule the answers are held to: ``as_of=t`` is the live answer recorded at ``t``, less
what may not be shown today: notes deleted for good since (hard forget, redaction) and notes the
caller may no longer see (rescoped to private).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from hypothesis import strategies as st

from knowledge.domain.memory.notes import ForgetMode, can_see_note
from knowledge.domain.models import Permission, Principal
from knowledge.errors import KnowledgeError
from tests.unit.services.conftest import caller

WORD = "zephyr"
"""In every note, so one lexical query finds every note a caller may see."""
FILLER = ("amber", "basalt", "cobalt", "dune", "ember", "fjord", "glacier", "harbor", "iris", "juniper")
OWNER = caller("alice", Permission.MEMORY_READ, Permission.MEMORY_WRITE, Permission.MEMORY_SHARE)
READER = caller("bob", Permission.MEMORY_READ)

Op = tuple[Any, ...]


def operations() -> st.SearchStrategy[list[Op]]:
    """Random histories of 1–14 writes; a write names a note by a number taken modulo the notes
    created so far (and does nothing before the first)."""
    target = st.integers(0, 9)
    write = st.one_of(
        st.tuples(
            st.just("create"),
            st.sampled_from(("private", "tenant")),
            st.sampled_from((0.2, 0.5, 0.9)),
            st.one_of(st.none(), st.integers(1, 4)),
            st.lists(st.sampled_from(FILLER), min_size=2, max_size=3),
        ),
        st.tuples(st.just("revise"), target, st.lists(st.sampled_from(FILLER), min_size=2, max_size=3)),
        st.tuples(st.just("supersede"), target),
        st.tuples(st.just("forget"), target, st.sampled_from(("soft", "soft", "redact", "hard"))),
        st.tuples(st.just("restore"), target),
        st.tuples(st.just("rescope"), target, st.sampled_from(("private", "tenant"))),
        st.tuples(st.just("pin"), target, st.integers(0, 2)),
        st.tuples(st.just("unpin"), target),
    )
    return st.lists(write, min_size=1, max_size=14)


@dataclass
class Reads:
    """What one caller got at one moment."""

    current: frozenset[tuple[str, int, str]]
    with_superseded: frozenset[tuple[str, int, str]]
    pack: tuple[tuple[str, int, bool], ...]


@dataclass
class HistoryRun:
    """Plays a history on ``world`` and keeps each moment's live reads by caller."""

    world: Any
    notes: list[str] = field(default_factory=list)
    labels: int = 0
    moments: list[datetime] = field(default_factory=list)
    live: list[dict[str, Reads]] = field(default_factory=list)

    def play(self, history: list[Op]) -> None:
        for op in history:
            with contextlib.suppress(KnowledgeError):  # refused: nothing changed
                self._apply(op)
            self.world.sync()
            self.moments.append(self.world.clock.now)
            self.live.append({"owner": self.reads(OWNER), "reader": self.reads(READER)})
            self.world.clock.advance(1)

    def reads(self, principal: Principal, as_of: datetime | None = None) -> Reads:
        extra = {} if as_of is None else {"as_of": as_of}
        found = self.world.search(principal, WORD, mode="lexical", limit=50, **extra)
        wider = self.world.search(principal, WORD, mode="lexical", limit=50, include_superseded=True, **extra)
        pack = self.world.recall(principal, max_items=50, max_tokens=8_000, **extra)
        return Reads(
            current=frozenset((hit.note_id, hit.version, hit.content) for hit in found.results),
            with_superseded=frozenset((hit.note_id, hit.version, hit.content) for hit in wider.results),
            pack=tuple((item.note_id, item.version, item.pinned) for item in pack.items),
        )

    def shown_today(self, principal: Principal) -> set[str]:
        """The notes an answer may still show ``principal``: stored, not redacted, visible now."""
        shown = set()
        for note_id in self.notes:
            note = self.world.store.get_note(principal.tenant_id, note_id)
            gone = note is None or note.forgotten_mode is ForgetMode.REDACT
            if note is not None and not gone and can_see_note(principal, note):
                shown.add(note_id)
        return shown

    def expected(self, moment: int, who: str, principal: Principal) -> Reads:
        """The replay rule (module docs) applied to the live reads at ``moments[moment]``."""
        shown = self.shown_today(principal)
        live = self.live[moment][who]
        return Reads(
            current=frozenset(entry for entry in live.current if entry[0] in shown),
            with_superseded=frozenset(entry for entry in live.with_superseded if entry[0] in shown),
            pack=tuple(entry for entry in live.pack if entry[0] in shown),
        )

    def _note(self, index: int) -> str | None:
        return self.notes[index % len(self.notes)] if self.notes else None

    def _content(self, words: list[str]) -> str:
        self.labels += 1
        return f"{WORD} n{self.labels} {' '.join(words)}"

    def _apply(self, op: Op) -> None:
        if op[0] == "create":
            self._create(*op[1:])
            return
        note_id = self._note(op[1])
        if note_id is not None:
            getattr(self, f"_{op[0]}")(note_id, *op[2:])

    def _create(self, scope: str, importance: float, ttl: int | None, words: list[str]) -> None:
        answer = self.world.remember(
            OWNER, self._content(words), scope=scope, importance=importance, ttl_seconds=ttl
        )
        if answer.result == "created":
            self.notes.append(answer.note.note_id)

    def _revise(self, note_id: str, words: list[str]) -> None:
        self.world.remember(OWNER, self._content(words), memory_id=note_id)

    def _supersede(self, note_id: str) -> None:
        answer = self.world.remember(
            OWNER, self._content(["successor"]), supersedes=[note_id], scope="tenant"
        )
        if answer.result == "created":
            self.notes.append(answer.note.note_id)

    def _forget(self, note_id: str, mode: str) -> None:
        self.world.forget(OWNER, note_id, mode)

    def _restore(self, note_id: str) -> None:
        self.world.notes.restore(OWNER, note_id)

    def _rescope(self, note_id: str, scope: str) -> None:
        note = self.world.store.get_note(OWNER.tenant_id, note_id)
        if note is not None:
            self.world.remember(OWNER, note.content, memory_id=note_id, scope=scope)

    def _pin(self, note_id: str, order: int) -> None:
        self.world.pin(OWNER, note_id, order=order)

    def _unpin(self, note_id: str) -> None:
        self.world.unpin(OWNER, note_id)
