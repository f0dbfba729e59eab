"""The ``KnowledgeStore`` port in process memory: the services' fake in unit tests, held to the same
contract suite as the DynamoDB store (``tests/integration/store_contract``).

Records are the frozen domain models themselves, so nothing a caller holds can change what is
stored. Each method runs under one lock, so every write is atomic as a DynamoDB conditional write
or transaction is: a write conditioned on a version that moved on is ``ConflictError`` carrying the
stored version, a write to an absent or archived record ``ResourceUnavailableError``. The rules of
each change come from ``knowledge.domain.lifecycle``, as in the DynamoDB store. A listing's
``next_token`` (``knowledge.adapters.next_tokens``) holds ``{"l": listing, "k": last id}``, and a
token of another listing or tenant is ``RequestValidationError``. Nothing is persisted, and two
stores share nothing.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from knowledge.adapters.dynamodb import keys
from knowledge.adapters.in_process.listing import found as _found
from knowledge.adapters.in_process.listing import page as _page
from knowledge.adapters.in_process.notes import InProcessNoteStore
from knowledge.domain import ids, lifecycle
from knowledge.domain.access.rates import QuotaCounters, Rate, RateDecision, content_bytes
from knowledge.domain.as_of import ItemState, item_state
from knowledge.domain.bundles import BundleJob
from knowledge.domain.models import (
    BaseStatus,
    ContentWindow,
    ItemStatus,
    KnowledgeBase,
    KnowledgeItem,
    Page,
    Revision,
    Scope,
    Source,
    TokenRecord,
)
from knowledge.domain.retrieval.truth import CandidateKey, CandidateRecords
from knowledge.domain.segments import Segment
from knowledge.errors import ConflictError, DependencyUnavailableError, ResourceUnavailableError
from knowledge.ports import Clock

if TYPE_CHECKING:
    from knowledge.ports import KnowledgeStore

_RACE_LOST = "The record was changed by another writer; re-read it and retry with its current version."
_JOB_RACE_LOST = "The job was changed by another worker; re-read it."


def _utc_now() -> datetime:
    return datetime.now(UTC)


class InProcessKnowledgeStore(InProcessNoteStore):
    """Bases, items, revisions and their content, tokens, notes and pins (``memory_notes``) in dictionaries.

    ``clock`` returns aware UTC datetimes; ``page_size_chars`` (1..90,000, else ``ValueError``) is
    recorded on new revisions as the DynamoDB store records its page size; ``stored_items_limit``
    caps each tenant's live knowledge items and notes (0: counted, not capped).
    """

    def __init__(
        self,
        *,
        clock: Clock | None = None,
        page_size_chars: int = lifecycle.DEFAULT_PAGE_SIZE_CHARS,
        stored_items_limit: int = 0,
    ) -> None:
        self._clock = clock or _utc_now
        self._page_size = lifecycle.check_page_size(page_size_chars)
        self._lock = threading.RLock()
        self._bases: dict[tuple[str, str], KnowledgeBase] = {}
        self._items: dict[tuple[str, str], KnowledgeItem] = {}
        self._revisions: dict[tuple[str, str, str], Revision] = {}
        self._item_states: dict[tuple[str, str], list[ItemState]] = {}
        self._contents: dict[tuple[str, str, str], str] = {}
        self._external_ids: dict[tuple[str, str, str], str] = {}
        self._tokens: dict[str, TokenRecord] = {}
        self._bundle_jobs: dict[tuple[str, str], BundleJob] = {}
        self._quotas: dict[tuple[str, str], tuple[int, int]] = {}
        """``(tenant, quota)`` → ``(theoretical arrival time, expires_at)``."""
        self._init_notes(stored_items_limit)

    # Bases

    def create_base(
        self, tenant_id: str, *, name: str, owner_id: str, scope: Scope, team_id: str | None
    ) -> KnowledgeBase:
        with self._lock:
            base = lifecycle.new_base(
                tenant_id, name=name, owner_id=owner_id, scope=scope, team_id=team_id, now=self._clock()
            )
            self._bases[tenant_id, base.knowledge_base_id] = base
            return base

    def update_base(
        self,
        tenant_id: str,
        knowledge_base_id: str,
        *,
        expected_version: int,
        status: BaseStatus | None = None,
        name: str | None = None,
    ) -> KnowledgeBase:
        with self._lock:
            base = self._bases.get((tenant_id, knowledge_base_id))
            if base is None:
                raise ResourceUnavailableError()
            if base.version != expected_version:
                raise ConflictError(_RACE_LOST, current_version=base.version)
            updated = lifecycle.updated_base(base, status=status, name=name, now=self._clock())
            self._bases[tenant_id, knowledge_base_id] = updated
            return updated

    def delete_base(self, tenant_id: str, knowledge_base_id: str, *, expected_version: int) -> None:
        with self._lock:
            base = self._bases.get((tenant_id, knowledge_base_id))
            if base is None:
                raise ResourceUnavailableError()
            if base.version != expected_version:
                raise ConflictError(_RACE_LOST, current_version=base.version)
            del self._bases[tenant_id, knowledge_base_id]

    def get_base(self, tenant_id: str, knowledge_base_id: str) -> KnowledgeBase | None:
        with self._lock:
            return self._bases.get((tenant_id, knowledge_base_id))

    def get_bases(self, tenant_id: str, knowledge_base_ids: Sequence[str]) -> dict[str, KnowledgeBase]:
        with self._lock:
            return _found(self._bases, tenant_id, knowledge_base_ids)

    def list_bases(self, tenant_id: str, *, limit: int, next_token: str | None) -> Page[KnowledgeBase]:
        with self._lock:
            bases = [base for (tenant, _), base in self._bases.items() if tenant == tenant_id]
        return _page(f"bases:{tenant_id}", bases, _base_id, limit=limit, next_token=next_token)

    # Items and revisions

    def create_item(
        self,
        tenant_id: str,
        knowledge_base_id: str,
        *,
        title: str,
        content: str,
        source: Source,
        external_id: str | None,
        publish: bool,
        segments: tuple[Segment, ...] = (),
    ) -> tuple[KnowledgeItem, Revision]:
        with self._lock:
            if (tenant_id, knowledge_base_id) not in self._bases:
                raise ResourceUnavailableError()
            if external_id is not None:
                holder = self._find_by_external_id(tenant_id, knowledge_base_id, external_id)
                if holder is not None:
                    raise ConflictError(
                        "An item with this external_id already exists in the knowledge base.",
                        current_version=holder.version,
                    )
            revision = self._new_revision(
                tenant_id, knowledge_base_id, ids.new_item_id(), title, source, content, publish, segments
            )
            item = lifecycle.new_item(revision, external_id=external_id, publish=publish)
            self._count_stored(tenant_id, 1)
            self._seal(revision, content, item)
            if external_id is not None:
                self._external_ids[tenant_id, knowledge_base_id, external_id] = item.knowledge_item_id
            return item, revision

    def add_revision(
        self,
        tenant_id: str,
        knowledge_item_id: str,
        *,
        content: str,
        title: str | None,
        source: Source | None,
        publish: bool,
        expected_version: int | None,
        segments: tuple[Segment, ...] = (),
    ) -> tuple[KnowledgeItem, Revision]:
        with self._lock:
            item = lifecycle.writable_item(self._items.get((tenant_id, knowledge_item_id)), expected_version)
            latest = self._revisions.get((tenant_id, knowledge_item_id, item.latest_revision_id))
            title, source = lifecycle.revision_defaults(item, latest, title=title, source=source)
            revision = self._new_revision(
                tenant_id,
                item.knowledge_base_id,
                knowledge_item_id,
                title,
                source,
                content,
                publish,
                segments,
            )
            updated = lifecycle.revised_item(item, revision, publish=publish, now=revision.created_at)
            self._seal(revision, content, updated)
            return updated, revision

    def publish_revision(
        self, tenant_id: str, knowledge_item_id: str, knowledge_revision_id: str, *, expected_version: int
    ) -> KnowledgeItem:
        with self._lock:
            item = lifecycle.writable_item(self._items.get((tenant_id, knowledge_item_id)), expected_version)
            key = (tenant_id, knowledge_item_id, knowledge_revision_id)
            revision = self._revisions.get(key)
            if revision is None:
                raise ResourceUnavailableError()
            now = self._clock()
            if revision.published_at is None:
                self._revisions[key] = revision.model_copy(update={"published_at": now})
            updated = lifecycle.published_item(item, revision, now=now)
            self._put_item(updated)
            return updated

    def archive_item(self, tenant_id: str, knowledge_item_id: str, *, expected_version: int) -> KnowledgeItem:
        with self._lock:
            item = lifecycle.writable_item(self._items.get((tenant_id, knowledge_item_id)), expected_version)
            archived = lifecycle.archived_item(item, now=self._clock())
            self._put_item(archived)
            self._count_stored(tenant_id, -1)
            if item.external_id is not None:
                self._external_ids.pop((tenant_id, item.knowledge_base_id, item.external_id), None)
            return archived

    def purge_item(self, tenant_id: str, knowledge_item_id: str, *, expected_version: int) -> None:
        with self._lock:
            item = self._items.get((tenant_id, knowledge_item_id))
            if item is None:
                raise ResourceUnavailableError()
            if item.version != expected_version:
                raise ConflictError(_RACE_LOST, current_version=item.version)
            del self._items[tenant_id, knowledge_item_id]
            if item.status is not ItemStatus.ARCHIVED:
                self._count_stored(tenant_id, -1)
            if item.external_id is not None:
                guard = (tenant_id, item.knowledge_base_id, item.external_id)
                if self._external_ids.get(guard) == knowledge_item_id:
                    del self._external_ids[guard]
            self._item_states.pop((tenant_id, knowledge_item_id), None)
            for key in [key for key in self._revisions if key[:2] == (tenant_id, knowledge_item_id)]:
                del self._revisions[key]
                self._count_bytes(tenant_id, -content_bytes(self._contents.pop(key, "")))

    def set_indexed_revision(
        self,
        tenant_id: str,
        knowledge_item_id: str,
        knowledge_revision_id: str | None,
        *,
        expected_version: int | None = None,
    ) -> None:
        with self._lock:
            item = self._items.get((tenant_id, knowledge_item_id))
            if item is None:
                raise ResourceUnavailableError()
            if expected_version is not None and item.version != expected_version:
                if item.status is ItemStatus.ARCHIVED:
                    raise ResourceUnavailableError()
                raise ConflictError(_RACE_LOST, current_version=item.version)
            self._items[tenant_id, knowledge_item_id] = item.model_copy(
                update={"indexed_revision_id": knowledge_revision_id}
            )

    def list_unindexed_items(self, tenant_id: str, *, limit: int) -> list[KnowledgeItem]:
        if limit < 1:
            raise ValueError("limit must be at least 1")
        with self._lock:
            pending = [
                item
                for (tenant, _), item in self._items.items()
                if tenant == tenant_id
                and item.status is ItemStatus.PUBLISHED
                and item.current_revision_id is not None
                and item.indexed_revision_id != item.current_revision_id
            ]
        pending.sort(key=lambda item: item.knowledge_item_id, reverse=True)
        return pending[:limit]

    def get_item(self, tenant_id: str, knowledge_item_id: str) -> KnowledgeItem | None:
        with self._lock:
            return self._items.get((tenant_id, knowledge_item_id))

    def get_items(self, tenant_id: str, knowledge_item_ids: Sequence[str]) -> dict[str, KnowledgeItem]:
        with self._lock:
            return _found(self._items, tenant_id, knowledge_item_ids)

    def find_item_by_external_id(
        self, tenant_id: str, knowledge_base_id: str, external_id: str
    ) -> KnowledgeItem | None:
        with self._lock:
            return self._find_by_external_id(tenant_id, knowledge_base_id, external_id)

    def list_items(
        self, tenant_id: str, knowledge_base_id: str, *, limit: int, next_token: str | None
    ) -> Page[KnowledgeItem]:
        listing = f"items:{tenant_id}:{knowledge_base_id}"
        items = self._base_items(tenant_id, knowledge_base_id, archived=False)
        return _page(listing, items, _item_id, limit=limit, next_token=next_token)

    def list_archived_items(
        self, tenant_id: str, knowledge_base_id: str, *, limit: int, next_token: str | None
    ) -> Page[KnowledgeItem]:
        listing = f"archived:{tenant_id}:{knowledge_base_id}"
        items = self._base_items(tenant_id, knowledge_base_id, archived=True)
        return _page(listing, items, _item_id, limit=limit, next_token=next_token)

    def _base_items(self, tenant_id: str, knowledge_base_id: str, *, archived: bool) -> list[KnowledgeItem]:
        """The base's archived items, or its other ones."""
        with self._lock:
            return [
                item
                for (tenant, _), item in self._items.items()
                if tenant == tenant_id
                and item.knowledge_base_id == knowledge_base_id
                and (item.status is ItemStatus.ARCHIVED) == archived
            ]

    def get_revision(
        self, tenant_id: str, knowledge_item_id: str, knowledge_revision_id: str
    ) -> Revision | None:
        with self._lock:
            return self._revisions.get((tenant_id, knowledge_item_id, knowledge_revision_id))

    def get_revisions(
        self, tenant_id: str, keys: Sequence[tuple[str, str]]
    ) -> dict[tuple[str, str], Revision]:
        with self._lock:
            found = (self._revisions.get((tenant_id, item_id, revision_id)) for item_id, revision_id in keys)
            return {
                (revision.knowledge_item_id, revision.knowledge_revision_id): revision
                for revision in found
                if revision is not None
            }

    def read_candidates(self, tenant_id: str, candidates: Sequence[CandidateKey]) -> CandidateRecords:
        with self._lock:
            return CandidateRecords(
                items=_found(self._items, tenant_id, [key.knowledge_item_id for key in candidates]),
                bases=_found(self._bases, tenant_id, [key.knowledge_base_id for key in candidates]),
                revisions=self.get_revisions(
                    tenant_id, [(key.knowledge_item_id, key.knowledge_revision_id) for key in candidates]
                ),
            )

    def list_revisions(
        self, tenant_id: str, knowledge_item_id: str, *, limit: int, next_token: str | None
    ) -> Page[Revision]:
        with self._lock:
            revisions = [
                revision
                for (tenant, item_id, _), revision in self._revisions.items()
                if (tenant, item_id) == (tenant_id, knowledge_item_id)
            ]
        listing = f"revisions:{tenant_id}:{knowledge_item_id}"
        return _page(listing, revisions, _revision_id, limit=limit, next_token=next_token, newest_first=True)

    # Content

    def read_content(self, revision: Revision, *, offset: int, limit: int) -> ContentWindow:
        end = lifecycle.content_window(revision, offset=offset, limit=limit)
        text = self.read_all_content(revision)[offset:end] if end > offset else ""
        return ContentWindow(text=text, offset=offset, limit=limit, total_chars=revision.total_chars)

    def read_all_content(self, revision: Revision) -> str:
        with self._lock:
            content = self._contents.get(
                (revision.tenant_id, revision.knowledge_item_id, revision.knowledge_revision_id)
            )
        if content is None or not lifecycle.matches(revision, content):
            raise DependencyUnavailableError("The knowledge store returned inconsistent content.")
        return content

    # Tokens

    def put_token(self, record: TokenRecord) -> None:
        with self._lock:
            stored = self._tokens.setdefault(record.token_hash, record)
        if stored != record:
            raise ConflictError(_RACE_LOST, current_version=None)

    def get_token(self, token_hash: str) -> TokenRecord | None:
        with self._lock:
            return self._tokens.get(token_hash)

    def get_tokens(self, token_hashes: Sequence[str]) -> dict[str, TokenRecord]:
        with self._lock:
            return {
                token_hash: self._tokens[token_hash]
                for token_hash in dict.fromkeys(token_hashes)
                if token_hash in self._tokens
            }

    def list_tokens(
        self,
        tenant_id: str,
        *,
        limit: int,
        next_token: str | None,
        admits: Callable[[TokenRecord], bool] | None = None,
    ) -> Page[TokenRecord]:
        with self._lock:
            tokens = [
                record
                for record in self._tokens.values()
                if record.tenant_id == tenant_id and (admits is None or admits(record))
            ]
        return _page(f"tokens:{tenant_id}", tokens, _token_order, limit=limit, next_token=next_token)

    def revoke_token(self, token_hash: str) -> None:
        with self._lock:
            record = self._tokens.get(token_hash)
            if record is None:
                raise ResourceUnavailableError()
            self._tokens[token_hash] = record.model_copy(update={"revoked": True})

    # Quotas

    def consume_rate(
        self, tenant_id: str, quota: str, rate: Rate, *, now: int, expires_at: int, expect_idle: bool
    ) -> RateDecision:
        """``rate.decide`` on the kept arrival time, under the store's lock; records past their
        ``expires_at`` are dropped, as DynamoDB's TTL would. ``expect_idle`` changes nothing here."""
        keys.quota_key(tenant_id, quota)  # the same key rules as the table
        with self._lock:
            seconds = self._clock().timestamp()
            for key in [key for key, (_, expiry) in self._quotas.items() if expiry < seconds]:
                del self._quotas[key]
            kept = self._quotas.get((tenant_id, quota))
            decision = rate.decide(kept[0] if kept else None, now)
            if decision.admitted:
                self._quotas[(tenant_id, quota)] = (decision.tat, expires_at)
            return decision

    def read_counters(self, tenant_id: str) -> QuotaCounters:
        """The kept arrival times (unexpired) and counts; a note counts until it is deleted or its
        expiry is counted out, as on the table."""
        with self._lock:
            seconds = self._clock().timestamp()
            arrivals = {
                quota: tat
                for (tenant, quota), (tat, expiry) in self._quotas.items()
                if tenant == tenant_id and expiry >= seconds
            }
            stored = max(0, self._stored_items.get(tenant_id, 0))
            notes = sum(
                1
                for (tenant, note_id) in self._notes
                if tenant == tenant_id and (tenant, note_id) not in self._expiry_counted
            )
            return QuotaCounters(
                arrivals=arrivals,
                stored=stored,
                notes=min(stored, notes),
                content_bytes=max(0, self._stored_bytes.get(tenant_id, 0)),
            )

    # Internals (callers hold the lock)

    def _new_revision(
        self,
        tenant_id: str,
        knowledge_base_id: str,
        knowledge_item_id: str,
        title: str,
        source: Source,
        content: str,
        publish: bool,
        segments: tuple[Segment, ...],
    ) -> Revision:
        return lifecycle.new_revision(
            tenant_id,
            knowledge_base_id,
            knowledge_item_id,
            title=title,
            source=source,
            content=content,
            page_size=self._page_size,
            publish=publish,
            now=self._clock(),
            segments=segments,
        )

    def _seal(self, revision: Revision, content: str, item: KnowledgeItem) -> None:
        key = (revision.tenant_id, revision.knowledge_item_id, revision.knowledge_revision_id)
        self._contents[key] = content
        self._revisions[key] = revision
        self._count_bytes(revision.tenant_id, content_bytes(content))
        self._put_item(item)

    def _put_item(self, item: KnowledgeItem) -> None:
        """Store ``item`` at its new version with the state it records (callers hold the lock)."""
        self._items[item.tenant_id, item.knowledge_item_id] = item
        self._item_states.setdefault((item.tenant_id, item.knowledge_item_id), []).append(item_state(item))

    # Export and import

    def restore_base(self, base: KnowledgeBase) -> bool:
        with self._lock:
            key = (base.tenant_id, base.knowledge_base_id)
            if key in self._bases:
                return False
            self._bases[key] = base
            return True

    def restore_item(
        self, item: KnowledgeItem, revisions: Sequence[tuple[Revision, str]], states: Sequence[ItemState]
    ) -> bool:
        tenant_id, item_id = item.tenant_id, item.knowledge_item_id
        with self._lock:
            if (tenant_id, item_id) in self._items:
                return False
            if (tenant_id, item.knowledge_base_id) not in self._bases:
                raise ResourceUnavailableError()
            live = item.status is not ItemStatus.ARCHIVED
            external_id = item.external_id if live else None
            base_id = item.knowledge_base_id
            if external_id is not None and self._find_by_external_id(tenant_id, base_id, external_id):
                raise ConflictError("Another item of the base holds this external_id.", current_version=None)
            paged = [
                (lifecycle.repaged_revision(revision, content, self._page_size), content)
                for revision, content in revisions
            ]
            if live:
                self._count_stored(tenant_id, 1)
            self._count_bytes(tenant_id, sum(content_bytes(content) for _, content in paged))
            for revision, content in paged:
                key = (tenant_id, item_id, revision.knowledge_revision_id)
                self._revisions[key] = revision
                self._contents[key] = content
            self._items[tenant_id, item_id] = item.model_copy(update={"indexed_revision_id": None})
            self._item_states[tenant_id, item_id] = sorted(states, key=lambda state: state.version)
            if external_id is not None:
                self._external_ids[tenant_id, item.knowledge_base_id, external_id] = item_id
            return True

    def item_records(
        self, tenant_id: str, knowledge_item_id: str
    ) -> tuple[KnowledgeItem, list[tuple[Revision, str]], list[ItemState]] | None:
        with self._lock:
            item = self._items.get((tenant_id, knowledge_item_id))
            if item is None:
                return None
            revisions = sorted(
                (
                    (revision, self._contents[key])
                    for key, revision in self._revisions.items()
                    if key[:2] == (tenant_id, knowledge_item_id)
                ),
                key=lambda pair: pair[0].knowledge_revision_id,
            )
            return item, revisions, list(self._item_states.get((tenant_id, knowledge_item_id), []))

    def create_bundle_job(self, job: BundleJob) -> None:
        with self._lock:
            stored = self._bundle_jobs.setdefault((job.tenant_id, job.job_id), job)
        if stored is not job:
            raise ConflictError(_JOB_RACE_LOST, current_version=stored.version)

    def get_bundle_job(self, tenant_id: str, job_id: str) -> BundleJob | None:
        with self._lock:
            return self._bundle_jobs.get((tenant_id, job_id))

    def put_bundle_job(self, job: BundleJob, *, expected_version: int) -> BundleJob:
        with self._lock:
            stored = self._bundle_jobs.get((job.tenant_id, job.job_id))
            if stored is None:
                raise ResourceUnavailableError()
            if stored.version != expected_version:
                raise ConflictError(_JOB_RACE_LOST, current_version=stored.version)
            updated = job.model_copy(update={"version": expected_version + 1})
            self._bundle_jobs[job.tenant_id, job.job_id] = updated
            return updated

    def list_item_states(self, tenant_id: str, knowledge_item_id: str) -> list[ItemState]:
        with self._lock:
            return list(self._item_states.get((tenant_id, knowledge_item_id), []))

    def _find_by_external_id(
        self, tenant_id: str, knowledge_base_id: str, external_id: str
    ) -> KnowledgeItem | None:
        item_id = self._external_ids.get((tenant_id, knowledge_base_id, external_id))
        return self._items.get((tenant_id, item_id)) if item_id is not None else None


def _base_id(base: KnowledgeBase) -> str:
    return base.knowledge_base_id


def _item_id(item: KnowledgeItem) -> str:
    return item.knowledge_item_id


def _revision_id(revision: Revision) -> str:
    return revision.knowledge_revision_id


def _token_order(record: TokenRecord) -> str:
    """Creation order, then hash: the GSI1 sort key the DynamoDB store lists tokens by."""
    return keys.token_index_key(record.tenant_id, record.created_at, record.token_hash).sk


if TYPE_CHECKING:

    def _implements_the_port(store: InProcessKnowledgeStore) -> KnowledgeStore:
        return store  # mypy checks the whole KnowledgeStore protocol here
