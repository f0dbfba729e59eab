"""Tenant erasure (``knowledge.services.erasure``) over the in-process store: a dry run deletes
nothing and its receipt equals the real erasure's; the real erasure leaves the tenant no base, item,
note, pin, index document or cached vector, and takes nothing of another tenant; a run that is cut
short (out of time, or failing midway) goes on from its stored place and counts each record once."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from knowledge.adapters.embedded.passages import EmbeddedIndex
from knowledge.adapters.embedding_cache import CachedEmbedder
from knowledge.adapters.runtime_switch import StaticRuntimeSwitch
from knowledge.contract.bundles import BundleWork
from knowledge.contract.erasure import ErasureRequest, ErasureResponse
from knowledge.domain.bundles import BundleJobStatus, BundleSelection
from knowledge.domain.erasure import IDS_KEPT, ErasurePhase
from knowledge.domain.models import Permission, Scope, Source
from knowledge.domain.retrieval.chunking import Chunker
from knowledge.errors import (
    DependencyUnavailableError,
    InsufficientScopeError,
    InvalidRequestError,
    RequestValidationError,
    ResourceUnavailableError,
)
from knowledge.ports import NoteIndex, SearchIndex
from knowledge.services.curation import CurationService
from knowledge.services.erasure import BATCH, ErasureService
from knowledge.services.indexing import IndexingService
from knowledge.services.tenant_jobs import JobAction
from tests.support.embedding import HashingEmbedder
from tests.unit.services.memory_world import ADMIN as MEMORY_ADMIN
from tests.unit.services.memory_world import READ, WRITE, agent
from tests.unit.services.test_bundles import SOURCE, TARGET, Deployment, ListQueue, seed

OPERATOR = agent("ops", Permission.ADMIN, MEMORY_ADMIN, READ, WRITE)


class ErasureWorld:
    """Two seeded tenants on one deployment, the knowledge index and the erasure service."""

    def __init__(
        self,
        *,
        extra_items: int = 0,
        seeded: bool = True,
        index_factory: Callable[[], SearchIndex] = EmbeddedIndex,
        history_factory: Callable[[], SearchIndex] = EmbeddedIndex,
        note_indexes: tuple[Callable[[], NoteIndex], Callable[[], NoteIndex]] | None = None,
    ) -> None:
        self.deployment = Deployment(held=lambda: self.indexing, note_indexes=note_indexes)
        world = self.deployment.world
        # Items are embedded into the cache the notes use, so the cache holds both.
        embedder = CachedEmbedder(HashingEmbedder(), world.cache)
        self.index: Any = index_factory()
        self.history: Any = history_factory()
        for index in (self.index, self.history):
            index.ensure_ready(model_id=embedder.model_id, dimension=embedder.dimension)
        chunker = Chunker(max_tokens=64, overlap_tokens=8)
        self.indexing = IndexingService(
            world.store, self.index, embedder, chunker, notes=world.indexing, history=self.history
        )
        self.curation = CurationService(
            world.store, self.indexing, StaticRuntimeSwitch(True), max_content_chars=100_000
        )
        self.queue = ListQueue()
        self.service = ErasureService(world.store, self.curation, world.notes, self.queue, world.clock)
        self.seeded = {tenant: seed(self.deployment, tenant) for tenant in (SOURCE, TARGET) if seeded}
        for number in range(extra_items):
            world.store.create_item(
                SOURCE,
                self.seeded[SOURCE]["handbook"],
                title=f"Extra {number}",
                content=f"Extra page {number} about pumps and tides.",
                source=Source(),
                external_id=None,
                publish=True,
            )
        for tenant in (SOURCE, TARGET):
            self.index_everything(tenant)

    @property
    def store(self) -> Any:
        return self.deployment.store

    def index_everything(self, tenant_id: str) -> None:
        for base in self.store.list_bases(tenant_id, limit=100, next_token=None).entries:
            for listing in (self.store.list_items, self.store.list_archived_items):
                for item in listing(tenant_id, base.knowledge_base_id, limit=100, next_token=None).entries:
                    self.indexing.sync_item(
                        tenant_id, item.knowledge_item_id, last_known_version=item.version
                    )
        self.deployment.world.sync()

    def snapshot(self, tenant_id: str) -> list[dict[str, Any]]:
        """Every record of the tenant (an export's lines, without its header)."""
        lines = self.deployment.service.bundle_lines(tenant_id, BundleSelection())
        return [json.loads(line) for line in lines][1:]

    def documents(self, tenant_id: str) -> set[str]:
        """The tenant's documents in the live and history knowledge indexes."""
        return {*self.index.document_ids(tenant_id), *self.history.document_ids(tenant_id)}

    def start(self, *, dry_run: bool) -> ErasureResponse:
        request = ErasureRequest(dry_run=dry_run, confirm_tenant_id=None if dry_run else SOURCE)
        return self.service.start(principal(), request)

    def run_all(self, seconds_left: Callable[[], float] | None = None) -> list[JobAction]:
        actions = []
        while self.queue.sent:
            work = self.queue.sent.pop(0)
            actions.append(self.service.run(work, seconds_left=seconds_left))
        return actions

    def erase(self, *, dry_run: bool) -> ErasureResponse:
        started = self.start(dry_run=dry_run)
        assert self.run_all() == [JobAction.ERASED]
        return self.service.get(principal(), started.erasure_id)


def principal(tenant_id: str = SOURCE, *scopes: Permission, **kwargs: Any) -> Any:
    chosen = scopes or (Permission.ADMIN, MEMORY_ADMIN, READ, WRITE)
    return agent("ops", *chosen, **kwargs).model_copy(update={"tenant_id": tenant_id})


def check_erasure(run: ErasureWorld) -> None:
    """The dry run deletes nothing and equals the real erasure's receipt; the real erasure leaves
    the tenant nothing in the table or either index, and the other tenant everything."""
    other, other_documents = run.snapshot(TARGET), run.documents(TARGET)
    before = {tenant: run.snapshot(tenant) for tenant in (SOURCE, TARGET)}
    documents = run.documents(SOURCE)
    assert documents
    assert before[SOURCE]

    preview = run.erase(dry_run=True)
    assert {tenant: run.snapshot(tenant) for tenant in (SOURCE, TARGET)} == before
    assert run.documents(SOURCE) == documents

    erased = run.erase(dry_run=False)
    assert (preview.dry_run, erased.dry_run) == (True, False)
    assert (preview.status, erased.status) == (BundleJobStatus.SUCCEEDED, BundleJobStatus.SUCCEEDED)
    assert preview.receipt.stores() == erased.receipt.stores()
    assert preview.erased == erased.erased
    seeded = run.seeded[SOURCE]
    assert erased.erased == {"item": 3, "knowledge_base": 2, "note": 5}
    table = {entry.kind: set(entry.ids) for entry in erased.receipt.table}
    assert table["knowledge_base"] == {seeded["handbook"], seeded["drafts"]}
    assert table["item"] == {seeded["item"], seeded["archived"], seeded["draft"]}
    assert {seeded["keyed"], seeded["superseded"], seeded["soft"]} <= table["note"]
    assert seeded["hard"] not in table["note"]  # hard-forgotten before: nothing of it is left
    assert {entry.kind for entry in erased.receipt.pins} == {"pin"}
    assert erased.receipt.embedding_cache
    assert erased.receipt.index
    assert run.snapshot(SOURCE) == [{"kind": "end", "counts": {}}]
    assert run.documents(SOURCE) == set()
    assert run.snapshot(TARGET) == other
    assert run.documents(TARGET) == other_documents


def check_reimport(run: ErasureWorld) -> None:
    """The tenant's own export, imported after its erasure, is all back and indexed again: the
    purge's tombstones in the indexes do not keep the restored records out (their versions move
    above them), and the search finds them."""
    world = run.deployment.world
    bundle = list(run.deployment.service.bundle_lines(SOURCE, BundleSelection()))
    items_before = run.index.document_ids(SOURCE)
    notes_before = world.index.document_ids(SOURCE)
    assert items_before
    assert notes_before
    keyed = run.seeded[SOURCE]["keyed"]
    item = run.seeded[SOURCE]["item"]
    reader = agent("alice", READ).model_copy(update={"tenant_id": SOURCE})
    found = world.found(reader, "blue pump seal replaced")
    assert found[:1] == ["The blue pump's seal was replaced."]
    run.erase(dry_run=False)
    for note_id in notes_before:  # the stream's removals, each at the version it deleted
        world.indexing.sync_note(
            SOURCE, note_id, last_known_version=world.index.held_version(SOURCE, note_id)
        )
    assert run.index.document_ids(SOURCE) == set()
    assert world.index.document_ids(SOURCE) == set()
    assert world.found(reader, "blue pump seal replaced") == []
    tombstones = (run.index.held_version(SOURCE, item), world.index.held_version(SOURCE, keyed))
    assert None not in tombstones

    progress = run.deployment.service.import_lines(SOURCE, bundle)

    assert progress is not None
    assert progress.conflicts == []
    assert not any(kind.endswith(".present") for kind in progress.counts)
    run.index_everything(SOURCE)
    for note in run.store.list_notes(SOURCE, limit=100, next_token=None).entries:
        world.indexing.sync_note(SOURCE, note.note_id, last_known_version=note.version)
    assert run.index.document_ids(SOURCE) == items_before
    assert world.index.document_ids(SOURCE) == notes_before
    assert world.found(reader, "blue pump seal replaced") == found
    restored_item, restored_note = run.store.get_item(SOURCE, item), run.store.get_note(SOURCE, keyed)
    assert restored_item is not None
    assert restored_note is not None
    assert restored_item.version > tombstones[0]
    assert restored_note.version > tombstones[1]
    records = [line for line in run.snapshot(SOURCE) if line["kind"] != "end"]
    assert len(records) == len(bundle) - 2


def test_a_dry_run_deletes_nothing_and_equals_the_real_erasures_receipt() -> None:
    check_erasure(ErasureWorld())


def test_the_erasure_leaves_the_tenant_nothing_and_takes_nothing_of_another() -> None:
    run = ErasureWorld()
    other = run.snapshot(TARGET)
    other_documents = run.documents(TARGET)
    cached_before = len(run.deployment.world.cache)

    erased = run.erase(dry_run=False)

    assert run.snapshot(SOURCE) == [{"kind": "end", "counts": {}}]
    assert run.store.list_notes(SOURCE, limit=100, next_token=None).entries == []
    assert run.store.list_pins(SOURCE, limit=100, next_token=None).entries == []
    assert run.documents(SOURCE) == set()
    assert run.snapshot(TARGET) == other
    assert run.documents(TARGET) == other_documents
    cached = sum(entry.count for entry in erased.receipt.embedding_cache)
    assert cached > 0
    assert len(run.deployment.world.cache) < cached_before
    counters = run.store.read_counters(SOURCE)
    assert (counters.stored, counters.notes, counters.content_bytes) == (0, 0, 0)
    assert run.store.read_counters(TARGET).stored > 0
    assert erased.phase is ErasurePhase.DONE
    assert erased.finished_at is not None


def test_an_erasure_out_of_time_goes_on_in_steps_and_counts_each_record_once() -> None:
    run = ErasureWorld(extra_items=2 * BATCH + 3)
    preview = run.erase(dry_run=True)
    started = run.start(dry_run=False)

    actions = run.run_all(seconds_left=lambda: 0)

    assert actions[-1] is JobAction.ERASED
    assert actions.count(JobAction.PAUSED) >= 3
    erased = run.service.get(principal(), started.erasure_id)
    assert erased.receipt.stores() == preview.receipt.stores()
    assert erased.erased == preview.erased == {"item": 2 * BATCH + 6, "knowledge_base": 2, "note": 5}
    items = next(entry for entry in erased.receipt.table if entry.kind == "item")
    assert (items.count, len(items.ids)) == (2 * BATCH + 6, min(IDS_KEPT, 2 * BATCH + 6))
    assert run.snapshot(SOURCE) == [{"kind": "end", "counts": {}}]


@pytest.mark.parametrize(
    ("service", "step", "failing_call"),
    [("curation", "carry_out_purge", 5), ("notes", "carry_out_purge", 2), ("curation", "delete_base", 1)],
    ids=["an-item", "a-note", "a-base-record"],
)
def test_an_erasure_failing_midway_is_retried_and_its_receipt_counts_each_record_once(
    monkeypatch: pytest.MonkeyPatch, service: str, step: str, failing_call: int
) -> None:
    run = ErasureWorld(extra_items=BATCH)
    preview = run.erase(dry_run=True)
    started = run.start(dry_run=False)
    work = run.queue.sent.pop()
    target = run.curation if service == "curation" else run.deployment.world.notes
    original = getattr(target, step)
    calls = {"n": 0}

    def failing(argument: Any) -> None:
        calls["n"] += 1
        if calls["n"] == failing_call:
            raise RuntimeError("the index went away")
        original(argument)

    monkeypatch.setattr(target, step, failing)
    with pytest.raises(RuntimeError):
        run.service.run(work)
    stuck = run.service.get(principal(), started.erasure_id)
    assert stuck.status is BundleJobStatus.RUNNING
    run.deployment.world.clock.advance(3600)  # the lease runs out: the redelivered message takes it
    assert run.service.run(work) is JobAction.ERASED

    erased = run.service.get(principal(), started.erasure_id)
    assert erased.receipt.stores() == preview.receipt.stores()
    assert erased.erased == preview.erased
    assert run.snapshot(SOURCE) == [{"kind": "end", "counts": {}}]


def test_a_base_deleted_before_its_turn_is_passed_over() -> None:
    run = ErasureWorld()
    chosen = run.seeded[SOURCE]["drafts"]
    started = run.service.start(principal(), ErasureRequest(dry_run=True, knowledge_base_ids=[chosen]))
    base = run.store.get_base(SOURCE, chosen)
    run.curation.purge_base(principal(), chosen, expected_version=base.version, dry_run=False)

    assert run.run_all() == [JobAction.ERASED]
    done = run.service.get(principal(), started.erasure_id)
    assert (done.erased, done.receipt.stores()["table"]) == ({}, [])


def test_an_erasure_failing_on_its_last_delivery_is_marked_failed(monkeypatch: pytest.MonkeyPatch) -> None:
    run = ErasureWorld()
    started = run.start(dry_run=False)

    def broken(plan: Any) -> None:
        raise RuntimeError("the index went away")

    monkeypatch.setattr(run.curation, "carry_out_purge", broken)
    assert run.service.run(run.queue.sent.pop(), give_up=True) is JobAction.FAILED
    failed = run.service.get(principal(), started.erasure_id)
    assert failed.status is BundleJobStatus.FAILED
    assert failed.error == "RuntimeError: the index went away"


def test_a_finished_or_unknown_erasure_is_skipped() -> None:
    run = ErasureWorld()
    started = run.start(dry_run=True)
    work = run.queue.sent[0]
    assert run.run_all() == [JobAction.ERASED]
    assert run.service.run(work) is JobAction.SKIPPED
    assert started.status is BundleJobStatus.QUEUED
    unknown = BundleWork(op="erase", tenant_id=SOURCE, job_id="er_01J9Z3K4QW5E6R7T8Y9V0A1B2C")
    assert run.service.run(unknown) is JobAction.SKIPPED


def test_a_real_erasure_needs_the_tenant_confirmed() -> None:
    run = ErasureWorld()
    for confirm in (None, TARGET):
        with pytest.raises(InvalidRequestError) as raised:
            run.service.start(principal(), ErasureRequest(confirm_tenant_id=confirm))
        assert raised.value.details == {"field": "confirm_tenant_id", "tenant_id": SOURCE}
    assert run.queue.sent == []


def test_a_dry_run_confirming_another_tenant_is_refused_too() -> None:
    run = ErasureWorld()
    with pytest.raises(InvalidRequestError, match="another tenant") as raised:
        run.service.start(principal(), ErasureRequest(dry_run=True, confirm_tenant_id=TARGET))
    assert raised.value.details == {"field": "confirm_tenant_id", "tenant_id": SOURCE}
    assert run.queue.sent == []
    confirmed = run.service.start(principal(), ErasureRequest(dry_run=True, confirm_tenant_id=SOURCE))
    assert confirmed.dry_run is True


@pytest.mark.parametrize(
    "caller",
    [
        principal(SOURCE, Permission.ADMIN, READ, WRITE),
        principal(SOURCE, MEMORY_ADMIN, READ, WRITE),
        principal(
            SOURCE, Permission.ADMIN, MEMORY_ADMIN, knowledge_base_ids=["kb_01J9Z3K4QW5E6R7T8Y9V0A1B2C"]
        ),
    ],
)
def test_only_a_tenant_administrator_may_erase_or_read_an_erasure(caller: Any) -> None:
    run = ErasureWorld()
    started = run.start(dry_run=True)
    with pytest.raises(InsufficientScopeError):
        run.service.start(caller, ErasureRequest(dry_run=True))
    with pytest.raises(InsufficientScopeError):
        run.service.get(caller, started.erasure_id)


def test_an_erasure_is_read_only_by_its_own_tenant_and_by_a_well_formed_id() -> None:
    run = ErasureWorld()
    started = run.start(dry_run=True)
    with pytest.raises(ResourceUnavailableError):
        run.service.get(principal(TARGET), started.erasure_id)
    with pytest.raises(ResourceUnavailableError):
        run.service.get(principal(), "er_01J9Z3K4QW5E6R7T8Y9V0A1B2C")
    with pytest.raises(RequestValidationError):
        run.service.get(principal(), "ex_01J9Z3K4QW5E6R7T8Y9V0A1B2C")


def test_an_erasure_without_a_queue_is_unavailable() -> None:
    run = ErasureWorld()
    service = ErasureService(
        run.store, run.curation, run.deployment.world.notes, None, run.deployment.world.clock
    )
    with pytest.raises(DependencyUnavailableError):
        service.start(principal(), ErasureRequest(dry_run=True))


def test_an_item_written_under_another_scope_is_erased_too() -> None:
    run = ErasureWorld()
    base = run.store.create_base(
        SOURCE, name="private", owner_id="someone", scope=Scope.PRIVATE, team_id=None
    )
    run.store.create_item(
        SOURCE,
        base.knowledge_base_id,
        title="Private",
        content="Only someone reads this.",
        source=Source(),
        external_id="p.md",
        publish=True,
    )
    erased = run.erase(dry_run=False)
    assert erased.erased["knowledge_base"] == 3
    assert run.snapshot(SOURCE) == [{"kind": "end", "counts": {}}]


def test_an_erasure_of_chosen_bases_erases_them_alone_and_equals_its_dry_run() -> None:
    run = ErasureWorld()
    chosen = run.seeded[SOURCE]["handbook"]
    before = run.snapshot(SOURCE)
    kept = [
        record
        for record in before
        if not (record["kind"] == "base" and record["base"]["knowledge_base_id"] == chosen)
        and not (record["kind"] == "item" and record["item"]["knowledge_base_id"] == chosen)
    ]

    def erase(dry_run: bool) -> ErasureResponse:
        request = ErasureRequest(
            dry_run=dry_run, confirm_tenant_id=None if dry_run else SOURCE, knowledge_base_ids=[chosen]
        )
        started = run.service.start(principal(), request)
        assert started.knowledge_base_ids == [chosen]
        assert run.run_all() == [JobAction.ERASED]
        return run.service.get(principal(), started.erasure_id)

    preview = erase(dry_run=True)
    assert run.snapshot(SOURCE) == before
    erased = erase(dry_run=False)

    assert preview.receipt.stores() == erased.receipt.stores()
    assert erased.erased == {"item": 2, "knowledge_base": 1}  # the live item and the archived one
    after = run.snapshot(SOURCE)
    assert after[:-1] == kept[:-1]
    assert after[-1]["counts"]["note"] == before[-1]["counts"]["note"]


def test_an_erasure_of_an_unknown_base_is_unavailable() -> None:
    run = ErasureWorld()
    request = ErasureRequest(dry_run=True, knowledge_base_ids=["kb_01J9Z3K4QW5E6R7T8Y9V0A1B2C"])
    with pytest.raises(ResourceUnavailableError):
        run.service.start(principal(), request)
    assert run.queue.sent == []


def test_an_erased_tenants_own_export_imports_back_and_is_indexed_again() -> None:
    check_reimport(ErasureWorld())
