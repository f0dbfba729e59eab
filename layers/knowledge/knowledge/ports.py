"""Ports: the abstractions services depend on. Adapters in ``knowledge.adapters`` implement them;
only ``knowledge.bootstrap`` chooses and builds the concrete ones."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import Protocol, runtime_checkable

from knowledge.contract.bundles import BundleWork
from knowledge.contract.data_sources import SyncWork
from knowledge.domain.access.rates import QuotaCounters, Rate, RateDecision
from knowledge.domain.as_of import ItemState
from knowledge.domain.bundles import BundleJob
from knowledge.domain.data_sources import (
    DataSource,
    FetchedObject,
    ListedObject,
    ListingPage,
    SyncedObject,
    SyncJob,
)
from knowledge.domain.memory.lifecycle import NoteWrite
from knowledge.domain.memory.notes import Note, NoteClaim
from knowledge.domain.memory.pins import Pin, PinChange
from knowledge.domain.memory.retrieval import IndexedNote, NoteFilter, NoteHit, NoteLegHits, NoteQuery
from knowledge.domain.models import (
    BaseStatus,
    ContentWindow,
    KnowledgeBase,
    KnowledgeItem,
    Page,
    Revision,
    Scope,
    Source,
    TokenRecord,
)
from knowledge.domain.retrieval.hits import IndexedItem, IndexQuery, LegHits
from knowledge.domain.retrieval.index_work import IndexWork, PartWrite
from knowledge.domain.retrieval.truth import CandidateKey, CandidateRecords
from knowledge.domain.segments import ConvertedDocument, Segment


class BaseStore(Protocol):
    """Knowledge bases (DESIGN §3). Getters return ``None`` for absent records.

    Errors: ``ConflictError`` (stale ``expected_version``, carrying the current version),
    ``ResourceUnavailableError`` (an update of an absent base), ``RequestValidationError`` (a
    ``next_token`` that this listing did not issue), ``DependencyUnavailableError`` (throttling, outage).
    """

    def create_base(
        self, tenant_id: str, *, name: str, owner_id: str, scope: Scope, team_id: str | None
    ) -> KnowledgeBase: ...

    def update_base(
        self,
        tenant_id: str,
        knowledge_base_id: str,
        *,
        expected_version: int,
        status: BaseStatus | None = None,
        name: str | None = None,
    ) -> KnowledgeBase:
        """Change ``status`` and/or ``name``; the version moves by one even when neither is given."""
        ...

    def delete_base(self, tenant_id: str, knowledge_base_id: str, *, expected_version: int) -> None:
        """Delete the base record for good (its items are the caller's: ``ItemStore.purge_item``);
        ``ConflictError`` on a stale ``expected_version``, ``ResourceUnavailableError`` when absent."""
        ...

    def get_base(self, tenant_id: str, knowledge_base_id: str) -> KnowledgeBase | None: ...

    def get_bases(self, tenant_id: str, knowledge_base_ids: Sequence[str]) -> dict[str, KnowledgeBase]:
        """The stored bases among ``knowledge_base_ids`` by id; absent ones are left out."""
        ...

    def list_bases(self, tenant_id: str, *, limit: int, next_token: str | None) -> Page[KnowledgeBase]:
        """The tenant's bases in id (creation) order, ``limit`` (≥ 1, else ``ValueError``) at a time."""
        ...


class ItemStore(Protocol):
    """Items and their immutable revisions (DESIGN §3), in bases of the same store.

    Every change of an item is conditioned on its ``version`` and moves it by one; a lost race is
    ``ConflictError`` carrying the stored version. An absent base or item, an archived item and a
    revision of another item are ``ResourceUnavailableError`` on a write. ``external_id`` is unique
    among the live items of a base: a second creator gets ``ConflictError`` with the holder's
    version. An item's ``title`` changes only when a revision becomes current (created or added
    with ``publish``, or published, a rollback included): it is the current revision's title, never
    a draft's. Archived items refuse every later write, leave ``list_items`` and release their
    external id; ``get_item`` still returns them. Other errors as in ``BaseStore``.
    """

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
        """A new item (version 1) with its first revision (holding ``segments``), published at once
        when ``publish``; it counts against the tenant's stored items quota
        (``StoredItemsQuotaError`` when full, and nothing is stored), counted in the same atomic
        write as the item."""
        ...

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
        """A new latest revision holding ``segments`` (never inherited from an earlier revision);
        ``title`` and ``source`` default to the latest revision's; ``expected_version=None`` means
        the version read just before writing."""
        ...

    def publish_revision(
        self, tenant_id: str, knowledge_item_id: str, knowledge_revision_id: str, *, expected_version: int
    ) -> KnowledgeItem:
        """Make a revision of the item current (an older one rolls back); its ``published_at`` is
        set the first time only."""
        ...

    def archive_item(self, tenant_id: str, knowledge_item_id: str, *, expected_version: int) -> KnowledgeItem:
        """Archive the item and release its external id; it stops counting against the tenant's
        stored items quota in the same atomic write."""
        ...

    def purge_item(self, tenant_id: str, knowledge_item_id: str, *, expected_version: int) -> None:
        """Delete the item for good, archived or not: its record (on ``expected_version``:
        ``ConflictError`` when stale, ``ResourceUnavailableError`` when absent), its external-id
        guard and quota count in the same atomic write, then every revision, page and state record.
        The record goes first, so no write can add to the item while the rest is deleted."""
        ...

    def set_indexed_revision(
        self,
        tenant_id: str,
        knowledge_item_id: str,
        knowledge_revision_id: str | None,
        *,
        expected_version: int | None = None,
    ) -> None:
        """Record which revision the index holds, without moving ``version``; with
        ``expected_version``, only while the item is still at that version (``ConflictError`` when it
        moved on, ``ResourceUnavailableError`` when it was archived meanwhile), so a slow indexer
        can never overwrite the mark of a newer one. A mark of the item's current revision takes
        the item off ``list_unindexed_items``."""
        ...

    def list_unindexed_items(self, tenant_id: str, *, limit: int) -> list[KnowledgeItem]:
        """Up to ``limit`` (≥ 1, else ``ValueError``) of the tenant's published items whose current
        revision the search index has not taken yet (``indexed_revision_id`` behind
        ``current_revision_id``), the newest items first (item ids descending), as stored now:
        read-your-own-writes (DESIGN §9). Strongly consistent: an item is listed from the write
        that published its current revision until the indexer's mark of that revision. Bases are
        not read: visibility is the caller's."""
        ...

    def get_item(self, tenant_id: str, knowledge_item_id: str) -> KnowledgeItem | None: ...

    def get_items(self, tenant_id: str, knowledge_item_ids: Sequence[str]) -> dict[str, KnowledgeItem]:
        """The stored items among ``knowledge_item_ids`` by id; absent ones are left out."""
        ...

    def find_item_by_external_id(
        self, tenant_id: str, knowledge_base_id: str, external_id: str
    ) -> KnowledgeItem | None:
        """The live item of the base holding ``external_id``."""
        ...

    def list_items(
        self, tenant_id: str, knowledge_base_id: str, *, limit: int, next_token: str | None
    ) -> Page[KnowledgeItem]:
        """The base's items that are not archived, in id (creation) order."""
        ...

    def list_archived_items(
        self, tenant_id: str, knowledge_base_id: str, *, limit: int, next_token: str | None
    ) -> Page[KnowledgeItem]:
        """The base's archived items, in id (creation) order (on DynamoDB, items an earlier version
        archived only once ``adapters.dynamodb.backfill`` keyed them)."""
        ...

    def get_revision(
        self, tenant_id: str, knowledge_item_id: str, knowledge_revision_id: str
    ) -> Revision | None: ...

    def get_revisions(
        self, tenant_id: str, keys: Sequence[tuple[str, str]]
    ) -> dict[tuple[str, str], Revision]:
        """Revisions by ``(knowledge_item_id, knowledge_revision_id)``; absent ones are left out."""
        ...

    def list_revisions(
        self, tenant_id: str, knowledge_item_id: str, *, limit: int, next_token: str | None
    ) -> Page[Revision]:
        """The item's revisions, newest first."""
        ...

    def list_item_states(self, tenant_id: str, knowledge_item_id: str) -> list[ItemState]:
        """The item's recorded states (one per write since states are recorded, in the write's own
        transaction), oldest first; empty for an absent item."""
        ...


class ContentStore(Protocol):
    """The content of sealed revisions, in code points (pages of DESIGN §3).

    Errors: ``ValueError`` for a window outside ``0..total_chars`` or a negative ``limit``;
    ``DependencyUnavailableError`` when stored content is missing or does not match the revision.
    """

    def read_content(self, revision: Revision, *, offset: int, limit: int) -> ContentWindow:
        """``content[offset:offset + limit]``; ``offset == total_chars`` gives empty text."""
        ...

    def read_all_content(self, revision: Revision) -> str:
        """The whole content, checked against the revision's SHA-256."""
        ...


class TokenStore(Protocol):
    """Bearer token records, by the token's SHA-256 (never the token itself), each with its lineage
    (``TokenRecord.ancestor_token_ids``).

    Errors: ``ConflictError`` (a hash already stored), ``ResourceUnavailableError`` (revoking an
    absent token), ``RequestValidationError`` (a ``next_token`` this listing did not issue),
    ``DependencyUnavailableError``.
    """

    def put_token(self, record: TokenRecord) -> None: ...

    def get_token(self, token_hash: str) -> TokenRecord | None:
        """The record even when expired or revoked; ``TokenRecord.is_valid_at`` decides validity."""
        ...

    def get_tokens(self, token_hashes: Sequence[str]) -> dict[str, TokenRecord]:
        """The stored records among ``token_hashes`` by hash (strongly consistent); absent ones are
        left out."""
        ...

    def list_tokens(
        self,
        tenant_id: str,
        *,
        limit: int,
        next_token: str | None,
        admits: Callable[[TokenRecord], bool] | None = None,
    ) -> Page[TokenRecord]:
        """The tenant's tokens (revoked and expired ones included) in creation order, ``limit``
        (≥ 1, else ``ValueError``) at a time; with ``admits``, only those it accepts, pages still
        full."""
        ...

    def revoke_token(self, token_hash: str) -> None: ...


class NoteStore(Protocol):
    """Notes and their immutable versions (DESIGN §9), with the claims that keep semantic keys and
    contents unique among current notes (``domain.notes``).

    Errors: ``ConflictError`` carrying the stored version when a note moved on from the version a
    write expected (or exists, for a new note); ``ClaimTakenError`` when a claim to take is held by
    another note that has not expired; ``ResourceUnavailableError`` when a note to mark is absent;
    ``RequestValidationError`` for a ``next_token`` this listing did not issue;
    ``DependencyUnavailableError`` (throttling, outage).
    """

    def get_note(self, tenant_id: str, note_id: str) -> Note | None:
        """The note at its current version; ``pinned`` says whether its pin record exists."""
        ...

    def get_notes(self, tenant_id: str, note_ids: Sequence[str]) -> dict[str, Note]:
        """The stored notes among ``note_ids`` by id (``pinned`` as ``get_note``); absent ones are
        left out. One batched read."""
        ...

    def claim_holder(self, tenant_id: str, claim: NoteClaim) -> str | None:
        """The id of the note holding ``claim`` (which may have expired or changed since)."""
        ...

    def commit_notes(self, tenant_id: str, writes: Sequence[NoteWrite]) -> None:
        """Apply ``writes`` all at once or not at all: each note at its new version (created when
        ``previous`` is ``None``, else only while stored at ``previous.version``) with its version
        record, each claim of ``claim`` taken (or kept, its expiry refreshed) and each of ``release``
        let go. At most 20 writes (else ``ValueError``), and no claim both released and taken in one
        commit (DynamoDB refuses two operations on one record in a transaction). Each created note
        counts against the tenant's stored items quota in the same commit: ``StoredItemsQuotaError``
        when they do not all fit, and nothing is applied."""
        ...

    def set_note_indexed_version(
        self, tenant_id: str, note_id: str, version: int, *, owner_id: str | None = None
    ) -> None:
        """Record that the index holds ``version`` while the note is still at it; ``version`` does
        not move. With ``owner_id`` (the note's), the note also leaves its owner's unindexed notes
        (``list_unindexed_notes``) in the same write. ``ConflictError`` when it moved on,
        ``ResourceUnavailableError`` when it is gone."""
        ...

    def set_notes_indexed_versions(
        self,
        tenant_id: str,
        marks: Sequence[tuple[str, int]],
        *,
        owners: Mapping[str, str] | None = None,
    ) -> None:
        """``set_note_indexed_version`` for each ``(note_id, version)`` of ``marks`` (one tenant's),
        with the owner ``owners`` gives each note id, in as few writes as the store allows; a mark
        whose note moved on or is gone is skipped, not raised."""
        ...

    def list_unindexed_notes(self, tenant_id: str, owner_id: str, *, limit: int) -> list[Note]:
        """Up to ``limit`` (≥ 1, else ``ValueError``) of the notes ``owner_id`` owns that are active,
        not superseded and at a version the index has not taken yet (``indexed_version`` behind),
        the newest notes first (note ids descending: ids grow with creation time), as stored now
        (``pinned`` as ``get_note``): read-your-own-writes (DESIGN §9). Strongly consistent: a
        note is listed from the commit that wrote it until the indexer's mark of that version."""
        ...

    def list_note_versions(
        self, tenant_id: str, note_id: str, *, limit: int, next_token: str | None
    ) -> Page[Note]:
        """The note's versions, newest first, ``limit`` (≥ 1, else ``ValueError``) at a time."""
        ...

    def get_note_versions(
        self, tenant_id: str, keys: Sequence[tuple[str, int]]
    ) -> dict[tuple[str, int], Note]:
        """Stored versions by ``(note_id, version)``; absent ones are left out. One batched read."""
        ...

    def redact_note_versions(self, tenant_id: str, note_id: str) -> None:
        """Replace the content of every stored version with ``[redacted]`` (idempotent)."""
        ...

    def delete_note(
        self, tenant_id: str, note_id: str, *, claims: Sequence[NoteClaim], expected_version: int | None
    ) -> None:
        """Delete every record of the note, only while it is at ``expected_version``: the note
        itself first (``ConflictError`` otherwise, and then nothing is removed), then its versions,
        pin and those of ``claims`` it holds; removing the note and taking it off the tenant's
        stored items count are one atomic write. ``expected_version=None`` leaves the note record
        alone: it is already gone (a TTL sweep), and what remains of it is removed."""
        ...

    def release_expired_note(self, tenant_id: str, note_id: str, *, content_bytes: int = 0) -> bool:
        """Take a note that its expiry removed (the table's TTL sweep, reported by the stream) off
        the tenant's stored items count, and its ``content_bytes`` (the UTF-8 size of the content it
        held) off the tenant's stored bytes, exactly once however often it is called for that note:
        ``True`` when this call took it off; ``False`` when an earlier call did, or when the count is
        already 0 (it never goes below). The note itself is not read or touched."""
        ...


class PinStore(Protocol):
    """Pins (DESIGN §9): at most one per note, beside it, listed per tenant in pin order
    (``Pin.sort_key``: ``order``, then pin time).

    Errors: ``ConflictError`` when the pin moved on from the one a write expected (another pin
    was written, or removed, first); ``ResourceUnavailableError`` when the note is gone;
    ``RequestValidationError`` for a ``next_token`` this listing did not issue;
    ``DependencyUnavailableError``.
    """

    def get_pin(self, tenant_id: str, note_id: str) -> Pin | None: ...

    def put_pin(self, pin: Pin, *, previous: Pin | None) -> None:
        """Write ``pin`` while the note's record exists and the stored pin is ``previous`` (the same
        ``pin_id``), or there is none when ``previous`` is ``None``; the same write records the
        change in the note's pin history (at ``pin.updated_at``)."""
        ...

    def delete_pin(self, tenant_id: str, note_id: str, *, pin_id: str, at: datetime | None = None) -> None:
        """Remove the note's pin while it is ``pin_id`` (``ConflictError`` if another pin replaced
        it), recording the removal at ``at`` (default: the store's clock) in the note's pin history;
        nothing to do when there is no pin."""
        ...

    def pin_changes(self, tenant_id: str, until: datetime) -> list[PinChange]:
        """Every recorded pin change of the tenant's notes at or before ``until``, oldest first
        (``domain.memory.pins.pins_at`` replays them). On DynamoDB a GSI query: eventually
        consistent, which the past moments ``as_of`` names do not notice."""
        ...

    def list_pins(self, tenant_id: str, *, limit: int, next_token: str | None) -> Page[Pin]:
        """The tenant's pins in pin order, ``limit`` (≥ 1, else ``ValueError``) at a time, whatever
        their notes' state (the services filter)."""
        ...

    def resume_pins_after(self, pin: Pin) -> str:
        """A ``next_token`` of ``list_pins`` that resumes right after ``pin``."""
        ...


class QuotaStore(Protocol):
    """Per-tenant rate quotas (``knowledge.services.quotas``, GCRA: ``knowledge.domain.access.rates``),
    shared by every process."""

    def consume_rate(
        self, tenant_id: str, quota: str, rate: Rate, *, now: int, expires_at: int, expect_idle: bool
    ) -> RateDecision:
        """One use of ``quota`` by ``tenant_id`` at ``now`` (epoch microseconds), decided by
        ``rate.decide`` on the stored theoretical arrival time and stored with it atomically when
        admitted (nothing changes when refused). ``expires_at`` (epoch seconds) is when the record
        may be purged. ``expect_idle`` is a hint, true when the caller saw no use in the last burst:
        an adapter that needs one conditional write per case tries the idle case first. Raises
        ``DependencyUnavailableError``; ``ValueError`` for a tenant id with ``#``."""
        ...

    def read_counters(self, tenant_id: str) -> QuotaCounters:
        """The tenant's rate arrival times and stored counts, read at once (strongly consistent):
        what ``GET /v1/usage`` reports. ``content_bytes`` is moved by the writes that store content,
        in their own atomic write: a revision adds its content's UTF-8 bytes (revisions are kept,
        archived items' too), a note write adds its content's and takes off its previous
        version's, a note's deletion or counted-out expiry takes its content's off. A count never
        reads below 0, and the notes never above the total (notes created before they were counted
        apart count as items). Raises ``DependencyUnavailableError``."""
        ...


class BundleStore(Protocol):
    """A tenant's records whole, for export and import (DESIGN §9 "Export and import"): a listing
    of every note, restores that write records as they were exported (ids, versions and
    timestamps kept) only where the tenant has none of that id, and the jobs' records.

    A restored record is new to its tenant as a write is: the stream takes it to the indexer,
    and it counts toward the tenant's stored items (``QuotaExceededError`` past the limit).
    """

    def list_notes(self, tenant_id: str, *, limit: int, next_token: str | None) -> Page[Note]:
        """The tenant's notes as stored now (forgotten and superseded ones too), by note id;
        ``limit`` 1..100."""
        ...

    def item_records(
        self, tenant_id: str, knowledge_item_id: str
    ) -> tuple[KnowledgeItem, list[tuple[Revision, str]], list[ItemState]] | None:
        """The item as stored now, every ``(revision, content)`` of it by revision id and its state
        history oldest first, read at once (on DynamoDB one strongly consistent Query of the item's
        partition); ``None`` for an absent item. ``DependencyUnavailableError`` when a revision's
        pages do not add up to its content."""
        ...

    def restore_base(self, base: KnowledgeBase) -> bool:
        """Write ``base`` when its tenant has no base of its id: ``True``; ``False`` (nothing
        written) when it has one."""
        ...

    def restore_item(
        self,
        item: KnowledgeItem,
        revisions: Sequence[tuple[Revision, str]],
        states: Sequence[ItemState],
    ) -> bool:
        """Write ``item`` (``indexed_revision_id`` cleared), each ``(revision, content)`` with its
        content paged as the store pages new revisions (the revision's ``page_size`` and
        ``page_count`` are the store's own), its state history and its external-id guard, all or
        nothing, when the tenant has no item of its id: ``True``; ``False`` when it has one.
        ``ConflictError`` when another item of the base holds its external id;
        ``ResourceUnavailableError`` when its base is absent."""
        ...

    def restore_note(self, note: Note, versions: Sequence[Note]) -> bool:
        """Write ``note`` (its current state; ``indexed_version`` cleared, so the indexer takes it)
        with every version record and, for a current note with a semantic key, its claim, all or
        nothing, when the tenant has no note of its id: ``True``; ``False`` when it has one.
        ``ConflictError`` when another note holds the claim."""
        ...

    def restore_pin(self, pin: Pin) -> bool:
        """Write ``pin`` (and a pin change at its ``updated_at``) when its note has no pin and
        exists: ``True``; ``False`` otherwise."""
        ...

    def create_bundle_job(self, job: BundleJob) -> None: ...

    def get_bundle_job(self, tenant_id: str, job_id: str) -> BundleJob | None: ...

    def put_bundle_job(self, job: BundleJob, *, expected_version: int) -> BundleJob:
        """Store ``job`` with ``version`` ``expected_version + 1`` when the stored one has
        ``expected_version``; ``ConflictError`` otherwise."""
        ...


class BundleBucket(Protocol):
    """Where bundles are kept (DESIGN §9): S3 on AWS and in the local runtime (moto, saved to the
    state directory at each clean stop). Keys are the services' own (``bundles/<tenant>/<job>``)."""

    def upload(self, key: str, chunks: Iterable[bytes]) -> int:
        """Write ``chunks`` as the object ``key`` (multipart past 8 MiB); its size in bytes."""
        ...

    def lines(self, key: str) -> Iterator[bytes] | None:
        """The object's lines as they stream in, ``None`` when there is no such object."""
        ...

    def download_url(self, key: str, *, expires_in: int) -> str:
        """A presigned GET of ``key``, valid ``expires_in`` seconds."""
        ...

    def upload_url(self, key: str, *, expires_in: int) -> str:
        """A presigned PUT of ``key``, valid ``expires_in`` seconds."""
        ...


class CatalogStore(BaseStore, ItemStore, Protocol):
    """Bases with their items and revisions: what the write API and the queue change."""

    def read_candidates(self, tenant_id: str, candidates: Sequence[CandidateKey]) -> CandidateRecords:
        """What the read-time truth check of a search needs (DESIGN §4), in one batched read: the
        item, the base and the revision of every candidate (duplicates read once, absent records
        left out). On DynamoDB one strongly consistent ``BatchGetItem`` per 100 distinct keys, its
        ``UnprocessedKeys`` retried with backoff (``DependencyUnavailableError`` when they stay)."""
        ...


class CorpusStore(CatalogStore, ContentStore, Protocol):
    """The catalog and the revisions' content: what search and the indexer read."""


class MemoryStore(NoteStore, PinStore, Protocol):
    """Notes and their pins: what the memory tools read and write."""


class KnowledgeStore(CorpusStore, TokenStore, MemoryStore, QuotaStore, BundleStore, Protocol):
    """The source of truth (DESIGN §3): every aggregate in one store, which ``bootstrap`` builds
    once and hands to each service as the narrowest of the ports above that it needs.

    Every method but the token lookups by hash is scoped by ``tenant_id``. Getters return ``None`` for absent
    records; visibility is the services' job.
    """


class Embedder(Protocol):
    """Text → L2-normalized float32 vectors of ``dimension`` floats; cosine similarity is the dot product.

    Errors: ``DependencyUnavailableError`` when the model service is down or throttled.
    """

    @property
    def model_id(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> list[list[float]]: ...

    def forget(self, texts: Sequence[str]) -> None:
        """Drop any cached vector of ``texts`` (a hard forget purges a note's embeddings); an
        embedder without a cache has nothing to drop."""
        ...


@runtime_checkable
class VectorCache(Protocol):
    """An embedder's cached vectors by cache key (``embedding_cache.embedding_key``): what an
    export carries and a same-model import puts back, so nothing is embedded twice. ``cached``
    gives the vectors of texts already embedded (none is computed); ``keep`` stores vectors of the
    model's dimension and answers how many it stored."""

    @property
    def model_id(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    def cached(self, texts: Sequence[str]) -> dict[str, list[float]]: ...

    def keep(self, vectors: Mapping[str, list[float]]) -> int: ...


class EmbeddingCache(Protocol):
    """Vectors by content key (``sha256(model_id, text)``), so unchanged text is never embedded twice."""

    def get_many(self, keys: Sequence[str]) -> Mapping[str, list[float]]: ...

    def put_many(self, vectors: Mapping[str, list[float]]) -> None: ...

    def delete_many(self, keys: Sequence[str]) -> None: ...


class WorkQueue(Protocol):
    """Where index work goes (the work queue; SQS on AWS and in the local runtime).

    Errors: ``DependencyUnavailableError`` when a message could not be sent (nothing is lost: the
    caller fails and its own event is retried).
    """

    def send(self, work: Sequence[IndexWork]) -> None: ...


class SearchIndex(Protocol):
    """Chunks of current published revisions with BM25 and kNN search (DESIGN §4).

    Errors: ``IndexConfigurationError`` when the index was built for another embedding model or
    dimension; ``DependencyUnavailableError`` when the engine is unreachable.
    """

    def ensure_ready(self, *, model_id: str, dimension: int) -> None: ...

    def upsert(self, item: IndexedItem) -> bool:
        """Replace the item's chunks; ``False`` (nothing written) if the index holds a higher version."""
        ...

    def upsert_many(self, items: Sequence[IndexedItem]) -> list[bool]:
        """``upsert`` for a batch in one pass (bulk requests, one commit); one result per item, in order."""
        ...

    def upsert_part(self, item: IndexedItem, *, part: int, parts: int) -> PartWrite:
        """Add part ``part`` of ``parts`` of the item at ``item.version`` (``item`` holds that
        part's chunks and passages only).

        A higher version than the one held drops the item's chunks first; the same version adds
        the part to those held (a part already held is left as it is: revisions are immutable);
        a lower version, or a tombstone at or above it, writes nothing (``written=False``).
        ``complete`` says every part of the version is held.
        """
        ...

    def remove_item(self, tenant_id: str, knowledge_item_id: str, *, version: int) -> None:
        """Remove the item's chunks and remember ``version``: a later upsert at or below it is ignored."""
        ...

    def remove_base(self, tenant_id: str, knowledge_base_id: str) -> None: ...

    def held_version(self, tenant_id: str, knowledge_item_id: str) -> int | None:
        """The version the index holds for the item, live or a tombstone; ``None`` when it holds
        none. An item written again at or below a tombstone's version is refused."""
        ...

    def search(self, query: IndexQuery) -> LegHits:
        """Up to ``query.k`` visible hits per requested leg, best first. A leg the engine fails raises
        ``DependencyUnavailableError`` with ``details.leg``, or, when ``query.tolerate`` names it and
        the other leg answered, comes back empty as ``LegHits.failed``."""
        ...

    def score_items(self, query: IndexQuery, items: Sequence[IndexedItem]) -> LegHits:
        """The hits ``items`` would give for ``query`` if the index held them beside what it holds
        (read-your-own-writes: published revisions not indexed yet, which the caller has already
        checked against ``query.visibility``): the lexical leg over their passages by the index's
        own analysis and BM25 (``title`` and ``text`` combined as the search combines them) with
        the statistics of its corpus with those passages beside what it holds (document count,
        document frequencies, average field lengths), so a passage scores as it will once indexed,
        a passage that shares no term with the query left out; the semantic leg by the cosine of
        their chunks' vectors with ``query.vector``. Up to ``query.k`` per requested leg, best
        first (ties by item id, then ordinal); nothing is written. A failed request raises
        ``DependencyUnavailableError``."""
        ...

    def refresh(self) -> None: ...


class NoteIndex(Protocol):
    """Notes with BM25 and kNN search (DESIGN §9), apart from knowledge: one document per note at
    its current version, filtered inside each leg (``NoteFilter``). A note *history* index (DESIGN
    §11) has the same methods over one document per note version (``IndexedNote.valid_from`` /
    ``valid_to``): ``upsert_notes`` writes or rewrites versions, ``remove_note`` drops them all, and
    ``NoteFilter.as_of`` admits the versions valid at that moment.

    Errors: ``IndexConfigurationError`` when the index was built for another embedding model or
    dimension; ``DependencyUnavailableError`` when the engine is unreachable.
    """

    def ensure_ready(self, *, model_id: str, dimension: int) -> None: ...

    def upsert_notes(self, notes: Sequence[IndexedNote]) -> list[bool]:
        """Index each note; ``False`` for one whose held version (or tombstone) is newer or equal
        to a tombstone. One result per note, in order."""
        ...

    def remove_note(self, tenant_id: str, note_id: str, *, version: int) -> None:
        """Remove the note and remember ``version``: a later upsert at or below it is ignored."""
        ...

    def held_version(self, tenant_id: str, note_id: str) -> int | None:
        """The version the index holds for the note, live or a tombstone (a history index: its
        tombstone); ``None`` when it holds none."""
        ...

    def search(self, query: NoteQuery) -> NoteLegHits:
        """Up to ``query.k`` admitted notes per requested leg, best first; a failed leg as
        ``SearchIndex.search`` says (``NoteQuery.tolerate``, ``NoteLegHits.failed``)."""
        ...

    def score_notes(self, query: NoteQuery, notes: Sequence[IndexedNote]) -> NoteLegHits:
        """The hits ``notes`` would give for ``query`` if the index held them beside what it holds
        (read-your-own-writes: notes written but not indexed yet, which the caller has already
        checked against ``query.filter``): the lexical leg by the index's own analysis and BM25 with
        its corpus statistics (document count, document frequencies, average length), a note that
        shares no term with the query left out; the semantic leg by the cosine of their vectors
        with ``query.vector``. Up to ``query.k`` per requested leg, best first; nothing is written.
        A failed leg as ``search`` says."""
        ...

    def browse(self, note_filter: NoteFilter, k: int) -> list[NoteHit]:
        """Up to ``k`` admitted notes without a query: ``importance`` descending, then the time of
        their indexed version (``updated_at``) descending, then note id; ``score`` is the importance."""
        ...

    def refresh(self) -> None: ...


class RuntimeSwitch(Protocol):
    """The operational kill switch of DESIGN §5."""

    def is_enabled(self) -> bool: ...


class Clock(Protocol):
    def __call__(self) -> datetime: ...


class DataSourceStore(Protocol):
    """Data sources, their sync jobs and the record of each synced object (DESIGN §6, data sources).

    Jobs are versioned: ``put_job`` with ``expected_version`` writes only over that version and moves
    it by one (``ConflictError`` otherwise, carrying the stored version). Synced objects sort by
    key in UTF-8 byte order. Errors as in ``BaseStore``.
    """

    def create_data_source(self, source: DataSource) -> None:
        """Write a new data source (``ConflictError`` if its id is taken)."""
        ...

    def get_data_source(self, tenant_id: str, data_source_id: str) -> DataSource | None: ...

    def list_data_sources(self, tenant_id: str, knowledge_base_id: str) -> list[DataSource]:
        """The base's data sources, in creation order."""
        ...

    def data_sources_of_bucket(self, bucket: str) -> list[DataSource]:
        """Every tenant's data sources reading ``bucket`` (S3 events name only the bucket)."""
        ...

    def delete_data_source(self, tenant_id: str, data_source_id: str) -> None:
        """Remove the data source, its jobs and its synced-object records (absent: nothing)."""
        ...

    def create_job(self, job: SyncJob) -> None: ...

    def get_job(self, tenant_id: str, data_source_id: str, sync_job_id: str) -> SyncJob | None: ...

    def put_job(self, job: SyncJob, *, expected_version: int) -> SyncJob:
        """Store ``job`` over version ``expected_version``; the stored job has the next version."""
        ...

    def get_synced(self, tenant_id: str, data_source_id: str, key: str) -> SyncedObject | None: ...

    def synced_between(
        self, tenant_id: str, data_source_id: str, *, after: str | None, through: str | None, limit: int
    ) -> list[SyncedObject]:
        """Up to ``limit`` records with ``after < key <= through`` (``None``: unbounded), by key."""
        ...

    def put_synced(self, tenant_id: str, data_source_id: str, record: SyncedObject) -> None: ...

    def delete_synced(self, tenant_id: str, data_source_id: str, key: str) -> None: ...


class DocumentBucket(Protocol):
    """Reads S3 buckets (the deployment's credentials).

    Errors: ``DependencyUnavailableError`` when S3 cannot be reached or refuses (access denied, a
    missing bucket), so the work is retried and the reason logged.
    """

    def list_page(
        self, bucket: str, prefix: str, *, continuation_token: str | None, limit: int
    ) -> ListingPage:
        """Up to ``limit`` objects under ``prefix`` in key order, from ``continuation_token``."""
        ...

    def head(self, bucket: str, key: str) -> ListedObject | None:
        """The object's ETag and size; ``None`` when it does not exist."""
        ...

    def fetch(self, bucket: str, key: str) -> FetchedObject | None:
        """The object's bytes; ``None`` when it does not exist (deleted meanwhile)."""
        ...


class SyncWorkQueue(Protocol):
    """Where the next step of a sync job is sent (the document queue)."""

    def send(self, work: SyncWork | BundleWork) -> None:
        """Send one message; ``DependencyUnavailableError`` when the queue refuses."""
        ...


class DocumentConverter(Protocol):
    """Turns an object's bytes into Markdown (DESIGN §6, formats)."""

    def suffixes(self) -> frozenset[str]:
        """The file suffixes (lower case, with the dot) it converts."""
        ...

    def convert(self, name: str, data: bytes) -> ConvertedDocument:
        """The document of ``name`` (for its suffix) and ``data``: ``ConversionError`` for a file
        it cannot read (encrypted, corrupt, no text), ``DocumentTooLargeError`` for one over a limit."""
        ...
