"""Key builders of the single knowledge table (DESIGN §3); the tenant is part of every tenant-owned key.

| record            | PK                                        | SK                       |
|-------------------|-------------------------------------------|--------------------------|
| knowledge base    | ``T#{tenant}#KB#{kb}``                    | ``META``                 |
| item              | ``T#{tenant}#ITEM#{item}``                | ``META``                 |
| revision          | ``T#{tenant}#ITEM#{item}``                | ``REV#{rev}``            |
| page              | ``T#{tenant}#ITEM#{item}``                | ``PAGE#{rev}#{n:06d}``   |
| item state        | ``T#{tenant}#ITEM#{item}``                | ``STATE#{version:06d}``  |
| external-id guard | ``T#{tenant}#KB#{kb}#EXT#{sha256(ext)}``  | ``META``                 |
| token             | ``TOKEN#{sha256(token)}``                 | ``META``                 |
| note              | ``T#{tenant}#NOTE#{note}``                | ``META``                 |
| note version      | ``T#{tenant}#NOTE#{note}``                | ``VER#{n:06d}``          |
| pin of a note     | ``T#{tenant}#NOTE#{note}``                | ``PIN``                  |
| pin change        | ``T#{tenant}#NOTE#{note}``                | ``PINLOG#{at}#{n}``      |
| note claim        | ``T#{tenant}#NOTECLAIM#{sha256(claim)}``  | ``META``                 |
| quota window      | ``T#{tenant}#QUOTA``                      | ``{quota}#{window}``     |
| stored items      | ``T#{tenant}#QUOTA``                      | ``STORED_ITEMS``         |
| data source       | ``T#{tenant}#DS#{ds}``                    | ``META``                 |
| sync job          | ``T#{tenant}#DS#{ds}``                    | ``JOB#{job}``            |
| synced object     | ``T#{tenant}#DS#{ds}``                    | ``OBJ#{s3 key}``         |
| bucket's source   | ``S3BUCKET#{bucket}``                     | ``T#{tenant}#DS#{ds}``   |
| unindexed note    | ``T#{tenant}#UNINDEXED#{sha256(owner)}``  | ``NOTE#{note}``          |
| bundle job        | ``T#{tenant}#BUNDLE#{job}``               | ``META``                 |
| unindexed item    | ``T#{tenant}#UNINDEXED_ITEMS``            | ``ITEM#{item}``          |

GSI1 lists the items of a base (``GSI1PK = T#{tenant}#KB#{kb}``, ``GSI1SK = ITEM#{item}``), the
bases of a tenant (``GSI1PK = T#{tenant}#BASES``, ``GSI1SK = KB#{kb}``), the tokens of a tenant in
creation order (``GSI1PK = T#{tenant}#TOKENS``, ``GSI1SK = TOKEN#{created_at}#{sha256}``) and the
pins of a tenant in pin order (``GSI1PK = T#{tenant}#PINS``, ``GSI1SK = PIN#{order:06d}#{pin}``)
and the data sources of a base (``GSI1PK = T#{tenant}#KB#{kb}``, ``GSI1SK = DS#{ds}``). An S3 event
names only a bucket, so each data source has a second record under its bucket's partition.
and the pin changes of a tenant in time order (``GSI1PK = T#{tenant}#PINLOG``, ``GSI1SK =
{at}#{note}``, ``at`` the change's UTC timestamp with microseconds), and the notes of a tenant by id
(``GSI1PK = T#{tenant}#NOTES``, ``GSI1SK = NOTE#{note}``: the note's ``META`` record, for exports).

Key components must be non-empty and free of ``#``; otherwise one record's key could spell another
record's (a base id ending in ``#EXT#...`` would address a guard). Builders raise ``ValueError`` for
such components, so callers validate identifiers (``ids.is_well_formed``) before building keys.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from typing import NamedTuple

META = "META"
REVISION_PREFIX = "REV#"
PAGE_PREFIX = "PAGE#"
ITEM_INDEX_PREFIX = "ITEM#"
BASE_INDEX_PREFIX = "KB#"
TOKEN_INDEX_PREFIX = "TOKEN#"
NOTE_VERSION_PREFIX = "VER#"
PIN_CHANGE_PREFIX = "PINLOG#"
ITEM_STATE_PREFIX = "STATE#"
PIN = "PIN"
EXPIRY_COUNTED = "EXPIRY_COUNTED"
STORED_ITEMS = "STORED_ITEMS"
RATE_PREFIX = "RATE#"
PIN_INDEX_PREFIX = "PIN#"
UNINDEXED_NOTE_PREFIX = "NOTE#"
NOTE_INDEX_PREFIX = "NOTE#"
UNINDEXED_ITEM_PREFIX = "ITEM#"
MAX_PAGE_NUMBER = 999_999
"""Page numbers are zero-padded to six digits so that they sort as numbers."""
MAX_NOTE_VERSION = 999_999
"""Note versions are zero-padded to six digits too."""


class TableKey(NamedTuple):
    """A primary key (``PK``, ``SK``) of the table, or a (``GSI1PK``, ``GSI1SK``) pair of GSI1."""

    pk: str
    sk: str


def _part(value: str) -> str:
    if not value or "#" in value:
        raise ValueError("key components must be non-empty and must not contain '#'")
    return value


def _digest(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8")).hexdigest()


def base_partition(tenant_id: str, knowledge_base_id: str) -> str:
    """``T#{tenant}#KB#{kb}``: the base's own PK and the GSI1 partition of its items."""
    return f"T#{_part(tenant_id)}#KB#{_part(knowledge_base_id)}"


def item_partition(tenant_id: str, knowledge_item_id: str) -> str:
    """``T#{tenant}#ITEM#{item}``: the item, its revisions and their pages share this partition."""
    return f"T#{_part(tenant_id)}#ITEM#{_part(knowledge_item_id)}"


def bases_partition(tenant_id: str) -> str:
    """``T#{tenant}#BASES``: the GSI1 partition listing a tenant's bases."""
    return f"T#{_part(tenant_id)}#BASES"


def base_key(tenant_id: str, knowledge_base_id: str) -> TableKey:
    return TableKey(base_partition(tenant_id, knowledge_base_id), META)


def item_key(tenant_id: str, knowledge_item_id: str) -> TableKey:
    return TableKey(item_partition(tenant_id, knowledge_item_id), META)


def revision_key(tenant_id: str, knowledge_item_id: str, knowledge_revision_id: str) -> TableKey:
    return TableKey(
        item_partition(tenant_id, knowledge_item_id), REVISION_PREFIX + _part(knowledge_revision_id)
    )


def page_prefix(knowledge_revision_id: str) -> str:
    """``PAGE#{rev}#``: the sort-key prefix shared by every page of one revision."""
    return f"{PAGE_PREFIX}{_part(knowledge_revision_id)}#"


def page_sort_key(knowledge_revision_id: str, number: int) -> str:
    """``PAGE#{rev}#{number:06d}``; ``number`` counts from 0. Raises ``ValueError`` outside 0..999,999."""
    if not 0 <= number <= MAX_PAGE_NUMBER:
        raise ValueError(f"page number must be within 0..{MAX_PAGE_NUMBER}")
    return f"{page_prefix(knowledge_revision_id)}{number:06d}"


def page_key(tenant_id: str, knowledge_item_id: str, knowledge_revision_id: str, number: int) -> TableKey:
    return TableKey(
        item_partition(tenant_id, knowledge_item_id), page_sort_key(knowledge_revision_id, number)
    )


def external_id_key(tenant_id: str, knowledge_base_id: str, external_id: str) -> TableKey:
    """The guard making ``external_id`` unique within a base; the id is hashed, so any text works."""
    return TableKey(f"{base_partition(tenant_id, knowledge_base_id)}#EXT#{_digest(external_id)}", META)


def token_key(token_hash: str) -> TableKey:
    """``TOKEN#{sha256}``: tokens are looked up before the tenant is known, so the key has none."""
    return TableKey(f"TOKEN#{_part(token_hash)}", META)


def quota_key(tenant_id: str, quota: str) -> TableKey:
    """``T#{tenant}#QUOTA`` / ``RATE#{quota}``: one tenant's theoretical arrival time for one rate
    quota (``knowledge.domain.access.rates``)."""
    return TableKey(f"T#{_part(tenant_id)}#QUOTA", f"{RATE_PREFIX}{_part(quota)}")


def stored_items_key(tenant_id: str) -> TableKey:
    """``T#{tenant}#QUOTA`` / ``STORED_ITEMS``: the count of a tenant's stored items (live knowledge
    items and notes), moved in the transaction of every create and removal."""
    return TableKey(f"T#{_part(tenant_id)}#QUOTA", STORED_ITEMS)


def tokens_partition(tenant_id: str) -> str:
    """``T#{tenant}#TOKENS``: the GSI1 partition listing a tenant's tokens."""
    return f"T#{_part(tenant_id)}#TOKENS"


def token_index_key(tenant_id: str, created_at: datetime, token_hash: str) -> TableKey:
    """GSI1 key listing a token under its tenant, in creation order (UTC, microseconds), then by hash.
    Raises ``ValueError`` for a naive ``created_at``."""
    if created_at.tzinfo is None:
        raise ValueError("created_at must be timezone-aware")
    moment = created_at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return TableKey(tokens_partition(tenant_id), f"{TOKEN_INDEX_PREFIX}{moment}#{_part(token_hash)}")


def item_index_key(tenant_id: str, knowledge_base_id: str, knowledge_item_id: str) -> TableKey:
    """GSI1 key listing an item under its base."""
    return TableKey(
        base_partition(tenant_id, knowledge_base_id), ITEM_INDEX_PREFIX + _part(knowledge_item_id)
    )


def archived_items_partition(tenant_id: str, knowledge_base_id: str) -> str:
    """``T#{tenant}#KB#{kb}#ARCHIVED``: the GSI1 partition of a base's archived items."""
    return f"{base_partition(tenant_id, knowledge_base_id)}#ARCHIVED"


def archived_item_index_key(tenant_id: str, knowledge_base_id: str, knowledge_item_id: str) -> TableKey:
    """GSI1 key listing an archived item under its base's archived items."""
    return TableKey(
        archived_items_partition(tenant_id, knowledge_base_id), ITEM_INDEX_PREFIX + _part(knowledge_item_id)
    )


def base_index_key(tenant_id: str, knowledge_base_id: str) -> TableKey:
    """GSI1 key listing a base under its tenant."""
    return TableKey(bases_partition(tenant_id), BASE_INDEX_PREFIX + _part(knowledge_base_id))


def note_partition(tenant_id: str, note_id: str) -> str:
    """``T#{tenant}#NOTE#{note}``: the note, its versions and its pin share this partition."""
    return f"T#{_part(tenant_id)}#NOTE#{_part(note_id)}"


def note_key(tenant_id: str, note_id: str) -> TableKey:
    return TableKey(note_partition(tenant_id, note_id), META)


def note_version_sort_key(version: int) -> str:
    """``VER#{version:06d}``; raises ``ValueError`` outside 1..999,999."""
    if not 1 <= version <= MAX_NOTE_VERSION:
        raise ValueError(f"note version must be within 1..{MAX_NOTE_VERSION}")
    return f"{NOTE_VERSION_PREFIX}{version:06d}"


def note_version_key(tenant_id: str, note_id: str, version: int) -> TableKey:
    return TableKey(note_partition(tenant_id, note_id), note_version_sort_key(version))


def pin_key(tenant_id: str, note_id: str) -> TableKey:
    """The pin of a note (DESIGN §9): one per note, beside it."""
    return TableKey(note_partition(tenant_id, note_id), PIN)


def expiry_counted_key(tenant_id: str, note_id: str) -> TableKey:
    """The mark that the removal of a note by its expiry was taken off the tenant's stored items
    count, beside the note (it sorts before ``META``, so ``META``..``PIN`` still hold nothing else)."""
    return TableKey(note_partition(tenant_id, note_id), EXPIRY_COUNTED)


def pins_partition(tenant_id: str) -> str:
    """``T#{tenant}#PINS``: the GSI1 partition listing a tenant's pins."""
    return f"T#{_part(tenant_id)}#PINS"


def pin_index_key(tenant_id: str, order: int, pin_id: str) -> TableKey:
    """GSI1 key listing a pin under its tenant: by ``order`` (0..999,999, else ``ValueError``), then
    the pin id (a ULID, so by pin time)."""
    if not 0 <= order <= 999_999:
        raise ValueError("pin order must be within 0..999,999")
    return TableKey(pins_partition(tenant_id), f"{PIN_INDEX_PREFIX}{order:06d}#{_part(pin_id)}")


def note_claim_key(tenant_id: str, digest: str) -> TableKey:
    """A claim held by one note at a time: its semantic key, or its content (``domain.notes``).
    ``digest`` is the claim's hex SHA-256, so any text works."""
    return TableKey(f"T#{_part(tenant_id)}#NOTECLAIM#{_part(digest)}", META)


DATA_SOURCE_INDEX_PREFIX = "DS#"
JOB_PREFIX = "JOB#"
SYNCED_PREFIX = "OBJ#"


def data_source_partition(tenant_id: str, data_source_id: str) -> str:
    """``T#{tenant}#DS#{ds}``: the data source, its jobs and its synced objects."""
    return f"T#{_part(tenant_id)}#DS#{_part(data_source_id)}"


def data_source_key(tenant_id: str, data_source_id: str) -> TableKey:
    return TableKey(data_source_partition(tenant_id, data_source_id), META)


def data_source_index_key(tenant_id: str, knowledge_base_id: str, data_source_id: str) -> TableKey:
    """GSI1 key listing a data source under its base."""
    return TableKey(
        base_partition(tenant_id, knowledge_base_id), DATA_SOURCE_INDEX_PREFIX + _part(data_source_id)
    )


def bucket_source_key(bucket: str, tenant_id: str, data_source_id: str) -> TableKey:
    """``S3BUCKET#{bucket}`` / ``T#{tenant}#DS#{ds}``: a data source found from its bucket."""
    return TableKey(f"S3BUCKET#{_part(bucket)}", data_source_partition(tenant_id, data_source_id))


def job_key(tenant_id: str, data_source_id: str, sync_job_id: str) -> TableKey:
    return TableKey(data_source_partition(tenant_id, data_source_id), JOB_PREFIX + _part(sync_job_id))


def synced_sort_key(s3_key: str) -> str:
    """``OBJ#{s3 key}``: the key is the tail of the sort key, so any character works and records
    sort in the listing's (UTF-8 byte) order."""
    if not s3_key:
        raise ValueError("an S3 key is never empty")
    return SYNCED_PREFIX + s3_key


def synced_key(tenant_id: str, data_source_id: str, s3_key: str) -> TableKey:
    return TableKey(data_source_partition(tenant_id, data_source_id), synced_sort_key(s3_key))


def pin_changes_partition(tenant_id: str) -> str:
    """``T#{tenant}#PINLOG``: the GSI1 partition listing a tenant's pin changes in time order."""
    return f"T#{_part(tenant_id)}#PINLOG"


def pin_change_key(tenant_id: str, note_id: str, at: str, change_id: str) -> TableKey:
    """A pin change of a note (``at``: its UTC timestamp, which sorts as time), beside the note."""
    return TableKey(note_partition(tenant_id, note_id), f"{PIN_CHANGE_PREFIX}{at}#{_part(change_id)}")


def pin_change_index_key(tenant_id: str, note_id: str, at: str) -> TableKey:
    """GSI1 key listing a pin change under its tenant, by time."""
    return TableKey(pin_changes_partition(tenant_id), f"{at}#{_part(note_id)}")


def item_state_key(tenant_id: str, knowledge_item_id: str, version: int) -> TableKey:
    """The state an item recorded at ``version`` (1..999,999, else ``ValueError``), beside it."""
    if not 1 <= version <= MAX_NOTE_VERSION:
        raise ValueError(f"item version must be within 1..{MAX_NOTE_VERSION}")
    return TableKey(item_partition(tenant_id, knowledge_item_id), f"{ITEM_STATE_PREFIX}{version:06d}")


def unindexed_partition(tenant_id: str, owner_id: str) -> str:
    """``T#{tenant}#UNINDEXED#{sha256(owner)}``: the notes of one owner written since the index last
    took them (read-your-own-writes, DESIGN §9). The owner is hashed, so any subject id works."""
    return f"T#{_part(tenant_id)}#UNINDEXED#{_digest(owner_id)}"


def unindexed_note_key(tenant_id: str, owner_id: str, note_id: str) -> TableKey:
    """The mark that ``note_id`` has a version the note index has not taken yet, under its owner."""
    return TableKey(unindexed_partition(tenant_id, owner_id), UNINDEXED_NOTE_PREFIX + _part(note_id))


def notes_partition(tenant_id: str) -> str:
    """GSI1 partition listing a tenant's notes by id."""
    return f"T#{_part(tenant_id)}#NOTES"


def note_index_key(tenant_id: str, note_id: str) -> TableKey:
    """GSI1 keys of a note's ``META`` record."""
    return TableKey(notes_partition(tenant_id), NOTE_INDEX_PREFIX + _part(note_id))


def bundle_job_key(tenant_id: str, job_id: str) -> TableKey:
    """An export or import job of a tenant."""
    return TableKey(f"T#{_part(tenant_id)}#BUNDLE#{_part(job_id)}", META)


def unindexed_items_partition(tenant_id: str) -> str:
    """``T#{tenant}#UNINDEXED_ITEMS``: the tenant's items published since the index last took
    them (read-your-own-writes of ``search_knowledge``). Sparse: a mark lives from the publish
    until the indexer's mark of that revision."""
    return f"T#{_part(tenant_id)}#UNINDEXED_ITEMS"


def unindexed_item_key(tenant_id: str, knowledge_item_id: str) -> TableKey:
    """The mark that ``knowledge_item_id`` has a current revision the search index has not taken."""
    return TableKey(unindexed_items_partition(tenant_id), UNINDEXED_ITEM_PREFIX + _part(knowledge_item_id))
