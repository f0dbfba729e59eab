"""CurationService: items and revisions (DESIGN §6): scopes, visibility of the base, version races,
upserts by external id, publishing and rollback, archiving, and what readers without
``knowledge:write`` may see (published state only)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from knowledge.adapters.in_process.store import InProcessKnowledgeStore
from knowledge.adapters.runtime_switch import StaticRuntimeSwitch
from knowledge.contract.writes import (
    ArchiveRequest,
    CreatedRevisionResponse,
    CreateItemRequest,
    CreateKnowledgeBaseRequest,
    CreateRevisionRequest,
    KnowledgeBaseResponse,
    PublishRequest,
    UpdateKnowledgeBaseRequest,
)
from knowledge.domain.models import BaseStatus, ItemStatus, Permission, Principal, Scope, Source
from knowledge.errors import (
    ConflictError,
    InsufficientScopeError,
    RequestValidationError,
    ResourceUnavailableError,
)
from knowledge.services.curation import CurationService
from knowledge.services.indexing import IndexingService
from tests.unit.services.conftest import ADMIN, MAX_CONTENT_CHARS, PLATFORM, READ, TENANT, WRITE, caller

ADMIN_CALLER = caller("curator-1", ADMIN, READ, WRITE)
WRITER = caller("writer-1", READ, WRITE, team_ids=["platform"])
READER = caller("reader-1", READ)
DOC = "# Deployment runbook\n\nRoll out with the blue green switch and watch the health dashboard.\n"
ABSENT_ITEM = "ki_01M8MSRAQ70QQ1SJHWP0AMCDPZ"


@pytest.fixture
def base(curation: CurationService) -> KnowledgeBaseResponse:
    return curation.create_base(ADMIN_CALLER, CreateKnowledgeBaseRequest(name="Ops", scope=Scope.TENANT))


def _new_item(
    curation: CurationService,
    base: KnowledgeBaseResponse,
    principal: Principal = WRITER,
    **fields: Any,
) -> CreatedRevisionResponse:
    created, _ = curation.create_item(
        principal, base.knowledge_base_id, CreateItemRequest(**{"title": "Runbook", "content": DOC, **fields})
    )
    return created


def _revise(curation: CurationService, item_id: str, **fields: Any) -> CreatedRevisionResponse:
    return curation.add_revision(WRITER, item_id, CreateRevisionRequest(**fields))


# -- creating items -------------------------------------------------------------------------------


def test_create_item_published_has_its_revision_current(
    curation: CurationService, base: KnowledgeBaseResponse
) -> None:
    created, wrote = curation.create_item(
        WRITER,
        base.knowledge_base_id,
        CreateItemRequest(title="Runbook", content=DOC, source=Source(uri="https://wiki/x"), publish=True),
    )

    assert wrote is True
    assert created.knowledge_item_id.startswith("ki_")
    assert created.current_revision_id == created.latest_revision_id == created.knowledge_revision_id
    assert (created.title, created.status, created.version, created.external_id) == (
        "Runbook",
        ItemStatus.PUBLISHED,
        1,
        None,
    )


def test_create_draft_item_has_no_current_revision(
    curation: CurationService, base: KnowledgeBaseResponse
) -> None:
    created = _new_item(curation, base)

    assert (created.status, created.current_revision_id) == (ItemStatus.DRAFT, None)
    assert created.latest_revision_id == created.knowledge_revision_id


def test_create_item_with_taken_external_id_adds_a_draft_revision_to_it(
    curation: CurationService, base: KnowledgeBaseResponse
) -> None:
    first = _new_item(curation, base, external_id="runbook", publish=True)

    second = _new_item(curation, base, external_id="runbook", content="Canary releases.", title="Runbook v2")

    assert second.knowledge_item_id == first.knowledge_item_id
    assert second.knowledge_revision_id != first.knowledge_revision_id
    assert (second.version, second.title, second.external_id) == (2, "Runbook", "runbook")
    assert second.current_revision_id == first.knowledge_revision_id
    assert second.latest_revision_id == second.knowledge_revision_id


def test_create_item_unchanged_upsert_writes_nothing(
    curation: CurationService, store: InProcessKnowledgeStore, base: KnowledgeBaseResponse
) -> None:
    first = _new_item(curation, base, external_id="runbook", publish=True)

    again, wrote = curation.create_item(
        WRITER,
        base.knowledge_base_id,
        CreateItemRequest(title="Runbook", content=DOC, external_id="runbook", publish=True),
    )

    assert wrote is False
    assert (again.knowledge_revision_id, again.version) == (first.knowledge_revision_id, first.version)
    revisions = store.list_revisions(TENANT, first.knowledge_item_id, limit=10, next_token=None).entries
    assert [revision.knowledge_revision_id for revision in revisions] == [first.knowledge_revision_id]


def test_create_item_unchanged_draft_upsert_with_publish_publishes_it(
    curation: CurationService, base: KnowledgeBaseResponse
) -> None:
    draft = _new_item(curation, base, external_id="runbook")

    published, wrote = curation.create_item(
        WRITER,
        base.knowledge_base_id,
        CreateItemRequest(title="Runbook", content=DOC, external_id="runbook", publish=True),
    )

    assert wrote is False
    assert published.knowledge_revision_id == draft.knowledge_revision_id
    assert (published.status, published.current_revision_id, published.version) == (
        ItemStatus.PUBLISHED,
        draft.knowledge_revision_id,
        2,
    )


def test_create_item_content_over_limit_raises_validation_error_and_writes_nothing(
    curation: CurationService, base: KnowledgeBaseResponse
) -> None:
    with pytest.raises(RequestValidationError) as raised:
        _new_item(curation, base, content="a" * (MAX_CONTENT_CHARS + 1))

    assert f"{MAX_CONTENT_CHARS:,}" in raised.value.message
    assert raised.value.details["max_chars"] == MAX_CONTENT_CHARS
    assert (
        curation.list_items(WRITER, base.knowledge_base_id, external_id=None, limit=10, next_token=None).items
        == []
    )


def test_create_item_content_at_limit_is_stored(
    curation: CurationService, store: InProcessKnowledgeStore, base: KnowledgeBaseResponse
) -> None:
    content = "abcdefghij" * (MAX_CONTENT_CHARS // 10)

    created = _new_item(curation, base, content=content)

    revision = store.get_revision(TENANT, created.knowledge_item_id, created.knowledge_revision_id)
    assert revision is not None
    assert store.read_all_content(revision) == content


@pytest.mark.parametrize(
    ("scope", "team"), [(Scope.PRIVATE, None), (Scope.TEAM, "platform"), (Scope.TEAM, "security")]
)
def test_create_item_in_base_the_writer_cannot_see_raises_resource_unavailable(
    curation: CurationService, scope: Scope, team: str | None
) -> None:
    hidden = curation.create_base(
        ADMIN_CALLER, CreateKnowledgeBaseRequest(name="Hidden", scope=scope, team_id=team)
    )
    outsider = caller("writer-2", READ, WRITE, team_ids=["support"])

    with pytest.raises(ResourceUnavailableError):
        _new_item(curation, hidden, outsider)


def test_create_item_in_team_base_of_own_team_is_allowed(curation: CurationService) -> None:
    team = curation.create_base(
        ADMIN_CALLER, CreateKnowledgeBaseRequest(name="Platform", scope=Scope.TEAM, team_id="platform")
    )

    assert _new_item(curation, team).knowledge_base_id == team.knowledge_base_id


def test_create_item_in_inactive_base_raises_resource_unavailable(
    curation: CurationService, base: KnowledgeBaseResponse
) -> None:
    curation.update_base(
        ADMIN_CALLER,
        base.knowledge_base_id,
        UpdateKnowledgeBaseRequest(status=BaseStatus.INACTIVE, expected_version=1),
    )

    with pytest.raises(ResourceUnavailableError):
        _new_item(curation, base)


def test_create_item_outside_the_tokens_allow_list_raises_resource_unavailable(
    curation: CurationService, base: KnowledgeBaseResponse
) -> None:
    elsewhere = caller("writer-1", READ, WRITE, knowledge_base_ids=["kb_01M8MSRAQ70QQ1SJHWP0AMCDPZ"])

    with pytest.raises(ResourceUnavailableError):
        curation.authorize_item_creation(elsewhere, base.knowledge_base_id)


# -- listing items --------------------------------------------------------------------------------


def test_list_items_paginates_and_filters_by_external_id(
    curation: CurationService, base: KnowledgeBaseResponse
) -> None:
    created = [_new_item(curation, base, external_id=f"doc-{n}", publish=True) for n in range(5)]

    first = curation.list_items(WRITER, base.knowledge_base_id, external_id=None, limit=3, next_token=None)
    second = curation.list_items(
        WRITER, base.knowledge_base_id, external_id=None, limit=3, next_token=first.next_token
    )
    by_external_id = curation.list_items(
        WRITER, base.knowledge_base_id, external_id="doc-3", limit=3, next_token=None
    )
    unknown = curation.list_items(
        WRITER, base.knowledge_base_id, external_id="doc-9", limit=3, next_token=None
    )

    assert [entry.knowledge_item_id for entry in first.items + second.items] == [
        entry.knowledge_item_id for entry in created
    ]
    assert second.next_token is None
    assert [entry.knowledge_item_id for entry in by_external_id.items] == [created[3].knowledge_item_id]
    assert (unknown.items, unknown.next_token) == ([], None)


def test_list_items_for_reader_shows_published_items_only(
    curation: CurationService, base: KnowledgeBaseResponse
) -> None:
    published = _new_item(curation, base, publish=True)
    _new_item(curation, base)

    listed = curation.list_items(READER, base.knowledge_base_id, external_id=None, limit=10, next_token=None)

    assert [entry.knowledge_item_id for entry in listed.items] == [published.knowledge_item_id]


# -- revisions, publish, archive ------------------------------------------------------------------


def test_add_revision_publishes_when_asked_and_keeps_the_title(
    curation: CurationService, base: KnowledgeBaseResponse
) -> None:
    item = _new_item(curation, base, publish=True)

    draft = _revise(curation, item.knowledge_item_id, content="v2", expected_version=1)
    live = _revise(curation, item.knowledge_item_id, content="v3", publish=True)

    assert (draft.version, draft.current_revision_id) == (2, item.knowledge_revision_id)
    assert (live.version, live.current_revision_id, live.title) == (3, live.knowledge_revision_id, "Runbook")


def test_add_revision_stale_expected_version_raises_conflict_with_current_version(
    curation: CurationService, base: KnowledgeBaseResponse
) -> None:
    item = _new_item(curation, base)
    _revise(curation, item.knowledge_item_id, content="v2")

    with pytest.raises(ConflictError) as raised:
        _revise(curation, item.knowledge_item_id, content="v3", expected_version=1)

    assert raised.value.details == {"current_version": 2}


def test_add_revision_content_over_limit_raises_validation_error(
    curation: CurationService, base: KnowledgeBaseResponse
) -> None:
    item = _new_item(curation, base)

    with pytest.raises(RequestValidationError):
        _revise(curation, item.knowledge_item_id, content="a" * (MAX_CONTENT_CHARS + 1))


def test_publish_older_revision_rolls_back(curation: CurationService, base: KnowledgeBaseResponse) -> None:
    item = _new_item(curation, base, publish=True)
    newer = _revise(curation, item.knowledge_item_id, content="v2", publish=True)

    rolled_back = curation.publish(
        WRITER,
        item.knowledge_item_id,
        PublishRequest(revision_id=item.knowledge_revision_id, expected_version=2),
    )

    assert (rolled_back.current_revision_id, rolled_back.latest_revision_id, rolled_back.version) == (
        item.knowledge_revision_id,
        newer.knowledge_revision_id,
        3,
    )


def test_publish_renames_item_to_the_revision_title_and_rollback_restores_it(
    curation: CurationService, base: KnowledgeBaseResponse
) -> None:
    item = _new_item(curation, base, publish=True)
    draft = _revise(curation, item.knowledge_item_id, content="v2", title="Runbook v2")

    published = curation.publish(
        WRITER,
        item.knowledge_item_id,
        PublishRequest(revision_id=draft.knowledge_revision_id, expected_version=2),
    )
    renamed = curation.get_item(READER, item.knowledge_item_id)
    rolled_back = curation.publish(
        WRITER,
        item.knowledge_item_id,
        PublishRequest(revision_id=item.knowledge_revision_id, expected_version=3),
    )

    assert (draft.title, published.title, renamed.title) == ("Runbook", "Runbook v2", "Runbook v2")
    assert renamed.latest_revision_id == draft.knowledge_revision_id
    assert rolled_back.title == "Runbook"
    assert curation.get_item(READER, item.knowledge_item_id).latest_revision_id == item.knowledge_revision_id


@pytest.mark.parametrize(
    ("revision_id", "error"),
    [
        ("kr_01M8MSRAQ70QQ1SJHWP0AMCDPZ", ResourceUnavailableError),
        ("kr_#1", RequestValidationError),
        ("ki_01M8MSRAQ70QQ1SJHWP0AMCDPZ", RequestValidationError),
    ],
)
def test_publish_unknown_revision_raises_unavailable_and_a_malformed_one_validation_error(
    curation: CurationService, base: KnowledgeBaseResponse, revision_id: str, error: type[Exception]
) -> None:
    item = _new_item(curation, base)

    with pytest.raises(error):
        curation.publish(
            WRITER, item.knowledge_item_id, PublishRequest(revision_id=revision_id, expected_version=1)
        )


def test_publish_revision_of_another_item_raises_resource_unavailable(
    curation: CurationService, base: KnowledgeBaseResponse
) -> None:
    item, other = _new_item(curation, base), _new_item(curation, base)

    with pytest.raises(ResourceUnavailableError):
        curation.publish(
            WRITER,
            item.knowledge_item_id,
            PublishRequest(revision_id=other.knowledge_revision_id, expected_version=1),
        )


def test_archive_hides_item_from_readers_refuses_later_writes_and_releases_external_id(
    curation: CurationService, base: KnowledgeBaseResponse
) -> None:
    item = _new_item(curation, base, publish=True, external_id="doc")

    archived = curation.archive(WRITER, item.knowledge_item_id, ArchiveRequest(expected_version=1))

    assert (archived.status, archived.version) == (ItemStatus.ARCHIVED, 2)
    assert curation.get_item(WRITER, item.knowledge_item_id).status is ItemStatus.ARCHIVED
    with pytest.raises(ResourceUnavailableError):
        curation.get_item(READER, item.knowledge_item_id)
    with pytest.raises(ResourceUnavailableError):
        curation.archive(WRITER, item.knowledge_item_id, ArchiveRequest(expected_version=2))
    with pytest.raises(ResourceUnavailableError):
        _revise(curation, item.knowledge_item_id, content="x")
    assert (
        curation.list_items(
            WRITER, base.knowledge_base_id, external_id="doc", limit=10, next_token=None
        ).items
        == []
    )


def test_archive_stale_expected_version_raises_conflict_with_current_version(
    curation: CurationService, base: KnowledgeBaseResponse
) -> None:
    item = _new_item(curation, base)
    _revise(curation, item.knowledge_item_id, content="v2")

    with pytest.raises(ConflictError) as raised:
        curation.archive(WRITER, item.knowledge_item_id, ArchiveRequest(expected_version=1))

    assert raised.value.details == {"current_version": 2}


def test_authorize_item_write_passes_for_an_archived_item_so_its_archive_can_be_replayed(
    curation: CurationService, base: KnowledgeBaseResponse
) -> None:
    item = _new_item(curation, base)
    curation.archive(WRITER, item.knowledge_item_id, ArchiveRequest(expected_version=1))

    curation.authorize_item_write(WRITER, item.knowledge_item_id)

    with pytest.raises(InsufficientScopeError):
        curation.authorize_item_write(READER, item.knowledge_item_id)


# -- reading items and revisions ------------------------------------------------------------------


def test_get_item_reports_indexed_revision_once_indexed(
    curation: CurationService, indexing: IndexingService, base: KnowledgeBaseResponse
) -> None:
    item = _new_item(curation, base, publish=True)
    before = curation.get_item(WRITER, item.knowledge_item_id)

    indexing.sync_item(TENANT, item.knowledge_item_id, last_known_version=item.version)
    after = curation.get_item(WRITER, item.knowledge_item_id)

    assert (before.indexed_revision_id, before.indexed) == (None, False)
    assert after == before.model_copy(
        update={"indexed_revision_id": item.knowledge_revision_id, "indexed": True}
    )


def test_list_items_reports_which_items_the_index_holds(
    curation: CurationService, indexing: IndexingService, base: KnowledgeBaseResponse
) -> None:
    indexed = _new_item(curation, base, publish=True, external_id="indexed.md")
    waiting = _new_item(curation, base, publish=True, external_id="waiting.md")
    indexing.sync_item(TENANT, indexed.knowledge_item_id, last_known_version=indexed.version)

    listed = curation.list_items(WRITER, base.knowledge_base_id, external_id=None, limit=10, next_token=None)
    by_reader = curation.list_items(
        READER, base.knowledge_base_id, external_id="indexed.md", limit=10, next_token=None
    )

    marks = {item.external_id: item.indexed_revision_id for item in listed.items}
    assert marks == {"indexed.md": indexed.knowledge_revision_id, "waiting.md": None}
    assert waiting.current_revision_id is not None
    assert [item.indexed_revision_id for item in by_reader.items] == [indexed.knowledge_revision_id]
    assert listed.items[0] == curation.get_item(WRITER, listed.items[0].knowledge_item_id)


def test_get_draft_item_is_unavailable_to_readers_and_visible_to_writers(
    curation: CurationService, base: KnowledgeBaseResponse
) -> None:
    item = _new_item(curation, base)

    assert curation.get_item(WRITER, item.knowledge_item_id).status is ItemStatus.DRAFT
    with pytest.raises(ResourceUnavailableError):
        curation.get_item(READER, item.knowledge_item_id)
    with pytest.raises(ResourceUnavailableError):
        curation.list_revisions(READER, item.knowledge_item_id, limit=10, next_token=None)


def test_get_absent_item_raises_resource_unavailable(curation: CurationService) -> None:
    with pytest.raises(ResourceUnavailableError):
        curation.get_item(READER, ABSENT_ITEM)


@pytest.mark.parametrize("item_id", ["ki_#META", "kb_01M8MSRAQ70QQ1SJHWP0AMCDPZ"])
def test_get_malformed_item_id_raises_validation_error(curation: CurationService, item_id: str) -> None:
    with pytest.raises(RequestValidationError):
        curation.get_item(READER, item_id)


def test_get_item_of_another_tenant_raises_resource_unavailable(
    curation: CurationService, base: KnowledgeBaseResponse
) -> None:
    item = _new_item(curation, base, publish=True)

    with pytest.raises(ResourceUnavailableError):
        curation.get_item(caller("reader-1", READ, WRITE, tenant_id="globex"), item.knowledge_item_id)


def test_draft_revision_title_and_id_are_hidden_from_readers(
    curation: CurationService, base: KnowledgeBaseResponse
) -> None:
    item = _new_item(curation, base, publish=True)
    draft = _revise(curation, item.knowledge_item_id, content="Unannounced plan.", title="Secret codename")

    seen = curation.get_item(READER, item.knowledge_item_id)
    listed = curation.list_items(READER, base.knowledge_base_id, external_id=None, limit=10, next_token=None)
    curated = curation.get_item(WRITER, item.knowledge_item_id)

    assert (seen.title, seen.latest_revision_id) == ("Runbook", item.knowledge_revision_id)
    assert [(entry.title, entry.latest_revision_id) for entry in listed.items] == [
        ("Runbook", item.knowledge_revision_id)
    ]
    assert (curated.title, curated.latest_revision_id) == ("Runbook", draft.knowledge_revision_id)


def test_list_revisions_newest_first_with_pagination_and_the_current_one_marked(
    curation: CurationService, base: KnowledgeBaseResponse
) -> None:
    item = _new_item(curation, base, publish=True)
    later = [
        _revise(curation, item.knowledge_item_id, content=f"v{n}").knowledge_revision_id for n in range(2, 5)
    ]

    first = curation.list_revisions(WRITER, item.knowledge_item_id, limit=2, next_token=None)
    second = curation.list_revisions(WRITER, item.knowledge_item_id, limit=2, next_token=first.next_token)

    listed = first.revisions + second.revisions
    assert [entry.knowledge_revision_id for entry in listed] == [*reversed(later), item.knowledge_revision_id]
    assert second.next_token is None
    assert [entry.is_current for entry in listed] == [False, False, False, True]
    assert listed[-1].total_chars == len(DOC)


def test_list_revisions_for_reader_shows_published_revisions_only(
    curation: CurationService, base: KnowledgeBaseResponse
) -> None:
    item = _new_item(curation, base, publish=True)
    _revise(curation, item.knowledge_item_id, content="draft")

    listed = curation.list_revisions(READER, item.knowledge_item_id, limit=10, next_token=None)

    assert [entry.knowledge_revision_id for entry in listed.revisions] == [item.knowledge_revision_id]


# -- scopes and the runtime switch ----------------------------------------------------------------


ItemWrite = Callable[[CurationService, str, str], object]
ITEM_WRITES: dict[str, ItemWrite] = {
    "create": lambda curation, item_id, base_id: curation.create_item(
        READER, base_id, CreateItemRequest(title="x", content="y")
    ),
    "revise": lambda curation, item_id, base_id: curation.add_revision(
        READER, item_id, CreateRevisionRequest(content="y")
    ),
    "publish": lambda curation, item_id, base_id: curation.publish(
        READER, item_id, PublishRequest(revision_id="kr_01M8MSRAQ70QQ1SJHWP0AMCDPZ", expected_version=1)
    ),
    "archive": lambda curation, item_id, base_id: curation.archive(
        READER, item_id, ArchiveRequest(expected_version=1)
    ),
}


@pytest.mark.parametrize("write", ITEM_WRITES.values(), ids=ITEM_WRITES.keys())
def test_item_writes_without_write_scope_raise_insufficient_scope(
    curation: CurationService, base: KnowledgeBaseResponse, write: ItemWrite
) -> None:
    item = _new_item(curation, base, publish=True)

    with pytest.raises(InsufficientScopeError) as raised:
        write(curation, item.knowledge_item_id, base.knowledge_base_id)

    assert raised.value.details == {"required_scope": Permission.WRITE.value}


def test_reads_without_read_scope_raise_insufficient_scope(
    curation: CurationService, base: KnowledgeBaseResponse
) -> None:
    blind = caller("writer-9", WRITE)
    item = _new_item(curation, base, publish=True)

    with pytest.raises(InsufficientScopeError):
        curation.list_items(blind, base.knowledge_base_id, external_id=None, limit=10, next_token=None)
    with pytest.raises(InsufficientScopeError):
        curation.get_item(blind, item.knowledge_item_id)


def test_platform_admin_holds_every_scope(curation: CurationService, base: KnowledgeBaseResponse) -> None:
    operator = caller("operator", PLATFORM)

    item = _new_item(curation, base, operator, publish=True)

    assert curation.get_item(operator, item.knowledge_item_id).status is ItemStatus.PUBLISHED


def test_writes_do_not_depend_on_the_runtime_switch_and_health_reports_it(
    store: InProcessKnowledgeStore, indexing: IndexingService
) -> None:
    switched_off = CurationService(
        store, indexing, StaticRuntimeSwitch(False), max_content_chars=MAX_CONTENT_CHARS
    )
    base = switched_off.create_base(ADMIN_CALLER, CreateKnowledgeBaseRequest(name="Ops", scope=Scope.TENANT))

    assert _new_item(switched_off, base).status is ItemStatus.DRAFT
    assert switched_off.health().runtime_enabled is False
