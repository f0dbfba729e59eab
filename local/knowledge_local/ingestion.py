"""Ingesting documents into a knowledge base through the API, and waiting until the search index
holds them.

Each document is one published item of the base, addressed by its ``external_id``: the first
ingestion creates it, a later one with changed content or title adds and publishes a revision, and
unchanged content creates nothing (DESIGN §6). Progress bars (tqdm, on stderr) show only on a
terminal unless ``progress`` says otherwise.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tqdm import tqdm

from knowledge_local.client import KnowledgeClient
from knowledge_local.documents import SourceDocument

WAIT_POLL_SECONDS = 0.5
DEFAULT_INDEX_TIMEOUT_SECONDS = 600.0


class IndexWaitTimeoutError(TimeoutError):
    """Some items were not indexed in time; ``pending`` are their ids."""

    def __init__(self, pending: Sequence[str], timeout: float) -> None:
        super().__init__(f"{len(pending)} item(s) not indexed after {timeout:.0f} s")
        self.pending = list(pending)


@dataclass
class IngestSummary:
    """What one ingestion did; ``items`` maps external ids to the items the API answered."""

    knowledge_base_id: str
    base_created: bool = False
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    items: dict[str, dict[str, Any]] = field(default_factory=dict)

    def describe(self) -> str:
        return f"{self.created} created, {self.updated} updated, {self.unchanged} unchanged"


def ensure_base(client: KnowledgeClient, name: str) -> tuple[dict[str, Any], bool]:
    """The active base called ``name`` (tenant scope), created when missing; ``(base, created)``."""
    existing = client.base_named(name)
    if existing is not None:
        return existing, False
    return client.create_base(name, scope="tenant"), True


def ingest(
    client: KnowledgeClient,
    documents: Sequence[SourceDocument],
    base_name: str,
    *,
    progress: bool | None = None,
) -> IngestSummary:
    """Upsert ``documents`` as published items of the base ``base_name`` (created when missing).

    An existing item whose latest revision has the document's content hash, title and source is
    left alone (published if it was not current yet). Raises ``client.ApiError`` on the first
    refused document.
    """
    base, base_created = ensure_base(client, base_name)
    summary = IngestSummary(knowledge_base_id=str(base["knowledge_base_id"]), base_created=base_created)
    existing = (
        {}
        if base_created
        else {item["external_id"]: item for item in client.items(summary.knowledge_base_id)}
    )
    with tqdm(documents, desc=f"ingesting into {base_name}", unit="doc", disable=_disabled(progress)) as bar:
        for document in bar:
            item, outcome = _upsert(
                client, summary.knowledge_base_id, document, existing.get(document.external_id)
            )
            setattr(summary, outcome, getattr(summary, outcome) + 1)
            summary.items[document.external_id] = item
    return summary


def _upsert(
    client: KnowledgeClient, knowledge_base_id: str, document: SourceDocument, item: dict[str, Any] | None
) -> tuple[dict[str, Any], str]:
    """Write one document; ``(item, "created" | "updated" | "unchanged")``."""
    source = {"uri": document.uri, "title": document.title}
    if item is not None:
        latest = client.latest_revision(str(item["knowledge_item_id"]))
        if latest is not None and _same(latest, document, source):
            if latest.get("is_current"):
                return item, "unchanged"
            published = client.publish(
                str(item["knowledge_item_id"]),
                str(latest["knowledge_revision_id"]),
                expected_version=int(item["version"]),
            )
            return published, "updated"
    status, written = client.put_item(
        knowledge_base_id,
        title=document.title,
        content=document.content,
        external_id=document.external_id,
        source=source,
        publish=True,
    )
    return written, "created" if status == 201 and item is None else "updated"


def _same(revision: dict[str, Any], document: SourceDocument, source: dict[str, str]) -> bool:
    digest = hashlib.sha256(document.content.encode("utf-8")).hexdigest()
    return (
        revision.get("sha256") == digest
        and revision.get("title") == document.title
        and (revision.get("source") or {}) == source
    )


def wait_until_indexed(
    client: KnowledgeClient,
    knowledge_item_ids: Sequence[str],
    *,
    timeout: float = DEFAULT_INDEX_TIMEOUT_SECONDS,
    progress: bool | None = None,
) -> None:
    """Wait until every item's ``indexed_revision_id`` is its ``current_revision_id``; raises
    ``IndexWaitTimeoutError`` after ``timeout`` seconds."""
    pending = list(dict.fromkeys(knowledge_item_ids))
    deadline = time.monotonic() + timeout
    with tqdm(total=len(pending), desc="indexing", unit="doc", disable=_disabled(progress)) as bar:
        while pending:
            # The stream is indexed in write order: the first item not indexed yet ends the round.
            while pending and _is_indexed(client.item(pending[0])):
                pending.pop(0)
                bar.update(1)
            if pending:
                if time.monotonic() >= deadline:
                    raise IndexWaitTimeoutError(pending, timeout)
                time.sleep(WAIT_POLL_SECONDS)


def _is_indexed(item: dict[str, Any]) -> bool:
    current = item.get("current_revision_id")
    return current is not None and item.get("indexed_revision_id") == current


def _disabled(progress: bool | None) -> bool | None:
    """tqdm's ``disable``: ``None`` hides the bar when stderr is not a terminal."""
    return None if progress is None else not progress
