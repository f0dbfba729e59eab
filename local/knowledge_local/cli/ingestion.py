"""Ingesting documents into a knowledge base through the API, and waiting until the search index
holds them.

Each document is one published item of the base, addressed by its ``external_id``: the first
ingestion creates it, a later one with changed content or title adds and publishes a revision, and
unchanged content creates nothing (DESIGN §6). ``archive_missing`` archives the items whose files
are gone.

Both phases tell where they are on stderr (``progress.StatusLine``: one line redrawn on a terminal,
unless ``progress`` says otherwise; without one, a line every ten seconds or so while it moves):
sending (``sending to docs: 30 of 75 documents (28 created, 0 updated, 2 unchanged), 2.9/s, ETA
15 s``), then waiting for the index (``waiting for the index: 14 of 75 searchable, 0.3/s, ETA 3 min;
left 61 documents, 130 parts to embed``). The wait reads the base's item list, whose items carry
``indexed_revision_id`` (a page of 100 items a request), or the pending items one by one when
fewer requests do, every ``POLL_SECONDS``. Its ETA weighs each document by its index parts
(``index_work.part_count``: the work queue embeds a revision in parts of about 8,000 characters).
It waits as long as documents keep becoming searchable, and gives up
(``IndexWaitTimeoutError``) only when none has for ``stall_timeout`` seconds (by default
``DEFAULT_STALL_SECONDS``, stretched to ``STALL_SECONDS_PER_PART`` per part of the smallest
document left: one very large document), or after an overall ``timeout`` if one is given.

A base is named by its id (``kb_...``) or its name (``find_base``); the API allows several active
bases with one name, and such a name is refused (``AmbiguousBaseError``) rather than guessed.
``similar_names`` finds the names a mistyped one may have meant.
"""

from __future__ import annotations

import difflib
import hashlib
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

from knowledge.domain.ids import KB_PREFIX, is_well_formed
from knowledge.domain.retrieval.index_work import part_count
from knowledge_local.cli.client import LIST_PAGE_SIZE, ApiError, KnowledgeClient
from knowledge_local.cli.documents import SourceDocument
from knowledge_local.cli.progress import StatusLine, Tally, duration, per_time, rate_and_eta

POLL_SECONDS = 1.0
"""Pause between two looks at the index while waiting."""
DEFAULT_STALL_SECONDS = 600.0
"""How long the wait goes on while no document becomes searchable."""
STALL_SECONDS_PER_PART = 6.0
"""The stall allowance of a document of many parts: a part is a second or two of embedding on a
quiet two-core machine, a few on a busy one."""
IDLE_NOTICE_SECONDS = 60.0
"""After this long without a document becoming searchable, the status line says so."""
MAX_ITEM_READS = 20
"""Items read one by one per look at the index at most (the others are read at the next looks)."""
SIMILAR_NAME_CUTOFF = 0.6
NAMES_IN_MESSAGE = 3


class AmbiguousBaseError(Exception):
    """Several active bases have the name given; ``knowledge_base_ids`` are theirs."""

    def __init__(self, name: str, knowledge_base_ids: Sequence[str]) -> None:
        super().__init__(
            f"{len(knowledge_base_ids)} knowledge bases are named {name!r}: "
            f"{', '.join(knowledge_base_ids)}; pass one of these ids instead of the name."
        )
        self.knowledge_base_ids = list(knowledge_base_ids)


class IndexWaitTimeoutError(TimeoutError):
    """Some items were not searchable in time: ``pending`` are their ids, ``names`` their names
    (external ids where known), ``total`` the items waited for; ``stalled``: none became searchable
    for ``waited`` seconds (else the overall timeout of ``waited`` seconds passed). ``hint`` is set
    by a caller that knows how its user can check later."""

    def __init__(
        self,
        pending: Sequence[str],
        waited: float,
        *,
        names: Sequence[str] = (),
        total: int | None = None,
        stalled: bool = False,
    ) -> None:
        total = len(pending) if total is None else total
        why = (
            f"none became searchable in the last {duration(waited)}"
            if stalled
            else f"the wait's limit of {duration(waited)} passed"
        )
        shown = list(names or pending)
        left = ", ".join(shown[:NAMES_IN_MESSAGE])
        if len(shown) > NAMES_IN_MESSAGE:
            left += f" and {len(shown) - NAMES_IN_MESSAGE} more"
        super().__init__(
            f"{len(pending)} of {total} item(s) not searchable yet ({why}): {left}. They are stored and "
            "published, and the indexer goes on with them: search finds each once it is indexed"
        )
        self.pending = list(pending)
        self.names = shown
        self.stalled = stalled
        self.hint: str | None = None


@dataclass(frozen=True)
class Awaited:
    """An item to wait for: ``name`` to show (its external id), ``parts`` of index work
    (``index_work.part_count`` of its content), and whether this run ``wrote`` it (an unchanged
    item may have been searchable before, and then counts for no rate)."""

    knowledge_item_id: str
    name: str = ""
    parts: int = 1
    wrote: bool = True


@dataclass
class IngestSummary:
    """What one ingestion did; ``items`` maps external ids to the items the API answered, and
    ``awaited`` lists them to wait for (``wait_for_index``); ``started`` is when sending began
    (seconds of the ingestion's clock). ``skipped`` counts files left out before sending (the
    caller sets it); ``archived`` is ``None`` unless missing files were archived."""

    knowledge_base_id: str
    base_name: str
    base_created: bool = False
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    skipped: int = 0
    archived: int | None = None
    items: dict[str, dict[str, Any]] = field(default_factory=dict)
    awaited: list[Awaited] = field(default_factory=list)
    started: float | None = None

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
    clock: Callable[[], float] = time.monotonic,
) -> IngestSummary:
    """Upsert ``documents`` as published items of the base ``base_name`` names (an id or a name;
    a name is created when missing, see ``ensure_base``), with ``ingest_into``. Raises
    ``client.ApiError`` and ``AmbiguousBaseError``."""
    base, created = ensure_base(client, base_name)
    return ingest_into(client, documents, base, created=created, progress=progress, clock=clock)


def ingest_into(
    client: KnowledgeClient,
    documents: Sequence[SourceDocument],
    base: dict[str, Any],
    *,
    created: bool = False,
    progress: bool | None = None,
    source_base_url: str | None = None,
    clock: Callable[[], float] = time.monotonic,
    stream: TextIO | None = None,
) -> IngestSummary:
    """Upsert ``documents`` as published items of ``base`` (as the API answers it; ``created``:
    it was created just now, so it has no items to compare with). Each item's ``source.uri`` is
    ``SourceDocument.uri(source_base_url)``: the file's path under the folder, relative or under
    ``source_base_url``. Shows the sending on ``stream`` (stderr; module docs).

    An existing item whose latest revision has the document's content hash, title and source is
    left alone (published if it was not current yet). Raises ``client.ApiError`` on the first
    refused document.
    """
    summary = IngestSummary(
        knowledge_base_id=str(base["knowledge_base_id"]),
        base_name=str(base.get("name", "")),
        base_created=created,
        started=clock(),
    )
    existing = (
        {} if created else {item["external_id"]: item for item in client.items(summary.knowledge_base_id)}
    )
    tally = Tally(total=len(documents), started=clock())
    line = _status_line(progress, stream, clock)
    try:
        for document in documents:
            line.update(_sending(summary, tally, clock()), key=tally.done)
            item, outcome = _upsert(
                client,
                summary.knowledge_base_id,
                document,
                existing.get(document.external_id),
                document.uri(source_base_url),
            )
            setattr(summary, outcome, getattr(summary, outcome) + 1)
            summary.items[document.external_id] = item
            summary.awaited.append(
                Awaited(
                    str(item["knowledge_item_id"]),
                    document.external_id,
                    part_count(len(document.content)),
                    wrote=outcome != "unchanged",
                )
            )
            tally.add(clock())
    finally:
        now = clock()
        line.close(
            f"sent to {summary.base_name}: {tally.done} of {tally.total} documents "
            f"({_outcomes(summary)}) in {duration(tally.elapsed(now))}"
        )
    return summary


def _sending(summary: IngestSummary, tally: Tally, now: float) -> str:
    return (
        f"sending to {summary.base_name}: {tally.done} of {tally.total} documents ({_outcomes(summary)}), "
        f"{rate_and_eta(tally, now)}"
    )


def _outcomes(summary: IngestSummary) -> str:
    return f"{summary.created} created, {summary.updated} updated, {summary.unchanged} unchanged"


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
        segments=document.segment_fields(),
    )
    return written, "created" if status == 201 and item is None else "updated"


def _same(revision: dict[str, Any], document: SourceDocument, source: dict[str, str]) -> bool:
    digest = hashlib.sha256(document.content.encode("utf-8")).hexdigest()
    return (
        revision.get("sha256") == digest
        and revision.get("title") == document.title
        and (revision.get("source") or {}) == source
    )


def wait_for_index(
    client: KnowledgeClient,
    summary: IngestSummary,
    *,
    stall_timeout: float | None = None,
    timeout: float | None = None,
    progress: bool | None = None,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    stream: TextIO | None = None,
) -> Tally:
    """``wait_until_indexed`` for what ``summary``'s ingestion sent, reading its base's item list,
    with the rate counted from when the sending began (the index starts on the first document)."""
    return wait_until_indexed(
        client,
        summary.awaited,
        knowledge_base_ids=[summary.knowledge_base_id],
        since=summary.started,
        stall_timeout=stall_timeout,
        timeout=timeout,
        progress=progress,
        clock=clock,
        sleep=sleep,
        stream=stream,
    )


def wait_until_indexed(
    client: KnowledgeClient,
    items: Sequence[str | Awaited],
    *,
    knowledge_base_ids: Iterable[str] = (),
    since: float | None = None,
    stall_timeout: float | None = None,
    timeout: float | None = None,
    progress: bool | None = None,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    stream: TextIO | None = None,
) -> Tally:
    """Wait until every item (an id, or an ``Awaited``) has ``indexed_revision_id`` equal to its
    ``current_revision_id``, looking every ``POLL_SECONDS`` of ``sleep`` (``_IndexProbe``: the item
    lists of ``knowledge_base_ids`` and of the bases it learns of, or the items one by one);
    returns the ``Tally`` of searchable items. Shows the wait on ``stream`` (stderr; module docs).
    ``since`` (seconds of ``clock``) is when the work began, for the rate; default: now.

    Raises ``IndexWaitTimeoutError`` when no item became searchable for ``stall_timeout`` seconds
    (by default ``DEFAULT_STALL_SECONDS``, or ``STALL_SECONDS_PER_PART`` per part of the smallest
    item left when that is longer), or once ``timeout`` seconds have passed if given;
    ``client.ApiError`` when the API fails (an item archived meanwhile answers 404)."""
    waiting: dict[str, Awaited] = {}
    for entry in items:
        awaited = Awaited(entry, entry) if isinstance(entry, str) else entry
        waiting.setdefault(awaited.knowledge_item_id, awaited)
    began = clock()
    tally = Tally(
        total=len(waiting),
        started=began if since is None else min(since, began),
        weight_total=float(sum(awaited.parts for awaited in waiting.values())),
    )
    tally.changed = began  # the stall clock runs from the start of the wait
    probe = _IndexProbe(client, knowledge_base_ids)
    line = _status_line(progress, stream, clock)
    first_look = True
    finished, found_parts = 0, 0
    try:
        while waiting:
            found = probe.indexed(list(waiting))
            now = clock()
            for knowledge_item_id in found:
                awaited = waiting.pop(knowledge_item_id)
                tally.add(now, weight=0.0)  # the work is counted below, with what is under way
                finished += awaited.parts
                if first_look and not awaited.wrote:
                    tally.exclude(1, awaited.parts)  # searchable before: no measure of this run
                else:
                    found_parts = max(found_parts, awaited.parts)
            first_look = False
            tally.worked(finished + _under_way(waiting, found_parts))
            if not waiting:
                break
            allowance = _stall_allowance(stall_timeout, waiting)
            if tally.idle(now) >= allowance:
                raise _timed_out(waiting, tally, allowance, stalled=True)
            if timeout is not None and now - began >= timeout:
                raise _timed_out(waiting, tally, timeout, stalled=False)
            line.update(_waiting(tally, waiting, now, allowance), key=tally.done)
            sleep(POLL_SECONDS)
    finally:
        now = clock()
        rate = tally.rate(now)
        line.close(
            f"index: {tally.done} of {tally.total} searchable after {duration(tally.elapsed(now))}"
            + ("" if rate is None else f" ({per_time(rate)})")
        )
    return tally


def _stall_allowance(stall_timeout: float | None, waiting: Mapping[str, Awaited]) -> float:
    """Seconds the wait goes on with no item becoming searchable: ``stall_timeout`` when given;
    by default ``DEFAULT_STALL_SECONDS``, stretched for the smallest item left when its parts need
    longer (a single very large document)."""
    if stall_timeout is not None:
        return stall_timeout
    smallest = min(awaited.parts for awaited in waiting.values())
    return max(DEFAULT_STALL_SECONDS, STALL_SECONDS_PER_PART * smallest)


def _under_way(waiting: Mapping[str, Awaited], found_parts: int) -> int:
    """Parts of the items still ``waiting`` embedded so far, estimated: the work queue takes the
    parts of the items being indexed in turn (``index_work.FANOUT_WINDOW``), so once an item of
    ``found_parts`` parts is searchable, each item still waiting has had about that many of its
    parts embedded too, never all of them (it would be searchable)."""
    return sum(min(awaited.parts - 1, found_parts) for awaited in waiting.values())


def _waiting(tally: Tally, waiting: Mapping[str, Awaited], now: float, allowance: float) -> str:
    """``waiting for the index: 14 of 75 searchable, 0.3/s, ETA 3 min; left 61 documents, about
    130 parts to embed``, and how long none has become searchable once that is a minute or more."""
    parts = round(tally.weight_total - tally.weight)
    about = "about " if parts < sum(awaited.parts for awaited in waiting.values()) else ""
    text = (
        f"waiting for the index: {tally.done} of {tally.total} searchable, {rate_and_eta(tally, now)}; "
        f"left {len(waiting)} document{'s' if len(waiting) != 1 else ''}, "
        f"{about}{parts} part{'s' if parts != 1 else ''} to embed"
    )
    idle = tally.idle(now)
    if idle >= IDLE_NOTICE_SECONDS:
        text += f"; none new for {duration(idle)} (gives up after {duration(allowance)} without one)"
    return text


def _timed_out(
    waiting: Mapping[str, Awaited], tally: Tally, waited: float, *, stalled: bool
) -> IndexWaitTimeoutError:
    return IndexWaitTimeoutError(
        list(waiting),
        waited,
        names=[awaited.name or awaited.knowledge_item_id for awaited in waiting.values()],
        total=tally.total,
        stalled=stalled,
    )


class _IndexProbe:
    """Which of the items waited for the index holds, in few requests: every base whose item list
    takes no more pages than there are pending items to read one by one is listed (a page of
    ``LIST_PAGE_SIZE`` items, each with ``indexed_revision_id``); the items no list showed are read
    one by one, ``MAX_ITEM_READS`` a look at most, taking turns, and a base one of them is in is
    listed from then on. A server whose list lacks ``indexed_revision_id`` is read item by item."""

    def __init__(self, client: KnowledgeClient, knowledge_base_ids: Iterable[str]) -> None:
        self._client = client
        self._listed: dict[str, int | None] = dict.fromkeys(knowledge_base_ids)
        """Base id → items its list held last time (``None``: not listed yet)."""
        self._lists_tell = True
        self._turn = 0

    def indexed(self, pending: Sequence[str]) -> set[str]:
        """The ids among ``pending`` whose current revision the index holds."""
        unseen = set(pending)
        found = self._from_lists(unseen)
        return found | self._one_by_one([entry for entry in pending if entry in unseen])

    def _from_lists(self, unseen: set[str]) -> set[str]:
        """The items of ``unseen`` the bases' lists show indexed; those they show are taken out of
        ``unseen``."""
        found: set[str] = set()
        for base, size in list(self._listed.items()):
            if not self._lists_tell or not unseen:
                break
            if size is not None and -(-size // LIST_PAGE_SIZE) > len(unseen):
                continue  # reading the pending items costs fewer requests
            listed = list(self._client.items(base))
            self._listed[base] = len(listed)
            if any("indexed_revision_id" not in item for item in listed):
                self._lists_tell = False
                break
            for item in listed:
                knowledge_item_id = str(item.get("knowledge_item_id"))
                if knowledge_item_id in unseen:
                    unseen.discard(knowledge_item_id)
                    if _is_indexed(item):
                        found.add(knowledge_item_id)
        return found

    def _one_by_one(self, ordered: list[str]) -> set[str]:
        """The items of ``ordered`` indexed, reading ``MAX_ITEM_READS`` of them, taking turns."""
        found: set[str] = set()
        start = self._turn % len(ordered) if ordered else 0
        turn = (ordered[start:] + ordered[:start])[:MAX_ITEM_READS]
        self._turn = start + len(turn)
        for knowledge_item_id in turn:
            item = self._client.item(knowledge_item_id)
            if _is_indexed(item):
                found.add(knowledge_item_id)
            elif self._lists_tell and item.get("knowledge_base_id") is not None:
                self._listed.setdefault(str(item["knowledge_base_id"]), None)
        return found


def _is_indexed(item: Mapping[str, Any]) -> bool:
    current = item.get("current_revision_id")
    return current is not None and item.get("indexed_revision_id") == current


def _status_line(progress: bool | None, stream: TextIO | None, clock: Callable[[], float]) -> StatusLine:
    """A status line on ``stream`` (stderr), redrawn when ``progress`` is true, or when it is
    ``None`` and the stream is a terminal."""
    target = sys.stderr if stream is None else stream
    redraw = target.isatty() if progress is None else progress
    return StatusLine(target, redraw=redraw, clock=clock)
