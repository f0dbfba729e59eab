"""Tenant erasure (DESIGN §12 "Tenant erasure"): every base, item and note of the caller's tenant
deleted for good, as a job with a status and a receipt, or counted only (a dry run).

Access: ``knowledge:admin`` and ``memory:admin`` on a token without a base allow-list (an erasure
reaches every base and note of the tenant, whoever owns them). A real erasure also needs
``confirm_tenant_id`` equal to the caller's tenant.

Job: ``POST /v1/erasures`` stores a ``queued`` job and sends ``BundleWork(op="erase")`` to the
document queue; its consumer (``run``) walks the tenant (``knowledge.domain.erasure``):

1. ``bases``: for each base of the tenant when the job started, by id, its live items, then its
   archived items, each purged as ``CurationService.purge_item`` does (table records, live and
   history index documents, cached embeddings), ``BATCH`` at a time; then the base record and its
   documents left in the index;
2. ``notes``: every note, forgotten and superseded ones too, deleted as a hard forget does
   (versions, claims, pin, cached embeddings; the stream removes its index entries).

Each batch's receipts are added to the job's tally and stored, with the batch's records as
``pending``, before the batch is deleted; a run that stops midway (an error, a lost worker) is
taken again from the queue and first deletes what is pending, so the receipt counts each record
once. Out of time (``seconds_left``), a run stores its place and queues the next step. A dry run
walks the same records and deletes nothing; its receipt equals the real erasure's for the same
state. Records written while an erasure runs may survive it (a base created after it started is
not walked): run it again.

With ``knowledge_base_ids``, only those bases are walked (their items, then their records) and no
note: a base purge as a job, for a base too large for the API's 29 s.

Kept: the tenant's tokens, quotas and rate counters, its data sources' configurations (a source
whose base is gone fails its next sync), export bundles in the bundle bucket (the bucket expires
them after 7 days) and the jobs' own records (this one is the receipt).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

from knowledge.contract.bundles import BundleWork
from knowledge.contract.deletion import DeletionReceipt, records
from knowledge.contract.erasure import ErasureRequest, ErasureResponse
from knowledge.domain import ids
from knowledge.domain.bundles import BundleJob, BundleJobKind, BundleJobStatus
from knowledge.domain.erasure import ErasurePhase, ErasureProgress, TallyEntry, added
from knowledge.domain.models import KnowledgeBase, KnowledgeItem, Principal
from knowledge.errors import DependencyUnavailableError, InvalidRequestError, ResourceUnavailableError
from knowledge.observability import logger
from knowledge.ports import Clock, SyncWorkQueue
from knowledge.services.access import require_tenant_admin
from knowledge.services.curation import CurationService
from knowledge.services.notes import NoteService
from knowledge.services.tenant_jobs import JobAction, TenantStore, take

BATCH = 25
"""Items or notes deleted per stored step."""
WHY = "an erasure deletes every base and note of the tenant"
LIVE, ARCHIVED, RECORD = "live", "archived", "record"
"""Where the ``bases`` phase is in the current base: its live items, its archived items, its record."""


class ErasureService:
    """Tenant erasures (see the module doc). ``queue`` ``None``: ``DependencyUnavailableError``
    (503) on a start."""

    def __init__(
        self,
        store: TenantStore,
        curation: CurationService,
        notes: NoteService,
        queue: SyncWorkQueue | None,
        clock: Clock,
        *,
        lease_seconds: int = 900,
    ) -> None:
        self._store = store
        self._curation = curation
        self._notes = notes
        self._queue = queue
        self._clock = clock
        self._lease = timedelta(seconds=lease_seconds)

    # -- the API side ------------------------------------------------------------------------------

    def authorize(self, principal: Principal) -> str:
        """The caller's tenant when it may erase it, else ``InsufficientScopeError`` (403)."""
        return require_tenant_admin(principal, WHY)

    def start(self, principal: Principal, request: ErasureRequest) -> ErasureResponse:
        """Store a ``queued`` erasure of the caller's tenant (or of the bases the request chooses)
        and queue it. ``InvalidRequestError`` (400) for a real erasure without ``confirm_tenant_id``
        equal to the caller's tenant, and for any ``confirm_tenant_id`` naming another tenant (a
        dry run too); ``ResourceUnavailableError`` (404) when a chosen base does
        not exist."""
        tenant_id = self.authorize(principal)
        if request.confirm_tenant_id is not None and request.confirm_tenant_id != tenant_id:
            raise InvalidRequestError(
                "confirm_tenant_id names another tenant than the token's (details.tenant_id): "
                "nothing is erased or counted with a token of the wrong tenant.",
                {"field": "confirm_tenant_id", "tenant_id": tenant_id},
            )
        if not request.dry_run and request.confirm_tenant_id != tenant_id:
            raise InvalidRequestError(
                "An erasure deletes every base, item and note of the tenant for good: set "
                "confirm_tenant_id to your tenant id (details.tenant_id), or dry_run to true to "
                "see what would go.",
                {"field": "confirm_tenant_id", "tenant_id": tenant_id},
            )
        progress = ErasureProgress(dry_run=request.dry_run)
        if request.knowledge_base_ids is not None:
            chosen = sorted(set(request.knowledge_base_ids))
            if len(self._store.get_bases(tenant_id, chosen)) != len(chosen):
                raise ResourceUnavailableError()
            progress = progress.model_copy(update={"base_ids": tuple(chosen), "chosen_bases": True})
        queue = self._require_queue()
        job = BundleJob(
            tenant_id=tenant_id,
            job_id=ids.new_erasure_id(),
            kind=BundleJobKind.ERASE,
            status=BundleJobStatus.QUEUED,
            requested_by=principal.subject_id,
            created_at=self._clock(),
            erasure=progress,
        )
        self._store.create_bundle_job(job)
        queue.send(BundleWork(op="erase", tenant_id=tenant_id, job_id=job.job_id))
        logger.info(
            "erasure queued",
            extra={"tenant_id": tenant_id, "job_id": job.job_id, "dry_run": request.dry_run},
        )
        return ErasureResponse.of(job)

    def get(self, principal: Principal, erasure_id: str) -> ErasureResponse:
        """The erasure as it stands. ``InvalidRequestError`` (400) for a malformed id,
        ``ResourceUnavailableError`` (404) for one of no erasure of the caller's tenant."""
        tenant_id = self.authorize(principal)
        ids.require_well_formed(erasure_id, ids.ERASURE_PREFIX, "erasure_id")
        job = self._store.get_bundle_job(tenant_id, erasure_id)
        if job is None or job.kind is not BundleJobKind.ERASE:
            raise ResourceUnavailableError()
        return ErasureResponse.of(job)

    # -- the worker side ---------------------------------------------------------------------------

    def run(
        self, work: BundleWork, *, give_up: bool = False, seconds_left: Callable[[], float] | None = None
    ) -> JobAction:
        """Run the erasure ``work`` names (see the module doc). Raises the stores' and indexes'
        errors for a retry (the retry deletes what is pending, then goes on), except on the
        message's last delivery (``give_up``), where the job is marked ``failed``."""
        job = take(
            self._store,
            work.tenant_id,
            work.job_id,
            (BundleJobKind.ERASE,),
            now=self._clock(),
            lease=self._lease,
        )
        if job is None:
            return JobAction.SKIPPED
        walk = _Walk(self, job)
        try:
            finished = walk.run(seconds_left)
        except Exception as error:
            if not give_up:
                raise
            walk.save(
                status=BundleJobStatus.FAILED,
                finished_at=self._clock(),
                lease_until=None,
                error=f"{type(error).__name__}: {error}",
            )
            logger.warning("erasure failed", extra={"tenant_id": job.tenant_id, "job_id": job.job_id})
            return JobAction.FAILED
        if not finished:
            walk.save(status=BundleJobStatus.QUEUED, lease_until=None)
            self._require_queue().send(BundleWork(op="erase", tenant_id=job.tenant_id, job_id=job.job_id))
            logger.info("erasure paused", extra={"tenant_id": job.tenant_id, "job_id": job.job_id})
            return JobAction.PAUSED
        walk.save(status=BundleJobStatus.SUCCEEDED, finished_at=self._clock(), lease_until=None)
        logger.info(
            "erasure finished",
            extra={"tenant_id": job.tenant_id, "job_id": job.job_id, "erased": walk.progress.records},
        )
        return JobAction.ERASED

    def _require_queue(self) -> SyncWorkQueue:
        if self._queue is None:
            raise DependencyUnavailableError("Erasures need the document queue (DOCUMENT_QUEUE_URL).")
        return self._queue


class _Walk:
    """One run of an erasure: the job as last stored and its progress."""

    def __init__(self, service: ErasureService, job: BundleJob) -> None:
        self._store = service._store
        self._curation = service._curation
        self._notes = service._notes
        self.job = job
        self.tenant_id = job.tenant_id
        self.progress = job.erasure or ErasureProgress()

    def save(self, **update: Any) -> None:
        """Store the job with the current progress (and ``update``), on its version."""
        self.job = self._store.put_bundle_job(
            self.job.model_copy(update={"erasure": self.progress, **update}),
            expected_version=self.job.version,
        )

    def run(self, seconds_left: Callable[[], float] | None) -> bool:
        """Walk on from the stored place; false when out of time before the end (after at least
        one step of this run)."""
        if self.progress.pending:
            self._finish_pending()
        if self.progress.base_ids is None:
            self._move(base_ids=tuple(sorted(base.knowledge_base_id for base in self._bases())))
            self.save()
        moved = False
        while self.progress.phase is not ErasurePhase.DONE:
            if moved and seconds_left is not None and seconds_left() <= 0:
                return False
            if self.progress.phase is ErasurePhase.BASES:
                self._base_step()
            else:
                self._notes_step()
            moved = True
        return True

    @property
    def _dry_run(self) -> bool:
        return self.progress.dry_run

    def _move(self, **update: Any) -> None:
        self.progress = self.progress.model_copy(update=update)

    def _base_step(self) -> None:
        progress = self.progress
        assert progress.base_ids is not None
        if progress.base_index >= len(progress.base_ids):
            after = ErasurePhase.DONE if progress.chosen_bases else ErasurePhase.NOTES
            self._move(phase=after, base_index=0, stage=LIVE, next_token=None)
            return
        base_id = progress.base_ids[progress.base_index]
        base = self._store.get_base(self.tenant_id, base_id)
        if base is None:  # gone meanwhile
            self._move(base_index=progress.base_index + 1, stage=LIVE, next_token=None)
            return
        if progress.stage == RECORD:
            receipt = DeletionReceipt(
                dry_run=self._dry_run, table=records("knowledge_base", [base_id], "purged")
            )
            self._record(
                [entries_of(receipt)],
                pending=[f"base:{base_id}"],
                kind="knowledge_base",
                base_index=progress.base_index + 1,
                stage=LIVE,
                next_token=None,
            )
            if not self._dry_run:
                self._curation.delete_base(base)
            return
        listing = self._store.list_archived_items if progress.stage == ARCHIVED else self._store.list_items
        page = listing(self.tenant_id, base_id, limit=BATCH, next_token=progress.next_token)
        plans = [self._curation.purge_plan(item) for item in self._fresh_items(page.entries)]
        if page.next_token is not None:
            place: dict[str, Any] = {"next_token": page.next_token}
        else:
            place = {"stage": RECORD if progress.stage == ARCHIVED else ARCHIVED, "next_token": None}
        self._record(
            [entries_of(plan.receipt(dry_run=self._dry_run)) for plan in plans],
            pending=[f"item:{plan.item.knowledge_item_id}" for plan in plans],
            kind="item",
            **place,
        )
        if not self._dry_run:
            for plan in plans:
                self._curation.carry_out_purge(plan)

    def _notes_step(self) -> None:
        page = self._store.list_notes(self.tenant_id, limit=BATCH, next_token=self.progress.next_token)
        found = self._store.get_notes(self.tenant_id, [note.note_id for note in page.entries])
        plans = [self._notes.purge_plan(found[key]) for key in sorted(found)]
        place: dict[str, Any] = {"next_token": page.next_token}
        if page.next_token is None:
            place = {"phase": ErasurePhase.DONE, "next_token": None}
        self._record(
            [entries_of(plan.receipt) for plan in plans],
            pending=[f"note:{plan.note.note_id}" for plan in plans],
            kind="note",
            **place,
        )
        if not self._dry_run:
            for plan in plans:
                self._notes.carry_out_purge(plan)

    def _record(
        self, entries: list[list[TallyEntry]], *, pending: list[str], kind: str, **place: Any
    ) -> None:
        """Add a step's receipts to the tally, move to ``place`` and store it, with the step's
        records ``pending`` (a real run deletes them next)."""
        tally = self.progress.tally
        for receipt in entries:
            tally = added(tally, receipt)
        counted = dict(self.progress.records)
        if pending:
            counted[kind] = counted.get(kind, 0) + len(pending)
        self._move(tally=tally, records=counted, pending=() if self._dry_run else tuple(pending), **place)
        self.save()

    def _finish_pending(self) -> None:
        """Delete what the last stored step counted and may not have deleted (a real run's)."""
        for entry in self.progress.pending:
            kind, _, record_id = entry.partition(":")
            if kind == "item":
                item = self._store.get_item(self.tenant_id, record_id)
                if item is not None:
                    self._curation.carry_out_purge(self._curation.purge_plan(item))
            elif kind == "note":
                note = self._store.get_note(self.tenant_id, record_id)
                if note is not None:
                    self._notes.carry_out_purge(self._notes.purge_plan(note))
            else:
                base = self._store.get_base(self.tenant_id, record_id)
                if base is not None:
                    self._curation.delete_base(base)
        self._move(pending=())
        self.save()

    def _bases(self) -> list[KnowledgeBase]:
        bases: list[KnowledgeBase] = []
        token: str | None = None
        while True:
            page = self._store.list_bases(self.tenant_id, limit=100, next_token=token)
            bases.extend(page.entries)
            token = page.next_token
            if token is None:
                return bases

    def _fresh_items(self, listed: list[KnowledgeItem]) -> list[KnowledgeItem]:
        """The listed items as stored now (the listing may trail the table), by id."""
        found = self._store.get_items(self.tenant_id, [item.knowledge_item_id for item in listed])
        return [found[key] for key in sorted(found)]


def entries_of(receipt: DeletionReceipt) -> list[TallyEntry]:
    """A receipt's records as tally entries."""
    return [
        TallyEntry(store=store, kind=entry.kind, state=entry.state, count=entry.count, ids=tuple(entry.ids))
        for store, kept in receipt.stores().items()
        for entry in kept
    ]
