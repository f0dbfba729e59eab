"""Minting never widens reach, as a property over random small worlds and random lineages.

A world holds bases (with published and draft items) and notes (some pinned) of every scope in two
tenants. Root tokens get a random tenant, subject, teams, scopes (every scope this release knows),
base allow-list and expiry; then random ``POST /v1/tokens`` requests are sent by random valid
tokens, the tokens they mint included, so lineages grow several deep. For every request:

- it is refused exactly when the rule of docs/write-api.md (restated in ``_refused_part``, so the
  service is checked against the documented rule, not against itself) calls it wider than its
  issuer, and the refusal is a 403 whose ``details`` name that part;
- a minted token reaches, measured through the services, only what its issuer reaches: which items
  it reads (by id, ranked, through the write API), writes and adds to, which bases it manages and
  lists, which notes it reads (by id, versions, search, recall, pins), changes and forgets
  (``reach``); which tokens it may revoke; which tokens it may mint; and it expires no later.

An issuer's reach counts what it may reach by minting: a tenant administrator (``knowledge:admin``
and no allow-list; ``platform:admin``: of every tenant) speaks for every principal of its tenant,
so its reach is what its scopes reach for any subject and every team there (``bound``). Any other
issuer's reach is what it reaches itself.

``make test`` runs a fast budget; ``make fuzz`` a long one (``tests/support/fuzzing.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from knowledge.adapters.embedded.notes import EmbeddedNoteIndex
from knowledge.adapters.embedded.passages import EmbeddedIndex
from knowledge.adapters.in_process.store import InProcessKnowledgeStore
from knowledge.adapters.runtime_switch import StaticRuntimeSwitch
from knowledge.api.error_envelopes import error_envelope
from knowledge.contract.memory import (
    ForgetMemoryArguments,
    PinMemoryArguments,
    RecallContextArguments,
    RememberArguments,
    SearchMemoryArguments,
)
from knowledge.contract.search import KnowledgeSearchResponse, SearchKnowledgeArguments
from knowledge.contract.writes import CreateTokenRequest, TokenResponse
from knowledge.domain.access.bearer_tokens import TokenRejection
from knowledge.domain.memory.context_pack import count_cl100k
from knowledge.domain.models import KnowledgeBase, Permission, Principal, Scope, Source
from knowledge.domain.retrieval.chunking import Chunker
from knowledge.errors import InsufficientScopeError, KnowledgeError
from knowledge.services.curation import CurationService
from knowledge.services.indexing import IndexingService
from knowledge.services.memory_search import MemorySearchService
from knowledge.services.note_indexing import NoteIndexingService
from knowledge.services.notes import NoteService
from knowledge.services.pins import PinService
from knowledge.services.recall import RecallService
from knowledge.services.search import SearchService
from knowledge.services.token_admin import TokenAdministration
from knowledge.services.tokens import TokenService
from tests.support.embedding import HashingEmbedder
from tests.support.fuzzing import budget
from tests.unit.services.memory_world import ManualClock

TENANTS = ("acme", "globex")
SUBJECTS = ("ana", "ben", "dave")
TEAMS = ("red", "blue")
STRANGER = "zed"
"""A subject that owns nothing."""
STRANGER_TEAM = "green"
"""A team nothing belongs to."""
ALL_TEAMS = frozenset({*TEAMS, STRANGER_TEAM})
SCOPES = tuple(Permission)
WORD = "zephyr"
"""In every item and note, so one lexical query finds everything a caller may see."""
DAY = 86_400
Reach = frozenset[tuple[str, str]]
"""``(what, id)`` pairs: ``("read", item id)``, ``("forget", note id)``, ..."""


# -- plans --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BasePlan:
    tenant_id: str
    owner_id: str
    scope: Scope
    team_id: str | None
    published: tuple[bool, ...]
    """One item per entry: published, or a draft."""


@dataclass(frozen=True)
class NotePlan:
    tenant_id: str
    owner_id: str
    scope: Scope
    team_id: str
    """The team of a ``team`` note (ignored for the other scopes)."""
    pinned: bool


@dataclass(frozen=True)
class RootPlan:
    tenant_id: str
    subject_id: str
    team_ids: frozenset[str]
    scopes: frozenset[Permission]
    bases: frozenset[int] | None
    """Indexes into the world's bases (an allow-list); ``None``: no allow-list."""
    lifetime: int | None
    """Seconds until it expires; ``None``: never."""


@dataclass(frozen=True)
class WorldPlan:
    bases: tuple[BasePlan, ...]
    notes: tuple[NotePlan, ...]
    roots: tuple[RootPlan, ...]


scope_sets = st.frozensets(st.sampled_from(SCOPES), min_size=1)
lifetimes = st.one_of(st.none(), st.integers(min_value=60, max_value=30 * DAY))
base_plans = st.builds(
    BasePlan,
    tenant_id=st.sampled_from(TENANTS),
    owner_id=st.sampled_from(SUBJECTS),
    scope=st.sampled_from(list(Scope)),
    team_id=st.sampled_from(TEAMS),
    published=st.lists(st.booleans(), min_size=1, max_size=2).map(tuple),
)
note_plans = st.builds(
    NotePlan,
    tenant_id=st.sampled_from(TENANTS),
    owner_id=st.sampled_from(SUBJECTS),
    scope=st.sampled_from(list(Scope)),
    team_id=st.sampled_from(TEAMS),
    pinned=st.booleans(),
)


@st.composite
def world_plans(draw: st.DrawFn) -> WorldPlan:
    bases = tuple(draw(st.lists(base_plans, min_size=1, max_size=5)))
    roots = tuple(
        RootPlan(
            tenant_id=(tenant := draw(st.sampled_from(TENANTS))),
            subject_id=draw(st.sampled_from(SUBJECTS)),
            team_ids=draw(st.frozensets(st.sampled_from(TEAMS))),
            # Administrators, mostly: only they mint.
            scopes=draw(scope_sets) | draw(st.sampled_from([frozenset({Permission.ADMIN}), frozenset()])),
            bases=draw(
                st.one_of(
                    st.none(),
                    st.frozensets(
                        st.sampled_from(
                            [i for i, base in enumerate(bases) if base.tenant_id == tenant] or [0]
                        ),
                        min_size=1,
                    ),
                )
            ),
            lifetime=draw(lifetimes),
        )
        for _ in range(draw(st.integers(min_value=1, max_value=3)))
    )
    return WorldPlan(bases=bases, notes=tuple(draw(st.lists(note_plans, max_size=5))), roots=roots)


def mint_requests(issuer: Principal, base_ids: list[str]) -> st.SearchStrategy[CreateTokenRequest]:
    """Requests ``issuer`` might send: within its own reach half the time, each part wider at random."""
    own_teams = sorted(issuer.team_ids)
    held = sorted(Permission(scope) for scope in issuer.scopes)
    own_bases = sorted(issuer.knowledge_base_ids or base_ids)
    return st.builds(
        CreateTokenRequest,
        tenant_id=st.one_of(st.none(), st.none(), st.sampled_from(TENANTS)),
        subject_id=st.sampled_from((issuer.subject_id, *SUBJECTS, STRANGER)),
        team_ids=st.one_of(
            st.frozensets(st.sampled_from(own_teams)) if own_teams else st.just(frozenset[str]()),
            st.frozensets(st.sampled_from(sorted(ALL_TEAMS))),
        ).map(sorted),
        scopes=st.one_of(st.frozensets(st.sampled_from(held), min_size=1), scope_sets).map(sorted),
        knowledge_base_ids=st.one_of(
            st.none(),
            st.frozensets(st.sampled_from(own_bases), min_size=1).map(sorted),
            st.frozensets(st.sampled_from(base_ids), min_size=1).map(sorted),
        ),
        expires_in=st.one_of(st.none(), st.integers(min_value=1, max_value=60 * DAY)),
    )


# -- the documented rule, restated ----------------------------------------------------------------


def _holds(principal: Principal, scope: str) -> bool:
    return scope in principal.scopes or Permission.PLATFORM_ADMIN.value in principal.scopes


def _administers(principal: Principal, tenant_id: str) -> bool:
    """A tenant administrator of ``tenant_id``: mints for any subject and teams there."""
    return (
        _holds(principal, Permission.ADMIN.value)
        and principal.knowledge_base_ids is None
        and (tenant_id == principal.tenant_id or _holds(principal, Permission.PLATFORM_ADMIN.value))
    )


def _refused_part(issuer: Principal, request: CreateTokenRequest) -> str | None:
    """The ``details`` key docs/write-api.md refuses ``request`` with, or ``None`` when it is within."""
    tenant_id = request.tenant_id or issuer.tenant_id
    if not _holds(issuer, Permission.ADMIN.value):
        return "required_scope"
    if tenant_id != issuer.tenant_id:
        if not _holds(issuer, Permission.PLATFORM_ADMIN.value):
            return "required_scope"
        if issuer.knowledge_base_ids is not None:
            return "tenant_id"
    if not all(_holds(issuer, scope.value) for scope in request.scopes):
        return "missing_scopes"
    own, asked = issuer.knowledge_base_ids, request.knowledge_base_ids
    if own is not None and asked is not None and not set(asked) <= own:
        return "knowledge_base_ids"
    if _administers(issuer, tenant_id):
        return None
    if request.subject_id != issuer.subject_id:
        return "subject_id"
    if not set(request.team_ids) <= issuer.team_ids:
        return "team_ids"
    return None


# -- the world ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class NoteFact:
    tenant_id: str
    note_id: str
    owner_id: str


def _answers(call: Callable[..., object], *args: object, **kwargs: object) -> bool:
    """True when ``call(*args, **kwargs)`` answers, False when it raises an error the service
    reports."""
    try:
        call(*args, **kwargs)
    except KnowledgeError:
        return False
    return True


class World:
    def __init__(self) -> None:
        self.clock = ManualClock()
        self.store = InProcessKnowledgeStore(clock=self.clock)
        embedder = HashingEmbedder()
        index, note_index = EmbeddedIndex(), EmbeddedNoteIndex()
        index.ensure_ready(model_id=embedder.model_id, dimension=embedder.dimension)
        note_index.ensure_ready(model_id=embedder.model_id, dimension=embedder.dimension)
        switch = StaticRuntimeSwitch(True)
        self.indexing = IndexingService(self.store, index, embedder, Chunker(max_tokens=64, overlap_tokens=8))
        self.note_indexing = NoteIndexingService(self.store, note_index, embedder)
        self.search = SearchService(self.store, index, embedder, switch)
        self.curation = CurationService(self.store, self.indexing, switch, max_content_chars=10_000)
        self.notes = NoteService(self.store, embedder.forget, switch, self.clock)
        self.memory = MemorySearchService(self.store, note_index, embedder, switch, self.clock)
        self.pins = PinService(self.store, self.notes, self.clock)
        self.recall = RecallService(
            self.store, note_index, embedder, self.notes, self.pins, self.memory, count_cl100k, self.clock
        )
        self.tokens = TokenService(self.store, clock=self.clock)
        self.token_admin = TokenAdministration(self.store, self.tokens)
        self.bases: list[KnowledgeBase] = []
        self.item_ids: list[str] = []
        self.note_facts: list[NoteFact] = []
        self._reach: dict[Principal, Reach] = {}

    def build(self, plan: WorldPlan) -> list[Principal]:
        """The world of ``plan``, indexed; answers the roots' principals."""
        for position, base_plan in enumerate(plan.bases):
            base = self.store.create_base(
                base_plan.tenant_id,
                name=f"Base {position}",
                owner_id=base_plan.owner_id,
                scope=base_plan.scope,
                team_id=base_plan.team_id if base_plan.scope is Scope.TEAM else None,
            )
            self.bases.append(base)
            for number, published in enumerate(base_plan.published):
                item, _ = self.store.create_item(
                    base.tenant_id,
                    base.knowledge_base_id,
                    title=f"Item {position}.{number}",
                    content=f"The {WORD} plan {position}.{number}.",
                    source=Source(),
                    external_id=None,
                    publish=published,
                )
                self.indexing.sync_item(
                    base.tenant_id, item.knowledge_item_id, last_known_version=item.version
                )
                self.item_ids.append(item.knowledge_item_id)
        for position, note_plan in enumerate(plan.notes):
            self._remember(position, note_plan)
        return [self._root(root) for root in plan.roots]

    def _remember(self, position: int, plan: NotePlan) -> None:
        team_id = plan.team_id if plan.scope is Scope.TEAM else None
        author = _operator(plan.tenant_id, plan.owner_id)
        arguments = RememberArguments(
            content=f"The {WORD} memo {position}.", scope=plan.scope.value, team_id=team_id
        )
        note = self.notes.remember(author, arguments).response.note
        if plan.pinned:
            self.pins.pin(author, PinMemoryArguments(note_id=note.note_id))
        self.note_indexing.sync_note(plan.tenant_id, note.note_id, last_known_version=note.version)
        self.note_facts.append(NoteFact(plan.tenant_id, note.note_id, plan.owner_id))

    def _root(self, plan: RootPlan) -> Principal:
        token, _ = self.tokens.issue(
            tenant_id=plan.tenant_id,
            subject_id=plan.subject_id,
            scopes=[scope.value for scope in plan.scopes],
            team_ids=plan.team_ids,
            knowledge_base_ids=None
            if plan.bases is None
            else [self.bases[i % len(self.bases)].knowledge_base_id for i in plan.bases],
            expires_in=None if plan.lifetime is None else timedelta(seconds=plan.lifetime),
        )
        return self.principal_of(token)

    def principal_of(self, token: str) -> Principal:
        """The caller ``Bearer token`` authenticates as (on the world's clock, which stands still)."""
        outcome = self.tokens.authenticate(f"Bearer {token}")
        assert not isinstance(outcome, TokenRejection), outcome
        return outcome.principal()

    # -- what a principal reaches, through the services ---------------------------------------------

    def reach(self, principal: Principal) -> Reach:
        if principal not in self._reach:
            self._reach[principal] = frozenset(
                self._knowledge_reach(principal) | self._memory_reach(principal)
            )
        return self._reach[principal]

    def bound(self, issuer: Principal) -> Reach:
        """What ``issuer`` reaches, itself or through any principal it may speak for."""
        reached = set(self.reach(issuer))
        for tenant_id in TENANTS:
            if _administers(issuer, tenant_id):
                for subject_id in {*SUBJECTS, issuer.subject_id}:
                    stand_in = Principal(
                        tenant_id=tenant_id, subject_id=subject_id, team_ids=ALL_TEAMS, scopes=issuer.scopes
                    )
                    reached |= self.reach(stand_in)
        return frozenset(reached)

    def _knowledge_reach(self, principal: Principal) -> set[tuple[str, str]]:
        reached: set[tuple[str, str]] = set()
        for item_id in self.item_ids:
            by_id = SearchKnowledgeArguments(knowledge_item_id=item_id)
            if _answers(self.search.search_knowledge, principal, by_id):
                reached.add(("read", item_id))
            if _answers(self.curation.get_item, principal, item_id):
                reached.add(("get", item_id))
            if _answers(self.curation.authorize_item_write, principal, item_id):
                reached.add(("write", item_id))
        for base in self.bases:
            if _answers(self.curation.authorize_base_management, principal, base.knowledge_base_id):
                reached.add(("manage", base.knowledge_base_id))
            if _answers(self.curation.authorize_item_creation, principal, base.knowledge_base_id):
                reached.add(("add", base.knowledge_base_id))
        if principal.has_scope(Permission.READ):
            listed = self.curation.list_bases(principal, limit=100, next_token=None).knowledge_bases
            reached |= {("list", base.knowledge_base_id) for base in listed}
            ranked = self.search.search_knowledge(
                principal, SearchKnowledgeArguments(query=WORD, mode="lexical", max_results=50)
            )
            assert isinstance(ranked, KnowledgeSearchResponse)
            reached |= {("search", hit.knowledge_item_id) for hit in ranked.results}
        return reached

    def _memory_reach(self, principal: Principal) -> set[tuple[str, str]]:
        reached: set[tuple[str, str]] = set()
        for fact in self.note_facts:
            note_id = fact.note_id
            if _answers(self.notes.get_note, principal, note_id):
                reached.add(("read-note", note_id))
            if _answers(self.notes.list_versions, principal, note_id, limit=None, next_token=None):
                reached.add(("note-versions", note_id))
            if _answers(self.notes.restore, principal, note_id):  # an active note: "unchanged"
                reached.add(("change-note", note_id))
            if _answers(self.notes.forget, principal, ForgetMemoryArguments(note_id=note_id, mode="soft")):
                reached.add(("forget-note", note_id))
                restored = self.notes.restore(_operator(fact.tenant_id, fact.owner_id), note_id).note
                self.note_indexing.sync_note(fact.tenant_id, note_id, last_known_version=restored.version)
        if principal.has_scope(Permission.MEMORY_READ):
            found = self.memory.search_memory(
                principal, SearchMemoryArguments(query=WORD, mode="lexical", limit=50)
            )
            reached |= {("search-note", hit.note_id) for hit in found.results}
            for query in (None, WORD):
                pack = self.recall.recall_context(
                    principal, RecallContextArguments(query=query, max_items=50, max_tokens=8_000)
                )
                reached |= {("recall-note", entry.note_id) for entry in (*pack.items, *pack.coverage.dropped)}
            pins = self.pins.list_pins(principal, limit=100, next_token=None).pins
            reached |= {("pinned-note", pin.note_id) for pin in pins}
        return reached

    def revocable(self, principal: Principal) -> frozenset[str]:
        """The ids of every token ``principal`` may revoke, in any tenant."""
        found: set[str] = set()
        for tenant_id in TENANTS:
            try:
                listed = self.token_admin.list_tokens(
                    principal, tenant_id=tenant_id, limit=100, next_token=None
                )
            except InsufficientScopeError:
                continue
            found |= {entry.token_id for entry in listed.tokens}
        return frozenset(found)


def _operator(tenant_id: str, subject_id: str) -> Principal:
    """``subject_id`` with every right (``platform:admin``) and every team: builds and restores."""
    return Principal(
        tenant_id=tenant_id,
        subject_id=subject_id,
        team_ids=ALL_TEAMS,
        scopes=frozenset({Permission.PLATFORM_ADMIN.value}),
    )


# -- the property ---------------------------------------------------------------------------------


def _mint(
    world: World, issuer: Principal, request: CreateTokenRequest
) -> TokenResponse | InsufficientScopeError:
    try:
        return world.token_admin.issue(issuer, request)
    except InsufficientScopeError as error:
        return error


def _check_refusal(issuer: Principal, request: CreateTokenRequest, refusal: InsufficientScopeError) -> None:
    part = _refused_part(issuer, request)
    assert part is not None, f"refused although within: {refusal.details}"
    assert set(refusal.details) == {part}
    assert error_envelope(refusal)[0] == 403


def _check_child(
    world: World, issuer: Principal, request: CreateTokenRequest, minted: TokenResponse
) -> Principal:
    assert _refused_part(issuer, request) is None
    child = world.principal_of(minted.token)
    tenant_id = request.tenant_id or issuer.tenant_id
    asked_bases = request.knowledge_base_ids or issuer.knowledge_base_ids
    assert (child.tenant_id, child.subject_id, child.team_ids) == (
        tenant_id,
        request.subject_id,
        frozenset(request.team_ids),
    )
    assert child.scopes == {scope.value for scope in request.scopes}
    assert child.knowledge_base_ids == (None if asked_bases is None else frozenset(asked_bases))
    if issuer.expires_at is not None:
        assert child.expires_at is not None
        assert child.expires_at <= issuer.expires_at
    reach, bound = world.reach(child), world.bound(issuer)
    assert reach <= bound, sorted(reach - bound)
    assert world.revocable(child) <= world.revocable(issuer)
    return child


def _check_mint_reach(
    world: World, child: Principal, issuer: Principal, candidates: list[CreateTokenRequest]
) -> None:
    """Every token the child may mint, its issuer may mint too, holding the same."""
    for candidate in candidates:
        try:
            grant = world.token_admin.authorize_issue(child, candidate)
        except InsufficientScopeError:
            continue
        same = CreateTokenRequest(
            tenant_id=grant.tenant_id,
            subject_id=grant.subject_id,
            team_ids=sorted(grant.team_ids),
            scopes=sorted(Permission(scope) for scope in grant.scopes),
            knowledge_base_ids=None if grant.knowledge_base_ids is None else sorted(grant.knowledge_base_ids),
        )
        assert world.token_admin.authorize_issue(issuer, same) == grant


@settings(
    max_examples=budget(25, 2_000),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(plan=world_plans(), data=st.data())
def test_token_reach_random_lineages_minted_tokens_reach_within_their_issuers_and_only_widenings_are_refused(
    plan: WorldPlan, data: st.DataObject
) -> None:
    world = World()
    valid = world.build(plan)
    base_ids = [base.knowledge_base_id for base in world.bases]
    for _ in range(data.draw(st.integers(min_value=1, max_value=6), label="requests")):
        issuer = data.draw(st.sampled_from(valid), label="issuer")
        request = data.draw(mint_requests(issuer, base_ids), label="request")
        outcome = _mint(world, issuer, request)
        if isinstance(outcome, InsufficientScopeError):
            _check_refusal(issuer, request, outcome)
            event(f"refused: {next(iter(outcome.details))}")
            continue
        child = _check_child(world, issuer, request, outcome)
        event("minted by a tenant administrator" if _administers(issuer, child.tenant_id) else "minted")
        candidates = data.draw(st.lists(mint_requests(child, base_ids), max_size=3), label="child requests")
        _check_mint_reach(world, child, issuer, candidates)
        valid.append(child)
