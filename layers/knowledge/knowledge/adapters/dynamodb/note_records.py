"""Notes on the table (DESIGN §9): ``T#{tenant}#NOTE#{note}`` holds ``META`` (the note at its current
version) and one immutable ``VER#{n:06d}`` record per version; a claim (``domain.notes``) is a
record of its own, ``T#{tenant}#NOTECLAIM#{sha256}`` / ``META``, naming the note that holds it.

A commit is one ``TransactWriteItems``: per note, the ``META`` put conditioned on the version read
(or on no record, for a new note), the new version record (write-once), each claim taken while free,
already this note's, or held by a note that expired, and each released claim deleted while it is
this note's (or gone), and for new notes the tenant's stored items count grown under its quota
(``StoredItemsQuotaError`` refuses the whole commit). A hard delete removes ``META`` and takes one
off the count in one transaction.

Read-your-own-writes (DESIGN §9): every commit of an active note also puts the mark
``T#{tenant}#UNINDEXED#{sha256(owner)}`` / ``NOTE#{note}`` naming the version written (a commit that
forgets a note deletes it), and the indexer's ``indexed_version`` mark deletes it in the same
transaction, conditioned, as the mark itself, on the note still being at the version indexed. So one
strongly consistent Query of the owner's partition lists the notes the index has not taken yet; a
mark left behind (a note deleted or expired meanwhile) is checked against the note and removed by
the read that finds it.

A note removed by its expiry (TTL deletes ``META`` with no transaction) is taken off the count by
the stream consumer (``release_expired_note``): one transaction puts the write-once mark
``EXPIRY_COUNTED`` beside the note and takes one off the count while it is above 0. A redelivered
or replayed record meets the mark, so the count moves once per note. The mark carries its own
``expiration``, ``EXPIRY_MARK_SECONDS`` later, far past any redelivery (the stream keeps records
24 hours).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import suppress
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from knowledge.adapters.dynamodb import codec, keys
from knowledge.adapters.dynamodb.failures import CounterFullError, TransactionRaceError
from knowledge.adapters.dynamodb.paging import TABLE_KEY, Listing
from knowledge.adapters.dynamodb.quota_records import (
    refuse_over_limit,
    stored_bytes_write,
    stored_items_release,
    stored_items_write,
)
from knowledge.adapters.dynamodb.table import EXISTS, VERSION_IS_EXPECTED, TableRecords, all_of
from knowledge.domain.access.rates import content_bytes
from knowledge.domain.memory.lifecycle import MAX_NOTE_WRITES, NoteWrite, redacted
from knowledge.domain.memory.notes import Note, NoteClaim, NoteStatus, expiration
from knowledge.domain.models import Page
from knowledge.errors import ConflictError, ResourceUnavailableError, StoredItemsQuotaError
from knowledge.observability import logger

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import TransactWriteItemTypeDef

MAX_ACTIONS_PER_TRANSACTION = 100
"""DynamoDB's limit of actions in one ``TransactWriteItems``."""
MAX_MARKS_PER_TRANSACTION = MAX_ACTIONS_PER_TRANSACTION // 2
"""Indexed marks per transaction: each mark also deletes the note's unindexed mark."""
CLAIM_IS_TAKEABLE = "attribute_not_exists(PK) OR #note_id = :note_id OR #expiration <= :now"
"""Condition clause of a claim to take: free, this note's, or held by a note that has expired."""

EXPIRY_MARK_SECONDS = 30 * 24 * 3600
"""Lifetime of the ``EXPIRY_COUNTED`` mark: longer than the stream keeps a record (24 hours) and
than any queue keeps a failed one (14 days)."""

CLAIM_IS_OURS = "attribute_not_exists(PK) OR #note_id = :note_id"
"""Condition clause of a claim to release: this note's, or gone already."""


class DynamoDBNoteStore(TableRecords):
    """The ``NoteStore`` port."""

    def get_note(self, tenant_id: str, note_id: str) -> Note | None:
        # META and PIN are neighbours in the partition (no other sort key falls between them), so
        # one strongly consistent Query reads the note and whether it is pinned.
        partition = keys.note_partition(tenant_id, note_id)
        records = self._table.query_range(partition, keys.META, keys.PIN)
        return _pinned_notes(records, self._clock()).get(note_id)

    def get_notes(self, tenant_id: str, note_ids: Sequence[str]) -> dict[str, Note]:
        wanted = list(dict.fromkeys(note_ids))
        records = self._table.batch_get(
            [keys.note_key(tenant_id, note_id) for note_id in wanted]
            + [keys.pin_key(tenant_id, note_id) for note_id in wanted]
        )
        return _pinned_notes(records, self._clock())

    def claim_holder(self, tenant_id: str, claim: NoteClaim) -> str | None:
        record = self._table.get(keys.note_claim_key(tenant_id, claim.digest))
        return str(record["note_id"]["S"]) if record is not None else None

    def commit_notes(self, tenant_id: str, writes: Sequence[NoteWrite]) -> None:
        if not 1 <= len(writes) <= MAX_NOTE_WRITES:
            raise ValueError(f"a commit changes 1..{MAX_NOTE_WRITES} notes")
        now = expiration(self._clock())
        transaction: list[TransactWriteItemTypeDef] = []
        for write in writes:
            note = write.note.model_copy(update={"indexed_version": None})
            transaction.append(self._note_put(note, write.previous))
            transaction.append(self._table.put_new_write(codec.encode_note_version(note)))
            transaction.extend(self._claim_put(note, claim, now) for claim in write.claim)
            transaction.extend(self._claim_delete(note, claim) for claim in write.release)
            if note.superseded_by is None:
                # A note written as superseded leaves default searches at once (the read-time
                # truth check); marking it too could pass the 100 actions of a transaction.
                transaction.append(self._unindexed_write(note))
        created = sum(1 for write in writes if write.previous is None)
        grown = _content_growth(writes)
        if created:
            refuse_over_limit(created, self._stored_items_limit)
            transaction.append(
                stored_items_write(
                    self._table,
                    tenant_id,
                    created,
                    self._stored_items_limit,
                    notes=True,
                    content_bytes=grown,
                )
            )
        elif grown:
            transaction.append(stored_bytes_write(self._table, tenant_id, grown))
        try:
            self._table.transact(transaction)
        except CounterFullError:
            raise StoredItemsQuotaError(self._stored_items_limit) from None
        for write in writes:
            logger.info(
                "note written",
                extra={"tenant_id": tenant_id, "note_id": write.note.note_id, "version": write.note.version},
            )

    def set_note_indexed_version(
        self, tenant_id: str, note_id: str, version: int, *, owner_id: str | None = None
    ) -> None:
        if owner_id is None:
            change = codec.update({"indexed_version": version})
            self._table.update(
                {
                    "TableName": self._table.name,
                    "Key": codec.key(keys.note_key(tenant_id, note_id)),
                    "UpdateExpression": change.expression,
                    "ConditionExpression": all_of(EXISTS, VERSION_IS_EXPECTED),
                    "ExpressionAttributeNames": {**change.names, "#version": "version"},
                    "ExpressionAttributeValues": {
                        **change.values,
                        **codec.serialize({":expected": version}),
                    },
                    "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                }
            )
            return
        self._table.transact(self._indexed_mark(tenant_id, note_id, version, owner_id))

    def set_notes_indexed_versions(
        self,
        tenant_id: str,
        marks: Sequence[tuple[str, int]],
        *,
        owners: Mapping[str, str] | None = None,
    ) -> None:
        """One ``TransactWriteItems`` per ``MAX_MARKS_PER_TRANSACTION`` marks; when one of them is
        refused (a note moved on or is gone), the marks of that transaction are written one by one
        and the refused ones skipped."""
        owners = owners or {}
        unique = list(dict.fromkeys(marks))
        for start in range(0, len(unique), MAX_MARKS_PER_TRANSACTION):
            chunk = unique[start : start + MAX_MARKS_PER_TRANSACTION]
            if len(chunk) > 1:
                try:
                    self._table.transact(
                        [
                            action
                            for note_id, version in chunk
                            for action in self._indexed_mark(tenant_id, note_id, version, owners.get(note_id))
                        ]
                    )
                    continue
                except (ConflictError, ResourceUnavailableError):
                    pass
            for note_id, version in chunk:
                with suppress(ConflictError, ResourceUnavailableError):
                    self.set_note_indexed_version(tenant_id, note_id, version, owner_id=owners.get(note_id))

    def _indexed_mark(
        self, tenant_id: str, note_id: str, version: int, owner_id: str | None
    ) -> list[TransactWriteItemTypeDef]:
        """The conditional update of the note's ``indexed_version`` to ``version`` and, with
        ``owner_id``, the removal of its unindexed mark, as transaction actions. The mark needs no
        condition of its own: while the note is at ``version`` (the update's condition), the mark
        names that version, as both are written in one commit."""
        change = codec.update({"indexed_version": version})
        actions: list[TransactWriteItemTypeDef] = [
            {
                "Update": {
                    "TableName": self._table.name,
                    "Key": codec.key(keys.note_key(tenant_id, note_id)),
                    "UpdateExpression": change.expression,
                    "ConditionExpression": all_of(EXISTS, VERSION_IS_EXPECTED),
                    "ExpressionAttributeNames": {**change.names, "#version": "version"},
                    "ExpressionAttributeValues": {
                        **change.values,
                        **codec.serialize({":expected": version}),
                    },
                    "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                }
            }
        ]
        if owner_id is not None:
            actions.append(
                {
                    "Delete": {
                        "TableName": self._table.name,
                        "Key": codec.key(keys.unindexed_note_key(tenant_id, owner_id, note_id)),
                    }
                }
            )
        return actions

    def list_unindexed_notes(self, tenant_id: str, owner_id: str, *, limit: int) -> list[Note]:
        """The owner's ``limit`` unindexed marks of the newest notes (note ids descending), checked
        against the notes in one batched read: the active, unsuperseded notes at a version the index
        has not taken. A mark the note contradicts (indexed, forgotten, superseded or gone) is
        removed, while it still names that version."""
        if limit < 1:
            raise ValueError("limit must be at least 1")
        records = self._table.query_first(
            keys.unindexed_partition(tenant_id, owner_id),
            keys.UNINDEXED_NOTE_PREFIX,
            limit,
            newest_first=True,
        )
        marks = {str(record["note_id"]["S"]): int(record["version"]["N"]) for record in records}
        notes = self.get_notes(tenant_id, list(marks))
        pending: list[Note] = []
        for note_id, version in marks.items():
            note = notes.get(note_id)
            if (
                note is not None
                and note.status is NoteStatus.ACTIVE
                and note.superseded_by is None
                and note.indexed_version != note.version
            ):
                pending.append(note)
                continue
            with suppress(ConflictError, ResourceUnavailableError):
                self._table.delete(
                    {
                        "TableName": self._table.name,
                        "Key": codec.key(keys.unindexed_note_key(tenant_id, owner_id, note_id)),
                        "ConditionExpression": "#version = :version",
                        "ExpressionAttributeNames": {"#version": "version"},
                        "ExpressionAttributeValues": codec.serialize({":version": version}),
                    }
                )
        return pending

    def list_note_versions(
        self, tenant_id: str, note_id: str, *, limit: int, next_token: str | None
    ) -> Page[Note]:
        listing = Listing("note-versions", "PK", keys.note_partition(tenant_id, note_id), TABLE_KEY)
        records, token = self._table.query_listing(
            listing, keys.NOTE_VERSION_PREFIX, limit=limit, next_token=next_token, newest_first=True
        )
        return Page[Note](entries=[codec.decode_note(record) for record in records], next_token=token)

    def get_note_versions(
        self, tenant_id: str, keys_: Sequence[tuple[str, int]]
    ) -> dict[tuple[str, int], Note]:
        records = self._table.batch_get(
            [keys.note_version_key(tenant_id, note_id, version) for note_id, version in keys_]
        )
        versions = [codec.decode_note(record) for record in records]
        return {(version.note_id, version.version): version for version in versions}

    def redact_note_versions(self, tenant_id: str, note_id: str) -> None:
        partition = keys.note_partition(tenant_id, note_id)
        first = keys.note_version_sort_key(1)
        last = keys.note_version_sort_key(keys.MAX_NOTE_VERSION)
        for record in self._table.query_range(partition, first, last):
            version = codec.decode_note(record)
            if version.content != redacted(version).content:
                self._table.put(codec.encode_note_version(redacted(version)))

    def delete_note(
        self, tenant_id: str, note_id: str, *, claims: Sequence[NoteClaim], expected_version: int | None
    ) -> None:
        # The META record first, on its version: a delete that loses a race with a writer raises
        # ConflictError before anything is removed. Once it is gone no version can be added (every
        # write is conditioned on META), so the versions, pin and claims are then purged.
        if expected_version is not None:
            # Its content's bytes leave the tenant's count with it: read here, and the delete's
            # condition on the version makes sure the content read is the one deleted.
            record = self._table.get(keys.note_key(tenant_id, note_id))
            stored = content_bytes(codec.decode_note(record).content) if record is not None else 0
            self._table.transact(
                [
                    {
                        "Delete": {
                            "TableName": self._table.name,
                            "Key": codec.key(keys.note_key(tenant_id, note_id)),
                            "ConditionExpression": all_of(EXISTS, VERSION_IS_EXPECTED),
                            "ExpressionAttributeNames": {"#version": "version"},
                            "ExpressionAttributeValues": codec.serialize({":expected": expected_version}),
                            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                        }
                    },
                    stored_items_write(
                        self._table,
                        tenant_id,
                        -1,
                        self._stored_items_limit,
                        notes=True,
                        content_bytes=-stored,
                    ),
                ]
            )
        partition = keys.note_partition(tenant_id, note_id)
        versions = self._table.query_range(
            partition, keys.note_version_sort_key(1), keys.note_version_sort_key(keys.MAX_NOTE_VERSION)
        )
        held = [
            keys.note_claim_key(tenant_id, claim.digest)
            for claim in claims
            if self.claim_holder(tenant_id, claim) == note_id
        ]
        pin_changes = self._table.query_range(
            partition, keys.PIN_CHANGE_PREFIX, keys.PIN_CHANGE_PREFIX + "\uffff"
        )
        leftovers = [
            keys.TableKey(record["PK"]["S"], record["SK"]["S"]) for record in [*versions, *pin_changes]
        ]
        self._table.delete_quietly([*leftovers, keys.pin_key(tenant_id, note_id), *held])
        logger.info("note deleted", extra={"tenant_id": tenant_id, "note_id": note_id})

    def release_expired_note(self, tenant_id: str, note_id: str, *, content_bytes: int = 0) -> bool:
        table_key = keys.expiry_counted_key(tenant_id, note_id)
        mark = {
            **codec.key(table_key),
            "entity": {"S": codec.Entity.EXPIRY_COUNTED.value},
            "expiration": {"N": str(expiration(self._clock() + timedelta(seconds=EXPIRY_MARK_SECONDS)))},
        }
        try:
            self._table.transact(
                [
                    self._table.put_new_write(mark),
                    stored_items_release(self._table, tenant_id, content_bytes=content_bytes),
                ]
            )
        except TransactionRaceError:
            raise
        except (ConflictError, ResourceUnavailableError):
            # The mark was there (counted out before), or the count is at 0 (or absent): the mark
            # alone, so that a later delivery does not count the note out once the count has grown.
            if self._table.get(table_key) is None:
                self._table.put_new(mark)
                logger.warning(
                    "stored items count already at zero for an expired note",
                    extra={"tenant_id": tenant_id, "note_id": note_id},
                )
            return False
        logger.info("expired note counted out", extra={"tenant_id": tenant_id, "note_id": note_id})
        return True

    def _unindexed_write(self, note: Note) -> TransactWriteItemTypeDef:
        """The note's unindexed mark at its new version (an active note), or its removal (a forgotten
        one: the index only has to drop it, which read-time truth checks already do)."""
        if note.status is NoteStatus.ACTIVE:
            return {"Put": {"TableName": self._table.name, "Item": codec.encode_unindexed_note(note)}}
        table_key = keys.unindexed_note_key(note.tenant_id, note.owner_id, note.note_id)
        return {"Delete": {"TableName": self._table.name, "Key": codec.key(table_key)}}

    def _note_put(self, note: Note, previous: Note | None) -> TransactWriteItemTypeDef:
        if previous is None:
            return self._table.put_new_write(codec.encode_note(note))
        return {
            "Put": {
                "TableName": self._table.name,
                "Item": codec.encode_note(note),
                "ConditionExpression": all_of(EXISTS, VERSION_IS_EXPECTED),
                "ExpressionAttributeNames": {"#version": "version"},
                "ExpressionAttributeValues": codec.serialize({":expected": previous.version}),
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            }
        }

    def _claim_put(self, note: Note, claim: NoteClaim, now: int | None) -> TransactWriteItemTypeDef:
        values: dict[str, Any] = {":note_id": note.note_id, ":now": now}
        return {
            "Put": {
                "TableName": self._table.name,
                "Item": codec.encode_note_claim(note, claim),
                "ConditionExpression": CLAIM_IS_TAKEABLE,
                "ExpressionAttributeNames": {"#note_id": "note_id", "#expiration": "expiration"},
                "ExpressionAttributeValues": codec.serialize(values),
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            }
        }

    def _claim_delete(self, note: Note, claim: NoteClaim) -> TransactWriteItemTypeDef:
        return {
            "Delete": {
                "TableName": self._table.name,
                "Key": codec.key(keys.note_claim_key(note.tenant_id, claim.digest)),
                "ConditionExpression": CLAIM_IS_OURS,
                "ExpressionAttributeNames": {"#note_id": "note_id"},
                "ExpressionAttributeValues": codec.serialize({":note_id": note.note_id}),
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            }
        }


def _pinned_notes(records: Sequence[Any], now: datetime) -> dict[str, Note]:
    """The notes among ``records`` (``META`` and ``PIN`` records of notes), each ``pinned`` when its
    pin is among them and has not expired at ``now``."""
    notes: dict[str, Note] = {}
    pinned: set[str] = set()
    for record in records:
        if record["SK"]["S"] == keys.PIN:
            pin = codec.decode_pin(record)
            if pin.is_active(now):
                pinned.add(pin.note_id)
        else:
            note = codec.decode_note(record)
            notes[note.note_id] = note
    return {note_id: note.model_copy(update={"pinned": note_id in pinned}) for note_id, note in notes.items()}


def _content_growth(writes: Sequence[NoteWrite]) -> int:
    """How many UTF-8 bytes of note content ``writes`` add to the tenant's (a revised note's
    previous content leaves it)."""
    return sum(
        content_bytes(write.note.content)
        - (content_bytes(write.previous.content) if write.previous is not None else 0)
        for write in writes
    )
