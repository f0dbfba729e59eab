"""The write API's use cases (DESIGN §6): bases, items, revisions, publishing, archiving, health.

Access (``Principal.has_scope``; ``platform:admin`` implies every scope):

- ``knowledge:read`` lists bases and reads item metadata and revision lists in bases the caller can
  see (``domain.visibility.can_see``). Without ``knowledge:write`` only published state exists for
  the caller, as for the tool: published items and revisions, and an item's ``latest_revision_id``
  is its current one (``domain.write_contract.published_view``), so drafts never show.
- ``knowledge:write`` creates items and revisions, publishes and archives, in bases the caller can
  see; a base it cannot see (absent, inactive, private to someone else, outside the token's
  allow-list) is ``knowledge_resource_unavailable``, the answer for absent ones, so existence never
  leaks. Writers also see drafts and archived items of those bases.
- ``knowledge:admin`` creates bases in the caller's tenant (owned by the caller's subject), and
  updates, lists and re-indexes every base of the tenant its token's allow-list admits, inactive
  or private ones included. Tokens are ``services.token_admin``'s.

Every write has an ``authorize_*`` check that the write runs first and that routes can run alone
(read-only) before anything else, such as an ``Idempotency-Key`` replay: scope and visibility of
the target, not its state (an archived item passes, so that the replay of its archive still
answers).

Errors: ``InsufficientScopeError`` (403), ``ResourceUnavailableError`` (404), ``ConflictError`` (409,
``details.current_version``), ``RequestValidationError`` (content over the limit),
``DependencyUnavailableError`` (503). Malformed ids are unavailable resources, never key errors.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from knowledge.contract.deletion import DeletionReceipt, merged, records
from knowledge.contract.segments import to_segments
from knowledge.contract.writes import (
    LIST_LIMIT_MAX,
    ArchivedBaseResponse,
    ArchivedItemResponse,
    ArchiveRequest,
    BaseArchiveRequest,
    CreatedRevisionResponse,
    CreateItemRequest,
    CreateKnowledgeBaseRequest,
    CreateRevisionRequest,
    HealthResponse,
    KnowledgeBaseList,
    KnowledgeBaseResponse,
    KnowledgeItemDetail,
    KnowledgeItemList,
    KnowledgeItemResponse,
    PublishRequest,
    PurgedBaseResponse,
    PurgedItemResponse,
    ReindexResponse,
    RevisionList,
    RevisionResponse,
    UpdateKnowledgeBaseRequest,
    published_view,
)
from knowledge.domain import ids
from knowledge.domain.access.visibility import can_see
from knowledge.domain.as_of import ItemState
from knowledge.domain.models import (
    BaseStatus,
    ItemStatus,
    KnowledgeBase,
    KnowledgeItem,
    Permission,
    Principal,
    Revision,
    Source,
)
from knowledge.domain.retrieval.hits import history_key
from knowledge.errors import ConflictError, RequestValidationError, ResourceUnavailableError
from knowledge.observability import logger
from knowledge.ports import CatalogStore, RuntimeSwitch
from knowledge.services.access import find_base, find_item, require_scope
from knowledge.services.indexing import IndexingService
from knowledge.services.upsert import Document, UpsertOutcome, upsert_by_external_id


class CurationService:
    """Runs the write API for an authenticated principal. Thread-safe if its ports are."""

    def __init__(
        self,
        store: CatalogStore,
        indexing: IndexingService,
        runtime_switch: RuntimeSwitch,
        *,
        max_content_chars: int,
    ) -> None:
        self._store = store
        self._indexing = indexing
        self._switch = runtime_switch
        self._max_content_chars = max_content_chars

    # -- bases ------------------------------------------------------------------------------------

    def authorize_base_creation(self, principal: Principal) -> None:
        """``InsufficientScopeError`` unless the caller may create bases (``knowledge:admin``)."""
        require_scope(principal, Permission.ADMIN)

    def authorize_base_management(self, principal: Principal, knowledge_base_id: str) -> None:
        """``InsufficientScopeError`` or ``ResourceUnavailableError`` unless the caller manages the
        base (update, reindex)."""
        require_scope(principal, Permission.ADMIN)
        self._managed_base(principal, knowledge_base_id)

    def create_base(self, principal: Principal, request: CreateKnowledgeBaseRequest) -> KnowledgeBaseResponse:
        """A new active base in the caller's tenant, owned by the caller (version 1)."""
        self.authorize_base_creation(principal)
        base = self._store.create_base(
            principal.tenant_id,
            name=request.name,
            owner_id=principal.subject_id,
            scope=request.scope,
            team_id=request.team_id,
        )
        return KnowledgeBaseResponse.of(base)

    def update_base(
        self, principal: Principal, knowledge_base_id: str, request: UpdateKnowledgeBaseRequest
    ) -> KnowledgeBaseResponse:
        """Rename and/or (de)activate a base; its version moves by one."""
        self.authorize_base_management(principal, knowledge_base_id)
        base = self._store.update_base(
            principal.tenant_id,
            knowledge_base_id,
            expected_version=request.expected_version,
            status=request.status,
            name=request.name,
        )
        return KnowledgeBaseResponse.of(base)

    def list_bases(self, principal: Principal, *, limit: int, next_token: str | None) -> KnowledgeBaseList:
        """Bases the caller can see (admins: every base of the tenant their allow-list admits), in id
        order; a page may hold fewer than ``limit`` when some are hidden from the caller."""
        require_scope(principal, Permission.READ)
        page = self._store.list_bases(principal.tenant_id, limit=limit, next_token=next_token)
        return KnowledgeBaseList(
            knowledge_bases=[
                KnowledgeBaseResponse.of(base)
                for base in page.entries
                if can_see(principal, base) or _manages(principal, base)
            ],
            next_token=page.next_token,
        )

    def reindex_base(self, principal: Principal, knowledge_base_id: str) -> ReindexResponse:
        """Rebuild the base's part of the search index from the store (an inactive base is removed)."""
        self.authorize_base_management(principal, knowledge_base_id)
        counts = self._indexing.sync_base(principal.tenant_id, knowledge_base_id)
        return ReindexResponse(
            knowledge_base_id=knowledge_base_id,
            status=BaseStatus.ACTIVE if counts.active else BaseStatus.INACTIVE,
            scanned=counts.scanned,
            indexed=counts.indexed,
            queued=counts.queued,
            removed=counts.removed,
            superseded=counts.superseded,
            skipped=counts.skipped,
        )

    def archive_base(
        self, principal: Principal, knowledge_base_id: str, request: BaseArchiveRequest
    ) -> ArchivedBaseResponse:
        """Archive a base: it becomes ``inactive`` (out of search and reads, kept; a ``PATCH`` with
        ``status: active`` brings it back, re-indexed). The receipt lists the base record
        ``hidden`` and the ``item_passages`` of its published items ``scheduled`` (the indexer
        removes the base's documents when it takes the change). With ``request.dry_run`` nothing
        changes (a stale ``expected_version`` is ``ConflictError`` either way). A base already
        ``inactive`` is left as it is (its version too), with an empty receipt: archiving is
        idempotent."""
        require_scope(principal, Permission.ADMIN)
        base = self._managed_base(principal, knowledge_base_id)
        if base.version != request.expected_version:
            raise ConflictError("The knowledge base changed; re-read it before archiving.", base.version)
        if base.status is BaseStatus.INACTIVE:
            return ArchivedBaseResponse(
                **KnowledgeBaseResponse.of(base).model_dump(),
                dry_run=request.dry_run,
                receipt=DeletionReceipt(dry_run=request.dry_run),
            )
        live = [
            item.current_revision_id
            for item in self._items_of(base, archived=False)
            if item.status is ItemStatus.PUBLISHED and item.current_revision_id is not None
        ]
        receipt = DeletionReceipt(
            dry_run=request.dry_run,
            table=records("knowledge_base", [base.knowledge_base_id], "hidden"),
            index=records("item_passages", live, "scheduled"),
        )
        if request.dry_run:
            return ArchivedBaseResponse(
                **KnowledgeBaseResponse.of(base).model_dump(), dry_run=True, receipt=receipt
            )
        archived = self._store.update_base(
            base.tenant_id,
            base.knowledge_base_id,
            expected_version=request.expected_version,
            status=BaseStatus.INACTIVE,
        )
        return ArchivedBaseResponse(**KnowledgeBaseResponse.of(archived).model_dump(), receipt=receipt)

    def purge_base(
        self, principal: Principal, knowledge_base_id: str, *, expected_version: int, dry_run: bool
    ) -> PurgedBaseResponse:
        """Delete a base for good with every item in it, archived ones too, each as ``purge_item``
        does; then the base record (on ``expected_version``) and the base's documents left in the
        search index. The receipt is the items' receipts together plus the ``knowledge_base``
        record ``purged``. Items are purged first, so a purge that fails midway can be repeated with
        the same ``expected_version``. With ``dry_run`` nothing changes (a stale version is
        ``ConflictError`` either way). Cost: per item, its reads and one content read per revision."""
        require_scope(principal, Permission.ADMIN)
        base = self._managed_base(principal, knowledge_base_id)
        if base.version != expected_version:
            raise ConflictError("The knowledge base changed; re-read it before purging.", base.version)
        plans = [self.purge_plan(item) for item in self.items_of_base(base)]
        receipt = merged(
            [
                DeletionReceipt(
                    dry_run=dry_run, table=records("knowledge_base", [knowledge_base_id], "purged")
                ),
                *(plan.receipt(dry_run=dry_run) for plan in plans),
            ],
            dry_run=dry_run,
        )
        if not dry_run:
            for plan in plans:
                self.carry_out_purge(plan)
            self.delete_base(base.model_copy(update={"version": expected_version}))
            logger.info(
                "knowledge base purged",
                extra={
                    "tenant_id": base.tenant_id,
                    "knowledge_base_id": knowledge_base_id,
                    "items": len(plans),
                },
            )
        return PurgedBaseResponse(
            knowledge_base_id=knowledge_base_id, items=len(plans), dry_run=dry_run, receipt=receipt
        )

    def delete_base(self, base: KnowledgeBase) -> None:
        """Delete the base record (on ``base.version``) and the base's documents left in the
        search index; its items are the caller's to purge first."""
        self._store.delete_base(base.tenant_id, base.knowledge_base_id, expected_version=base.version)
        self._indexing.remove_base(base.tenant_id, base.knowledge_base_id)

    def items_of_base(self, base: KnowledgeBase) -> list[KnowledgeItem]:
        """Every item of the base, live ones then archived ones."""
        return [*self._items_of(base, archived=False), *self._items_of(base, archived=True)]

    def _items_of(self, base: KnowledgeBase, *, archived: bool) -> list[KnowledgeItem]:
        listing = self._store.list_archived_items if archived else self._store.list_items
        items: list[KnowledgeItem] = []
        next_token: str | None = None
        while True:
            page = listing(
                base.tenant_id, base.knowledge_base_id, limit=LIST_LIMIT_MAX, next_token=next_token
            )
            items.extend(page.entries)
            next_token = page.next_token
            if next_token is None:
                return items

    # -- items and revisions ----------------------------------------------------------------------

    def authorize_item_creation(self, principal: Principal, knowledge_base_id: str) -> None:
        """``InsufficientScopeError`` or ``ResourceUnavailableError`` unless the caller may add
        items to the base (``knowledge:write``, base visible)."""
        self._writable_base(principal, knowledge_base_id)

    def authorize_item_write(self, principal: Principal, knowledge_item_id: str) -> None:
        """``InsufficientScopeError`` or ``ResourceUnavailableError`` unless the caller may write the
        item (``knowledge:write``, item of a visible base; archived or not)."""
        require_scope(principal, Permission.WRITE)
        self._item_and_base(principal, knowledge_item_id)

    def create_item(
        self, principal: Principal, knowledge_base_id: str, request: CreateItemRequest
    ) -> tuple[CreatedRevisionResponse, bool]:
        """A new item with its first revision; with an ``external_id``, an upsert of the base's item
        holding it (``services.upsert``): a new revision only when content, title or source changed.
        Returns the item with its latest revision and whether anything was created."""
        base = self._writable_base(principal, knowledge_base_id)
        self._check_content(request.content)
        if request.external_id is None:
            return CreatedRevisionResponse.of_revision(*self._new_item(base, request)), True
        document = Document(
            external_id=request.external_id,
            title=request.title,
            content=request.content,
            source=request.source,
            publish=request.publish,
            segments=to_segments(request.segments),
        )
        upserted = upsert_by_external_id(self._store, base.tenant_id, base.knowledge_base_id, document)
        created = upserted.outcome in (UpsertOutcome.CREATED, UpsertOutcome.REVISED)
        return CreatedRevisionResponse.of_item(upserted.item, upserted.revision_id), created

    def add_revision(
        self, principal: Principal, knowledge_item_id: str, request: CreateRevisionRequest
    ) -> CreatedRevisionResponse:
        """A new latest revision (current at once when ``publish``)."""
        item = self._writable_item(principal, knowledge_item_id)
        self._check_content(request.content)
        updated, revision = self._store.add_revision(
            principal.tenant_id,
            item.knowledge_item_id,
            content=request.content,
            title=request.title,
            source=request.source,
            publish=request.publish,
            expected_version=request.expected_version,
            segments=to_segments(request.segments),
        )
        return CreatedRevisionResponse.of_revision(updated, revision)

    def publish(
        self, principal: Principal, knowledge_item_id: str, request: PublishRequest
    ) -> KnowledgeItemResponse:
        """Make one of the item's revisions current (an older one rolls back); the item takes its
        title."""
        item = self._writable_item(principal, knowledge_item_id)
        ids.require_well_formed(request.revision_id, ids.REVISION_PREFIX, "revision_id")
        updated = self._store.publish_revision(
            principal.tenant_id,
            item.knowledge_item_id,
            request.revision_id,
            expected_version=request.expected_version,
        )
        return KnowledgeItemResponse.of(updated)

    def archive(
        self, principal: Principal, knowledge_item_id: str, request: ArchiveRequest
    ) -> ArchivedItemResponse:
        """Archive the item: out of search and reads, its ``external_id`` released; the answer's
        receipt says what left each store. With ``request.dry_run`` nothing changes and the receipt
        says what would (a stale ``expected_version`` is ``ConflictError`` either way)."""
        item = self._writable_item(principal, knowledge_item_id)
        receipt = archive_receipt(item, dry_run=request.dry_run)
        if request.dry_run:
            if item.version != request.expected_version:
                raise ConflictError("The item changed; re-read it before archiving.", item.version)
            return ArchivedItemResponse(
                **KnowledgeItemResponse.of(item).model_dump(), dry_run=True, receipt=receipt
            )
        archived = self._store.archive_item(
            principal.tenant_id, item.knowledge_item_id, expected_version=request.expected_version
        )
        return ArchivedItemResponse(**KnowledgeItemResponse.of(archived).model_dump(), receipt=receipt)

    def authorize_item_purge(self, principal: Principal, knowledge_item_id: str) -> None:
        """``InsufficientScopeError`` or ``ResourceUnavailableError`` unless the caller may purge
        the item (``knowledge:admin``, item of a base it manages; archived or not)."""
        require_scope(principal, Permission.ADMIN)
        find_item(self._store, principal, knowledge_item_id, allowed=_manages)

    def purge_item(
        self, principal: Principal, knowledge_item_id: str, *, expected_version: int, dry_run: bool
    ) -> PurgedItemResponse:
        """Delete the item for good, archived or not (``item_receipt``): its records from the
        table, its documents from the live and history indexes (so ``as_of`` reads lose it too) and
        the cached embeddings of its revisions' chunks. With ``dry_run`` nothing changes and the
        receipt says what would go (a stale ``expected_version`` is ``ConflictError`` either way).
        The receipt is computed before anything is deleted: one content read per revision."""
        require_scope(principal, Permission.ADMIN)
        item, _ = find_item(self._store, principal, knowledge_item_id, allowed=_manages)
        if item.version != expected_version:
            raise ConflictError("The item changed; re-read it before purging.", item.version)
        plan = self.purge_plan(item)
        if not dry_run:
            self.carry_out_purge(plan)
        return PurgedItemResponse(
            knowledge_item_id=item.knowledge_item_id,
            knowledge_base_id=item.knowledge_base_id,
            dry_run=dry_run,
            receipt=plan.receipt(dry_run=dry_run),
        )

    def purge_plan(self, item: KnowledgeItem) -> ItemPurge:
        """What purging ``item`` deletes (``ItemPurge``), read now: one content read per revision."""
        revisions = self._all_revisions(item)
        states = self._store.list_item_states(item.tenant_id, item.knowledge_item_id)
        texts = [text for revision in revisions for text in self._indexing.embedded_texts(revision)]
        return ItemPurge(item=item, revisions=revisions, states=states, texts=list(dict.fromkeys(texts)))

    def carry_out_purge(self, plan: ItemPurge) -> None:
        """Purge ``plan.item`` (on its version: ``ConflictError`` when it changed since the plan was
        read, ``ResourceUnavailableError`` when it is gone)."""
        item = plan.item
        self._store.purge_item(item.tenant_id, item.knowledge_item_id, expected_version=item.version)
        self._indexing.purge_item(
            item.tenant_id, item.knowledge_item_id, version=item.version, history_keys=plan.history_keys()
        )
        self._indexing.forget_texts(plan.texts)
        logger.info(
            "item purged",
            extra={
                "tenant_id": item.tenant_id,
                "knowledge_item_id": item.knowledge_item_id,
                "revisions": len(plan.revisions),
                "cached_texts": len(plan.texts),
            },
        )

    def _all_revisions(self, item: KnowledgeItem) -> list[Revision]:
        revisions: list[Revision] = []
        next_token: str | None = None
        while True:
            page = self._store.list_revisions(
                item.tenant_id, item.knowledge_item_id, limit=LIST_LIMIT_MAX, next_token=next_token
            )
            revisions.extend(page.entries)
            next_token = page.next_token
            if next_token is None:
                return revisions

    def get_item(self, principal: Principal, knowledge_item_id: str) -> KnowledgeItemDetail:
        """The item with ``indexed_revision_id`` (without ``knowledge:write``: its published view)."""
        require_scope(principal, Permission.READ)
        item = self._readable_item(principal, knowledge_item_id)
        return KnowledgeItemDetail.of_item(_as_seen_by(principal, item))

    def list_items(
        self,
        principal: Principal,
        knowledge_base_id: str,
        *,
        external_id: str | None,
        limit: int,
        next_token: str | None,
    ) -> KnowledgeItemList:
        """Live (not archived) items of a base in id order, or the one holding ``external_id``
        (without ``knowledge:write``: published ones, in their published view), each with
        ``indexed_revision_id``."""
        require_scope(principal, Permission.READ)
        base = self._visible_base(principal, knowledge_base_id)
        if external_id is not None:
            found = self._store.find_item_by_external_id(base.tenant_id, base.knowledge_base_id, external_id)
            entries = [found] if found is not None else []
            next_token = None
        else:
            page = self._store.list_items(
                base.tenant_id, base.knowledge_base_id, limit=limit, next_token=next_token
            )
            entries, next_token = page.entries, page.next_token
        return KnowledgeItemList(
            items=[
                KnowledgeItemDetail.of_item(_as_seen_by(principal, item))
                for item in entries
                if _may_read(principal, item)
            ],
            next_token=next_token,
        )

    def list_revisions(
        self, principal: Principal, knowledge_item_id: str, *, limit: int, next_token: str | None
    ) -> RevisionList:
        """The item's revisions, newest first (readers without ``knowledge:write``: published ones)."""
        require_scope(principal, Permission.READ)
        item = self._readable_item(principal, knowledge_item_id)
        page = self._store.list_revisions(
            principal.tenant_id, item.knowledge_item_id, limit=limit, next_token=next_token
        )
        curator = principal.has_scope(Permission.WRITE)
        return RevisionList(
            revisions=[
                RevisionResponse.of(revision, current_revision_id=item.current_revision_id)
                for revision in page.entries
                if curator or revision.is_published
            ],
            next_token=page.next_token,
        )

    # -- health -----------------------------------------------------------------------------------

    def health(self) -> HealthResponse:
        """Liveness and the runtime switch's state (the write API itself does not depend on it)."""
        return HealthResponse(runtime_enabled=self._switch.is_enabled())

    # -- access -----------------------------------------------------------------------------------

    def _visible_base(self, principal: Principal, knowledge_base_id: str) -> KnowledgeBase:
        return find_base(self._store, principal, knowledge_base_id)

    def _managed_base(self, principal: Principal, knowledge_base_id: str) -> KnowledgeBase:
        return find_base(self._store, principal, knowledge_base_id, allowed=_manages)

    def _writable_base(self, principal: Principal, knowledge_base_id: str) -> KnowledgeBase:
        require_scope(principal, Permission.WRITE)
        return self._visible_base(principal, knowledge_base_id)

    def _item_and_base(self, principal: Principal, knowledge_item_id: str) -> KnowledgeItem:
        # ``find_item``: the same store calls for an absent item as for one the caller cannot see.
        item, _ = find_item(self._store, principal, knowledge_item_id)
        return item

    def _writable_item(self, principal: Principal, knowledge_item_id: str) -> KnowledgeItem:
        require_scope(principal, Permission.WRITE)
        item = self._item_and_base(principal, knowledge_item_id)
        if item.status is ItemStatus.ARCHIVED:
            raise ResourceUnavailableError()
        return item

    def _readable_item(self, principal: Principal, knowledge_item_id: str) -> KnowledgeItem:
        item = self._item_and_base(principal, knowledge_item_id)
        if not _may_read(principal, item):
            raise ResourceUnavailableError()
        return item

    # -- writes -----------------------------------------------------------------------------------

    def _new_item(self, base: KnowledgeBase, request: CreateItemRequest) -> tuple[KnowledgeItem, Revision]:
        return self._store.create_item(
            base.tenant_id,
            base.knowledge_base_id,
            title=request.title,
            content=request.content,
            source=request.source or Source(),
            external_id=request.external_id,
            publish=request.publish,
            segments=to_segments(request.segments),
        )

    def _check_content(self, content: str) -> None:
        if len(content) > self._max_content_chars:
            raise RequestValidationError(
                f"content has {len(content):,} characters; "
                f"the limit is {self._max_content_chars:,} characters.",
                {
                    "fields": [
                        {"field": "content", "problem": f"longer than {self._max_content_chars:,} characters"}
                    ],
                    "max_chars": self._max_content_chars,
                    "chars": len(content),
                },
            )


def _manages(principal: Principal, base: KnowledgeBase) -> bool:
    """Admins manage every base of their tenant that their token's allow-list admits."""
    allow = principal.knowledge_base_ids
    return (
        principal.has_scope(Permission.ADMIN)
        and base.tenant_id == principal.tenant_id
        and (allow is None or base.knowledge_base_id in allow)
    )


def _may_read(principal: Principal, item: KnowledgeItem) -> bool:
    """Curators see drafts and archived items; other readers only what the tool could return."""
    return principal.has_scope(Permission.WRITE) or item.status is ItemStatus.PUBLISHED


def _as_seen_by(principal: Principal, item: KnowledgeItem) -> KnowledgeItem:
    """Curators see the item as stored; other readers its published view (no draft revision id)."""
    return item if principal.has_scope(Permission.WRITE) else published_view(item)


@dataclass(frozen=True)
class ItemPurge:
    """What purging ``item`` deletes, read before anything is: its ``revisions`` (with their
    pages), its recorded ``states`` and the ``texts`` its chunks were embedded as."""

    item: KnowledgeItem
    revisions: list[Revision]
    states: list[ItemState]
    texts: list[str]

    def history_keys(self) -> list[str]:
        """The history index entries the item may have: one per published state with a current
        revision (``{item}@{state version}``)."""
        return [
            history_key(self.item.knowledge_item_id, state.version)
            for state in self.states
            if state.status is ItemStatus.PUBLISHED and state.current_revision_id is not None
        ]

    def receipt(self, *, dry_run: bool) -> DeletionReceipt:
        """``table``: the ``item`` record, each ``item_revision`` (by revision id), each
        ``content_page`` (``{revision}#{page number}``, from 0), each ``item_state``
        (``{item}@{version}``) and the ``external_id`` guard, all ``purged``; ``index``: the
        ``item_passages`` of the live index (named by the current revision of a published item) and
        the ``item_history`` entries (``history_keys``), ``purged`` (an entry the index never took
        is counted too); ``embedding_cache``: the ``cached_vector`` rows of ``texts`` (by the hex
        SHA-256 of the text), ``purged``."""
        item = self.item
        live = (
            [item.current_revision_id]
            if item.status is ItemStatus.PUBLISHED and item.current_revision_id
            else []
        )
        return DeletionReceipt(
            dry_run=dry_run,
            table=records("item", [item.knowledge_item_id], "purged")
            + records(
                "item_revision", [revision.knowledge_revision_id for revision in self.revisions], "purged"
            )
            + records(
                "content_page",
                [
                    f"{revision.knowledge_revision_id}#{number}"
                    for revision in self.revisions
                    for number in range(revision.page_count)
                ],
                "purged",
            )
            + records(
                "item_state", [f"{item.knowledge_item_id}@{state.version}" for state in self.states], "purged"
            )
            + records("external_id", [item.external_id] if item.external_id is not None else [], "purged"),
            index=records("item_passages", live, "purged")
            + records("item_history", self.history_keys(), "purged"),
            embedding_cache=records(
                "cached_vector", [hashlib.sha256(text.encode()).hexdigest() for text in self.texts], "purged"
            ),
        )


def archive_receipt(item: KnowledgeItem, *, dry_run: bool) -> DeletionReceipt:
    """The receipt of archiving ``item``: the item record archived, its external id released, and
    the passages of its current revision (if any) dropped from the search index by the indexer.
    Revisions and pages stay in the table: an archive is not a purge."""
    return DeletionReceipt(
        dry_run=dry_run,
        table=records("item", [item.knowledge_item_id], "archived")
        + records("external_id", [item.external_id] if item.external_id is not None else [], "purged"),
        index=records(
            "item_passages",
            [item.current_revision_id] if item.current_revision_id is not None else [],
            "scheduled",
        ),
    )
