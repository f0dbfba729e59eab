"""The memory write and read use cases (DESIGN §9): ``remember``, ``forget_memory``, restore, and
reading a note and its versions.

Visibility is §5's rule for notes (``can_see_note``); a note the caller cannot see, that does not
exist, is forgotten or has expired is ``MemoryUnavailableError``, one answer for all. Every change
is a conditional commit (``NoteStore.commit_notes``); a lost race on a claim (another writer kept
the same fact or key at the same moment) is decided again from the store, up to ``ATTEMPTS``
times, so concurrent writers of one fact end with one note.

Every write is governed by ``knowledge.domain.memory.rights`` (``require_rights``): ``memory:write``,
plus ``memory:share`` for a note others see and ``memory:admin`` for another principal's note,
checked after the note is found visible (an invisible note is ``memory_unavailable`` first, so the
check never tells that a note exists) and before anything is written.

Errors: ``RuntimeDisabledError``, ``InsufficientScopeError`` (``memory:write`` / ``memory:read``,
``memory:share``, ``memory:admin``, ``details.required_scope``),
``MemoryInvalidRequestError`` (bounds, a field that needs another), ``MemoryUnavailableError``,
``MemoryConflictError`` (stale ``expected_version``, carrying the current version),
``DependencyUnavailableError``.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

from knowledge.contract.deletion import DeletionReceipt, records
from knowledge.contract.memory import (
    TTL_MAX_SECONDS,
    ForgetMemoryArguments,
    MemoryForgottenResponse,
    MemoryResponse,
    NoteVersionsResponse,
    NoteView,
    RememberArguments,
    remember_problems,
)
from knowledge.domain import ids
from knowledge.domain.as_of import note_history
from knowledge.domain.memory.lifecycle import (
    NoteDraft,
    NoteWrite,
    draft_of,
    forgotten_note,
    is_unchanged,
    new_note,
    restored_note,
    revised_note,
    superseded_note,
)
from knowledge.domain.memory.notes import (
    REDACTED,
    VERSIONS_LIMIT_DEFAULT,
    VERSIONS_LIMIT_MAX,
    ForgetMode,
    MemoryType,
    Note,
    NoteClaim,
    NoteStatus,
    can_see_note,
    claims_of,
    content_claim,
    key_claim,
    normalize_path,
)
from knowledge.domain.memory.rights import WHY, rights_to_write
from knowledge.domain.models import Permission, Principal, Scope
from knowledge.errors import (
    ClaimTakenError,
    ConflictError,
    MemoryConflictError,
    MemoryInvalidRequestError,
    MemoryUnavailableError,
    ResourceUnavailableError,
    RetryableMemoryConflictError,
    RuntimeDisabledError,
)
from knowledge.observability import logger
from knowledge.ports import Clock, MemoryStore, RuntimeSwitch
from knowledge.services.access import require_scope

ATTEMPTS = 4
"""Decisions a write makes before a claim race is reported as ``memory_conflict``."""


@dataclass(frozen=True)
class NotePurge:
    """What deleting ``note`` for good removes: its ``versions`` and the ``receipt`` (``dry_run``
    false)."""

    note: Note
    versions: list[Note]
    receipt: DeletionReceipt


@dataclass(frozen=True)
class Remembered:
    """What ``remember`` did: ``result`` and the note as stored; ``created`` answers 201."""

    response: MemoryResponse

    @property
    def created(self) -> bool:
        return self.response.result == "created"


class NoteService:
    """Runs the memory writes and reads for an authenticated principal. ``purge_embeddings`` drops
    the cached vectors of texts (``Embedder.forget``), which a hard forget calls with every version's
    content. Thread-safe if its ports are."""

    def __init__(
        self,
        store: MemoryStore,
        purge_embeddings: Callable[[Sequence[str]], None],
        runtime_switch: RuntimeSwitch,
        clock: Clock,
    ) -> None:
        self._store = store
        self._purge_embeddings = purge_embeddings
        self._switch = runtime_switch
        self._clock = clock

    @property
    def store(self) -> MemoryStore:
        return self._store

    @property
    def clock(self) -> Clock:
        return self._clock

    # -- remember ---------------------------------------------------------------------------------

    def remember(self, principal: Principal, arguments: RememberArguments) -> Remembered:
        """Create, update (by ``memory_id`` or ``semantic_key``) or recognize a duplicate of a note."""
        self.authorize(principal, Permission.MEMORY_WRITE)
        draft = self._draft(principal, arguments)
        for _ in range(ATTEMPTS):
            try:
                return Remembered(self._remember_once(principal, arguments, draft))
            except ClaimTakenError:
                collision = self._collision(principal, arguments, draft)
                if collision is not None:
                    raise collision from None
                continue
        raise RetryableMemoryConflictError(
            "Other writers keep changing this memory; retry.", current_version=None
        )

    def _collision(
        self, principal: Principal, arguments: RememberArguments, draft: NoteDraft
    ) -> MemoryConflictError | None:
        """After a lost claim: the (non-retryable) conflict when the update needs a key or content
        claim that another current note holds for good (a keyed note moved to a scope where
        another note has that key, say), else ``None`` (a racing writer: decide again)."""
        target = self._target(principal, arguments, draft)
        if target is None:
            return None  # a new note: the next decision finds the holder (update or duplicate)
        now = self._clock()
        candidate = revised_note(target, _merged(target, draft, arguments), supersedes=(), now=now)
        for claim in claims_of(candidate):
            holder_id = self._store.claim_holder(principal.tenant_id, claim)
            if holder_id is None or holder_id == target.note_id:
                continue
            holder = self._store.get_note(principal.tenant_id, holder_id)
            if holder is None or not holder.is_current(now):
                continue
            field = "semantic_key" if claim.kind == "key" else "content"
            where = "that scope" if claim.kind == "key" else "that scope and path"
            return MemoryConflictError(
                f"Another memory already holds this {field} in {where}; forget it, or "
                f"choose another {field} or scope.",
                current_version=target.version,
                field=field,
            )
        return None

    def _remember_once(
        self, principal: Principal, arguments: RememberArguments, draft: NoteDraft
    ) -> MemoryResponse:
        tenant, now = principal.tenant_id, self._clock()
        target = self._target(principal, arguments, draft)
        supersedes = self._superseded(principal, arguments, exclude=target.note_id if target else None)
        for old in supersedes:
            self.require_rights(principal, old)
        if target is not None:
            merged = _merged(target, draft, arguments)
            self.require_rights(principal, target, merged.scope)
            if is_unchanged(target, merged, [note.note_id for note in supersedes]):
                return MemoryResponse(result="unchanged", note=view(target), indexed=is_indexed(target))
            note = revised_note(target, merged, supersedes=[n.note_id for n in supersedes], now=now)
            writes = [self._replacing(target, note)]
            result: Literal["created", "updated"] = "updated"
        else:
            self.require_rights(principal, None, draft.scope)
            candidate = new_note(
                tenant, principal.subject_id, draft, supersedes=[n.note_id for n in supersedes], now=now
            )
            duplicate = self._holder(principal, content_claim(candidate))
            if duplicate is not None:
                return MemoryResponse(result="duplicate", note=view(duplicate), indexed=is_indexed(duplicate))
            note = candidate
            writes = [NoteWrite(previous=None, note=note, claim=tuple(claims_of(note)))]
            result = "created"
        writes.extend(
            NoteWrite(
                previous=old, note=superseded_note(old, note.note_id, now=now), release=tuple(claims_of(old))
            )
            for old in supersedes
            if old.superseded_by != note.note_id
        )
        self._commit(tenant, writes, target, retryable=arguments.expected_version is None)
        logger.info("note remembered", extra={"tenant_id": tenant, "note_id": note.note_id, "result": result})
        return MemoryResponse(result=result, note=view(note), indexed=False)

    def _draft(self, principal: Principal, arguments: RememberArguments) -> NoteDraft:
        now = self._clock()
        expires_at = arguments.expires_at
        problems = remember_problems(arguments, principal.team_ids)
        ttl = arguments.ttl_seconds
        # The bound first: a huge ttl_seconds would overflow the datetime arithmetic.
        if ttl is not None and 1 <= ttl <= TTL_MAX_SECONDS:
            expires_at = now + timedelta(seconds=ttl)
        if expires_at is not None and expires_at <= now:
            problems.append({"field": "expires_at", "problem": "must be in the future"})
        if problems:
            raise MemoryInvalidRequestError(
                "A remember argument is out of bounds or needs another.", {"fields": problems}
            )
        return NoteDraft(
            content=arguments.content,
            scope=Scope(arguments.scope),
            team_id=arguments.team_id,
            agent_id=arguments.agent_id,
            path=normalize_path(arguments.path),
            memory_type=MemoryType(arguments.memory_type),
            importance=arguments.importance,
            semantic_key=arguments.semantic_key,
            expires_at=expires_at,
        )

    def _target(self, principal: Principal, arguments: RememberArguments, draft: NoteDraft) -> Note | None:
        """The note to update: by ``memory_id`` (must be readable), else the current holder of the
        semantic key; ``None`` for a new note. Checks ``expected_version``."""
        if arguments.memory_id is not None:
            target: Note | None = self.readable(principal, arguments.memory_id)
        elif arguments.semantic_key is not None:
            target = self._holder(
                principal, key_claim(principal.subject_id, draft.scope, arguments.semantic_key)
            )
        else:
            return None
        expected = arguments.expected_version
        current = target.version if target is not None else None
        if expected is not None and expected != current:
            raise MemoryConflictError("The memory changed since it was read.", current_version=current)
        return target

    def _superseded(
        self, principal: Principal, arguments: RememberArguments, exclude: str | None
    ) -> list[Note]:
        notes = []
        for note_id in dict.fromkeys(arguments.supersedes):
            if note_id == exclude:
                raise MemoryInvalidRequestError(
                    "A note cannot supersede itself.",
                    {"fields": [{"field": "supersedes", "problem": "names the note"}]},
                )
            note = self.readable(principal, note_id, field="supersedes")
            if note.superseded_by is not None:
                # One successor per note keeps the lineage a chain that search and recall can follow.
                raise MemoryInvalidRequestError(
                    "A superseded memory cannot be superseded again; supersede its successor.",
                    {
                        "fields": [
                            {
                                "field": "supersedes",
                                "problem": f"{note_id} is superseded by {note.superseded_by}",
                            }
                        ]
                    },
                )
            notes.append(note)
        return notes

    def _holder(self, principal: Principal, claim: NoteClaim) -> Note | None:
        """The current note visible to the caller that holds ``claim``, if any."""
        holder_id = self._store.claim_holder(principal.tenant_id, claim)
        if holder_id is None:
            return None
        note = self._store.get_note(principal.tenant_id, holder_id)
        if note is None or not note.is_current(self._clock()) or not can_see_note(principal, note):
            return None
        return note

    def _held(self, note: Note) -> tuple[NoteClaim, ...]:
        """The claims of ``note`` that it holds (a claim may have passed to another note since)."""
        return tuple(
            claim
            for claim in claims_of(note)
            if self._store.claim_holder(note.tenant_id, claim) == note.note_id
        )

    def _replacing(self, previous: Note, note: Note) -> NoteWrite:
        """The write of ``note`` over ``previous``: its claims taken (or refreshed), the claims
        ``previous`` held and ``note`` no longer needs released."""
        held = tuple(claims_of(note)) if note.is_current(note.updated_at) else ()
        released = tuple(claim for claim in self._held(previous) if claim not in held)
        return NoteWrite(previous=previous, note=note, claim=held, release=released)

    def _forgetting(self, note: Note, mode: ForgetMode, now: datetime) -> NoteWrite:
        return NoteWrite(previous=note, note=forgotten_note(note, mode, now=now), release=self._held(note))

    def _commit(
        self, tenant_id: str, writes: Sequence[NoteWrite], target: Note | None, *, retryable: bool = True
    ) -> None:
        """Commit ``writes``; a lost version race is ``memory_conflict``, ``retryable`` unless the
        caller pinned the version it read (``expected_version``: it must re-read first)."""
        try:
            self._store.commit_notes(tenant_id, writes)
        except ClaimTakenError:
            raise
        except ConflictError as error:
            current = error.current_version if target is not None else None
            if retryable:
                raise RetryableMemoryConflictError(
                    "Another writer changed the memory first; retry.", current
                ) from error
            raise MemoryConflictError(
                "The memory changed while it was written; re-read it before writing again.", current
            ) from error
        except ResourceUnavailableError as error:
            raise MemoryUnavailableError() from error

    # -- forget and restore -----------------------------------------------------------------------

    def forget(self, principal: Principal, arguments: ForgetMemoryArguments) -> MemoryForgottenResponse:
        """Forget a note ``soft`` (hidden, restorable), ``redact`` (content of every version replaced)
        or ``hard`` (deleted with its versions, pin and cached embeddings; the stream removes its
        index entries). A softly forgotten or expired note can still be redacted or deleted. The
        answer's receipt lists what went, per store; with ``dry_run`` nothing is written and the
        receipt lists what would go (the same lists, for the same state)."""
        self.authorize(principal, Permission.MEMORY_WRITE)
        mode = ForgetMode(arguments.mode)
        note = self._visible(principal, arguments.note_id)
        now = self._clock()
        if mode is ForgetMode.SOFT and not note.is_readable(now):
            raise MemoryUnavailableError()  # already forgotten or expired: unavailable, as for a read
        self.require_rights(principal, note)
        versions = self._all_versions(principal.tenant_id, note.note_id)
        receipt = self._receipt(note, versions, mode, dry_run=arguments.dry_run)
        if not arguments.dry_run:
            if mode is ForgetMode.SOFT:
                self._commit(principal.tenant_id, [self._forgetting(note, mode, now)], note)
            elif mode is ForgetMode.REDACT:
                if note.forgotten_mode is not ForgetMode.REDACT:
                    self._commit(principal.tenant_id, [self._forgetting(note, mode, now)], note)
                self._store.redact_note_versions(principal.tenant_id, note.note_id)
                self._drop_pin(principal.tenant_id, note.note_id)  # a redacted note never comes back
                self._purge_texts(versions)  # a vector of the text would outlive the text
            else:
                self._delete(principal.tenant_id, note, versions)
        logger.info(
            "note forgotten",
            extra={
                "tenant_id": principal.tenant_id,
                "note_id": note.note_id,
                "mode": mode.value,
                "dry_run": arguments.dry_run,
            },
        )
        return MemoryForgottenResponse(
            note_id=note.note_id, mode=mode.value, indexed=True, dry_run=arguments.dry_run, receipt=receipt
        )

    def _receipt(
        self, note: Note, versions: Sequence[Note], mode: ForgetMode, *, dry_run: bool
    ) -> DeletionReceipt:
        """What forgetting ``note`` (whose versions are ``versions``) in ``mode`` removes: the plan
        the call follows, answered before it runs (see ``knowledge.contract.deletion``)."""
        note_id = note.note_id
        # The note index holds the note while it is active (an expired note stays until forgotten).
        current = records("note", [note_id] if note.status is NoteStatus.ACTIVE else [], "scheduled")
        if mode is ForgetMode.SOFT:
            return DeletionReceipt(dry_run=dry_run, table=records("note", [note_id], "hidden"), index=current)
        history = records(
            "note_history",
            [f"{note_id}@{version.version}" for version, _, _ in note_history(versions)],
            "scheduled",
        )
        pin = self._store.get_pin(note.tenant_id, note_id)
        pins = records("pin", [pin.pin_id] if pin is not None else [], "purged")
        numbers = [version.version for version in versions]
        cached = records(
            "cached_vector",
            [hashlib.sha256(text.encode()).hexdigest() for text in _cached_texts(versions)],
            "purged",
        )
        if mode is ForgetMode.REDACT:
            if note.forgotten_mode is not ForgetMode.REDACT:
                numbers.append(note.version + 1)  # the forgetting version, written redacted
            return DeletionReceipt(
                dry_run=dry_run,
                table=records("note_version", [f"{note_id}@{number}" for number in numbers], "redacted"),
                index=current + history,
                pins=pins,
                embedding_cache=cached,
            )
        return DeletionReceipt(
            dry_run=dry_run,
            table=records("note", [note_id], "purged")
            + records("note_version", [f"{note_id}@{number}" for number in numbers], "purged")
            + records("note_claim", [claim.digest for claim in self._held(note)], "purged"),
            index=current + history,
            pins=pins,
            embedding_cache=cached,
        )

    def restore(self, principal: Principal, note_id: str) -> MemoryResponse:
        """Make a softly forgotten note active again (a new version). An active note is answered
        ``unchanged``; a redacted one cannot come back (``memory_invalid_request``)."""
        self.authorize(principal, Permission.MEMORY_WRITE)
        note = self._visible(principal, note_id)
        self.require_rights(principal, note)
        if note.status is NoteStatus.ACTIVE:
            if not note.is_readable(self._clock()):
                raise MemoryUnavailableError()
            return MemoryResponse(result="unchanged", note=view(note), indexed=is_indexed(note))
        if note.forgotten_mode is not ForgetMode.SOFT:
            raise MemoryInvalidRequestError(
                "Only a softly forgotten memory can be restored.", {"mode": "redact"}
            )
        restored = restored_note(note, now=self._clock())
        claims = tuple(claims_of(restored)) if restored.superseded_by is None else ()
        try:
            self._commit(principal.tenant_id, [NoteWrite(previous=note, note=restored, claim=claims)], note)
        except ClaimTakenError as error:
            raise MemoryConflictError(
                "Another current memory now holds this content or key.", current_version=note.version
            ) from error
        return MemoryResponse(result="restored", note=view(restored), indexed=False)

    def purge_plan(self, note: Note) -> NotePurge:
        """What deleting ``note`` for good removes (a hard forget's plan, whatever the note's
        state), read now: its versions and the receipt (see ``knowledge.contract.deletion``)."""
        versions = self._all_versions(note.tenant_id, note.note_id)
        return NotePurge(note, versions, self._receipt(note, versions, ForgetMode.HARD, dry_run=False))

    def carry_out_purge(self, plan: NotePurge) -> None:
        """Delete ``plan.note`` for good as a hard forget does (on its version:
        ``RetryableMemoryConflictError`` when it changed since the plan was read)."""
        self._delete(plan.note.tenant_id, plan.note, plan.versions)

    def _drop_pin(self, tenant_id: str, note_id: str) -> None:
        pin = self._store.get_pin(tenant_id, note_id)
        if pin is not None:
            # A ConflictError means it was pinned again meanwhile: that pin follows its forgotten
            # note, inert.
            with contextlib.suppress(ConflictError):
                self._store.delete_pin(tenant_id, note_id, pin_id=pin.pin_id)

    def _all_versions(self, tenant_id: str, note_id: str) -> list[Note]:
        versions: list[Note] = []
        next_token: str | None = None
        while True:
            page = self._store.list_note_versions(
                tenant_id, note_id, limit=VERSIONS_LIMIT_MAX, next_token=next_token
            )
            versions.extend(page.entries)
            next_token = page.next_token
            if next_token is None:
                return versions

    def _purge_texts(self, versions: Sequence[Note]) -> None:
        """Drop the cached embeddings of the versions' texts (``[redacted]`` embeds nothing kept)."""
        texts = _cached_texts(versions)
        if texts:
            self._purge_embeddings(texts)

    def _delete(self, tenant_id: str, note: Note, versions: Sequence[Note]) -> None:
        try:
            self._store.delete_note(
                tenant_id, note.note_id, claims=claims_of(note), expected_version=note.version
            )
        except ConflictError as error:
            raise RetryableMemoryConflictError(
                "The memory changed while it was forgotten; retry.", error.current_version
            ) from error
        self._purge_texts(versions)

    # -- reads ------------------------------------------------------------------------------------

    def get_note(self, principal: Principal, note_id: str) -> NoteView:
        """The note at its current version (superseded notes included)."""
        self.authorize(principal, Permission.MEMORY_READ)
        return view(self.readable(principal, note_id))

    def list_versions(
        self, principal: Principal, note_id: str, *, limit: int | None, next_token: str | None
    ) -> NoteVersionsResponse:
        """The note's versions, newest first, ``limit`` (1–100, default 20) at a time."""
        self.authorize(principal, Permission.MEMORY_READ)
        size = VERSIONS_LIMIT_DEFAULT if limit is None else limit
        if not 1 <= size <= VERSIONS_LIMIT_MAX:
            raise MemoryInvalidRequestError(
                f"limit must be between 1 and {VERSIONS_LIMIT_MAX}.", {"fields": [{"field": "limit"}]}
            )
        note = self.readable(principal, note_id)
        page = self._store.list_note_versions(
            principal.tenant_id, note.note_id, limit=size, next_token=next_token
        )
        pinned = {"pinned": note.pinned}  # a pin belongs to the note, not to one of its versions
        return NoteVersionsResponse(
            versions=[view(version).model_copy(update=pinned) for version in page.entries],
            next_token=page.next_token,
        )

    def readable(self, principal: Principal, note_id: str, *, field: str = "note_id") -> Note:
        """The visible, active, unexpired note ``note_id``, else ``MemoryUnavailableError``
        (``RequestValidationError`` naming ``field`` for an id that is not ``nt_`` and a ULID)."""
        note = self._visible(principal, note_id, field=field)
        if not note.is_readable(self._clock()):
            raise MemoryUnavailableError()
        return note

    def _visible(self, principal: Principal, note_id: str, *, field: str = "note_id") -> Note:
        ids.require_well_formed(note_id, ids.NOTE_PREFIX, field)
        note = self._store.get_note(principal.tenant_id, note_id)
        if note is None or not can_see_note(principal, note):
            raise MemoryUnavailableError()
        return note

    def require_rights(self, principal: Principal, note: Note | None, *scopes: Scope) -> None:
        """``InsufficientScopeError`` naming the first scope ``principal`` lacks, by the governance
        matrix (``knowledge.domain.memory.rights``), to write ``note`` (``None``: a new note of its
        own); ``scopes`` are the scopes the write gives the note, its current scope counts too."""
        owner_id = principal.subject_id if note is None else note.owner_id
        touched = scopes if note is None else (note.scope, *scopes)
        for right in rights_to_write(principal.subject_id, owner_id, touched):
            require_scope(principal, right, WHY.get(right))

    def authorize(self, principal: Principal, scope: Permission) -> None:
        """``RuntimeDisabledError`` when the switch is off, ``InsufficientScopeError`` without
        ``scope``: the read-only check every memory call starts with."""
        if not self._switch.is_enabled():
            raise RuntimeDisabledError()
        require_scope(principal, scope)


def view(note: Note) -> NoteView:
    """The public shape of one note version."""
    return NoteView(
        note_id=note.note_id,
        version=note.version,
        content=note.content,
        path=note.path,
        memory_type=note.memory_type.value,
        scope=note.scope.value,
        owner_id=note.owner_id,
        agent_id=note.agent_id,
        team_id=note.team_id,
        importance=note.importance,
        semantic_key=note.semantic_key,
        pinned=note.pinned,
        status=note.status.value,
        supersedes=list(note.supersedes),
        superseded_by=note.superseded_by,
        expires_at=note.expires_at,
        created_at=note.created_at,
        updated_at=note.updated_at,
    )


def is_indexed(note: Note) -> bool:
    """Whether searches reflect ``note`` as stored: the index holds its current version, or it is
    forgotten (every read leaves a forgotten note out, whatever the index still holds)."""
    return note.status is NoteStatus.FORGOTTEN or note.indexed_version == note.version


def _merged(note: Note, draft: NoteDraft, arguments: RememberArguments) -> NoteDraft:
    """``draft`` where the caller gave a field, else the note's own value (an update changes what it
    names). An expiry, given either way, replaces the old one."""
    given = arguments.model_fields_set
    kept = draft_of(note)
    changes: dict[str, Any] = {}
    for name in (
        "content",
        "scope",
        "team_id",
        "agent_id",
        "path",
        "memory_type",
        "importance",
        "semantic_key",
    ):
        changes[name] = getattr(draft, name) if name in given else getattr(kept, name)
    changes["expires_at"] = draft.expires_at if {"expires_at", "ttl_seconds"} & given else kept.expires_at
    return NoteDraft(**changes)


def _cached_texts(versions: Sequence[Note]) -> list[str]:
    """The distinct texts of ``versions`` that may have a cached embedding, in order."""
    return list(dict.fromkeys(version.content for version in versions if version.content != REDACTED))
