"""The ``KnowledgeStore`` port on one DynamoDB table (DESIGN §3; keys in ``keys``).

One module per aggregate: ``base_records``, ``item_records`` (items, revisions and external-id
guards), ``candidate_records`` (a search's truth check: items, bases and revisions in one batch),
``page_records`` (revision content), ``token_records``, ``note_records`` (notes, their versions
and claims), ``pin_records``, ``quota_records`` and ``bundle_records`` (export and import); they
share the table's calls (``table``), the record layout (``codec``), listings' ``next_token``
(``paging``) and one translation of DynamoDB failures into domain errors (``failures``):
throttling, outages and connection errors → ``DependencyUnavailableError``; a write whose target is
absent (or archived) → ``ResourceUnavailableError``; a lost version race → ``ConflictError``
carrying the stored version.
Identifiers containing ``#`` make the key builders raise ``ValueError``: services validate ids first.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

import boto3
from botocore.config import Config

from knowledge.adapters.dynamodb.base_records import DynamoDBBaseStore
from knowledge.adapters.dynamodb.bundle_records import DynamoDBBundleStore
from knowledge.adapters.dynamodb.candidate_records import DynamoDBCandidateRecords
from knowledge.adapters.dynamodb.item_records import DynamoDBItemStore
from knowledge.adapters.dynamodb.note_records import DynamoDBNoteStore
from knowledge.adapters.dynamodb.page_records import DynamoDBContentStore
from knowledge.adapters.dynamodb.pin_records import DynamoDBPinStore
from knowledge.adapters.dynamodb.quota_records import DynamoDBQuotaStore
from knowledge.adapters.dynamodb.table import DynamoDBTable
from knowledge.adapters.dynamodb.token_records import DynamoDBTokenStore
from knowledge.domain.lifecycle import DEFAULT_PAGE_SIZE_CHARS
from knowledge.ports import Clock

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from knowledge.settings import Settings


def _utc_now() -> datetime:
    return datetime.now(UTC)


class DynamoDBKnowledgeStore(
    DynamoDBBaseStore,
    DynamoDBItemStore,
    DynamoDBCandidateRecords,
    DynamoDBContentStore,
    DynamoDBTokenStore,
    DynamoDBNoteStore,
    DynamoDBPinStore,
    DynamoDBQuotaStore,
    DynamoDBBundleStore,
):
    """Bases, items, revisions, pages, tokens, notes, pins and quota counters in one DynamoDB table.

    ``dynamodb_client`` defaults to a boto3 client with botocore's standard retry mode; ``clock``
    returns aware UTC datetimes; ``page_size_chars`` (1..90,000 code points) sizes the pages of new
    revisions; each revision records its own page size, so a change never breaks older content.
    ``stored_items_limit`` caps each tenant's live knowledge items and notes (0: counted, not capped).
    Raises ``ValueError`` for a page size outside that range or a negative limit.
    """

    def __init__(
        self,
        table_name: str,
        *,
        dynamodb_client: DynamoDBClient | None = None,
        clock: Clock | None = None,
        page_size_chars: int = DEFAULT_PAGE_SIZE_CHARS,
        stored_items_limit: int = 0,
    ) -> None:
        client = dynamodb_client or boto3.client("dynamodb", config=Config(retries={"mode": "standard"}))
        super().__init__(
            DynamoDBTable(table_name, client),
            clock=clock or _utc_now,
            page_size_chars=page_size_chars,
            stored_items_limit=stored_items_limit,
        )


def build(settings: Settings, *, dynamodb_client: DynamoDBClient | None = None) -> DynamoDBKnowledgeStore:
    """The store on ``settings.table_name`` with its page size and stored items limit
    (``TENANT_MAX_STORED_ITEMS``); ``dynamodb_client`` defaults to a new client."""
    return DynamoDBKnowledgeStore(
        settings.table_name,
        dynamodb_client=dynamodb_client,
        page_size_chars=settings.page_size_chars,
        stored_items_limit=settings.tenant_max_stored_items,
    )
