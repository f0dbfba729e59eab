"""upsert_by_external_id: idempotent by (base, external id, content); a writer that changes the item
between our read and our write makes us read again, up to ``MAX_ATTEMPTS`` times."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import pytest

from knowledge.adapters.in_process.store import InProcessKnowledgeStore
from knowledge.domain.models import ItemStatus, KnowledgeBase, KnowledgeItem, Scope, Source
from knowledge.errors import ConflictError, ResourceUnavailableError
from knowledge.services.upsert import MAX_ATTEMPTS, Document, UpsertOutcome, upsert_by_external_id
from tests.unit.services.conftest import TENANT

SOURCE = Source(uri="https://wiki/runbook", title="Wiki")


class InterferingStore(InProcessKnowledgeStore):
    """Runs ``interfere`` (another writer) right after each of the next ``times`` external-id lookups."""

    def __init__(self) -> None:
        super().__init__()
        self.interfere: Callable[[], object] = lambda: None
        self.times = 0

    def find_item_by_external_id(
        self, tenant_id: str, knowledge_base_id: str, external_id: str
    ) -> KnowledgeItem | None:
        found = super().find_item_by_external_id(tenant_id, knowledge_base_id, external_id)
        if self.times > 0:
            self.times -= 1
            self.interfere()
        return found


@pytest.fixture
def store() -> InterferingStore:
    return InterferingStore()


@pytest.fixture
def base(store: InterferingStore) -> KnowledgeBase:
    return store.create_base(TENANT, name="Ops", owner_id="curator-1", scope=Scope.TENANT, team_id=None)


def _document(**fields: object) -> Document:
    return replace(
        Document(
            external_id="runbook",
            title="Runbook",
            content="Roll out with the blue green switch.",
            source=SOURCE,
            publish=True,
        ),
        **fields,
    )


def _upsert(
    store: InProcessKnowledgeStore, base: KnowledgeBase, **fields: object
) -> tuple[UpsertOutcome, KnowledgeItem, str]:
    upserted = upsert_by_external_id(store, TENANT, base.knowledge_base_id, _document(**fields))
    return upserted.outcome, upserted.item, upserted.revision_id


def _revision_count(store: InProcessKnowledgeStore, item: KnowledgeItem) -> int:
    return len(store.list_revisions(TENANT, item.knowledge_item_id, limit=50, next_token=None).entries)


def test_upsert_unknown_external_id_creates_the_item(store: InterferingStore, base: KnowledgeBase) -> None:
    outcome, item, revision_id = _upsert(store, base)

    assert outcome is UpsertOutcome.CREATED
    assert (item.external_id, item.status, item.current_revision_id) == (
        "runbook",
        ItemStatus.PUBLISHED,
        revision_id,
    )


def test_upsert_equal_document_again_writes_nothing(store: InterferingStore, base: KnowledgeBase) -> None:
    _, first, revision_id = _upsert(store, base)

    outcome, again, again_revision_id = _upsert(store, base)

    assert (outcome, again, again_revision_id) == (UpsertOutcome.UNCHANGED, first, revision_id)
    assert _revision_count(store, first) == 1


def test_upsert_without_source_keeps_the_latest_source_and_writes_nothing(
    store: InterferingStore, base: KnowledgeBase
) -> None:
    _, first, _ = _upsert(store, base)

    outcome, again, _ = _upsert(store, base, source=None)

    assert (outcome, again.version) == (UpsertOutcome.UNCHANGED, first.version)


@pytest.mark.parametrize(
    "change",
    [
        {"content": "Roll out with a canary."},
        {"title": "Runbook v2"},
        {"source": Source(uri="https://wiki/new")},
    ],
    ids=["content", "title", "source"],
)
def test_upsert_changed_content_title_or_source_adds_a_revision(
    store: InterferingStore, base: KnowledgeBase, change: dict[str, object]
) -> None:
    _, first, first_revision = _upsert(store, base)

    outcome, revised, revision_id = _upsert(store, base, **change)

    assert outcome is UpsertOutcome.REVISED
    assert (revised.knowledge_item_id, revised.version) == (first.knowledge_item_id, 2)
    assert revision_id != first_revision
    assert _revision_count(store, first) == 2


def test_upsert_equal_draft_with_publish_publishes_it_without_a_new_revision(
    store: InterferingStore, base: KnowledgeBase
) -> None:
    _, draft, revision_id = _upsert(store, base, publish=False)

    outcome, published, published_revision = _upsert(store, base)

    assert outcome is UpsertOutcome.PUBLISHED
    assert (published.status, published.current_revision_id, published_revision) == (
        ItemStatus.PUBLISHED,
        revision_id,
        revision_id,
    )
    assert _revision_count(store, draft) == 1


def test_upsert_item_changed_between_read_and_write_is_read_again(
    store: InterferingStore, base: KnowledgeBase
) -> None:
    _, item, _ = _upsert(store, base)
    store.interfere = lambda: store.add_revision(
        TENANT,
        item.knowledge_item_id,
        content="a colleague's edit",
        title=None,
        source=None,
        publish=True,
        expected_version=None,
    )
    store.times = 1

    outcome, revised, _ = _upsert(store, base, content="Roll out with a canary.")

    assert outcome is UpsertOutcome.REVISED
    assert revised.version == 3
    assert _revision_count(store, item) == 3


def test_upsert_item_created_by_another_writer_meanwhile_is_read_again(
    store: InterferingStore, base: KnowledgeBase
) -> None:
    store.interfere = lambda: upsert_by_external_id(store, TENANT, base.knowledge_base_id, _document())
    store.times = 1

    outcome, item, _ = _upsert(store, base)

    assert outcome is UpsertOutcome.UNCHANGED
    listed = store.list_items(TENANT, base.knowledge_base_id, limit=10, next_token=None).entries
    assert listed == [item]


def test_upsert_item_archived_meanwhile_creates_a_new_item(
    store: InterferingStore, base: KnowledgeBase
) -> None:
    _, item, _ = _upsert(store, base)
    store.interfere = lambda: store.archive_item(
        TENANT, item.knowledge_item_id, expected_version=item.version
    )
    store.times = 1

    outcome, created, _ = _upsert(store, base, content="Roll out with a canary.")

    assert outcome is UpsertOutcome.CREATED
    assert created.knowledge_item_id != item.knowledge_item_id
    assert store.find_item_by_external_id(TENANT, base.knowledge_base_id, "runbook") == created


def test_upsert_into_an_absent_base_raises_resource_unavailable(store: InterferingStore) -> None:
    with pytest.raises(ResourceUnavailableError):
        upsert_by_external_id(store, TENANT, "kb_01M8MSRAQ70QQ1SJHWP0AMCDPZ", _document())


def test_upsert_item_that_keeps_changing_raises_conflict_after_max_attempts(
    store: InterferingStore, base: KnowledgeBase
) -> None:
    _, item, _ = _upsert(store, base)
    edits = iter(range(MAX_ATTEMPTS))
    store.interfere = lambda: store.add_revision(
        TENANT,
        item.knowledge_item_id,
        content=f"edit {next(edits)}",
        title=None,
        source=None,
        publish=True,
        expected_version=None,
    )
    store.times = MAX_ATTEMPTS

    with pytest.raises(ConflictError) as raised:
        _upsert(store, base, content="Roll out with a canary.")

    # One edit landed after each of the upsert's reads: it reports the version it read last.
    assert raised.value.current_version == MAX_ATTEMPTS
    assert _revision_count(store, item) == 1 + MAX_ATTEMPTS
