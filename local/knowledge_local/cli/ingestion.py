"""Ingesting documents into a knowledge base through the API, and waiting until the search index
holds them.

Each document is one published item of the base, addressed by its ``external_id``: the first
ingestion creates it, a later one with changed content or title adds and publishes a revision, and
unchanged content creates nothing (DESIGN §6). ``archive_missing`` archives the items whose files
are gone. Progress bars (tqdm, on stderr) show only on a terminal unless ``progress`` says
otherwise; without a terminal (a pipe, a CI log) waiting for the index prints a heartbeat line on
stderr every ``HEARTBEAT_SECONDS`` instead (``indexing: 3 of 12 documents indexed after 20 s``), so a
wait of a minute or two never looks like a hang.

A base is named by its id (``kb_...``) or its name (``find_base``); the API allows several active
bases with one name, and such a name is refused (``AmbiguousBaseError``) rather than guessed.
``similar_names`` finds the names a mistyped one may have meant.
"""

from __future__ import annotations

import difflib
import hashlib
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tqdm import tqdm

from knowledge.domain.ids import KB_PREFIX, is_well_formed
from knowledge_local.cli.client import ApiError, KnowledgeClient
from knowledge_local.cli.documents import SourceDocument

WAIT_POLL_SECONDS = 0.5
HEARTBEAT_SECONDS = 10.0
SIMILAR_NAME_CUTOFF = 0.6
DEFAULT_INDEX_TIMEOUT_SECONDS = 600.0


class AmbiguousBaseError(Exception):
    """Several active bases have the name given; ``knowledge_base_ids`` are theirs."""

    def __init__(self, name: str, knowledge_base_ids: Sequence[str]) -> None:
        super().__init__(
            f"{len(knowledge_base_ids)} knowledge bases are named {name!r}: "
            f"{', '.join(knowledge_base_ids)}; pass one of these ids instead of the name."
        )
        self.knowledge_base_ids = list(knowledge_base_ids)


class IndexWaitTimeoutError(TimeoutError):
    """Some items were not indexed in time; ``pending`` are their ids."""

    def __init__(self, pending: Sequence[str], timeout: float) -> None:
        super().__init__(
            f"{len(pending)} item(s) not indexed after {timeout:.0f} s; they are stored and published, and "
            "the indexer goes on with them: search finds them once indexed (run the same command again "
            "to wait for them)"
        )
        self.pending = list(pending)


@dataclass
class IngestSummary:
    """What one ingestion did; ``items`` maps external ids to the items the API answered.
    ``skipped`` counts files left out before sending (the caller sets it); ``archived`` is
    ``None`` unless missing files were archived."""

    knowledge_base_id: str
    base_name: str
    base_created: bool = False
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    skipped: int = 0
    archived: int | None = None
    items: dict[str, dict[str, Any]] = field(default_factory=dict)

    def describe(self) -> str:
        """``"2 created, 0 updated, 5 unchanged, 1 skipped"``, then ``", 3 archived"`` if asked."""
        counts = (
            f"{self.created} created, {self.updated} updated, {self.unchanged} unchanged, "
            f"{self.skipped} skipped"
        )
        return counts if self.archived is None else f"{counts}, {self.archived} archived"


def find_base(client: KnowledgeClient, base: str) -> dict[str, Any] | None:
    """The base ``base`` names: a base id (``kb_`` and a ULID) the caller can list, else the one
    active base with that name; ``None`` when there is none. Raises ``AmbiguousBaseError`` when
    several active bases have the name."""
    if is_well_formed(base, KB_PREFIX):
        return client.base_with_id(base)
    named = client.bases_named(base)
    if len(named) > 1:
        raise AmbiguousBaseError(base, [str(found["knowledge_base_id"]) for found in named])
    return named[0] if named else None


def similar_names(name: str, names: Iterable[str], *, limit: int = 3) -> list[str]:
    """Up to ``limit`` of ``names`` close to ``name`` (``difflib``, ignoring case), closest first;
    ``name`` itself is left out."""
    by_folded: dict[str, str] = {}
    for candidate in names:
        if candidate != name:
            by_folded.setdefault(candidate.casefold(), candidate)
    matches = difflib.get_close_matches(name.casefold(), by_folded, n=limit, cutoff=SIMILAR_NAME_CUTOFF)
    return [by_folded[match] for match in matches]


def ensure_base(client: KnowledgeClient, base: str) -> tuple[dict[str, Any], bool]:
    """The base ``base`` names (``find_base``), created (tenant scope) when a name names none;
    ``(base, created)``. An unknown id raises ``ApiError`` (404), as the API would."""
    existing = find_base(client, base)
    if existing is not None:
        return existing, False
    if is_well_formed(base, KB_PREFIX):
        raise ApiError(404, "knowledge_resource_unavailable", f"No knowledge base {base} is visible.")
    return client.create_base(base, scope="tenant"), True


def ingest(
    client: KnowledgeClient,
    documents: Sequence[SourceDocument],
    base_name: str,
    *,
    progress: bool | None = None,
) -> IngestSummary:
    """Upsert ``documents`` as published items of the base ``base_name`` names (an id or a name;
    a name is created when missing, see ``ensure_base``), with ``ingest_into``. Raises
    ``client.ApiError`` and ``AmbiguousBaseError``."""
    base, created = ensure_base(client, base_name)
    return ingest_into(client, documents, base, created=created, progress=progress)


def ingest_into(
    client: KnowledgeClient,
    documents: Sequence[SourceDocument],
    base: dict[str, Any],
    *,
    created: bool = False,
    progress: bool | None = None,
    source_base_url: str | None = None,
) -> IngestSummary:
    """Upsert ``documents`` as published items of ``base`` (as the API answers it; ``created``:
    it was created just now, so it has no items to compare with). Each item's ``source.uri`` is
    ``SourceDocument.uri(source_base_url)``: the file's path under the folder, relative or under
    ``source_base_url``.

    An existing item whose latest revision has the document's content hash, title and source is
    left alone (published if it was not current yet). Raises ``client.ApiError`` on the first
    refused document.
    """
    summary = IngestSummary(
        knowledge_base_id=str(base["knowledge_base_id"]),
        base_name=str(base.get("name", "")),
        base_created=created,
    )
    existing = (
        {} if created else {item["external_id"]: item for item in client.items(summary.knowledge_base_id)}
    )
    description = f"ingesting into {summary.base_name}"
    with tqdm(documents, desc=description, unit="doc", disable=_disabled(progress)) as bar:
        for document in bar:
            item, outcome = _upsert(
                client,
                summary.knowledge_base_id,
                document,
                existing.get(document.external_id),
                document.uri(source_base_url),
            )
            setattr(summary, outcome, getattr(summary, outcome) + 1)
            summary.items[document.external_id] = item
    return summary


def archive_missing(client: KnowledgeClient, knowledge_base_id: str, present: set[str]) -> int:
    """Archive every live item of the base whose ``external_id`` is not in ``present`` (items
    without one are left alone); the number archived. Raises ``client.ApiError``."""
    gone = [
        item
        for item in client.items(knowledge_base_id)
        if item.get("external_id") is not None and item["external_id"] not in present
    ]
    for item in gone:
        client.archive_item(str(item["knowledge_item_id"]), expected_version=int(item["version"]))
    return len(gone)


def _upsert(
    client: KnowledgeClient,
    knowledge_base_id: str,
    document: SourceDocument,
    item: dict[str, Any] | None,
    uri: str,
) -> tuple[dict[str, Any], str]:
    """Write one document with ``source.uri`` ``uri``; ``(item, "created" | "updated" | "unchanged")``."""
    source = {"uri": uri, "title": document.title}
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
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> None:
    """Wait until every item's ``indexed_revision_id`` is its ``current_revision_id``; raises
    ``IndexWaitTimeoutError`` after ``timeout`` seconds. Without a progress bar (``progress`` false,
    or ``None`` and stderr not a terminal), prints a heartbeat line on stderr every
    ``HEARTBEAT_SECONDS`` of ``clock`` while items are pending."""
    pending = list(dict.fromkeys(knowledge_item_ids))
    total = len(pending)
    started = clock()
    deadline = started + timeout
    disable = _disabled(progress)
    beating = disable is True or (disable is None and not sys.stderr.isatty())
    next_beat = started + HEARTBEAT_SECONDS
    with tqdm(total=total, desc="indexing", unit="doc", disable=disable) as bar:
        while pending:
            # The stream is indexed in write order: the first item not indexed yet ends the round.
            while pending and _is_indexed(client.item(pending[0])):
                pending.pop(0)
                bar.update(1)
            if pending:
                now = clock()
                if now >= deadline:
                    raise IndexWaitTimeoutError(pending, timeout)
                if beating and now >= next_beat:
                    done = total - len(pending)
                    print(
                        f"indexing: {done} of {total} documents indexed after {now - started:.0f} s",
                        file=sys.stderr,
                        flush=True,
                    )
                    next_beat = now + HEARTBEAT_SECONDS
                sleep(WAIT_POLL_SECONDS)


def _is_indexed(item: dict[str, Any]) -> bool:
    current = item.get("current_revision_id")
    return current is not None and item.get("indexed_revision_id") == current


def _disabled(progress: bool | None) -> bool | None:
    """tqdm's ``disable``: ``None`` hides the bar when stderr is not a terminal."""
    return None if progress is None else not progress
