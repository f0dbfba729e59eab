"""Isolation as a property: for random tenants, teams, bases, items, notes, pins and tokens (with
lineage, some revoked), every hit and every read a caller gets is one DESIGN §5's rule lets it see,
and every error about a resource it may not see is byte for byte the error about an absent one.

The rule is restated here (``_sees_base``, ``_sees_note``) rather than imported, so the services
are checked against the design, not against themselves. Callers are resolved from their bearer
tokens the way the authorizer hands them to the functions (``authorizer_context`` →
``principal_from_event``). The index is synced before bases are deactivated and items archived or
superseded, so it lags the store and the read-time truth check is exercised too.

``make test`` runs a fast budget; ``make fuzz`` a long one (``tests/support/fuzzing.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from knowledge.adapters.embedded.notes import EmbeddedNoteIndex
from knowledge.adapters.embedded.passages import EmbeddedIndex
from knowledge.adapters.in_process.store import InProcessKnowledgeStore
from knowledge.adapters.runtime_switch import StaticRuntimeSwitch
from knowledge.api.error_envelopes import error_envelope
from knowledge.api.principal import authorizer_context, principal_from_event
from knowledge.contract.memory import (
    ForgetMemoryArguments,
    PinMemoryArguments,
    RecallContextArguments,
    RememberArguments,
    SearchMemoryArguments,
)
from knowledge.contract.search import KnowledgeReadResponse, KnowledgeSearchResponse, SearchKnowledgeArguments
from knowledge.contract.writes import CreateTokenRequest
from knowledge.domain.access.bearer_tokens import TokenRejection
from knowledge.domain.memory.context_pack import count_cl100k
from knowledge.domain.models import BaseStatus, KnowledgeBase, Permission, Principal, Scope, Source
from knowledge.domain.retrieval.chunking import Chunker
from knowledge.errors import KnowledgeError
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
from tests.unit.services.conftest import caller
from tests.unit.services.memory_world import ManualClock

TENANTS = ("acme", "globex")
SUBJECTS = ("ana", "ben", "cho")
TEAMS = ("red", "blue")
ABSENT_BASE = "kb_01M8MSRAQ70QQ1SJHWP0AMCDPZ"
ABSENT_ITEM = "ki_01M8MSRAQ70QQ1SJHWP0AMCDPZ"
ABSENT_REVISION = "kr_01M8MSRAQ70QQ1SJHWP0AMCDPZ"
ABSENT_NOTE = "nt_01M8MSRAQ70QQ1SJHWP0AMCDPZ"
WORD = "zephyr"
"""In every item and note, so one lexical query finds everything a caller may see."""
READ_SCOPES = (Permission.READ, Permission.MEMORY_READ)
ITEM_STATES = ("published", "draft", "archived", "superseded")
"""``superseded``: published, then a second revision published over it."""


# -- the plan of one world ------------------------------------------------------------------------


@dataclass(frozen=True)
class ItemPlan:
    state: str


@dataclass(frozen=True)
class BasePlan:
    tenant_id: str
    owner_id: str
    scope: Scope
    team_id: str | None
    active: bool
    items: tuple[ItemPlan, ...]


@dataclass(frozen=True)
class NotePlan:
    tenant_id: str
    owner_id: str
    scope: Scope
    team_id: str | None
    forgotten: bool
    pinned: bool


@dataclass(frozen=True)
class TokenPlan:
    parent: int | None
    """Index of an earlier token that mints this one; ``None``: a root token."""
    tenant_id: str
    subject_id: str
    team_ids: frozenset[str]
    scopes: frozenset[Permission]
    allowed_bases: frozenset[int] | None
    """Indexes into the world's bases (an allow-list); ``None``: no allow-list."""
    revoked: bool


@dataclass(frozen=True)
class WorldPlan:
    bases: tuple[BasePlan, ...]
    notes: tuple[NotePlan, ...]
    tokens: tuple[TokenPlan, ...]


scopes_st = st.sampled_from(list(Scope))
team_st = st.one_of(st.none(), st.sampled_from(TEAMS))
base_st = st.builds(
    BasePlan,
    tenant_id=st.sampled_from(TENANTS),
    owner_id=st.sampled_from(SUBJECTS),
    scope=scopes_st,
    team_id=team_st,
    active=st.booleans(),
    items=st.lists(st.builds(ItemPlan, state=st.sampled_from(ITEM_STATES)), max_size=3).map(tuple),
)
note_st = st.builds(
    NotePlan,
    tenant_id=st.sampled_from(TENANTS),
    owner_id=st.sampled_from(SUBJECTS),
    scope=scopes_st,
    team_id=team_st,
    forgotten=st.booleans(),
    pinned=st.booleans(),
)


@st.composite
def world_plans(draw: st.DrawFn) -> WorldPlan:
    bases = tuple(draw(st.lists(base_st, min_size=1, max_size=5)))
    notes = tuple(draw(st.lists(note_st, max_size=5)))
    tokens: list[TokenPlan] = []
    for position in range(draw(st.integers(min_value=1, max_value=6))):
        parent = draw(st.one_of(st.none(), st.integers(0, position - 1))) if position else None
        tenant = tokens[parent].tenant_id if parent is not None else draw(st.sampled_from(TENANTS))
        own = [index for index, base in enumerate(bases) if base.tenant_id == tenant]
        allowed = draw(st.one_of(st.none(), st.frozensets(st.sampled_from(own), min_size=1))) if own else None
        tokens.append(
            TokenPlan(
                parent=parent,
                tenant_id=tenant,
                subject_id=draw(st.sampled_from(SUBJECTS)),
                team_ids=draw(st.frozensets(st.sampled_from(TEAMS))),
                scopes=draw(st.frozensets(st.sampled_from(READ_SCOPES))),
                allowed_bases=allowed,
                revoked=draw(st.booleans()),
            )
        )
    return WorldPlan(bases=bases, notes=notes, tokens=tuple(tokens))


# -- the world built from a plan ------------------------------------------------------------------


@dataclass
class Item:
    tenant_id: str
    knowledge_item_id: str
    base: KnowledgeBase
    state: str
    revisions: dict[str, bool] = field(default_factory=dict)
    """Each revision id, and whether it is published (readable by id)."""
    current_revision_id: str | None = None
    indexed_revision_id: str | None = None
    """The revision the index holds (it lags: a later revision or archive is not synced)."""


@dataclass
class NoteFact:
    tenant_id: str
    note_id: str
    plan: NotePlan


@dataclass
class Caller:
    """One planned token: its bearer string, whether it should authenticate, and who it is."""

    token: str | None
    expected_valid: bool
    principal: Principal | None = None


class World:
    def __init__(self) -> None:
        self.clock = ManualClock()
        self.store = InProcessKnowledgeStore(clock=self.clock)
        self.embedder = HashingEmbedder()
        self.index = EmbeddedIndex()
        self.index.ensure_ready(model_id=self.embedder.model_id, dimension=self.embedder.dimension)
        self.note_index = EmbeddedNoteIndex()
        self.note_index.ensure_ready(model_id=self.embedder.model_id, dimension=self.embedder.dimension)
        switch = StaticRuntimeSwitch(True)
        self.indexing = IndexingService(
            self.store, self.index, self.embedder, Chunker(max_tokens=64, overlap_tokens=8)
        )
        self.note_indexing = NoteIndexingService(self.store, self.note_index, self.embedder)
        self.search = SearchService(self.store, self.index, self.embedder, switch)
        self.notes = NoteService(self.store, self.embedder.forget, switch, self.clock)
        self.memory = MemorySearchService(self.store, self.note_index, self.embedder, switch, self.clock)
        self.pins = PinService(self.store, self.notes, self.clock)
        self.recall = RecallService(
            self.store,
            self.note_index,
            self.embedder,
            self.notes,
            self.pins,
            self.memory,
            count_cl100k,
            self.clock,
        )
        self.tokens = TokenService(self.store, clock=self.clock)
        self.token_admin = TokenAdministration(self.store, self.tokens)
        self.bases: list[KnowledgeBase] = []
        self.items: list[Item] = []
        self.note_facts: list[NoteFact] = []
        self.callers: list[Caller] = []

    # -- knowledge ---------------------------------------------------------------------------------

    def build_bases(self, plans: tuple[BasePlan, ...]) -> None:
        for position, plan in enumerate(plans):
            base = self.store.create_base(
                plan.tenant_id,
                name=f"Base {position}",
                owner_id=plan.owner_id,
                scope=plan.scope,
                team_id=plan.team_id,
            )
            self.bases.append(base)
            for number, item_plan in enumerate(plan.items):
                self._build_item(base, item_plan, f"b{position}i{number}")
        for item in self.items:
            stored = self.store.get_item(item.tenant_id, item.knowledge_item_id)
            assert stored is not None
            self.indexing.sync_item(item.tenant_id, item.knowledge_item_id, last_known_version=stored.version)
            item.indexed_revision_id = stored.current_revision_id
        # After indexing, so the index still holds what the store no longer publishes.
        for item in self.items:
            self._age(item)
        for position, plan in enumerate(plans):
            if not plan.active:
                base = self.bases[position]
                self.bases[position] = self.store.update_base(
                    base.tenant_id,
                    base.knowledge_base_id,
                    expected_version=base.version,
                    status=BaseStatus.INACTIVE,
                )
        for item in self.items:
            item.base = next(
                base for base in self.bases if base.knowledge_base_id == item.base.knowledge_base_id
            )

    def _build_item(self, base: KnowledgeBase, plan: ItemPlan, tag: str) -> None:
        stored, revision = self.store.create_item(
            base.tenant_id,
            base.knowledge_base_id,
            title=f"Item {tag}",
            content=f"The {WORD} plan {tag} covers topic {tag}.",
            source=Source(),
            external_id=None,
            publish=plan.state != "draft",
        )
        item = Item(base.tenant_id, stored.knowledge_item_id, base, plan.state)
        item.revisions[revision.knowledge_revision_id] = plan.state != "draft"
        item.current_revision_id = stored.current_revision_id
        self.items.append(item)

    def _age(self, item: Item) -> None:
        stored = self.store.get_item(item.tenant_id, item.knowledge_item_id)
        assert stored is not None
        if item.state == "archived":
            self.store.archive_item(item.tenant_id, item.knowledge_item_id, expected_version=stored.version)
        elif item.state == "superseded":
            newer, revision = self.store.add_revision(
                item.tenant_id,
                item.knowledge_item_id,
                content=f"The {WORD} plan, second edition, for {item.knowledge_item_id}.",
                title=None,
                source=None,
                publish=True,
                expected_version=stored.version,
            )
            item.revisions[revision.knowledge_revision_id] = True
            item.current_revision_id = newer.current_revision_id

    # -- memory ------------------------------------------------------------------------------------

    def build_notes(self, plans: tuple[NotePlan, ...]) -> None:
        for position, plan in enumerate(plans):
            team_id = _note_team(plan)
            author = caller(
                plan.owner_id,
                Permission.MEMORY_READ,
                Permission.MEMORY_WRITE,
                Permission.MEMORY_SHARE,
                tenant_id=plan.tenant_id,
                team_ids=[team_id] if team_id else [],
            )
            arguments = RememberArguments(
                content=f"The {WORD} memo {position} about subject {position}.",
                scope=plan.scope.value,
                team_id=team_id,
            )
            note = self.notes.remember(author, arguments).response.note
            if plan.pinned:
                self.pins.pin(author, PinMemoryArguments(note_id=note.note_id))
            self.note_indexing.sync_note(plan.tenant_id, note.note_id, last_known_version=note.version)
            if plan.forgotten:
                self.notes.forget(author, ForgetMemoryArguments(note_id=note.note_id, mode="soft"))
            self.note_facts.append(NoteFact(plan.tenant_id, note.note_id, plan))

    # -- tokens ------------------------------------------------------------------------------------

    def build_tokens(self, plans: tuple[TokenPlan, ...]) -> None:
        issued: list[tuple[str | None, str | None]] = []  # (token, token id) per plan
        for plan in plans:
            allow = (
                None
                if plan.allowed_bases is None
                else [self.bases[i].knowledge_base_id for i in plan.allowed_bases]
            )
            scopes = sorted(scope.value for scope in {*plan.scopes, Permission.ADMIN})
            if plan.parent is None:
                token, record = self.tokens.issue(
                    tenant_id=plan.tenant_id,
                    subject_id=plan.subject_id,
                    scopes=scopes,
                    team_ids=plan.team_ids,
                    knowledge_base_ids=allow,
                )
                issued.append((token, record.token_hash))
                continue
            parent_token = issued[plan.parent][0]
            parent = self.principal_of(parent_token) if parent_token is not None else None
            if parent is None:
                issued.append((None, None))
                continue
            subject_id, team_ids = plan.subject_id, plan.team_ids
            if parent.knowledge_base_ids is not None:
                # An allow-listed issuer mints only for itself (docs/write-api.md, tokens).
                allow = sorted(parent.knowledge_base_ids & set(allow or parent.knowledge_base_ids))
                subject_id, team_ids = parent.subject_id, team_ids & parent.team_ids
            held = sorted(scope for scope in scopes if parent.has_scope(Permission(scope)))
            minted = self.token_admin.issue(
                parent,
                CreateTokenRequest(
                    subject_id=subject_id,
                    team_ids=sorted(team_ids),
                    scopes=held,
                    knowledge_base_ids=allow or None,
                ),
            )
            issued.append((minted.token, minted.token_id))
        operator = caller("operator", Permission.PLATFORM_ADMIN)
        for plan, (_, token_id) in zip(plans, issued, strict=True):
            if plan.revoked and token_id is not None:
                self.token_admin.revoke(operator, token_id)
        for position, (token, _) in enumerate(issued):
            lineage_revoked = any(plans[index].revoked for index in _lineage(plans, position))
            caller_ = Caller(token=token, expected_valid=token is not None and not lineage_revoked)
            if token is not None:
                caller_.principal = self.principal_of(token)
            self.callers.append(caller_)

    def principal_of(self, token: str) -> Principal | None:
        """The caller a function sees for ``Bearer token``, as the authorizer resolves it."""
        outcome = self.tokens.authenticate(f"Bearer {token}")
        if isinstance(outcome, TokenRejection):
            return None
        event = {"requestContext": {"authorizer": {"lambda": authorizer_context(outcome)}}}
        return principal_from_event(event)


def _lineage(plans: tuple[TokenPlan, ...], position: int) -> list[int]:
    """``position`` and every token above it."""
    chain = [position]
    while (parent := plans[chain[-1]].parent) is not None:
        chain.append(parent)
    return chain


# -- DESIGN §5, restated --------------------------------------------------------------------------


def _sees_base(principal: Principal, base: KnowledgeBase) -> bool:
    if base.tenant_id != principal.tenant_id or base.status is not BaseStatus.ACTIVE:
        return False
    if (
        principal.knowledge_base_ids is not None
        and base.knowledge_base_id not in principal.knowledge_base_ids
    ):
        return False
    return (
        base.owner_id == principal.subject_id
        or base.scope is Scope.TENANT
        or (base.scope is Scope.TEAM and base.team_id is not None and base.team_id in principal.team_ids)
    )


def _sees_note(principal: Principal, note: NoteFact) -> bool:
    """Visible and readable: the same rule without the allow-list, and not forgotten."""
    plan = note.plan
    team_id = _note_team(plan)
    visible = note.tenant_id == principal.tenant_id and (
        plan.owner_id == principal.subject_id
        or plan.scope is Scope.TENANT
        or (plan.scope is Scope.TEAM and team_id is not None and team_id in principal.team_ids)
    )
    return visible and not plan.forgotten


def _note_team(plan: NotePlan) -> str | None:
    """The team a note is written for: only a team-scoped note has one (a team note needs it)."""
    return (plan.team_id or TEAMS[0]) if plan.scope is Scope.TEAM else None


def _readable(principal: Principal, item: Item) -> bool:
    return _sees_base(principal, item.base) and item.state != "draft" and item.state != "archived"


def _error(call: Callable[..., object], *args: object, **kwargs: object) -> tuple[int, str] | None:
    """``None`` when ``call(*args, **kwargs)`` succeeds, else its HTTP status and JSON body, byte
    for byte."""
    try:
        call(*args, **kwargs)
    except KnowledgeError as error:
        status, body = error_envelope(error)
        return status, body.model_dump_json()
    return None


def _not_found(call: Callable[..., object], *args: object, **kwargs: object) -> tuple[int, str]:
    """The error ``call`` answers for an absent resource: a 404."""
    answer = _error(call, *args, **kwargs)
    assert answer is not None
    assert answer[0] == 404, answer
    return answer


# -- the properties -------------------------------------------------------------------------------


@dataclass
class KnowledgeCalls:
    world: World
    principal: Principal

    def query(self, knowledge_base_id: str = "") -> KnowledgeSearchResponse:
        arguments = SearchKnowledgeArguments(
            query=WORD, mode="lexical", max_results=50, knowledge_base_id=knowledge_base_id
        )
        answer = self.world.search.search_knowledge(self.principal, arguments)
        assert isinstance(answer, KnowledgeSearchResponse)
        return answer

    def read(self, item_id: str, revision_id: str = "", base_id: str = "") -> KnowledgeReadResponse:
        arguments = SearchKnowledgeArguments(
            knowledge_item_id=item_id, knowledge_revision_id=revision_id, knowledge_base_id=base_id
        )
        answer = self.world.search.search_knowledge(self.principal, arguments)
        assert isinstance(answer, KnowledgeReadResponse)
        return answer


def _check_knowledge(world: World, principal: Principal) -> None:
    calls = KnowledgeCalls(world, principal)
    if not principal.has_scope(Permission.READ):
        refused = _error(calls.read, ABSENT_ITEM)
        assert refused is not None
        assert refused[0] == 403
        for item in world.items:
            assert _error(calls.read, item.knowledge_item_id) == refused
        assert _error(calls.query) == refused
        return
    _check_ranked(world, calls)
    _check_narrowed(world, calls)
    for item in world.items:
        _check_reads(item, calls)


def _check_ranked(world: World, calls: KnowledgeCalls) -> None:
    """Only current revisions of published items the caller can see, and every one of those the
    lagging index still holds at its current revision."""
    readable = {
        (item.knowledge_item_id, item.current_revision_id)
        for item in world.items
        if _readable(calls.principal, item)
    }
    indexed = {(item.knowledge_item_id, item.indexed_revision_id) for item in world.items}
    found = {(hit.knowledge_item_id, hit.knowledge_revision_id) for hit in calls.query().results}
    assert found == readable & indexed


def _check_narrowed(world: World, calls: KnowledgeCalls) -> None:
    """Narrowed to one base: its hits, or the absent base's error for one the caller cannot see."""
    absent = _not_found(calls.query, ABSENT_BASE)
    for base in world.bases:
        if _sees_base(calls.principal, base):
            hits = calls.query(base.knowledge_base_id).results
            assert {hit.knowledge_base_id for hit in hits} <= {base.knowledge_base_id}
        else:
            assert _error(calls.query, base.knowledge_base_id) == absent


def _check_reads(item: Item, calls: KnowledgeCalls) -> None:
    """Addressed reads of the item and each of its revisions: the content when the caller may read
    it, else the absent item's error, byte for byte."""
    absent = _not_found(calls.read, ABSENT_ITEM)
    assert _error(calls.read, ABSENT_ITEM, ABSENT_REVISION) == absent
    item_id = item.knowledge_item_id
    if not _readable(calls.principal, item):
        assert _error(calls.read, item_id) == absent
        for revision_id in item.revisions:
            assert _error(calls.read, item_id, revision_id) == absent
        return
    answer = calls.read(item_id)
    assert answer.knowledge_base_id == item.base.knowledge_base_id
    assert answer.knowledge_revision_id == item.current_revision_id
    for revision_id, published in item.revisions.items():
        if published:
            assert calls.read(item_id, revision_id).knowledge_revision_id == revision_id
        else:
            assert _error(calls.read, item_id, revision_id) == absent
    assert _error(calls.read, item_id, ABSENT_REVISION) == absent
    assert _error(calls.read, item_id, base_id=ABSENT_BASE) == absent


def _check_memory(world: World, principal: Principal) -> None:
    def search() -> list[str]:
        arguments = SearchMemoryArguments(query=WORD, mode="lexical", limit=50)
        return [hit.note_id for hit in world.memory.search_memory(principal, arguments).results]

    def get(note_id: str) -> object:
        return world.notes.get_note(principal, note_id)

    def versions(note_id: str) -> object:
        return world.notes.list_versions(principal, note_id, limit=None, next_token=None)

    if not principal.has_scope(Permission.MEMORY_READ):
        refused = _error(get, ABSENT_NOTE)
        assert refused is not None
        assert refused[0] == 403
        for note in world.note_facts:
            assert _error(get, note.note_id) == refused
        assert _error(search) == refused
        return

    visible = {note.note_id for note in world.note_facts if _sees_note(principal, note)}
    assert set(search()) == visible

    for query in (None, WORD):
        pack = world.recall.recall_context(
            principal, RecallContextArguments(query=query, max_items=50, max_tokens=8_000)
        )
        assert {entry.note_id for entry in (*pack.items, *pack.coverage.dropped)} <= visible

    pins = world.pins.list_pins(principal, limit=100, next_token=None).pins
    assert {pin.note_id for pin in pins} == {
        note.note_id for note in world.note_facts if note.note_id in visible and note.plan.pinned
    }

    absent = _not_found(get, ABSENT_NOTE)
    assert _error(versions, ABSENT_NOTE) == absent
    for note in world.note_facts:
        expected = None if note.note_id in visible else absent
        assert _error(get, note.note_id) == expected
        assert _error(versions, note.note_id) == expected


def _check_tokens(world: World, principal: Principal) -> None:
    """A token administrator lists only its own tenant's tokens."""
    listed = world.token_admin.list_tokens(principal, tenant_id=None, limit=100, next_token=None)
    assert {entry.tenant_id for entry in listed.tokens} <= {principal.tenant_id}


@settings(
    max_examples=budget(100, 2_000),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(plan=world_plans())
def test_isolation_random_worlds_every_hit_and_read_is_visible_and_errors_never_reveal(
    plan: WorldPlan,
) -> None:
    world = World()
    world.build_bases(plan.bases)
    world.build_notes(plan.notes)
    world.build_tokens(plan.tokens)

    for caller_ in world.callers:
        assert (caller_.principal is not None) is caller_.expected_valid
        if caller_.principal is None:
            continue
        _check_knowledge(world, caller_.principal)
        _check_memory(world, caller_.principal)
        _check_tokens(world, caller_.principal)
