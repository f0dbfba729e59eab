"""Item purge (``DELETE /v1/knowledge-items/{item}``): a dry run writes nothing and lists exactly
what the real call then deletes, store by store; afterwards the table, both indexes and the
embedding cache hold nothing of the item, and ``as_of`` reads of a moment before the purge no
longer find it."""

from __future__ import annotations

import copy
import hashlib
from datetime import datetime
from typing import Any

import pytest

from knowledge.adapters.embedding_cache import embedding_key
from knowledge.adapters.runtime_switch import StaticRuntimeSwitch
from knowledge.contract.deletion import DeletionReceipt
from knowledge.contract.search import SearchKnowledgeArguments
from knowledge.domain.models import KnowledgeBase, KnowledgeItem, Permission, Scope, Source
from knowledge.errors import ConflictError, InsufficientScopeError, ResourceUnavailableError
from knowledge.services.curation import CurationService
from tests.support.knowledge_history import WORD, KnowledgeWorld
from tests.unit.services.conftest import TENANT, caller

ADMIN = caller("alice", Permission.ADMIN, Permission.WRITE, Permission.READ)
WRITER = caller("alice", Permission.WRITE, Permission.READ)


class PurgeWorld:
    """A ``KnowledgeWorld`` with a base, the item to purge (three published revisions and an
    external id) and a bystander item, every write indexed as the stream consumer would."""

    def __init__(self, world: KnowledgeWorld) -> None:
        self.world = world
        self.curation = CurationService(
            world.store, world.indexing, StaticRuntimeSwitch(True), max_content_chars=100_000
        )
        store = world.store
        self.base: KnowledgeBase = store.create_base(
            TENANT, name="Handbook", owner_id=ADMIN.subject_id, scope=Scope.TENANT, team_id=None
        )
        self.target = self._create("Deploy", f"{WORD} deploy window monday", external_id="deploy.md")
        self.first_moment = self._tick()
        for words in (f"{WORD} deploy window tuesday", f"{WORD} deploy window friday"):
            item, _ = store.add_revision(
                TENANT,
                self.target.knowledge_item_id,
                content=words,
                title=None,
                source=None,
                publish=True,
                expected_version=self._item(self.target).version,
            )
            self._sync(item)
        self.bystander = self._create("Rota", f"{WORD} on-call rota")
        self._tick()

    def _create(self, title: str, content: str, external_id: str | None = None) -> KnowledgeItem:
        item, _ = self.world.store.create_item(
            TENANT,
            self.base.knowledge_base_id,
            title=title,
            content=content,
            source=Source(),
            external_id=external_id,
            publish=True,
        )
        self._sync(item)
        return item

    def _sync(self, item: KnowledgeItem) -> None:
        self.world.clock.advance(1)
        self.world.indexing.sync_item(TENANT, item.knowledge_item_id, last_known_version=item.version)

    def _tick(self) -> datetime:
        self.world.clock.advance(1)
        return self.world.clock.now

    def _item(self, item: KnowledgeItem) -> KnowledgeItem:
        found = self.world.store.get_item(TENANT, item.knowledge_item_id)
        assert found is not None
        return found

    def purge(self, *, dry_run: bool, expected_version: int | None = None) -> DeletionReceipt:
        target = self._item(self.target)
        answer = self.curation.purge_item(
            ADMIN,
            target.knowledge_item_id,
            expected_version=target.version if expected_version is None else expected_version,
            dry_run=dry_run,
        )
        assert (answer.dry_run, answer.receipt.dry_run) == (dry_run, dry_run)
        assert answer.knowledge_base_id == self.base.knowledge_base_id
        return answer.receipt

    def state(self) -> dict[str, Any]:
        store: Any = self.world.store
        return {
            "items": copy.deepcopy(store._items),
            "revisions": copy.deepcopy(store._revisions),
            "contents": copy.deepcopy(store._contents),
            "states": copy.deepcopy(store._item_states),
            "external_ids": copy.deepcopy(store._external_ids),
            "cache": len(self.world.cache),
            "index": self.world.index.document_ids(TENANT),  # type: ignore[attr-defined]
            "history": self.world.history.document_ids(TENANT),  # type: ignore[attr-defined]
        }

    def found(self, *, as_of: datetime | None = None) -> set[str]:
        return {result.knowledge_item_id for result in self.world.query(WRITER, as_of=as_of).results}


def ids_of(receipt: DeletionReceipt, store: str, kind: str) -> set[str]:
    found = [entry for entry in receipt.stores()[store] if entry.kind == kind]
    assert all(entry.count == len(entry.ids) and entry.state == "purged" for entry in found)
    return {identifier for entry in found for identifier in entry.ids}


def check_item_purge(world: KnowledgeWorld) -> None:
    """The dry run equals the real call's receipt and writes nothing; the real call leaves nothing
    of the item in the table, the indexes (live and history) or the embedding cache."""
    run = PurgeWorld(world)
    target = run.target.knowledge_item_id
    before = run.state()
    assert run.found(as_of=run.first_moment) == {target}
    assert target in before["index"]

    preview = run.purge(dry_run=True)
    assert run.state() == before
    receipt = run.purge(dry_run=False)
    assert preview.stores() == receipt.stores()

    revisions = {key[2] for key in before["revisions"] if key[1] == target}
    assert len(revisions) == 3
    assert ids_of(receipt, "table", "item") == {target}
    assert ids_of(receipt, "table", "item_revision") == revisions
    assert ids_of(receipt, "table", "content_page") == {f"{revision}#0" for revision in revisions}
    assert ids_of(receipt, "table", "item_state") == {f"{target}@{version}" for version in (1, 2, 3)}
    assert ids_of(receipt, "table", "external_id") == {"deploy.md"}
    history = {key for key in before["history"] if key.startswith(f"{target}@")}
    assert ids_of(receipt, "index", "item_history") == history == {f"{target}@{v}" for v in (1, 2, 3)}
    assert ids_of(receipt, "index", "item_passages") == {before["items"][TENANT, target].current_revision_id}

    after = run.state()
    store = world.store
    assert store.get_item(TENANT, target) is None
    assert store.list_item_states(TENANT, target) == []
    assert store.list_revisions(TENANT, target, limit=50, next_token=None).entries == []
    assert store.find_item_by_external_id(TENANT, run.base.knowledge_base_id, "deploy.md") is None
    assert after["index"] == before["index"] - {target}
    assert after["history"] == before["history"] - history
    assert all(key[1] != target for key in after["contents"])
    cached = ids_of(receipt, "embedding_cache", "cached_vector")
    assert before["cache"] - after["cache"] == len(cached) > 0
    assert run.found(as_of=run.first_moment) == set()
    assert run.found() == {run.bystander.knowledge_item_id}


@pytest.fixture
def run() -> PurgeWorld:
    return PurgeWorld(KnowledgeWorld())


def test_purge_item_dry_run_equals_the_receipt_and_the_item_is_gone_everywhere() -> None:
    check_item_purge(KnowledgeWorld())


def test_purge_item_drops_exactly_the_cached_vectors_it_names(run: PurgeWorld) -> None:
    model, dimension = run.world.embedder.model_id, run.world.embedder.dimension
    texts = [
        text
        for revision in run.world.store.list_revisions(
            TENANT, run.target.knowledge_item_id, limit=50, next_token=None
        ).entries
        for text in run.world.indexing.embedded_texts(revision)
    ]
    assert len(run.world.cache.get_many([embedding_key(model, dimension, t) for t in texts])) == len(texts)
    receipt = run.purge(dry_run=False)
    assert ids_of(receipt, "embedding_cache", "cached_vector") == {
        hashlib.sha256(text.encode()).hexdigest() for text in texts
    }
    assert run.world.cache.get_many([embedding_key(model, dimension, t) for t in texts]) == {}


def test_purge_item_addressed_as_of_read_is_unavailable_afterwards(run: PurgeWorld) -> None:
    arguments = SearchKnowledgeArguments(
        knowledge_item_id=run.target.knowledge_item_id, as_of=run.first_moment
    )
    assert run.world.search_service.search_knowledge(WRITER, arguments) is not None
    run.purge(dry_run=False)
    with pytest.raises(ResourceUnavailableError):
        run.world.search_service.search_knowledge(WRITER, arguments)


def test_purge_item_of_an_archived_item_deletes_it_and_releases_nothing_twice(run: PurgeWorld) -> None:
    target = run._item(run.target)
    run.world.store.archive_item(TENANT, target.knowledge_item_id, expected_version=target.version)
    receipt = run.purge(dry_run=False)
    assert ids_of(receipt, "table", "item") == {target.knowledge_item_id}
    assert ids_of(receipt, "index", "item_passages") == set()
    assert run.world.store.get_item(TENANT, target.knowledge_item_id) is None


def test_purge_item_frees_the_external_id_for_a_new_item(run: PurgeWorld) -> None:
    run.purge(dry_run=False)
    again = run._create("Deploy", f"{WORD} new deploy page", external_id="deploy.md")
    assert again.knowledge_item_id != run.target.knowledge_item_id


@pytest.mark.parametrize("dry_run", [True, False])
def test_purge_item_with_a_stale_expected_version_is_a_conflict(run: PurgeWorld, dry_run: bool) -> None:
    before = run.state()
    with pytest.raises(ConflictError):
        run.purge(dry_run=dry_run, expected_version=1)
    assert run.state() == before


def test_purge_item_without_admin_scope_is_refused(run: PurgeWorld) -> None:
    with pytest.raises(InsufficientScopeError):
        run.curation.purge_item(WRITER, run.target.knowledge_item_id, expected_version=3, dry_run=True)


def test_purge_item_of_another_tenant_is_unavailable(run: PurgeWorld) -> None:
    stranger = caller("eve", Permission.ADMIN, tenant_id="globex")
    with pytest.raises(ResourceUnavailableError):
        run.curation.purge_item(stranger, run.target.knowledge_item_id, expected_version=3, dry_run=True)
