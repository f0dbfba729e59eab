"""The ``KnowledgeStore`` port on one DynamoDB table (DESIGN §3; keys in ``knowledge.domain.keys``).

Write protocol:

- Revisions, pages, guards and tokens are written once (``attribute_not_exists(PK)``). Every change
  of a base or an item is conditioned on ``version = :expected`` and increments ``version``; a lost
  race is ``ConflictError`` carrying the stored version, read from the refused item itself
  (``ReturnValuesOnConditionCheckFailure=ALL_OLD``), never a silent overwrite.
- A revision's pages are written first; then its record (the seal) and the item change commit in
  one ``TransactWriteItems``. Readers reach content only through a revision record, so a revision
  is never observed half-written. Pages stay out of the transaction (4 MB / 100 items limit).
  When the transaction is refused the pages are deleted again; when its outcome is unknown
  (timeout) they are kept, because the seal may have committed.
- ``external_id`` is unique per base through a guard record created in the item's transaction:
  of two concurrent creators with one external id, one gets ``ConflictError``; it may re-read with
  ``find_item_by_external_id`` and add a revision instead.
- Archived items refuse every later write with ``ResourceUnavailableError``, drop out of
  ``list_items`` and release their external id (a later upsert creates a new item); ``get_item``
  still returns them with status ``archived`` so services can answer "unavailable".

Reads of single records are strongly consistent; listings go through GSI1 (eventually consistent)
except ``list_revisions``. Failures map to domain errors in one place (``dynamodb_errors``):
throttling, outages and connection errors → ``DependencyUnavailableError``; a write whose target is
absent (or archived) → ``ResourceUnavailableError``; a lost version race → ``ConflictError``.
Identifiers containing ``#`` make the key builders raise ``ValueError``: services validate ids first.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import boto3
from botocore.config import Config

from knowledge.adapters import dynamodb_codec as codec
from knowledge.adapters.dynamodb_paging import INDEX_KEY, TABLE_KEY, Listing
from knowledge.adapters.dynamodb_table import EXISTS, DynamoDBTable
from knowledge.domain import ids, keys
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
from knowledge.errors import ConflictError, DependencyUnavailableError, ResourceUnavailableError
from knowledge.observability import logger
from knowledge.ports import Clock

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import (
        TransactWriteItemTypeDef,
        UpdateItemInputTypeDef,
        UpdateTypeDef,
    )

MAX_PAGE_SIZE_CHARS = 90_000
"""At most 4 UTF-8 bytes per code point keeps a page item under DynamoDB's 400 KB item limit."""

# Condition clauses of versioned records, named before they are combined with _all_of.
_VERSION_IS_EXPECTED = "#version = :expected"
_NOT_ARCHIVED = "#status <> :archived"
_GUARD_IS_ABSENT_OR_OURS = "attribute_not_exists(PK) OR #knowledge_item_id = :knowledge_item_id"


def _all_of(*clauses: str) -> str:
    return " AND ".join(f"({clause})" for clause in clauses)


def _utc_now() -> datetime:
    return datetime.now(UTC)


def _revision_keys(tenant_id: str, pairs: Iterable[tuple[str, str]]) -> Iterator[keys.TableKey]:
    return (keys.revision_key(tenant_id, item_id, revision_id) for item_id, revision_id in pairs)


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class DynamoDBKnowledgeStore:
    """Bases, items, revisions, pages and tokens in one DynamoDB table.

    ``dynamodb_client`` defaults to a boto3 client with botocore's standard retry mode; ``clock``
    returns aware UTC datetimes; ``page_size_chars`` (1..90,000 code points) sizes the pages of new
    revisions; each revision records its own page size, so a change never breaks older content.
    Raises ``ValueError`` for a page size outside that range.
    """

    def __init__(
        self,
        table_name: str,
        *,
        dynamodb_client: DynamoDBClient | None = None,
        clock: Clock | None = None,
        page_size_chars: int = 50_000,
    ) -> None:
        if not 1 <= page_size_chars <= MAX_PAGE_SIZE_CHARS:
            raise ValueError(f"page_size_chars must be within 1..{MAX_PAGE_SIZE_CHARS}")
        client = dynamodb_client or boto3.client("dynamodb", config=Config(retries={"mode": "standard"}))
        self._table = DynamoDBTable(table_name, client)
        self._clock = clock or _utc_now
        self._page_size = page_size_chars

    # Bases

    def create_base(
        self, tenant_id: str, *, name: str, owner_id: str, scope: Scope, team_id: str | None
    ) -> KnowledgeBase:
        now = self._clock()
        base = KnowledgeBase(
            tenant_id=tenant_id,
            knowledge_base_id=ids.new_base_id(),
            name=name,
            owner_id=owner_id,
            team_id=team_id,
            scope=scope,
            version=1,
            created_at=now,
            updated_at=now,
        )
        self._table.put_new(codec.encode_base(base))
        logger.info(
            "knowledge base created",
            extra={"tenant_id": tenant_id, "knowledge_base_id": base.knowledge_base_id},
        )
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
        """Change ``status`` and/or ``name``; the version moves even when neither is given.

        Raises ``ConflictError`` (stale ``expected_version``) or ``ResourceUnavailableError`` (no such base).
        """
        assign = {"version": expected_version + 1, "updated_at": self._clock()}
        assign.update(
            {field: value for field, value in (("status", status), ("name", name)) if value is not None}
        )
        change = codec.update(assign)
        stored = self._table.update(
            {
                "TableName": self._table.name,
                "Key": codec.key(keys.base_key(tenant_id, knowledge_base_id)),
                "UpdateExpression": change.expression,
                "ConditionExpression": _all_of(EXISTS, _VERSION_IS_EXPECTED),
                "ExpressionAttributeNames": change.names,
                "ExpressionAttributeValues": {
                    **change.values,
                    **codec.serialize({":expected": expected_version}),
                },
                "ReturnValues": "ALL_NEW",
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            }
        )
        base = codec.decode_base(stored)
        logger.info(
            "knowledge base updated",
            extra={"tenant_id": tenant_id, "knowledge_base_id": knowledge_base_id, "version": base.version},
        )
        return base

    def get_base(self, tenant_id: str, knowledge_base_id: str) -> KnowledgeBase | None:
        record = self._table.get(keys.base_key(tenant_id, knowledge_base_id))
        return codec.decode_base(record) if record is not None else None

    def get_bases(self, tenant_id: str, knowledge_base_ids: Sequence[str]) -> dict[str, KnowledgeBase]:
        records = self._table.batch_get(keys.base_key(tenant_id, base_id) for base_id in knowledge_base_ids)
        bases = (codec.decode_base(record) for record in records)
        return {base.knowledge_base_id: base for base in bases}

    def list_bases(self, tenant_id: str, *, limit: int, next_token: str | None) -> Page[KnowledgeBase]:
        listing = Listing("bases", "GSI1PK", keys.bases_partition(tenant_id), INDEX_KEY)
        records, token = self._table.query_listing(
            listing, keys.BASE_INDEX_PREFIX, limit=limit, next_token=next_token
        )
        return Page[KnowledgeBase](
            entries=[codec.decode_base(record) for record in records], next_token=token
        )

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
    ) -> tuple[KnowledgeItem, Revision]:
        """A new item with its first revision, published at once when ``publish``.

        Raises ``ResourceUnavailableError`` when the base does not exist in the tenant, and
        ``ConflictError`` (``current_version`` of the existing item) when ``external_id`` is taken.
        """
        if self.get_base(tenant_id, knowledge_base_id) is None:
            raise ResourceUnavailableError()
        if external_id is not None:
            self._refuse_taken_external_id(tenant_id, knowledge_base_id, external_id)
        now = self._clock()
        item_id = ids.new_item_id()
        revision = self._new_revision(
            tenant_id,
            knowledge_base_id,
            item_id,
            title=title,
            source=source,
            content=content,
            now=now,
            publish=publish,
        )
        item = KnowledgeItem(
            tenant_id=tenant_id,
            knowledge_base_id=knowledge_base_id,
            knowledge_item_id=item_id,
            title=title,
            status=ItemStatus.PUBLISHED if publish else ItemStatus.DRAFT,
            current_revision_id=revision.knowledge_revision_id if publish else None,
            latest_revision_id=revision.knowledge_revision_id,
            latest_sha256=revision.sha256,
            external_id=external_id,
            version=1,
            created_at=now,
            updated_at=now,
        )
        writes = [self._table.put_new_write(codec.encode_item(item))]
        if external_id is not None:
            guard = codec.encode_external_id(tenant_id, knowledge_base_id, external_id, item_id)
            writes.append(self._table.put_new_write(guard))
        try:
            self._write_revision(revision, content, writes)
        except ConflictError:
            # Only the guard can be taken (the item and revision ids are fresh): report the winner's version.
            if external_id is not None:
                self._refuse_taken_external_id(tenant_id, knowledge_base_id, external_id)
            raise
        self._log_revision("revision created", revision, item)
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
    ) -> tuple[KnowledgeItem, Revision]:
        """A new latest revision, published at once when ``publish``.

        ``title`` and ``source`` default to the latest revision's. The item takes the revision's
        title only when it becomes current (``publish``): a draft never renames the item.
        ``expected_version=None`` means the version read just before writing; a race still fails.
        Raises ``ResourceUnavailableError`` (absent or archived item) or ``ConflictError``.
        """
        item = self._writable_item(tenant_id, knowledge_item_id, expected_version)
        latest = (
            self.get_revision(tenant_id, knowledge_item_id, item.latest_revision_id)
            if title is None or source is None
            else None
        )
        if title is None:
            title = latest.title if latest is not None else item.title
        if source is None:
            source = latest.source if latest is not None else Source()
        now = self._clock()
        revision = self._new_revision(
            tenant_id,
            item.knowledge_base_id,
            knowledge_item_id,
            title=title,
            source=source,
            content=content,
            now=now,
            publish=publish,
        )
        changes: dict[str, Any] = {
            "latest_revision_id": revision.knowledge_revision_id,
            "latest_sha256": revision.sha256,
        }
        if publish:
            changes.update(
                status=ItemStatus.PUBLISHED, current_revision_id=revision.knowledge_revision_id, title=title
            )
        updated = self._next_version(item, now, changes)
        self._write_revision(revision, content, [{"Update": self._item_update(item, updated)}])
        self._log_revision("revision created", revision, updated)
        return updated, revision

    def publish_revision(
        self, tenant_id: str, knowledge_item_id: str, knowledge_revision_id: str, *, expected_version: int
    ) -> KnowledgeItem:
        """Make a revision of the item current; an older one works too (rollback). The item takes
        the revision's title.

        The revision's ``published_at`` is set the first time only. Raises ``ResourceUnavailableError``
        (absent or archived item, revision not of this item) or ``ConflictError``.
        """
        item = self._writable_item(tenant_id, knowledge_item_id, expected_version)
        revision = self.get_revision(tenant_id, knowledge_item_id, knowledge_revision_id)
        if revision is None:
            raise ResourceUnavailableError()
        now = self._clock()
        updated = self._next_version(
            item,
            now,
            {
                "status": ItemStatus.PUBLISHED,
                "current_revision_id": knowledge_revision_id,
                "title": revision.title,
            },
        )
        stamp: UpdateTypeDef = {
            "TableName": self._table.name,
            "Key": codec.key(keys.revision_key(tenant_id, knowledge_item_id, knowledge_revision_id)),
            "UpdateExpression": "SET #published_at = if_not_exists(#published_at, :published_at)",
            "ConditionExpression": EXISTS,
            "ExpressionAttributeNames": {"#published_at": "published_at"},
            "ExpressionAttributeValues": codec.serialize({":published_at": codec.timestamp(now)}),
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }
        self._table.transact([{"Update": self._item_update(item, updated)}, {"Update": stamp}])
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
        item = self._writable_item(tenant_id, knowledge_item_id, expected_version)
        updated = self._next_version(item, self._clock(), {"status": ItemStatus.ARCHIVED})
        writes: list[TransactWriteItemTypeDef] = [
            {"Update": self._item_update(item, updated, remove=("GSI1PK", "GSI1SK"))}
        ]
        if item.external_id is not None:
            guard = keys.external_id_key(tenant_id, item.knowledge_base_id, item.external_id)
            writes.append(
                {
                    "Delete": {
                        "TableName": self._table.name,
                        "Key": codec.key(guard),
                        "ConditionExpression": _GUARD_IS_ABSENT_OR_OURS,
                        "ExpressionAttributeNames": {"#knowledge_item_id": "knowledge_item_id"},
                        "ExpressionAttributeValues": codec.serialize(
                            {":knowledge_item_id": knowledge_item_id}
                        ),
                    }
                }
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
            condition = _all_of(EXISTS, _VERSION_IS_EXPECTED)
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

    def read_content(self, revision: Revision, *, offset: int, limit: int) -> ContentWindow:
        """``content[offset:offset + limit]`` in code points, from one Query over at most the pages it spans.

        ``offset == total_chars`` gives empty text. Raises ``ValueError`` for a negative ``offset``
        or ``limit`` or an ``offset`` past the end, ``DependencyUnavailableError`` for missing pages.
        """
        if offset < 0 or limit < 0 or offset > revision.total_chars:
            raise ValueError("offset must be within 0..total_chars and limit must not be negative")
        end = min(offset + limit, revision.total_chars)
        text = ""
        if end > offset:
            size = revision.page_size
            first, last = offset // size, (end - 1) // size
            text = "".join(self._read_pages(revision, first, last))[
                offset - first * size : end - first * size
            ]
        return ContentWindow(text=text, offset=offset, limit=limit, total_chars=revision.total_chars)

    def read_all_content(self, revision: Revision) -> str:
        """The whole content, checked against the revision's SHA-256.

        Raises ``DependencyUnavailableError`` when pages are missing or the hash differs (a broken store).
        """
        pages = self._read_pages(revision, 0, revision.page_count - 1) if revision.page_count else []
        content = "".join(pages)
        if len(content) != revision.total_chars or _sha256(content) != revision.sha256:
            raise self._broken(revision, "content hash mismatch")
        return content

    # Tokens

    def put_token(self, record: TokenRecord) -> None:
        """Store a token record (never the token). Raises ``ConflictError`` if the hash is already stored."""
        self._table.put_new(codec.encode_token(record))
        logger.info("token created", extra={"tenant_id": record.tenant_id, "subject_id": record.subject_id})

    def get_token(self, token_hash: str) -> TokenRecord | None:
        """The record even when expired or revoked; ``TokenRecord.is_valid_at`` decides validity."""
        record = self._table.get(keys.token_key(token_hash))
        return codec.decode_token(record) if record is not None else None

    def revoke_token(self, token_hash: str) -> None:
        """Mark the token revoked. Raises ``ResourceUnavailableError`` when it is not stored."""
        change = codec.update({"revoked": True})
        self._table.update(
            {
                "TableName": self._table.name,
                "Key": codec.key(keys.token_key(token_hash)),
                "UpdateExpression": change.expression,
                "ConditionExpression": EXISTS,
                "ExpressionAttributeNames": change.names,
                "ExpressionAttributeValues": change.values,
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            }
        )
        logger.info("token revoked", extra={"token_hash_prefix": token_hash[:8]})

    # Internals

    def _new_revision(
        self,
        tenant_id: str,
        knowledge_base_id: str,
        knowledge_item_id: str,
        *,
        title: str,
        source: Source,
        content: str,
        now: datetime,
        publish: bool,
    ) -> Revision:
        """An unsealed revision of ``content``. Raises ``ValueError`` past 1,000,000 pages."""
        page_count = -(-len(content) // self._page_size)
        if page_count > keys.MAX_PAGE_NUMBER + 1:
            raise ValueError("content needs more pages than a revision can hold")
        return Revision(
            tenant_id=tenant_id,
            knowledge_base_id=knowledge_base_id,
            knowledge_item_id=knowledge_item_id,
            knowledge_revision_id=ids.new_revision_id(),
            title=title,
            source=source,
            sha256=_sha256(content),
            total_chars=len(content),
            page_size=self._page_size,
            page_count=page_count,
            created_at=now,
            published_at=now if publish else None,
        )

    def _writable_item(
        self, tenant_id: str, knowledge_item_id: str, expected_version: int | None
    ) -> KnowledgeItem:
        item = self.get_item(tenant_id, knowledge_item_id)
        if item is None or item.status is ItemStatus.ARCHIVED:
            raise ResourceUnavailableError()
        if expected_version is not None and expected_version != item.version:
            raise ConflictError(
                "The knowledge item has changed; retry with its current version.",
                current_version=item.version,
            )
        return item

    @staticmethod
    def _next_version(item: KnowledgeItem, now: datetime, changes: dict[str, Any]) -> KnowledgeItem:
        return item.model_copy(update={**changes, "version": item.version + 1, "updated_at": now})

    def _item_update(
        self, item: KnowledgeItem, updated: KnowledgeItem, remove: Iterable[str] = ()
    ) -> UpdateTypeDef:
        """``item`` → ``updated`` as one versioned update of the item record."""
        change = codec.update(codec.changes(item, updated), remove)
        return {
            "TableName": self._table.name,
            "Key": codec.key(keys.item_key(item.tenant_id, item.knowledge_item_id)),
            "UpdateExpression": change.expression,
            "ConditionExpression": _all_of(EXISTS, _VERSION_IS_EXPECTED, _NOT_ARCHIVED),
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

    def _write_revision(
        self, revision: Revision, content: str, writes: list[TransactWriteItemTypeDef]
    ) -> None:
        """Write every page, then seal: the revision record and ``writes`` in one transaction.

        Pages of a revision that is certainly unsealed are deleted again. A seal whose outcome is
        unknown (``DependencyUnavailableError`` after botocore's retries) may have committed, so its
        pages stay.
        """
        size = revision.page_size
        try:
            for number in range(revision.page_count):
                self._table.put_new(
                    codec.encode_page(revision, number, content[number * size : (number + 1) * size])
                )
        except DependencyUnavailableError:
            self._discard_pages(revision)
            raise
        try:
            self._table.transact([self._table.put_new_write(codec.encode_revision(revision)), *writes])
        except (ConflictError, ResourceUnavailableError):
            self._discard_pages(revision)
            raise

    def _discard_pages(self, revision: Revision) -> None:
        """Delete the pages of a revision that was never sealed; best effort, as nothing can read them."""
        pages = (
            keys.page_key(
                revision.tenant_id, revision.knowledge_item_id, revision.knowledge_revision_id, number
            )
            for number in range(revision.page_count)
        )
        if not self._table.delete_quietly(pages):
            logger.warning("unsealed pages left behind", extra=self._revision_ids(revision))

    def _read_pages(self, revision: Revision, first: int, last: int) -> list[str]:
        """Texts of pages ``first..last`` of a sealed revision, from one Query (more only past 1 MB).

        Raises ``DependencyUnavailableError`` when a page is missing or has the wrong length.
        """
        records = self._table.query_range(
            keys.item_partition(revision.tenant_id, revision.knowledge_item_id),
            keys.page_sort_key(revision.knowledge_revision_id, first),
            keys.page_sort_key(revision.knowledge_revision_id, last),
        )
        pages = [codec.decode_page(record) for record in records]
        if [number for number, _ in pages] != list(range(first, last + 1)) or any(
            len(text) != self._page_length(revision, number) for number, text in pages
        ):
            raise self._broken(revision, "pages missing or truncated")
        return [text for _, text in pages]

    @staticmethod
    def _page_length(revision: Revision, number: int) -> int:
        if number < revision.page_count - 1:
            return revision.page_size
        return revision.total_chars - (revision.page_count - 1) * revision.page_size

    @staticmethod
    def _revision_ids(revision: Revision) -> dict[str, str]:
        return {
            "tenant_id": revision.tenant_id,
            "knowledge_item_id": revision.knowledge_item_id,
            "knowledge_revision_id": revision.knowledge_revision_id,
        }

    def _broken(self, revision: Revision, reason: str) -> DependencyUnavailableError:
        logger.error(
            "stored content is inconsistent", extra={**self._revision_ids(revision), "reason": reason}
        )
        return DependencyUnavailableError("The knowledge store returned inconsistent content.")

    def _log_revision(self, message: str, revision: Revision, item: KnowledgeItem) -> None:
        logger.info(
            message,
            extra={
                **self._revision_ids(revision),
                "knowledge_base_id": revision.knowledge_base_id,
                "version": item.version,
                "total_chars": revision.total_chars,
                "page_count": revision.page_count,
                "published": revision.is_published,
            },
        )
