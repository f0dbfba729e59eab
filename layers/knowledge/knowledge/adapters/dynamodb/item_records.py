"""Items and revisions on the table: the item (``T#{tenant}#ITEM#{item}`` / ``META``), its revisions
(``REV#{rev}``) and pages under the same partition, and one external-id guard per live item that
has an ``external_id``.

Write protocol:

- A revision's pages are written first (``page_records``); then its record (the seal) and the item
  change commit in one ``TransactWriteItems``. Readers reach content only through a revision
  record, so a revision is never observed half-written. Pages stay out of the transaction (4 MB /
  100 items limit). When the transaction is refused the pages are deleted again; when its outcome
  is unknown (timeout) they are kept, because the seal may have committed.
- Every item change is conditioned on ``version = :expected`` and on the item not being archived,
  and moves ``version`` by one (``domain.lifecycle``).
- ``external_id`` is unique per base through a guard record created in the item's transaction:
  of two concurrent creators with one external id, one gets ``ConflictError``; it may re-read with
  ``find_item_by_external_id`` and add a revision instead. Archiving deletes the guard.
- Every item write also puts the item's state at its new version (``STATE#{version:06d}``: status
  and current revision, write-once) in the same transaction: the history ``as_of`` reads
  (``list_item_states``).
- Archived items drop out of ``list_items``: their GSI1 keys move to the base's archived partition
  (``list_archived_items``, which a base purge reads).
- A write that makes a revision current (a publishing create or revision, a publish) also puts the
  item's unindexed mark (``T#{tenant}#UNINDEXED_ITEMS`` / ``ITEM#{item}``, naming that revision)
  in its transaction; the indexer's ``set_indexed_revision`` of that revision deletes it (only
  while it names that revision), and an archive deletes it. ``list_unindexed_items`` reads the
  marks (one Query) and the items (one batched read), and removes the marks the items contradict,
  so a mark the indexer's delete missed costs one listing at most.
- A live item counts against its tenant's stored items quota: the create's transaction adds one to
  the tenant's count under the limit (else ``StoredItemsQuotaError``, and nothing is written), the
  archive's transaction takes one off. Every revision's transaction adds its content's UTF-8 bytes
  to the tenant's stored bytes (``quota_records``); revisions are kept, so nothing takes them off.

Reads of single records are strongly consistent; ``list_items`` reads GSI1 (eventually consistent),
``list_revisions`` the table.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from contextlib import suppress
from typing import TYPE_CHECKING

from knowledge.adapters.dynamodb import codec, keys
from knowledge.adapters.dynamodb.failures import CounterFullError
from knowledge.adapters.dynamodb.page_records import discard_pages, revision_ids, write_pages
from knowledge.adapters.dynamodb.paging import INDEX_KEY, TABLE_KEY, Listing
from knowledge.adapters.dynamodb.quota_records import stored_bytes_write, stored_items_write
from knowledge.adapters.dynamodb.table import EXISTS, VERSION_IS_EXPECTED, TableRecords, all_of
from knowledge.domain import ids, lifecycle
from knowledge.domain.access.rates import content_bytes
from knowledge.domain.as_of import ItemState, item_state
from knowledge.domain.models import ItemStatus, KnowledgeItem, Page, Revision, Source
from knowledge.domain.segments import Segment
from knowledge.errors import ConflictError, ResourceUnavailableError, StoredItemsQuotaError
from knowledge.observability import logger

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import (
        TransactWriteItemTypeDef,
        UpdateItemInputTypeDef,
        UpdateTypeDef,
    )

# Condition clauses of item writes, named before they are combined with all_of.
_NOT_ARCHIVED = "#status <> :archived"
_GUARD_IS_ABSENT_OR_OURS = "attribute_not_exists(PK) OR #knowledge_item_id = :knowledge_item_id"


class DynamoDBItemStore(TableRecords):
    """The ``ItemStore`` port (see the module docs for the write protocol)."""

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
        """A new item with its first revision, published at once when ``publish``.

        Raises ``ResourceUnavailableError`` when the base does not exist in the tenant, and
        ``ConflictError`` (``current_version`` of the existing item) when ``external_id`` is taken,
        and ``StoredItemsQuotaError`` when the tenant holds as many items as its quota allows.
        """
        if self._table.get(keys.base_key(tenant_id, knowledge_base_id)) is None:
            raise ResourceUnavailableError()
        if external_id is not None:
            self._refuse_taken_external_id(tenant_id, knowledge_base_id, external_id)
        revision = lifecycle.new_revision(
            tenant_id,
            knowledge_base_id,
            ids.new_item_id(),
            title=title,
            source=source,
            content=content,
            page_size=self._page_size,
            publish=publish,
            now=self._clock(),
            segments=segments,
        )
        item = lifecycle.new_item(revision, external_id=external_id, publish=publish)
        writes = [
            self._table.put_new_write(codec.encode_item(item)),
            self._state_write(item),
            stored_items_write(
                self._table, tenant_id, 1, self._stored_items_limit, content_bytes=content_bytes(content)
            ),
            *self._unindexed_item_write(item),
        ]
        if external_id is not None:
            guard = codec.encode_external_id(
                tenant_id, knowledge_base_id, external_id, item.knowledge_item_id
            )
            writes.append(self._table.put_new_write(guard))
        try:
            self._write_revision(revision, content, writes)
        except CounterFullError:
            raise StoredItemsQuotaError(self._stored_items_limit) from None
        except ConflictError:
            # Only the guard can be taken (the item and revision ids are fresh): report the winner's version.
            if external_id is not None:
                self._refuse_taken_external_id(tenant_id, knowledge_base_id, external_id)
            raise
        _log_revision(revision, item)
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
        """A new latest revision, published at once when ``publish``.

        ``title`` and ``source`` default to the latest revision's. The item takes the revision's
        title only when it becomes current (``publish``): a draft never renames the item.
        ``expected_version=None`` means the version read just before writing; a race still fails.
        Raises ``ResourceUnavailableError`` (absent or archived item) or ``ConflictError``.
        """
        item = lifecycle.writable_item(self.get_item(tenant_id, knowledge_item_id), expected_version)
        latest = (
            self.get_revision(tenant_id, knowledge_item_id, item.latest_revision_id)
            if title is None or source is None
            else None
        )
        title, source = lifecycle.revision_defaults(item, latest, title=title, source=source)
        now = self._clock()
        revision = lifecycle.new_revision(
            tenant_id,
            item.knowledge_base_id,
            knowledge_item_id,
            title=title,
            source=source,
            content=content,
            page_size=self._page_size,
            publish=publish,
            now=now,
            segments=segments,
        )
        updated = lifecycle.revised_item(item, revision, publish=publish, now=now)
        self._write_revision(
            revision,
            content,
            [
                {"Update": self._item_update(item, updated)},
                self._state_write(updated),
                stored_bytes_write(self._table, tenant_id, content_bytes(content)),
                *(self._unindexed_item_write(updated) if publish else ()),
            ],
        )
        _log_revision(revision, updated)
        return updated, revision

    def publish_revision(
        self, tenant_id: str, knowledge_item_id: str, knowledge_revision_id: str, *, expected_version: int
    ) -> KnowledgeItem:
        """Make a revision of the item current; an older one works too (rollback). The item takes
        the revision's title.

        The revision's ``published_at`` is set the first time only. Raises ``ResourceUnavailableError``
        (absent or archived item, revision not of this item) or ``ConflictError``.
        """
        item = lifecycle.writable_item(self.get_item(tenant_id, knowledge_item_id), expected_version)
        revision = self.get_revision(tenant_id, knowledge_item_id, knowledge_revision_id)
        if revision is None:
            raise ResourceUnavailableError()
        now = self._clock()
        updated = lifecycle.published_item(item, revision, now=now)
        stamp: UpdateTypeDef = {
            "TableName": self._table.name,
            "Key": codec.key(keys.revision_key(tenant_id, knowledge_item_id, knowledge_revision_id)),
            "UpdateExpression": "SET #published_at = if_not_exists(#published_at, :published_at)",
            "ConditionExpression": EXISTS,
            "ExpressionAttributeNames": {"#published_at": "published_at"},
            "ExpressionAttributeValues": codec.serialize({":published_at": codec.timestamp(now)}),
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }
        self._table.transact(
            [
                {"Update": self._item_update(item, updated)},
                {"Update": stamp},
                self._state_write(updated),
                *self._unindexed_item_write(updated),
            ]
        )
        logger.info(
            "revision published",
            extra={
                "tenant_id": tenant_id,
                "knowledge_item_id": knowledge_item_id,
                "knowledge_revision_id": knowledge_revision_id,
                "version": updated.version,
            },
        )
        return updated

    def archive_item(self, tenant_id: str, knowledge_item_id: str, *, expected_version: int) -> KnowledgeItem:
        """Archive the item and release its external id.

        Raises ``ResourceUnavailableError`` (absent or already archived item) or ``ConflictError``.
        """
        item = lifecycle.writable_item(self.get_item(tenant_id, knowledge_item_id), expected_version)
        updated = lifecycle.archived_item(item, now=self._clock())
        writes: list[TransactWriteItemTypeDef] = [
            {"Update": self._item_update(item, updated, index=codec.item_index_key(updated))},
            stored_items_write(self._table, tenant_id, -1, self._stored_items_limit),
            self._state_write(updated),
            {
                "Delete": {
                    "TableName": self._table.name,
                    "Key": codec.key(keys.unindexed_item_key(tenant_id, knowledge_item_id)),
                }
            },
        ]
        if item.external_id is not None:
            writes.append(
                self._guard_delete(tenant_id, item.knowledge_base_id, item.external_id, knowledge_item_id)
            )
        self._table.transact(writes)
        logger.info(
            "item archived",
            extra={
                "tenant_id": tenant_id,
                "knowledge_item_id": knowledge_item_id,
                "version": updated.version,
            },
        )
        return updated

    def purge_item(self, tenant_id: str, knowledge_item_id: str, *, expected_version: int) -> None:
        """Delete the item for good (see ``ports.ItemStore.purge_item``).

        The record goes first, on its version, with the guard and the quota count: a purge that
        loses a race with a writer raises ``ConflictError`` before anything is removed, and once
        the record is gone no revision can be added (every item write is conditioned on it). Then
        every other record of the item's partition (revisions, pages, states) is deleted.
        """
        item = self.get_item(tenant_id, knowledge_item_id)
        if item is None:
            raise ResourceUnavailableError()
        if item.version != expected_version:
            raise ConflictError("The item changed; re-read it before purging.", current_version=item.version)
        writes: list[TransactWriteItemTypeDef] = [
            {
                "Delete": {
                    "TableName": self._table.name,
                    "Key": codec.key(keys.item_key(tenant_id, knowledge_item_id)),
                    "ConditionExpression": all_of(EXISTS, VERSION_IS_EXPECTED),
                    "ExpressionAttributeNames": {"#version": "version"},
                    "ExpressionAttributeValues": codec.serialize({":expected": expected_version}),
                    "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                }
            }
        ]
        partition = keys.item_partition(tenant_id, knowledge_item_id)
        rest = self._table.query_range(partition, keys.PAGE_PREFIX, keys.ITEM_STATE_PREFIX + "\uffff")
        # The stored bytes of its revisions' content leave with it (its pages hold that content).
        freed = -sum(
            content_bytes(codec.decode_page(record)[1])
            for record in rest
            if str(record["SK"]["S"]).startswith(keys.PAGE_PREFIX)
        )
        if item.status is not ItemStatus.ARCHIVED:  # an archive already took it off the count
            writes.append(
                stored_items_write(self._table, tenant_id, -1, self._stored_items_limit, content_bytes=freed)
            )
        elif freed:
            writes.append(stored_bytes_write(self._table, tenant_id, freed))
        writes.append(
            {
                "Delete": {
                    "TableName": self._table.name,
                    "Key": codec.key(keys.unindexed_item_key(tenant_id, knowledge_item_id)),
                }
            }
        )
        if item.external_id is not None:
            writes.append(
                self._guard_delete(tenant_id, item.knowledge_base_id, item.external_id, knowledge_item_id)
            )
        self._table.transact(writes)
        self._table.delete_quietly(keys.TableKey(record["PK"]["S"], record["SK"]["S"]) for record in rest)
        logger.info(
            "item purged",
            extra={"tenant_id": tenant_id, "knowledge_item_id": knowledge_item_id, "records": len(rest) + 1},
        )

    def _guard_delete(
        self, tenant_id: str, knowledge_base_id: str, external_id: str, knowledge_item_id: str
    ) -> TransactWriteItemTypeDef:
        """Delete the external-id guard unless another item holds it (or it is already gone)."""
        return {
            "Delete": {
                "TableName": self._table.name,
                "Key": codec.key(keys.external_id_key(tenant_id, knowledge_base_id, external_id)),
                "ConditionExpression": _GUARD_IS_ABSENT_OR_OURS,
                "ExpressionAttributeNames": {"#knowledge_item_id": "knowledge_item_id"},
                "ExpressionAttributeValues": codec.serialize({":knowledge_item_id": knowledge_item_id}),
            }
        }

    def set_indexed_revision(
        self,
        tenant_id: str,
        knowledge_item_id: str,
        knowledge_revision_id: str | None,
        *,
        expected_version: int | None = None,
    ) -> None:
        """Record which revision the search index holds; the item's ``version`` does not move.

        With ``expected_version`` the write applies only while the item is at that version.
        Raises ``ResourceUnavailableError`` when the item does not exist (or, with
        ``expected_version``, was archived) and ``ConflictError`` when its version moved on.
        """
        change = codec.update({"indexed_revision_id": knowledge_revision_id})
        condition, names, values = EXISTS, dict(change.names), dict(change.values)
        if expected_version is not None:
            condition = all_of(EXISTS, VERSION_IS_EXPECTED)
            names["#version"] = "version"
            values.update(codec.serialize({":expected": expected_version}))
        request: UpdateItemInputTypeDef = {
            "TableName": self._table.name,
            "Key": codec.key(keys.item_key(tenant_id, knowledge_item_id)),
            "UpdateExpression": change.expression,
            "ConditionExpression": condition,
            "ExpressionAttributeNames": names,
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }
        if values:  # a REMOVE has no values, and DynamoDB rejects an empty map
            request["ExpressionAttributeValues"] = values
        self._table.update(request)
        if knowledge_revision_id is not None:
            self._drop_unindexed_mark(tenant_id, knowledge_item_id, knowledge_revision_id)

    def list_unindexed_items(self, tenant_id: str, *, limit: int) -> list[KnowledgeItem]:
        """The tenant's ``limit`` newest unindexed marks (item ids descending), checked against the
        items in one batched read: the published items whose current revision the index has not
        taken. A mark the item contradicts (indexed, no longer published, gone) is removed while
        it still names the revision it was read with."""
        if limit < 1:
            raise ValueError("limit must be at least 1")
        records = self._table.query_first(
            keys.unindexed_items_partition(tenant_id), keys.UNINDEXED_ITEM_PREFIX, limit, newest_first=True
        )
        marks = {
            str(record["knowledge_item_id"]["S"]): str(record["knowledge_revision_id"]["S"])
            for record in records
        }
        items = self.get_items(tenant_id, list(marks))
        pending: list[KnowledgeItem] = []
        for item_id, revision_id in marks.items():
            item = items.get(item_id)
            if (
                item is not None
                and item.status is ItemStatus.PUBLISHED
                and item.current_revision_id is not None
                and item.indexed_revision_id != item.current_revision_id
            ):
                pending.append(item)
            else:
                self._drop_unindexed_mark(tenant_id, item_id, revision_id)
        return pending

    def get_item(self, tenant_id: str, knowledge_item_id: str) -> KnowledgeItem | None:
        record = self._table.get(keys.item_key(tenant_id, knowledge_item_id))
        return codec.decode_item(record) if record is not None else None

    def get_items(self, tenant_id: str, knowledge_item_ids: Sequence[str]) -> dict[str, KnowledgeItem]:
        records = self._table.batch_get(keys.item_key(tenant_id, item_id) for item_id in knowledge_item_ids)
        items = (codec.decode_item(record) for record in records)
        return {item.knowledge_item_id: item for item in items}

    def find_item_by_external_id(
        self, tenant_id: str, knowledge_base_id: str, external_id: str
    ) -> KnowledgeItem | None:
        """The live item holding ``external_id`` in the base; archived items have released theirs."""
        guard = self._table.get(keys.external_id_key(tenant_id, knowledge_base_id, external_id))
        return self.get_item(tenant_id, codec.decode_external_id(guard)) if guard is not None else None

    def list_items(
        self, tenant_id: str, knowledge_base_id: str, *, limit: int, next_token: str | None
    ) -> Page[KnowledgeItem]:
        """Items of the base that are not archived, in id (creation) order."""
        listing = Listing("items", "GSI1PK", keys.base_partition(tenant_id, knowledge_base_id), INDEX_KEY)
        records, token = self._table.query_listing(
            listing, keys.ITEM_INDEX_PREFIX, limit=limit, next_token=next_token
        )
        return Page[KnowledgeItem](
            entries=[codec.decode_item(record) for record in records], next_token=token
        )

    def list_archived_items(
        self, tenant_id: str, knowledge_base_id: str, *, limit: int, next_token: str | None
    ) -> Page[KnowledgeItem]:
        """Archived items of the base, in id order (GSI1, eventually consistent). Items an earlier
        version archived carry no GSI1 keys until ``backfill.backfill_archived_item_listing``."""
        partition = keys.archived_items_partition(tenant_id, knowledge_base_id)
        listing = Listing("archived items", "GSI1PK", partition, INDEX_KEY)
        records, token = self._table.query_listing(
            listing, keys.ITEM_INDEX_PREFIX, limit=limit, next_token=next_token
        )
        return Page[KnowledgeItem](
            entries=[codec.decode_item(record) for record in records], next_token=token
        )

    def get_revision(
        self, tenant_id: str, knowledge_item_id: str, knowledge_revision_id: str
    ) -> Revision | None:
        record = self._table.get(keys.revision_key(tenant_id, knowledge_item_id, knowledge_revision_id))
        return codec.decode_revision(record) if record is not None else None

    def get_revisions(
        self, tenant_id: str, keys: Sequence[tuple[str, str]]
    ) -> dict[tuple[str, str], Revision]:
        """Revisions by ``(knowledge_item_id, knowledge_revision_id)``; absent ones are left out."""
        records = self._table.batch_get(_revision_keys(tenant_id, keys))
        revisions = (codec.decode_revision(record) for record in records)
        return {(rev.knowledge_item_id, rev.knowledge_revision_id): rev for rev in revisions}

    def list_revisions(
        self, tenant_id: str, knowledge_item_id: str, *, limit: int, next_token: str | None
    ) -> Page[Revision]:
        """Revisions of the item, newest first (revision ids are ULIDs, which sort by time)."""
        listing = Listing("revisions", "PK", keys.item_partition(tenant_id, knowledge_item_id), TABLE_KEY)
        records, token = self._table.query_listing(
            listing, keys.REVISION_PREFIX, limit=limit, next_token=next_token, newest_first=True
        )
        return Page[Revision](entries=[codec.decode_revision(record) for record in records], next_token=token)

    # Internals

    def _item_update(
        self, item: KnowledgeItem, updated: KnowledgeItem, index: keys.TableKey | None = None
    ) -> UpdateTypeDef:
        """``item`` → ``updated`` as one versioned update of the item record (``index``: its new
        GSI1 key)."""
        assign = codec.changes(item, updated)
        if index is not None:
            assign.update({"GSI1PK": index.pk, "GSI1SK": index.sk})
        change = codec.update(assign)
        return {
            "TableName": self._table.name,
            "Key": codec.key(keys.item_key(item.tenant_id, item.knowledge_item_id)),
            "UpdateExpression": change.expression,
            "ConditionExpression": all_of(EXISTS, VERSION_IS_EXPECTED, _NOT_ARCHIVED),
            "ExpressionAttributeNames": {**change.names, "#version": "version", "#status": "status"},
            "ExpressionAttributeValues": {
                **change.values,
                **codec.serialize({":expected": item.version, ":archived": ItemStatus.ARCHIVED}),
            },
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }

    def _refuse_taken_external_id(self, tenant_id: str, knowledge_base_id: str, external_id: str) -> None:
        existing = self.find_item_by_external_id(tenant_id, knowledge_base_id, external_id)
        if existing is not None:
            raise ConflictError(
                "An item with this external_id already exists in the knowledge base.",
                current_version=existing.version,
            )

    def list_item_states(self, tenant_id: str, knowledge_item_id: str) -> list[ItemState]:
        partition = keys.item_partition(tenant_id, knowledge_item_id)
        first, last = keys.ITEM_STATE_PREFIX + "000001", keys.ITEM_STATE_PREFIX + "999999"
        return [codec.decode_item_state(record) for record in self._table.query_range(partition, first, last)]

    def _unindexed_item_write(self, item: KnowledgeItem) -> list[TransactWriteItemTypeDef]:
        """The item's unindexed mark naming its current revision, when it is published."""
        if item.status is not ItemStatus.PUBLISHED or item.current_revision_id is None:
            return []
        return [{"Put": {"TableName": self._table.name, "Item": codec.encode_unindexed_item(item)}}]

    def _drop_unindexed_mark(
        self, tenant_id: str, knowledge_item_id: str, knowledge_revision_id: str
    ) -> None:
        """Delete the item's unindexed mark while it names ``knowledge_revision_id`` (a newer
        publish's mark stays); a mark already gone or renamed is left as it is."""
        with suppress(ConflictError, ResourceUnavailableError):
            self._table.delete(
                {
                    "TableName": self._table.name,
                    "Key": codec.key(keys.unindexed_item_key(tenant_id, knowledge_item_id)),
                    "ConditionExpression": "#knowledge_revision_id = :knowledge_revision_id",
                    "ExpressionAttributeNames": {"#knowledge_revision_id": "knowledge_revision_id"},
                    "ExpressionAttributeValues": codec.serialize(
                        {":knowledge_revision_id": knowledge_revision_id}
                    ),
                }
            )

    def _state_write(self, item: KnowledgeItem) -> TransactWriteItemTypeDef:
        return self._table.put_new_write(codec.encode_item_state(item_state(item)))

    def _write_revision(
        self, revision: Revision, content: str, writes: list[TransactWriteItemTypeDef]
    ) -> None:
        """Write every page, then seal: the revision record and ``writes`` in one transaction.

        Pages of a revision that is certainly unsealed are deleted again. A seal whose outcome is
        unknown (``DependencyUnavailableError`` after botocore's retries) may have committed, so its
        pages stay.
        """
        write_pages(self._table, revision, content)
        try:
            self._table.transact([self._table.put_new_write(codec.encode_revision(revision)), *writes])
        except (ConflictError, ResourceUnavailableError):
            discard_pages(self._table, revision)
            raise


def _revision_keys(tenant_id: str, pairs: Iterable[tuple[str, str]]) -> Iterable[keys.TableKey]:
    return (keys.revision_key(tenant_id, item_id, revision_id) for item_id, revision_id in pairs)


def _log_revision(revision: Revision, item: KnowledgeItem) -> None:
    logger.info(
        "revision created",
        extra={
            **revision_ids(revision),
            "knowledge_base_id": revision.knowledge_base_id,
            "version": item.version,
            "total_chars": revision.total_chars,
            "page_count": revision.page_count,
            "published": revision.is_published,
        },
    )
