"""Memory governance as a property: for random principals (random memory scopes, teams and tenants),
random notes (owners, scopes, pins) and a random run of memory writes of every kind, each write
succeeds exactly when docs/memory.md's matrix allows it, and a refused one answers the error the
matrix names and changes nothing; and no principal's search, pack or pin list ever holds a note it
may not see, while every pack block names its owner.

The matrix and the visibility rule are restated here (``_missing_right``, ``_sees``), not imported,
so the services are checked against the documented rules rather than against themselves. A small
model of every note (scope, status, supersession, pin) follows the writes that succeed.

``make test`` runs a fast budget; ``make fuzz`` a long one (``tests/support/fuzzing.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from knowledge.api.error_envelopes import error_envelope
from knowledge.contract.memory import (
    ForgetMemoryArguments,
    PinMemoryArguments,
    RecallContextArguments,
    RememberArguments,
    SearchMemoryArguments,
    UnpinMemoryArguments,
)
from knowledge.domain.models import Permission, Principal
from knowledge.errors import KnowledgeError
from tests.support.fuzzing import budget
from tests.unit.services.conftest import caller
from tests.unit.services.memory_world import MemoryWorld

TENANTS = ("acme", "acme", "globex")
"""Most principals share the first tenant, where the notes are."""
SUBJECTS = ("ana", "ben")
"""Two, so that actors often meet each other's notes."""
TEAMS = ("red", "blue")
RIGHTS = (Permission.MEMORY_READ, Permission.MEMORY_SHARE, Permission.MEMORY_ADMIN)
"""Each held or not at random; ``memory:write`` by seven actors in eight (without it every write is
refused alike), ``platform:admin`` (every scope) by one in ten."""
SCOPES = ("private", "team", "tenant")
WORD = "zephyr"
"""In every note, so one lexical query finds every note a caller may see."""
KINDS = (
    "create",
    "create_pinned",
    "update",
    "rescope",
    "supersede",
    "pin",
    "unpin",
    "forget_soft",
    "forget_redact",
    "forget_hard",
    "restore",
)
CREATES = ("create", "create_pinned")
ABSENT_NOTE = "nt_01M8MSRAQ70QQ1SJHWP0AMCDPZ"
LAST_VERSION = 1_000_000
"""Above any version a run writes."""
NEED_READABLE = ("update", "rescope", "supersede", "pin", "unpin", "forget_soft")
"""Writes that answer ``memory_unavailable`` for a forgotten note (the others also reach one)."""


@dataclass(frozen=True)
class Actor:
    tenant_id: str
    subject_id: str
    team_ids: frozenset[str]
    rights: frozenset[Permission]

    def principal(self) -> Principal:
        return caller(self.subject_id, *self.rights, tenant_id=self.tenant_id, team_ids=self.team_ids)

    def has(self, right: Permission) -> bool:
        return right in self.rights or Permission.PLATFORM_ADMIN in self.rights


@dataclass(frozen=True)
class SeedPlan:
    tenant_id: str
    owner_id: str
    scope: str
    team_id: str
    pinned: bool


@dataclass(frozen=True)
class Action:
    actor: int
    kind: str
    note: int
    """Index into the notes so far (seeded, then created by earlier actions), modulo their count."""
    scope: str
    team: int


@dataclass
class NoteModel:
    """What the matrix and the visibility rule need of one note, kept in step with the writes."""

    note_id: str
    tenant_id: str
    owner_id: str
    scope: str
    team_id: str | None
    status: str = "active"
    """``active``, ``soft``, ``redacted`` or ``deleted``."""
    superseded: bool = False
    pinned: bool = False

    @property
    def current(self) -> bool:
        return self.status == "active" and not self.superseded


actor_st = st.builds(
    Actor,
    tenant_id=st.sampled_from(TENANTS),
    subject_id=st.sampled_from(SUBJECTS),
    team_ids=st.frozensets(st.sampled_from(TEAMS)),
    rights=st.builds(
        lambda held, write, platform: (
            frozenset(right for right, has in zip(RIGHTS, held, strict=True) if has)
            | ({Permission.MEMORY_WRITE} if write else set())
            | ({Permission.PLATFORM_ADMIN} if platform else set())
        ),
        st.tuples(*(st.booleans() for _ in RIGHTS)),
        st.integers(0, 7).map(bool),
        st.integers(0, 9).map(lambda draw: draw == 0),
    ),
)
seed_st = st.builds(
    SeedPlan,
    tenant_id=st.sampled_from(TENANTS[:1]),
    owner_id=st.sampled_from(SUBJECTS),
    scope=st.sampled_from((*SCOPES, "tenant")),  # shared notes twice as often: others meet them
    team_id=st.sampled_from(TEAMS),
    pinned=st.booleans(),
)


@st.composite
def actions(draw: st.DrawFn, actors: int) -> list[Action]:
    return draw(
        st.lists(
            st.builds(
                Action,
                actor=st.integers(0, actors - 1),
                kind=st.sampled_from(KINDS),
                note=st.integers(0, 30),
                scope=st.sampled_from(SCOPES),
                team=st.integers(0, 1),
            ),
            min_size=1,
            max_size=14,
        )
    )


@st.composite
def runs(draw: st.DrawFn) -> tuple[list[Actor], list[SeedPlan], list[Action]]:
    actors = draw(st.lists(actor_st, min_size=1, max_size=4))
    seeds = draw(st.lists(seed_st, max_size=5))
    return actors, seeds, draw(actions(len(actors)))


# -- the rules, restated from docs/memory.md -----------------------------------------------------


def _sees(actor: Actor, note: NoteModel) -> bool:
    """DESIGN §5's rule for notes: same tenant, and own, tenant-wide, or a team note of its teams."""
    return note.status != "deleted" and (
        note.tenant_id == actor.tenant_id
        and (
            note.owner_id == actor.subject_id
            or note.scope == "tenant"
            or (note.scope == "team" and note.team_id in actor.team_ids)
        )
    )


def _missing_right(actor: Actor, owner_id: str, scopes: list[str]) -> str | None:
    """The matrix: memory:write always; memory:share when the note is (or becomes) team or tenant;
    memory:admin when another principal owns it. The first one missing, else ``None``."""
    needed = [Permission.MEMORY_WRITE]
    if any(scope != "private" for scope in scopes):
        needed.append(Permission.MEMORY_SHARE)
    if owner_id != actor.subject_id:
        needed.append(Permission.MEMORY_ADMIN)
    return next((right.value for right in needed if not actor.has(right)), None)


Outcome = tuple[int, str | None]
"""``(200, None)`` for success, else the HTTP status and ``details.required_scope`` (if any)."""
ALLOWED: Outcome = (200, None)


def _expected(actor: Actor, action: Action, note: NoteModel | None, scope: str) -> Outcome:
    if not actor.has(Permission.MEMORY_WRITE):
        return 403, Permission.MEMORY_WRITE.value
    if action.kind in CREATES:
        missing = _missing_right(actor, actor.subject_id, [scope])
        return ALLOWED if missing is None else (403, missing)
    if note is None or not _sees(actor, note):
        return 404, None
    if action.kind in NEED_READABLE and note.status != "active":
        return 404, None
    touched = [note.scope, scope] if action.kind == "rescope" else [note.scope]
    missing = _missing_right(actor, note.owner_id, touched)
    if missing is not None:
        return 403, missing
    if action.kind == "pin" and note.superseded:
        return 400, None
    if action.kind == "restore" and note.status == "redacted":
        return 400, None
    return ALLOWED


# -- running the writes -------------------------------------------------------------------------


class Run:
    def __init__(self) -> None:
        self.world = MemoryWorld()
        self.notes: list[NoteModel] = []
        self.written = 0

    def content(self) -> str:
        """A new text each time, so no write is ever a duplicate of another."""
        self.written += 1
        return f"The {WORD} memo number {self.written} for the governance run."

    def seed(self, plan: SeedPlan) -> None:
        team = plan.team_id if plan.scope == "team" else None
        owner = caller(
            plan.owner_id, Permission.PLATFORM_ADMIN, tenant_id=plan.tenant_id, team_ids=[plan.team_id]
        )
        arguments = RememberArguments(content=self.content(), scope=plan.scope, team_id=team, pin=plan.pinned)
        note = self.world.pins.remember(owner, arguments).response.note
        self.notes.append(
            NoteModel(note.note_id, plan.tenant_id, plan.owner_id, plan.scope, team, pinned=plan.pinned)
        )

    def apply(self, actor: Actor, action: Action) -> None:
        """Run ``action``, compare its outcome with the matrix, and follow it in the model (or check
        that a refused write changed nothing)."""
        note = self.notes[action.note % len(self.notes)] if self.notes else None
        scope = action.scope
        if scope == "team" and not actor.team_ids:
            scope = "tenant"  # a team note needs one of the writer's teams (else a 400 of its own)
        team = sorted(actor.team_ids)[action.team % len(actor.team_ids)] if scope == "team" else None
        expected = _expected(actor, action, note, scope)
        before = self.snapshot()

        outcome, created = _outcome(lambda: self._call(actor.principal(), action, note, scope, team))

        assert outcome == expected, (action, note, actor)
        whose = "new" if action.kind in CREATES else "own"
        if whose == "own" and note is not None and note.owner_id != actor.subject_id:
            whose = "others'"
        event(f"{action.kind} ({whose}): {outcome[0]} {outcome[1] or ''}".rstrip())
        if outcome != ALLOWED:
            assert self.snapshot() == before
            return
        self._follow(actor, action, note, scope, team, created)

    def _call(
        self, principal: Principal, action: Action, note: NoteModel | None, scope: str, team: str | None
    ) -> str | None:
        """Run one write; the id of a note it created, if any."""
        world, kind = self.world, action.kind
        if kind in CREATES or kind == "supersede":
            arguments = RememberArguments(
                content=self.content(),
                scope="private" if kind == "supersede" else scope,
                team_id=None if kind == "supersede" else team,
                pin=kind == "create_pinned",
                supersedes=[note.note_id if note is not None else ABSENT_NOTE] if kind == "supersede" else [],
            )
            return world.pins.remember(principal, arguments).response.note.note_id
        note_id = note.note_id if note is not None else ABSENT_NOTE
        if kind in ("update", "rescope"):
            changes: dict[str, Any] = {"scope": scope, "team_id": team} if kind == "rescope" else {}
            world.pins.remember(
                principal, RememberArguments(content=self.content(), memory_id=note_id, **changes)
            )
        elif kind == "pin":
            world.pins.pin(principal, PinMemoryArguments(note_id=note_id))
        elif kind == "unpin":
            world.pins.unpin(principal, UnpinMemoryArguments(note_id=note_id))
        elif kind == "restore":
            world.notes.restore(principal, note_id)
        else:
            mode = kind.removeprefix("forget_")
            world.notes.forget(principal, ForgetMemoryArguments(note_id=note_id, mode=mode))  # type: ignore[arg-type]
        return None

    def _follow(
        self,
        actor: Actor,
        action: Action,
        note: NoteModel | None,
        scope: str,
        team: str | None,
        created: str | None,
    ) -> None:
        kind = action.kind
        if created is not None:
            new_scope = "private" if kind == "supersede" else scope
            new_team = None if kind == "supersede" else team
            self.notes.append(
                NoteModel(
                    created,
                    actor.tenant_id,
                    actor.subject_id,
                    new_scope,
                    new_team,
                    pinned=kind == "create_pinned",
                )
            )
        if note is None:
            return
        if kind == "supersede":
            note.superseded = True
        elif kind == "rescope":
            note.scope = scope
            note.team_id = team if scope == "team" else note.team_id
        elif kind == "pin":
            note.pinned = True
        elif kind == "unpin":
            note.pinned = False
        elif kind == "restore":
            note.status = "active"
        elif kind.startswith("forget_"):
            mode = kind.removeprefix("forget_")
            note.status = {"soft": "soft", "redact": "redacted", "hard": "deleted"}[mode]
            note.pinned = note.pinned and mode == "soft"

    def snapshot(self) -> dict[str, object]:
        """Everything a write may change, per note: its stored version and fields, and its pin."""
        state: dict[str, object] = {"count": len(self.world.store._notes)}
        for note in self.notes:
            stored = self.world.store.get_note(note.tenant_id, note.note_id)
            pin = self.world.store.get_pin(note.tenant_id, note.note_id)
            state[note.note_id] = (
                None if stored is None else stored.model_dump(exclude={"indexed_version"}),
                None if pin is None else pin.pin_id,
            )
        return state

    def sync(self) -> None:
        """Index every note as the stream would (a deleted note's removal wins over any version)."""
        for note in self.notes:
            self.world.indexing.sync_note(note.tenant_id, note.note_id, last_known_version=LAST_VERSION)


def _outcome(call: Callable[[], str | None]) -> tuple[Outcome, str | None]:
    try:
        created = call()
    except KnowledgeError as error:
        status, body = error_envelope(error)
        required = body.error.details.get("required_scope")
        return (status, required if isinstance(required, str) else None), None
    return ALLOWED, created


# -- what every reader gets -----------------------------------------------------------------------


def _check_reads(run: Run, actor: Actor) -> None:
    """Search, recall (with and without a query) and the pin list hold only notes the actor may
    see, and every current one it may see (search) or every visible pin (pack, pin list); each
    pack item and block names the note's owner."""
    if not actor.has(Permission.MEMORY_READ):
        return
    principal = actor.principal()
    world = run.world
    models = {note.note_id: note for note in run.notes}
    visible = {note.note_id for note in run.notes if _sees(actor, note) and note.current}
    pins = {note_id for note_id in visible if models[note_id].pinned}

    found = world.search_service.search_memory(
        principal, SearchMemoryArguments(query=WORD, mode="lexical", limit=50)
    ).results
    assert {result.note_id for result in found} == visible
    assert all(result.owner_id == models[result.note_id].owner_id for result in found)

    for query in (None, WORD):
        pack = world.recall_service.recall_context(
            principal, RecallContextArguments(query=query, max_items=50, max_tokens=8_000)
        )
        considered = [item.note_id for item in pack.items] + [drop.note_id for drop in pack.coverage.dropped]
        assert set(considered) <= visible
        assert pins <= set(considered)
        assert {item.note_id for item in pack.items if item.pinned} <= pins
        headers = [line for line in pack.text.split("\n") if line.startswith("## ")]
        for item, header in zip(pack.items, headers, strict=True):
            owner = models[item.note_id].owner_id
            assert (item.owner_id, item.own) == (owner, owner == actor.subject_id)
            whose = "own" if owner == actor.subject_id else f"shared by {owner}"
            assert f" · {whose} · " in header

    listed = world.pins.list_pins(principal, limit=100, next_token=None).pins
    assert {pin.note_id for pin in listed} == pins


@settings(
    max_examples=budget(60, 2_000),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(run_plan=runs())
def test_memory_governance_each_write_succeeds_iff_the_matrix_allows_it_and_reads_stay_visible(
    run_plan: tuple[list[Actor], list[SeedPlan], list[Action]],
) -> None:
    actors, seeds, planned = run_plan
    run = Run()
    for seed in seeds:
        run.seed(seed)

    for action in planned:
        run.apply(actors[action.actor], action)

    run.sync()
    for actor in actors:
        _check_reads(run, actor)
