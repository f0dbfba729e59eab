"""Export and import on the table (``BundleStore``, DESIGN §9 "Export and import"): the tenant's
notes listed on GSI1, restores of exported records, and the jobs' records
(``T#{tenant}#BUNDLE#{job}`` / ``META``, the job as JSON in ``doc`` beside the ``version`` its
conditional writes test).

Restore protocol: a restored record is written under the same keys and with the same layout as the
write path writes it, so every reader (and the stream's indexer) takes it as any other.

- An item's revisions (pages first, then the revision record) and state records are put first,
  unconditionally: they are immutable and named by their ids, so a retry rewrites them alike.
  The item's ``META`` (conditioned on being new), its external-id guard (conditioned on being free)
  and the tenant's stored items count then commit in one transaction: readers reach revisions only
  through ``META``, so an item is never observed half-restored. A crash before the commit leaves
  unreachable revisions that the import run again completes; a refused commit (the guard taken)
  leaves them too, unreachable (``ConflictError``).
- A note's version records are put first (write-once, equal on a retry), then its ``META``
  (conditioned on being new), its claims (a current note's), its unindexed mark (an active note's:
  read-your-own-writes sees it until the indexer takes it) and the stored items count in one
  transaction; past 100 actions the versions are the ones left out of the transaction.
- A pin commits with a check that its note exists and a pin change at its ``updated_at``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from knowledge.adapters.dynamodb import codec, keys
from knowledge.adapters.dynamodb.failures import CounterFullError
from knowledge.adapters.dynamodb.note_records import CLAIM_IS_TAKEABLE
from knowledge.adapters.dynamodb.page_records import write_pages
from knowledge.adapters.dynamodb.paging import INDEX_KEY, Listing
from knowledge.adapters.dynamodb.quota_records import stored_bytes_write, stored_items_write
from knowledge.adapters.dynamodb.table import EXISTS, VERSION_IS_EXPECTED, TableRecords
from knowledge.domain import ids, lifecycle
from knowledge.domain.access.rates import content_bytes
from knowledge.domain.as_of import ItemState
from knowledge.domain.bundles import BundleJob
from knowledge.domain.memory.notes import Note, NoteStatus, claims_of, expiration
from knowledge.domain.memory.pins import Pin, PinChange
from knowledge.domain.models import ItemStatus, KnowledgeBase, KnowledgeItem, Page, Revision
from knowledge.errors import (
    ConflictError,
    DependencyUnavailableError,
    ResourceUnavailableError,
    StoredItemsQuotaError,
)
from knowledge.observability import logger

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import TransactWriteItemTypeDef

_BUNDLE_JOB = "bundle_job"


class DynamoDBBundleStore(TableRecords):
    """The ``BundleStore`` port (see the module docs for the restore protocol)."""

    def list_notes(self, tenant_id: str, *, limit: int, next_token: str | None) -> Page[Note]:
        """The tenant's notes by id: GSI1 names them, a strongly consistent batch read gives them."""
        listing = Listing("notes", "GSI1PK", keys.notes_partition(tenant_id), INDEX_KEY)
        records, token = self._table.query_listing(
            listing, keys.NOTE_INDEX_PREFIX, limit=limit, next_token=next_token
        )
        listed = [str(record["note_id"]["S"]) for record in records]
        notes = self.get_notes(tenant_id, listed)
        return Page[Note](
            entries=[notes[note_id] for note_id in listed if note_id in notes], next_token=token
        )

    if TYPE_CHECKING:  # DynamoDBNoteStore's, beside this one in DynamoDBKnowledgeStore

        def get_notes(self, tenant_id: str, note_ids: Sequence[str]) -> dict[str, Note]: ...

    def item_records(
        self, tenant_id: str, knowledge_item_id: str
    ) -> tuple[KnowledgeItem, list[tuple[Revision, str]], list[ItemState]] | None:
        """One strongly consistent Query of the item's partition (``META``, ``PAGE#``, ``REV#``,
        ``STATE#`` sort keys all fall between ``A`` and ``Z``)."""
        item: KnowledgeItem | None = None
        revisions: dict[str, Revision] = {}
        pages: dict[str, dict[int, str]] = {}
        states: list[ItemState] = []
        for record in self._table.query_range(keys.item_partition(tenant_id, knowledge_item_id), "A", "Z"):
            sort_key = str(record["SK"]["S"])
            if sort_key == keys.META:
                item = codec.decode_item(record)
            elif sort_key.startswith(keys.REVISION_PREFIX):
                revision = codec.decode_revision(record)
                revisions[revision.knowledge_revision_id] = revision
            elif sort_key.startswith(keys.PAGE_PREFIX):
                revision_id = sort_key.removeprefix(keys.PAGE_PREFIX).rsplit("#", 1)[0]
                number, text = codec.decode_page(record)
                pages.setdefault(revision_id, {})[number] = text
            elif sort_key.startswith(keys.ITEM_STATE_PREFIX):
                states.append(codec.decode_item_state(record))
        if item is None:
            return None
        whole = []
        for revision_id in sorted(revisions):
            revision = revisions[revision_id]
            stored = pages.get(revision_id, {})
            content = "".join(stored.get(number, "") for number in range(revision.page_count))
            if not lifecycle.matches(revision, content):
                raise DependencyUnavailableError("The knowledge store returned inconsistent content.")
            whole.append((revision, content))
        return item, whole, sorted(states, key=lambda state: state.version)

    def restore_base(self, base: KnowledgeBase) -> bool:
        try:
            self._table.transact([self._table.put_new_write(codec.encode_base(base))])
        except ConflictError:
            return False
        return True

    def restore_item(
        self, item: KnowledgeItem, revisions: Sequence[tuple[Revision, str]], states: Sequence[ItemState]
    ) -> bool:
        tenant_id = item.tenant_id
        if self._table.get(keys.item_key(tenant_id, item.knowledge_item_id)) is not None:
            return False
        if self._table.get(keys.base_key(tenant_id, item.knowledge_base_id)) is None:
            raise ResourceUnavailableError()
        for revision, content in revisions:
            paged = lifecycle.repaged_revision(revision, content, self._page_size)
            write_pages(self._table, paged, content)
            self._table.put(codec.encode_revision(paged))
        for state in states:
            self._table.put(codec.encode_item_state(state))
        restored = item.model_copy(update={"indexed_revision_id": None})
        writes: list[TransactWriteItemTypeDef] = [self._table.put_new_write(codec.encode_item(restored))]
        live = item.status is not ItemStatus.ARCHIVED
        stored_bytes = sum(content_bytes(content) for _, content in revisions)
        writes.append(
            stored_items_write(
                self._table, tenant_id, 1, self._stored_items_limit, content_bytes=stored_bytes
            )
            if live
            else stored_bytes_write(self._table, tenant_id, stored_bytes)
        )
        if item.status is ItemStatus.PUBLISHED and item.current_revision_id is not None:
            # read-your-own-writes: the indexer's mark of the revision removes it
            writes.append(
                {"Put": {"TableName": self._table.name, "Item": codec.encode_unindexed_item(restored)}}
            )
        if live and item.external_id is not None:
            guard = codec.encode_external_id(
                tenant_id, item.knowledge_base_id, item.external_id, item.knowledge_item_id
            )
            writes.append(self._table.put_new_write(guard))
        try:
            self._table.transact(writes)
        except CounterFullError:
            raise StoredItemsQuotaError(self._stored_items_limit) from None
        except ConflictError:
            if self._table.get(keys.item_key(tenant_id, item.knowledge_item_id)) is not None:
                return False  # restored meanwhile (an import run twice at once)
            raise ConflictError(
                "Another item of the base holds this external_id.", current_version=None
            ) from None
        logger.info(
            "item restored", extra={"tenant_id": tenant_id, "knowledge_item_id": item.knowledge_item_id}
        )
        return True

    def restore_note(self, note: Note, versions: Sequence[Note]) -> bool:
        tenant_id = note.tenant_id
        if self._table.get(keys.note_key(tenant_id, note.note_id)) is not None:
            return False
        restored = note.model_copy(update={"indexed_version": None, "pinned": False})
        now = self._clock()
        claims = claims_of(note) if note.is_current(now) else []
        writes: list[TransactWriteItemTypeDef] = [
            self._table.put_new_write(codec.encode_note(restored)),
            stored_items_write(
                self._table,
                tenant_id,
                1,
                self._stored_items_limit,
                notes=True,
                content_bytes=content_bytes(restored.content),
            ),
        ]
        moment = expiration(now)
        for claim in claims:
            writes.append(
                {
                    "Put": {
                        "TableName": self._table.name,
                        "Item": codec.encode_note_claim(restored, claim),
                        "ConditionExpression": CLAIM_IS_TAKEABLE,
                        "ExpressionAttributeNames": {"#note_id": "note_id", "#expiration": "expiration"},
                        "ExpressionAttributeValues": codec.serialize(
                            {":note_id": note.note_id, ":now": moment}
                        ),
                        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                    }
                }
            )
        if note.status is NoteStatus.ACTIVE and note.superseded_by is None:
            writes.append(
                {"Put": {"TableName": self._table.name, "Item": codec.encode_unindexed_note(restored)}}
            )
        room = MAX_ACTIONS - len(writes)
        ordered = sorted(versions, key=lambda version: version.version)
        outside, inside = ordered[: max(len(ordered) - room, 0)], ordered[max(len(ordered) - room, 0) :]
        for version in outside:
            self._table.put(codec.encode_note_version(version))
        writes.extend(
            {"Put": {"TableName": self._table.name, "Item": codec.encode_note_version(version)}}
            for version in inside
        )
        try:
            self._table.transact(writes)
        except CounterFullError:
            raise StoredItemsQuotaError(self._stored_items_limit) from None
        except ConflictError:
            if self._table.get(keys.note_key(tenant_id, note.note_id)) is not None:
                return False
            raise ConflictError(
                "Another note holds this note's semantic key or content.", current_version=None
            ) from None
        return True

    def restore_pin(self, pin: Pin) -> bool:
        change = PinChange(tenant_id=pin.tenant_id, note_id=pin.note_id, at=pin.updated_at, pin=pin)
        writes: list[TransactWriteItemTypeDef] = [
            {
                "ConditionCheck": {
                    "TableName": self._table.name,
                    "Key": codec.key(keys.note_key(pin.tenant_id, pin.note_id)),
                    "ConditionExpression": EXISTS,
                }
            },
            self._table.put_new_write(codec.encode_pin(pin)),
            self._table.put_new_write(codec.encode_pin_change(change, ids.new_ulid())),
        ]
        try:
            self._table.transact(writes)
        except (ConflictError, ResourceUnavailableError):
            return False
        return True

    # -- jobs --------------------------------------------------------------------------------------

    def create_bundle_job(self, job: BundleJob) -> None:
        self._table.put_new(_job_record(job))

    def get_bundle_job(self, tenant_id: str, job_id: str) -> BundleJob | None:
        record = self._table.get(keys.bundle_job_key(tenant_id, job_id))
        return BundleJob.model_validate_json(str(record["doc"]["S"])) if record is not None else None

    def put_bundle_job(self, job: BundleJob, *, expected_version: int) -> BundleJob:
        stored = job.model_copy(update={"version": expected_version + 1})
        self._table.transact(
            [
                {
                    "Put": {
                        "TableName": self._table.name,
                        "Item": _job_record(stored),
                        "ConditionExpression": VERSION_IS_EXPECTED,
                        "ExpressionAttributeNames": {"#version": "version"},
                        "ExpressionAttributeValues": codec.serialize({":expected": expected_version}),
                        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                    }
                }
            ]
        )
        return stored


MAX_ACTIONS = 100
"""DynamoDB's limit of actions in one ``TransactWriteItems``."""


def _job_record(job: BundleJob) -> dict[str, Any]:
    table_key = keys.bundle_job_key(job.tenant_id, job.job_id)
    return codec.serialize(
        {
            "PK": table_key.pk,
            "SK": table_key.sk,
            "entity": _BUNDLE_JOB,
            "doc": job.model_dump_json(),
            "version": job.version,
        }
    )
