"""SearchService: ranked search over current published revisions the caller can see, re-checked
against the store (read-time truth), and addressed reads of published revisions in windows."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from knowledge.adapters.embedded.passages import EmbeddedIndex
from knowledge.adapters.in_process.store import InProcessKnowledgeStore
from knowledge.adapters.runtime_switch import StaticRuntimeSwitch
from knowledge.contract.search import KnowledgeReadResponse, KnowledgeSearchResponse, SearchKnowledgeArguments
from knowledge.domain.ids import ITEM_PREFIX, KB_PREFIX, REVISION_PREFIX, shape_of
from knowledge.domain.models import BaseStatus, KnowledgeBase, KnowledgeItem, Revision, Scope, Source
from knowledge.errors import (
    InsufficientScopeError,
    InvalidRequestError,
    ItemRequiredError,
    QueryRequiredError,
    ResourceUnavailableError,
    RuntimeDisabledError,
)
from knowledge.services.indexing import IndexingService
from knowledge.services.search import SearchService
from tests.support.embedding import HashingEmbedder
from tests.unit.services.conftest import READ, TENANT, WRITE, caller

READER = caller("agent-7", READ, team_ids=["platform"])
SECRET = "The quarterly zephyr migration plan moves billing onto the new ledger service."


@pytest.fixture
def search(store: InProcessKnowledgeStore, index: EmbeddedIndex, embedder: HashingEmbedder) -> SearchService:
    return SearchService(store, index, embedder, StaticRuntimeSwitch(True))


def _base(
    store: InProcessKnowledgeStore,
    tenant_id: str = TENANT,
    scope: Scope = Scope.TENANT,
    team_id: str | None = None,
    owner_id: str = "owner-1",
) -> KnowledgeBase:
    return store.create_base(tenant_id, name="Handbook", owner_id=owner_id, scope=scope, team_id=team_id)


def _published(
    store: InProcessKnowledgeStore, indexing: IndexingService, base: KnowledgeBase, content: str = SECRET
) -> tuple[KnowledgeItem, Revision]:
    item, revision = store.create_item(
        base.tenant_id,
        base.knowledge_base_id,
        title="Zephyr migration",
        content=content,
        source=Source(uri="https://wiki/zephyr", title="Wiki"),
        external_id=None,
        publish=True,
    )
    indexing.sync_item(base.tenant_id, item.knowledge_item_id, last_known_version=item.version)
    return item, revision


def _query(search: SearchService, principal: Any = READER, **arguments: Any) -> KnowledgeSearchResponse:
    answer = search.search_knowledge(
        principal, SearchKnowledgeArguments(query="zephyr ledger migration", **arguments)
    )
    assert isinstance(answer, KnowledgeSearchResponse)
    return answer


def _read(
    search: SearchService, item_id: str, principal: Any = READER, **arguments: Any
) -> KnowledgeReadResponse:
    answer = search.search_knowledge(
        principal, SearchKnowledgeArguments(knowledge_item_id=item_id, **arguments)
    )
    assert isinstance(answer, KnowledgeReadResponse)
    return answer


def _found(answer: KnowledgeSearchResponse) -> list[str]:
    return [result.knowledge_item_id for result in answer.results]


@pytest.mark.parametrize("mode", ["lexical", "semantic", "hybrid", "rrf"])
def test_query_finds_the_published_item_with_an_exact_excerpt(
    search: SearchService, store: InProcessKnowledgeStore, indexing: IndexingService, mode: str
) -> None:
    item, revision = _published(store, indexing, _base(store))

    answer = _query(search, mode=mode)

    assert _found(answer) == [item.knowledge_item_id]
    result = answer.results[0]
    assert result.knowledge_revision_id == revision.knowledge_revision_id
    start = result.locator.offset
    assert SECRET[start : start + result.locator.length] == result.excerpt


@pytest.mark.parametrize(
    ("scope", "team_id", "owner_id", "visible"),
    [
        (Scope.TENANT, None, "owner-1", True),
        (Scope.TEAM, "platform", "owner-1", True),
        (Scope.TEAM, "billing", "owner-1", False),
        (Scope.PRIVATE, None, "agent-7", True),
        (Scope.PRIVATE, None, "owner-1", False),
    ],
)
def test_query_and_read_follow_the_visibility_rule(
    search: SearchService,
    store: InProcessKnowledgeStore,
    indexing: IndexingService,
    scope: Scope,
    team_id: str | None,
    owner_id: str,
    visible: bool,
) -> None:
    item, _ = _published(store, indexing, _base(store, scope=scope, team_id=team_id, owner_id=owner_id))

    found = _found(_query(search))

    assert found == ([item.knowledge_item_id] if visible else [])
    if visible:
        assert _read(search, item.knowledge_item_id).content == SECRET[:4_000]
    else:
        with pytest.raises(ResourceUnavailableError):
            _read(search, item.knowledge_item_id)


def test_query_never_finds_another_tenants_content(
    search: SearchService, store: InProcessKnowledgeStore, indexing: IndexingService
) -> None:
    foreign, _ = _published(store, indexing, _base(store, tenant_id="globex"))

    assert _found(_query(search)) == []
    assert _found(_query(search, caller("agent-7", READ, tenant_id="globex"))) == [foreign.knowledge_item_id]


def test_query_drops_hits_on_revisions_that_are_no_longer_current(
    search: SearchService, store: InProcessKnowledgeStore, indexing: IndexingService
) -> None:
    item, _ = _published(store, indexing, _base(store))
    store.add_revision(
        TENANT,
        item.knowledge_item_id,
        content="Nothing to see.",
        title=None,
        source=None,
        publish=True,
        expected_version=item.version,
    )

    assert _found(_query(search)) == []


def test_query_drops_archived_items_and_inactive_bases_the_index_still_holds(
    search: SearchService, store: InProcessKnowledgeStore, indexing: IndexingService
) -> None:
    archived_item, _ = _published(store, indexing, _base(store))
    store.archive_item(TENANT, archived_item.knowledge_item_id, expected_version=archived_item.version)
    closed = _base(store)
    _published(store, indexing, closed)
    store.update_base(TENANT, closed.knowledge_base_id, expected_version=1, status=BaseStatus.INACTIVE)

    assert _found(_query(search)) == []


def test_query_narrowed_to_a_base_the_caller_cannot_see_raises_resource_unavailable(
    search: SearchService, store: InProcessKnowledgeStore
) -> None:
    hidden = _base(store, scope=Scope.PRIVATE)

    with pytest.raises(ResourceUnavailableError):
        _query(search, knowledge_base_id=hidden.knowledge_base_id)


def test_query_narrowed_to_a_visible_base_keeps_only_its_items(
    search: SearchService, store: InProcessKnowledgeStore, indexing: IndexingService
) -> None:
    first, second = _base(store), _base(store)
    kept, _ = _published(store, indexing, first)
    _published(store, indexing, second)

    assert _found(_query(search, knowledge_base_id=first.knowledge_base_id)) == [kept.knowledge_item_id]


def test_read_older_published_revision_is_readable_when_named(
    search: SearchService, store: InProcessKnowledgeStore, indexing: IndexingService
) -> None:
    item, first = _published(store, indexing, _base(store))
    updated, _ = store.add_revision(
        TENANT,
        item.knowledge_item_id,
        content="v2",
        title=None,
        source=None,
        publish=True,
        expected_version=1,
    )

    pinned = _read(search, item.knowledge_item_id, knowledge_revision_id=first.knowledge_revision_id)
    current = _read(search, item.knowledge_item_id)

    assert (pinned.content, pinned.is_current, pinned.current_revision_id) == (
        SECRET,
        False,
        updated.current_revision_id,
    )
    assert (current.content, current.is_current) == ("v2", True)


def test_read_draft_revision_or_draft_item_raises_resource_unavailable(
    search: SearchService, store: InProcessKnowledgeStore, indexing: IndexingService
) -> None:
    base = _base(store)
    item, _ = _published(store, indexing, base)
    _, draft = store.add_revision(
        TENANT,
        item.knowledge_item_id,
        content="draft",
        title=None,
        source=None,
        publish=False,
        expected_version=1,
    )
    draft_item, _ = store.create_item(
        TENANT,
        base.knowledge_base_id,
        title="Draft",
        content="x",
        source=Source(),
        external_id=None,
        publish=False,
    )

    with pytest.raises(ResourceUnavailableError):
        _read(search, item.knowledge_item_id, knowledge_revision_id=draft.knowledge_revision_id)
    with pytest.raises(ResourceUnavailableError):
        _read(search, draft_item.knowledge_item_id)


def test_read_in_windows_reproduces_the_content(
    search: SearchService, store: InProcessKnowledgeStore, indexing: IndexingService
) -> None:
    item, _ = _published(store, indexing, _base(store))

    pieces, offset = [], 0
    while True:
        window = _read(search, item.knowledge_item_id, offset=offset, limit_chars=17)
        pieces.append(window.content)
        offset += len(window.content)
        if not window.content_truncated:
            break

    assert "".join(pieces) == SECRET


def test_read_offset_past_the_end_raises_invalid_request(
    search: SearchService, store: InProcessKnowledgeStore, indexing: IndexingService
) -> None:
    item, _ = _published(store, indexing, _base(store))

    with pytest.raises(InvalidRequestError) as raised:
        _read(search, item.knowledge_item_id, offset=len(SECRET) + 1)

    assert raised.value.details == {"offset": len(SECRET) + 1, "content_total_chars": len(SECRET)}


def test_read_absent_item_raises_resource_unavailable(search: SearchService) -> None:
    with pytest.raises(ResourceUnavailableError):
        _read(search, "ki_01M8MSRAQ70QQ1SJHWP0AMCDPZ")


@pytest.mark.parametrize(
    ("arguments", "field", "prefix"),
    [
        ({"knowledge_item_id": "ki_#META"}, "knowledge_item_id", ITEM_PREFIX),
        ({"knowledge_item_id": "not-an-id"}, "knowledge_item_id", ITEM_PREFIX),
        ({"query": "timeout", "knowledge_base_id": "httpx"}, "knowledge_base_id", KB_PREFIX),
        (
            {"knowledge_item_id": "ki_01M8MSRAQ70QQ1SJHWP0AMCDPZ", "knowledge_revision_id": "rev-1"},
            "knowledge_revision_id",
            REVISION_PREFIX,
        ),
    ],
)
def test_malformed_id_argument_is_refused_naming_the_field_and_its_shape(
    arguments: dict[str, str], field: str, prefix: str
) -> None:
    with pytest.raises(ValidationError) as raised:
        SearchKnowledgeArguments.model_validate(arguments)

    [problem] = raised.value.errors()
    assert (problem["loc"], problem["msg"]) == ((field,), shape_of(prefix))


def test_switch_off_raises_runtime_disabled(
    store: InProcessKnowledgeStore, index: EmbeddedIndex, embedder: HashingEmbedder
) -> None:
    switched_off = SearchService(store, index, embedder, StaticRuntimeSwitch(False))

    with pytest.raises(RuntimeDisabledError) as raised:
        _query(switched_off)

    assert "KNOWLEDGE_RUNTIME_ENABLED=false" in raised.value.message


def test_caller_without_read_scope_raises_insufficient_scope(search: SearchService) -> None:
    with pytest.raises(InsufficientScopeError) as raised:
        _query(search, caller("writer-1", WRITE))

    assert raised.value.details == {"required_scope": READ.value}


@pytest.mark.parametrize(
    ("arguments", "error"),
    [
        ({"query": "deploy", "knowledge_item_id": "ki_01M8MSRAQ70QQ1SJHWP0AMCDPZ"}, InvalidRequestError),
        ({}, QueryRequiredError),
        ({"query": " \u0000\ufeff\u200b\u200d\u2066\t"}, QueryRequiredError),
        ({"knowledge_revision_id": "kr_01M8MSRAQ70QQ1SJHWP0AMCDPZ"}, ItemRequiredError),
        ({"query": "deploy", "max_results": 0}, InvalidRequestError),
        ({"query": "deploy", "limit_chars": 10_001}, InvalidRequestError),
    ],
    ids=["query-and-id", "nothing", "invisible-query", "revision-without-item", "max-results", "limit-chars"],
)
def test_request_shape_problems_raise_their_error(
    search: SearchService, arguments: dict[str, Any], error: type[Exception]
) -> None:
    with pytest.raises(error):
        search.search_knowledge(READER, SearchKnowledgeArguments(**arguments))
