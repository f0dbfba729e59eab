"""Export and import (DESIGN §9 "Export and import"): a tenant's knowledge and memory as a JSONL
bundle (``knowledge.contract.bundles`` gives its lines), taken out with history and provenance and
put into another tenant or deployment.

Access: both need ``knowledge:admin`` and ``memory:admin`` (``platform:admin`` implies them) and a
token without a base allow-list: a bundle holds every note and base of the tenant, whoever owns
them, so only a tenant administrator may take one out or put one in.

Jobs: ``POST /v1/exports`` stores a ``queued`` job and sends ``BundleWork`` to the document queue;
its consumer (``run``) writes the bundle to the bundle bucket and records counts and size. An
import is created ``awaiting_upload`` with a presigned PUT; its start queues it, and ``run`` reads
the bundle line by line. A job is taken by a worker when ``queued``, or ``running`` with its lease
(``lease_seconds`` from the worker's take) run out; on the message's last delivery a job that still
fails is marked ``failed``. An export runs within one invocation; an import stores its progress
every ``CHECKPOINT_LINES`` lines and, out of time, hands on to a next step that goes on after the
last line stored. Both are idempotent: an export run again writes the same bundle, an import run
again finds what it wrote ``present``.

Import: each record is restored as exported (ids, versions, timestamps kept) when the tenant has
no record of its id (``BundleStore``), so importing a bundle twice changes nothing the second
time. A record whose external id or semantic key another record of the tenant holds is a
conflict: left out and named in the job. Vectors are put in the embedding cache, which every
tenant shares, only on a platform administrator's import and only when the bundle's model and
dimension are the deployment's (``CachedEmbedder.keep`` then stores usable vectors for keys it
does not hold); otherwise the indexer embeds the imported texts with the deployment's model. A
record whose id the indexes hold a tombstone of is restored with its versions moved above it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import timedelta
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from pydantic import ValidationError

from knowledge.contract.bundles import (
    BUNDLE_FORMAT_VERSION,
    CONFLICTS_KEPT,
    BundleEnd,
    BundleHeader,
    BundleJobResponse,
    BundleWork,
    ExportRequest,
)
from knowledge.domain import ids
from knowledge.domain.as_of import ItemState
from knowledge.domain.bundles import BundleJob, BundleJobKind, BundleJobStatus, BundleSelection
from knowledge.domain.memory.notes import Note, path_ancestors
from knowledge.domain.memory.pins import Pin
from knowledge.domain.models import (
    ItemStatus,
    KnowledgeBase,
    KnowledgeItem,
    Page,
    Permission,
    Principal,
    Revision,
)
from knowledge.errors import (
    ConflictError,
    DependencyUnavailableError,
    InvalidRequestError,
    ResourceUnavailableError,
    StoredItemsQuotaError,
)
from knowledge.observability import logger
from knowledge.ports import (
    BundleBucket,
    Clock,
    SyncWorkQueue,
    VectorCache,
)
from knowledge.services.access import require_tenant_admin
from knowledge.services.tenant_jobs import JobAction, TenantStore, take

if TYPE_CHECKING:  # the chunker loads tiktoken: only an export with vectors needs it
    from knowledge.domain.retrieval.chunking import Chunker

PAGE_LIMIT = 100
"""Records read per listing call."""
CHUNK_BYTES = 1 << 20
"""Bundle bytes handed to the bucket at a time."""
VECTORS_PER_LINE = 100
URL_SECONDS = 3600
"""How long a presigned download or upload stays valid."""
CHECKPOINT_LINES = 500
"""An import stores its progress every this many lines."""
T = TypeVar("T")
R = TypeVar("R")
V = TypeVar("V", KnowledgeItem, Note)
H = TypeVar("H", ItemState, Note)


@dataclass
class ImportProgress:
    """An import so far: counts by ``<kind>.<outcome>``, conflicts, the bundle lines applied
    (header included) and the bytes read."""

    counts: dict[str, int]
    conflicts: list[str]
    lines_done: int = 0
    bytes_read: int = 0


class BundleFormatError(ValueError):
    """A bundle that is not what the format says; ``line`` is the 1-based number of the line at
    fault (0: the bundle itself). The import fails with this message as its ``error``."""

    def __init__(self, message: str, line: int) -> None:
        super().__init__(f"{message} (line {line})" if line else message)
        self.line = line


class ImportRefusedError(BundleFormatError):
    """A well-formed record the tenant cannot take, which no retry changes: an item whose base is
    neither in the bundle nor in the tenant, or the tenant's stored items quota used up. The
    import fails at once with this message and the line; the records before it stay imported."""


class HeldVersions(Protocol):
    """The highest version the search indexes hold for a record, live or a tombstone (0 for
    none): ``IndexingService`` over ``SearchIndex.held_version`` and ``NoteIndex.held_version``."""

    def held_item_version(self, tenant_id: str, knowledge_item_id: str) -> int: ...

    def held_note_version(self, tenant_id: str, note_id: str) -> int: ...


class BundleService:
    """Export and import jobs of the caller's tenant (see the module doc).

    ``vectors`` is the deployment's embedding cache, ``None`` where there is none (vectors are
    then neither exported nor kept); ``chunker`` splits revisions as the indexer does, so exported
    vectors are keyed by the texts the indexer embeds. ``held`` gives the versions the indexes
    hold (``None``: none are read, and records keep their versions). ``bucket`` or ``queue``
    ``None``: exports and imports are ``DependencyUnavailableError`` (503).
    """

    def __init__(
        self,
        store: TenantStore,
        bucket: BundleBucket | None,
        queue: SyncWorkQueue | None,
        clock: Clock,
        *,
        vectors: Callable[[], VectorCache | None],
        chunker: Callable[[], Chunker],
        held: Callable[[], HeldVersions | None] = lambda: None,
        lease_seconds: int = 900,
    ) -> None:
        self._store = store
        self._bucket = bucket
        self._queue = queue
        self._clock = clock
        self._vectors = vectors
        self._chunker = chunker
        self._held = held
        self._lease = timedelta(seconds=lease_seconds)

    # -- the API side ------------------------------------------------------------------------------

    def start_export(self, principal: Principal, request: ExportRequest) -> BundleJobResponse:
        """Store a ``queued`` export and queue it. ``ResourceUnavailableError`` (404) when a chosen
        base does not exist."""
        tenant_id = self.authorize(principal)
        selection = request.selection()
        if selection.knowledge_base_ids:
            found = self._store.get_bases(tenant_id, list(selection.knowledge_base_ids))
            if len(found) != len(selection.knowledge_base_ids):
                raise ResourceUnavailableError()
        job_id = ids.new_export_id()
        job = BundleJob(
            tenant_id=tenant_id,
            job_id=job_id,
            kind=BundleJobKind.EXPORT,
            status=BundleJobStatus.QUEUED,
            requested_by=principal.subject_id,
            selection=selection,
            object_key=_object_key(tenant_id, job_id),
            created_at=self._clock(),
        )
        queue = self._require_queue()
        self._store.create_bundle_job(job)
        queue.send(BundleWork(op="export", tenant_id=tenant_id, job_id=job_id))
        logger.info("export queued", extra={"tenant_id": tenant_id, "job_id": job_id})
        return BundleJobResponse.of(job)

    def create_import(self, principal: Principal) -> BundleJobResponse:
        """Store an import ``awaiting_upload``; the answer's ``upload_url`` takes the bundle (PUT)."""
        tenant_id = self.authorize(principal)
        bucket = self._require_bucket()
        self._require_queue()
        job_id = ids.new_import_id()
        now = self._clock()
        job = BundleJob(
            tenant_id=tenant_id,
            job_id=job_id,
            kind=BundleJobKind.IMPORT,
            status=BundleJobStatus.AWAITING_UPLOAD,
            requested_by=principal.subject_id,
            object_key=_object_key(tenant_id, job_id),
            created_at=now,
            keep_vectors=Permission.PLATFORM_ADMIN.value in principal.scopes,
        )
        self._store.create_bundle_job(job)
        return BundleJobResponse.of(
            job,
            upload_url=bucket.upload_url(job.object_key, expires_in=URL_SECONDS),
            url_expires_at=now + timedelta(seconds=URL_SECONDS),
        )

    def start_import(self, principal: Principal, import_id: str) -> BundleJobResponse:
        """Queue an import whose bundle was uploaded. Idempotent: a started import answers as it
        stands. ``InvalidRequestError`` (400) when nothing was uploaded yet."""
        job = self._job(principal, import_id, BundleJobKind.IMPORT)
        if job.status is not BundleJobStatus.AWAITING_UPLOAD:
            return BundleJobResponse.of(job)
        bucket = self._require_bucket()
        queue = self._require_queue()
        if bucket.lines(job.object_key) is None:
            raise InvalidRequestError(
                "Upload the bundle to the import's upload_url (PUT) before starting it.",
                {"import_id": import_id},
            )
        job = self._store.put_bundle_job(
            job.model_copy(update={"status": BundleJobStatus.QUEUED}), expected_version=job.version
        )
        queue.send(BundleWork(op="import", tenant_id=job.tenant_id, job_id=job.job_id))
        logger.info("import queued", extra={"tenant_id": job.tenant_id, "job_id": job.job_id})
        return BundleJobResponse.of(job)

    def get_job(self, principal: Principal, job_id: str, kind: BundleJobKind) -> BundleJobResponse:
        """The job; a succeeded export with a fresh ``download_url``, an import awaiting its upload
        with a fresh ``upload_url``."""
        job = self._job(principal, job_id, kind)
        now = self._clock()
        expires = now + timedelta(seconds=URL_SECONDS)
        if job.kind is BundleJobKind.EXPORT and job.status is BundleJobStatus.SUCCEEDED:
            url = self._require_bucket().download_url(job.object_key, expires_in=URL_SECONDS)
            return BundleJobResponse.of(job, download_url=url, url_expires_at=expires)
        if job.status is BundleJobStatus.AWAITING_UPLOAD:
            url = self._require_bucket().upload_url(job.object_key, expires_in=URL_SECONDS)
            return BundleJobResponse.of(job, upload_url=url, url_expires_at=expires)
        return BundleJobResponse.of(job)

    # -- the worker side ---------------------------------------------------------------------------

    def run(
        self, work: BundleWork, *, give_up: bool = False, seconds_left: Callable[[], float] | None = None
    ) -> JobAction:
        """Run the job ``work`` names (see the module doc). An import stores its progress every
        ``CHECKPOINT_LINES`` lines and, once ``seconds_left()`` is spent, queues its next step and
        answers ``PAUSED``. Raises the store's and bucket's errors for a retry (a retried import goes
        on from its last checkpoint), except on the last delivery (``give_up``), where the job is
        marked ``failed``."""
        kinds = (BundleJobKind.EXPORT, BundleJobKind.IMPORT)
        job = take(self._store, work.tenant_id, work.job_id, kinds, now=self._clock(), lease=self._lease)
        if job is None:
            return JobAction.SKIPPED
        try:
            if job.kind is BundleJobKind.EXPORT:
                counts, conflicts, size = self._export(job)
                action = JobAction.EXPORTED
            else:
                progress = self._import(job, seconds_left)
                if progress is None:
                    return JobAction.PAUSED
                counts, conflicts, size = progress.counts, progress.conflicts, progress.bytes_read
                action = JobAction.IMPORTED
        except BundleFormatError as error:
            self._finish(work, error=str(error))
            return JobAction.FAILED
        except Exception as error:
            if not give_up:
                raise
            self._finish(work, error=f"{type(error).__name__}: {error}")
            return JobAction.FAILED
        self._finish(work, counts=counts, conflicts=conflicts, size=size)
        return action

    def _finish(
        self,
        work: BundleWork,
        *,
        counts: dict[str, int] | None = None,
        conflicts: list[str] | None = None,
        size: int = 0,
        error: str | None = None,
    ) -> None:
        job = self._store.get_bundle_job(work.tenant_id, work.job_id)
        if job is None:
            return
        update: dict[str, Any] = {
            "status": BundleJobStatus.FAILED if error else BundleJobStatus.SUCCEEDED,
            "finished_at": self._clock(),
            "lease_until": None,
            "error": error,
        }
        if error is None:
            kept = tuple((conflicts or [])[:CONFLICTS_KEPT])
            update |= {"counts": counts or {}, "conflicts": kept, "bytes": size}
        self._store.put_bundle_job(job.model_copy(update=update), expected_version=job.version)
        logger.info(
            "bundle job finished",
            extra={"tenant_id": job.tenant_id, "job_id": job.job_id, "error": error, "bytes": size},
        )

    # -- export ------------------------------------------------------------------------------------

    def _export(self, job: BundleJob) -> tuple[dict[str, int], list[str], int]:
        counts: dict[str, int] = {}
        size = self._require_bucket().upload(
            job.object_key, _chunked(self.bundle_lines(job.tenant_id, job.selection, counts))
        )
        return counts, [], size

    def bundle_lines(
        self, tenant_id: str, selection: BundleSelection, counts: dict[str, int] | None = None
    ) -> Iterator[str]:
        """The bundle of ``tenant_id``'s records ``selection`` takes, one JSON line at a time (each
        ending in a newline); ``counts`` (when given) is filled with the records by kind."""
        counts = {} if counts is None else counts
        vectors = self._vectors() if selection.include_vectors else None
        embedding = {} if vectors is None else {"model_id": vectors.model_id, "dimension": vectors.dimension}
        header = BundleHeader(
            format_version=BUNDLE_FORMAT_VERSION,
            tenant_id=tenant_id,
            exported_at=self._clock(),
            embedding=embedding,
            selection=selection,
        )
        yield header.model_dump_json() + "\n"
        texts: list[str] = []
        bases = self._bases(tenant_id, selection)
        for base in bases:
            counts["base"] = counts.get("base", 0) + 1
            yield _line({"kind": "base", "base": _record(base)})
        for base in bases:
            for item, revisions, states in self._items(tenant_id, base.knowledge_base_id):
                line, embedded = self._item_line(item, revisions, states, want_texts=vectors is not None)
                texts.extend(embedded)
                counts["item"] = counts.get("item", 0) + 1
                yield line
        if selection.include_notes:
            yield from self._note_lines(tenant_id, selection.path_prefix, counts, texts if vectors else None)
        if vectors is not None:
            for start in range(0, len(texts), VECTORS_PER_LINE * 10):
                found = vectors.cached(texts[start : start + VECTORS_PER_LINE * 10])
                keys = sorted(found)
                for first in range(0, len(keys), VECTORS_PER_LINE):
                    part = {key: found[key] for key in keys[first : first + VECTORS_PER_LINE]}
                    counts["vectors"] = counts.get("vectors", 0) + len(part)
                    yield _line({"kind": "vectors", "vectors": part})
        yield BundleEnd(counts=dict(sorted(counts.items()))).model_dump_json() + "\n"

    def _note_lines(
        self, tenant_id: str, path_prefix: str | None, counts: dict[str, int], texts: list[str] | None
    ) -> Iterator[str]:
        """The notes under ``path_prefix`` with their versions, then their pins; the texts of
        readable notes are added to ``texts`` (when given) for their vectors."""
        note_ids: set[str] = set()
        now = self._clock()
        for note in self._notes(tenant_id, path_prefix):
            note_ids.add(note.note_id)
            if texts is not None and note.is_readable(now):
                texts.append(note.content)
            counts["note"] = counts.get("note", 0) + 1
            yield _line(
                {
                    "kind": "note",
                    "note": _record(note, drop=("indexed_version",)),
                    "versions": [
                        _record(version, drop=("indexed_version",))
                        for version in self._note_versions(tenant_id, note.note_id)
                    ],
                }
            )
        for pin in sorted(self._pins(tenant_id), key=lambda pin: pin.note_id):
            if pin.note_id in note_ids:
                counts["pin"] = counts.get("pin", 0) + 1
                yield _line({"kind": "pin", "pin": _record(pin)})

    def _bases(self, tenant_id: str, selection: BundleSelection) -> list[KnowledgeBase]:
        if selection.knowledge_base_ids is not None:
            found = self._store.get_bases(tenant_id, list(selection.knowledge_base_ids))
            return [found[key] for key in sorted(found)]
        listed = _every(lambda token: self._store.list_bases(tenant_id, limit=PAGE_LIMIT, next_token=token))
        return sorted(listed, key=lambda base: base.knowledge_base_id)

    def _items(
        self, tenant_id: str, knowledge_base_id: str
    ) -> Iterator[tuple[KnowledgeItem, list[tuple[Revision, str]], list[ItemState]]]:
        """The base's items by id, live and archived (an archived item's past still answers
        ``as_of``), each read whole: the listings may trail the table, so each is read again,
        strongly consistent, and one purged meanwhile is left out."""
        ids_listed: set[str] = set()
        for listing in (self._store.list_items, self._store.list_archived_items):
            ids_listed.update(
                item.knowledge_item_id
                for item in _every(partial(_page_of, listing, tenant_id, knowledge_base_id))
            )
        for knowledge_item_id in sorted(ids_listed):
            whole = self._store.item_records(tenant_id, knowledge_item_id)
            if whole is not None:
                yield whole

    def _item_line(
        self,
        item: KnowledgeItem,
        revisions: list[tuple[Revision, str]],
        states: list[ItemState],
        *,
        want_texts: bool,
    ) -> tuple[str, list[str]]:
        entries = []
        texts: list[str] = []
        for revision, content in revisions:
            record = _record(revision, drop=("page_size", "page_count"))
            entries.append({"revision": record, "content": content})
            if want_texts and revision.knowledge_revision_id == item.current_revision_id:
                from knowledge.domain.retrieval.chunking import embedding_text

                texts.extend(
                    embedding_text(revision.title, chunk.text) for chunk in self._chunker().split(content)
                )
        line = _line(
            {
                "kind": "item",
                "item": _record(item, drop=("indexed_revision_id",)),
                "revisions": entries,
                "states": [_record(state) for state in states],
            }
        )
        return line, texts

    def _notes(self, tenant_id: str, path_prefix: str | None) -> Iterator[Note]:
        listed = _every(lambda token: self._store.list_notes(tenant_id, limit=PAGE_LIMIT, next_token=token))
        return (note for note in listed if path_prefix is None or path_prefix in path_ancestors(note.path))

    def _note_versions(self, tenant_id: str, note_id: str) -> list[Note]:
        def read(token: str | None) -> Page[Note]:
            return self._store.list_note_versions(tenant_id, note_id, limit=PAGE_LIMIT, next_token=token)

        versions = _every(read)
        return sorted(versions, key=lambda version: version.version)

    def _pins(self, tenant_id: str) -> Iterator[Pin]:
        return _every(lambda token: self._store.list_pins(tenant_id, limit=PAGE_LIMIT, next_token=token))

    # -- import ------------------------------------------------------------------------------------

    def _import(self, job: BundleJob, seconds_left: Callable[[], float] | None) -> ImportProgress | None:
        """The import's run from its last checkpoint; ``None`` when it paused (next step queued)."""
        lines = self._require_bucket().lines(job.object_key)
        if lines is None:
            raise BundleFormatError("The import's bundle is gone from the bucket; upload it again.", 0)
        stored = job

        def checkpoint(progress: ImportProgress) -> bool:
            nonlocal stored
            # Out of time hands on, but only after a line of this run: every step moves on.
            moved = progress.lines_done > job.lines_done
            out_of_time = moved and seconds_left is not None and seconds_left() <= 0
            if progress.lines_done % CHECKPOINT_LINES and not out_of_time:
                return False
            update: dict[str, Any] = {
                "counts": dict(sorted(progress.counts.items())),
                "conflicts": tuple(progress.conflicts[:CONFLICTS_KEPT]),
                "lines_done": progress.lines_done,
            }
            if out_of_time:  # handed on: the next step takes it as queued
                update |= {"status": BundleJobStatus.QUEUED, "lease_until": None}
            stored = self._store.put_bundle_job(
                stored.model_copy(update=update), expected_version=stored.version
            )
            return out_of_time

        resumed = ImportProgress(
            counts=dict(job.counts), conflicts=list(job.conflicts), lines_done=job.lines_done
        )
        progress = self.import_lines(
            job.tenant_id, lines, keep_vectors=job.keep_vectors, resume=resumed, after_line=checkpoint
        )
        if progress is None:
            self._require_queue().send(BundleWork(op="import", tenant_id=job.tenant_id, job_id=job.job_id))
            logger.info(
                "import paused",
                extra={"tenant_id": job.tenant_id, "job_id": job.job_id, "lines": stored.lines_done},
            )
        return progress

    def import_lines(
        self,
        tenant_id: str,
        lines: Iterable[bytes | str],
        *,
        keep_vectors: bool = False,
        resume: ImportProgress | None = None,
        after_line: Callable[[ImportProgress], bool] | None = None,
    ) -> ImportProgress | None:
        """Restore a bundle's records into ``tenant_id`` (see the module doc): the counts by
        ``<kind>.imported`` / ``.present`` / ``.conflicts`` (and ``vectors.kept`` /
        ``vectors.ignored``), the conflicting records named ``<kind>:<id>`` and the bytes read.
        ``keep_vectors``: the bundle's vectors may go into the embedding cache every tenant shares
        (an import by a platform administrator); otherwise they are ignored and the indexer embeds
        the texts. ``resume`` goes on after the lines it counts done (the header is read again);
        ``after_line(progress)`` runs after each applied line and stops the import by answering
        true (``None`` is answered then). ``BundleFormatError`` for a bundle that is not the
        format's, its end line's counts included, and ``ImportRefusedError`` for a record the
        tenant cannot take (records before the line at fault stay imported: the bundle imported
        again finds them present)."""
        progress = resume or ImportProgress(counts={}, conflicts=[])
        skipped = progress.lines_done
        progress.bytes_read = 0
        vectors: VectorCache | None = None
        number = 0
        header: BundleHeader | None = None
        end: BundleEnd | None = None
        for raw in lines:
            number += 1
            progress.bytes_read += len(raw) + 1
            text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
            if not text.strip() or (header is not None and number <= skipped):
                continue
            if end is not None:
                raise BundleFormatError("A bundle has nothing after its end line.", number)
            document = _parsed(text, number)
            if header is None:
                header, vectors = self._header(document, number, keep_vectors=keep_vectors)
            elif isinstance(document, dict) and document.get("kind") == "end":
                end = _checked(BundleEnd.model_validate, document, number)
                _check_counts(end, progress.counts, number)
            else:
                self._apply(progress, tenant_id, document, number, vectors)
            progress.lines_done = max(progress.lines_done, number)
            if after_line is not None and end is None and after_line(progress):
                return None
        if header is None or end is None:
            raise BundleFormatError("The bundle was cut short: it has no end line (export it again).", number)
        progress.counts = dict(sorted(progress.counts.items()))
        return progress

    def _apply(
        self,
        progress: ImportProgress,
        tenant_id: str,
        document: Any,
        number: int,
        vectors: VectorCache | None,
    ) -> None:
        """Restore record line ``number`` (or keep a ``vectors`` line's vectors) into ``progress``."""
        if isinstance(document, dict) and document.get("kind") == "vectors":
            moved = _checked(partial(_kept, vectors), document, number)
            conflict = None
        else:
            counter, amount, conflict = _checked(partial(self._restore, tenant_id), document, number)
            moved = {counter: amount}
        for counter, amount in moved.items():
            if amount:
                progress.counts[counter] = progress.counts.get(counter, 0) + amount
        if conflict is not None:
            progress.conflicts.append(conflict)

    def _header(
        self, document: Any, number: int, *, keep_vectors: bool
    ) -> tuple[BundleHeader, VectorCache | None]:
        """The bundle's header, and the embedding cache when the import may keep the bundle's
        vectors and they are this deployment's model's (``None``: its vectors are not kept)."""
        header = _checked(BundleHeader.model_validate, document, number)
        if header.format_version != BUNDLE_FORMAT_VERSION:
            raise BundleFormatError(
                f"Bundle format version {header.format_version} is not supported "
                f"(this service reads {BUNDLE_FORMAT_VERSION}).",
                number,
            )
        vectors = self._vectors() if header.embedding and keep_vectors else None
        if vectors is None:
            return header, None
        same = header.embedding == {"model_id": vectors.model_id, "dimension": vectors.dimension}
        return header, vectors if same else None

    def _restore(self, tenant_id: str, document: Any) -> tuple[str, int, str | None]:
        """Restore one record line: the counter it moves (``<kind>.imported``, ``.present``,
        ``.conflicts``), by how much, and the conflicting record's name."""
        if not isinstance(document, dict):
            raise TypeError("a bundle line is a JSON object")
        kind = document.get("kind")
        mine = {"tenant_id": tenant_id}
        if kind == "base":
            base = KnowledgeBase.model_validate(document["base"] | mine)
            return _outcome("base", self._store.restore_base(base))
        if kind == "item":
            return self._restore_item(document, mine)
        if kind == "note":
            note = Note.model_validate(document["note"] | mine)
            versions = [Note.model_validate(version | mine) for version in document["versions"]]
            if any(version.note_id != note.note_id for version in versions):
                raise ValueError("a note's versions must carry its note_id")
            floor = self._floor(lambda held: held.held_note_version(tenant_id, note.note_id))
            note, versions = _above(floor, note, versions)
            try:
                return _outcome("note", self._store.restore_note(note, versions))
            except ConflictError:
                return "note.conflicts", 1, f"note:{note.note_id}"
        if kind == "pin":
            return self._restore_pin(Pin.model_validate(document["pin"] | mine))
        raise ValueError(f"unknown record kind {kind!r}")

    def _restore_pin(self, pin: Pin) -> tuple[str, int, str | None]:
        """A pin whose note the tenant does not hold (the note was a conflict, or is not in the
        bundle) is a conflict, named by its note."""
        if self._store.get_note(pin.tenant_id, pin.note_id) is None:
            return "pin.conflicts", 1, f"pin:{pin.note_id}"
        return _outcome("pin", self._store.restore_pin(pin))

    def _restore_item(self, document: dict[str, Any], mine: dict[str, str]) -> tuple[str, int, str | None]:
        item = KnowledgeItem.model_validate(document["item"] | mine)
        # the page layout is the importing store's own (``BundleStore.restore_item``)
        layout = {"page_size": 1, "page_count": 0}
        revisions = [
            (Revision.model_validate(entry["revision"] | mine | layout), _text(entry["content"]))
            for entry in document["revisions"]
        ]
        states = [ItemState.model_validate(state | mine) for state in document["states"]]
        _check_item(item, revisions)
        floor = self._floor(lambda held: held.held_item_version(item.tenant_id, item.knowledge_item_id))
        item, states = _above(floor, item, states)
        try:
            return _outcome("item", self._store.restore_item(item, revisions, states))
        except ConflictError:
            return "item.conflicts", 1, f"item:{item.knowledge_item_id}"
        except ResourceUnavailableError:
            raise ImportRefusedError(
                f"The item {item.knowledge_item_id}'s knowledge base {item.knowledge_base_id} is neither in "
                "the bundle before it nor in the tenant.",
                0,
            ) from None

    def _floor(self, read: Callable[[HeldVersions], int]) -> int:
        """What ``read`` gives of the indexes' held versions (0 without ``held``)."""
        held = self._held()
        return 0 if held is None else read(held)

    # -- helpers -----------------------------------------------------------------------------------

    def authorize(self, principal: Principal) -> str:
        """The caller's tenant when it may export and import (see the module doc), else
        ``InsufficientScopeError`` (403)."""
        return require_tenant_admin(principal, "export and import hold every base and note of the tenant")

    def _job(self, principal: Principal, job_id: str, kind: BundleJobKind) -> BundleJob:
        tenant_id = self.authorize(principal)
        prefix = ids.EXPORT_PREFIX if kind is BundleJobKind.EXPORT else ids.IMPORT_PREFIX
        ids.require_well_formed(job_id, prefix, f"{kind.value}_id")
        job = self._store.get_bundle_job(tenant_id, job_id)
        if job is None or job.kind is not kind:
            raise ResourceUnavailableError()
        return job

    def _require_bucket(self) -> BundleBucket:
        if self._bucket is None:
            raise DependencyUnavailableError("Exports and imports need the bundle bucket (BUNDLE_BUCKET).")
        return self._bucket

    def _require_queue(self) -> SyncWorkQueue:
        if self._queue is None:
            raise DependencyUnavailableError(
                "Exports and imports need the document queue (DOCUMENT_QUEUE_URL)."
            )
        return self._queue


def _every(read: Callable[[str | None], Page[T]]) -> Iterator[T]:
    """Every entry of a listing, page after page (``read(next_token)``)."""
    token: str | None = None
    while True:
        page = read(token)
        yield from page.entries
        if page.next_token is None:
            return
        token = page.next_token


def _above(floor: int, record: V, history: list[H]) -> tuple[V, list[H]]:
    """``record`` and its ``history`` (an item and its states, a note and its versions) as
    restored: every version moved by the same amount so the lowest is above ``floor``, the version
    the indexes still hold for the record's id (its tombstone when it was purged, forgotten for
    good or erased here), which would refuse it; unchanged when the lowest already is."""
    shift = max(floor + 1 - min(record.version, *(entry.version for entry in history)), 0)
    if not shift:
        return record, history
    logger.debug("restored versions moved above the index's", extra={"held_version": floor, "shift": shift})
    moved = [entry.model_copy(update={"version": entry.version + shift}) for entry in history]
    return record.model_copy(update={"version": record.version + shift}), moved


def _page_of(
    listing: Callable[..., Page[KnowledgeItem]], tenant_id: str, knowledge_base_id: str, token: str | None
) -> Page[KnowledgeItem]:
    return listing(tenant_id, knowledge_base_id, limit=PAGE_LIMIT, next_token=token)


def _object_key(tenant_id: str, job_id: str) -> str:
    return f"bundles/{tenant_id}/{job_id}.jsonl"


def _record(model: Any, drop: tuple[str, ...] = ()) -> dict[str, Any]:
    record: dict[str, Any] = model.model_dump(mode="json", exclude={"tenant_id", *drop})
    return record


def _line(document: dict[str, Any]) -> str:
    return json.dumps(document, ensure_ascii=False, separators=(",", ":")) + "\n"


def _chunked(lines: Iterable[str]) -> Iterator[bytes]:
    buffer: list[bytes] = []
    size = 0
    for line in lines:
        data = line.encode("utf-8")
        buffer.append(data)
        size += len(data)
        if size >= CHUNK_BYTES:
            yield b"".join(buffer)
            buffer, size = [], 0
    if buffer:
        yield b"".join(buffer)


def _check_counts(end: BundleEnd, counts: dict[str, int], number: int) -> None:
    """``BundleFormatError`` unless the end line counts the records the import met, kind by kind
    (imported, present and conflicting together): a bundle changed after its export."""
    for kind in ("base", "item", "note", "pin"):
        met = sum(counts.get(f"{kind}.{outcome}", 0) for outcome in ("imported", "present", "conflicts"))
        said = end.counts.get(kind, 0)
        if met != said:
            raise BundleFormatError(
                f"The end line counts {said} {kind} records but the bundle holds {met}: it was changed "
                "after its export (export it again).",
                number,
            )


def _kept(vectors: VectorCache | None, document: dict[str, Any]) -> dict[str, int]:
    """Put a ``vectors`` line's vectors into the embedding cache (``vectors`` ``None``: the
    import may not, or they are another model's): ``vectors.kept`` counts those stored,
    ``vectors.ignored`` the others (the cache held the text already, or the vector is not a
    finite, non-zero one of the model's dimension)."""
    found = document["vectors"]
    if not isinstance(found, dict):
        raise TypeError("vectors must be an object of cache keys to vectors")
    kept = 0 if vectors is None else vectors.keep(found)
    return {"vectors.kept": kept, "vectors.ignored": len(found) - kept}


def _outcome(kind: str, written: bool) -> tuple[str, int, None]:
    return f"{kind}.imported" if written else f"{kind}.present", 1, None


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError("a revision's content must be a string")
    return value


def _check_item(item: KnowledgeItem, revisions: list[tuple[Revision, str]]) -> None:
    """The item's revisions must be its own and hold its current and latest revisions."""
    own = {revision.knowledge_revision_id for revision, _ in revisions}
    if any(revision.knowledge_item_id != item.knowledge_item_id for revision, _ in revisions):
        raise ValueError("an item's revisions must carry its knowledge_item_id")
    needed = {item.latest_revision_id} | ({item.current_revision_id} if item.current_revision_id else set())
    if not needed <= own:
        raise ValueError("an item's line must hold its current and latest revisions")
    if item.status is ItemStatus.PUBLISHED and item.current_revision_id is None:
        raise ValueError("a published item names its current revision")


def _parsed(text: str, number: int) -> Any:
    try:
        return json.loads(text)
    except ValueError as error:
        raise BundleFormatError(f"Not JSON: {error}", number) from None


def _checked(read: Callable[[Any], R], document: Any, number: int) -> R:
    """``read(document)``, a malformed record raised as ``BundleFormatError`` of line ``number``
    and a record the tenant cannot take as ``ImportRefusedError`` of that line; the store's other
    errors pass through (the job is retried)."""
    try:
        return read(document)
    except ImportRefusedError as error:
        raise ImportRefusedError(str(error), number) from None
    except StoredItemsQuotaError as error:
        raise ImportRefusedError(
            f"{error} The records before this line are imported; import the bundle again once there is room.",
            number,
        ) from None
    except BundleFormatError:
        raise
    except (ValueError, KeyError, TypeError, ValidationError) as error:
        raise BundleFormatError(f"Not a bundle record: {_problem(error)}", number) from None


def _problem(error: Exception) -> str:
    if isinstance(error, ValidationError):
        first = error.errors(include_input=False, include_url=False)[0]
        return f"{'.'.join(str(part) for part in first['loc'])}: {first['msg']}"
    return str(error)
