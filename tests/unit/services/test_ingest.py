"""IngestService: one signed queue message applied idempotently as its token's principal; a message
without a valid token, without the scope its op needs or naming another principal writes nothing,
one that can never apply is rejected with its reason (never its content or token), one whose base is
missing raises so SQS retries it."""

from __future__ import annotations

import copy
import json
from datetime import timedelta
from typing import Any

import pytest

from knowledge.adapters.in_process.store import InProcessKnowledgeStore
from knowledge.bootstrap import queued_notes
from knowledge.domain.access.bearer_tokens import hash_token
from knowledge.domain.models import BaseStatus, ItemStatus, KnowledgeBase, Permission, Scope, TokenRecord
from knowledge.domain.segments import Segment
from knowledge.errors import (
    AuthenticationRequiredError,
    InsufficientScopeError,
    MemoryInvalidRequestError,
    ResourceUnavailableError,
)
from knowledge.services.ingest import IngestAction, IngestService, MessageRejectedError
from knowledge.services.tokens import TokenService
from tests.support.embedding import HashingEmbedder
from tests.support.store import TickingClock
from tests.unit.services.conftest import MAX_CONTENT_CHARS, TENANT

SUBJECT = "pipeline-agent"
TEAM = "team-ops"
WRITER_TOKEN = "kn_unit-ingest-writer"
WRITER = f"Bearer {WRITER_TOKEN}"
"""The ``Authorization`` attribute of the messages below: a token of ``SUBJECT`` in ``TENANT``
(team ``TEAM``) with both write scopes and ``memory:share`` (its team notes)."""
WRITE_SCOPES = (Permission.WRITE.value, Permission.MEMORY_WRITE.value, Permission.MEMORY_SHARE.value)


@pytest.fixture
def writer(store: InProcessKnowledgeStore, clock: TickingClock) -> TokenRecord:
    record = TokenRecord(
        token_hash=hash_token(WRITER_TOKEN),
        tenant_id=TENANT,
        subject_id=SUBJECT,
        team_ids=frozenset({TEAM}),
        scopes=frozenset(WRITE_SCOPES),
        created_at=clock(),
    )
    store.put_token(record)
    return record


@pytest.fixture
def ingest(store: InProcessKnowledgeStore, tokens: TokenService, writer: TokenRecord) -> IngestService:
    return IngestService(
        store, queued_notes(store, HashingEmbedder().forget), tokens, max_content_chars=MAX_CONTENT_CHARS
    )


@pytest.fixture
def base(store: InProcessKnowledgeStore) -> KnowledgeBase:
    return store.create_base(TENANT, name="Ops", owner_id="pipeline", scope=Scope.TENANT, team_id=None)


def _upsert(base: KnowledgeBase, **fields: Any) -> str:
    return json.dumps(
        {
            "op": "upsert",
            "tenant_id": TENANT,
            "knowledge_base_id": base.knowledge_base_id,
            "external_id": "doc-1",
            "title": "Runbook",
            "content": "Roll out with the blue green switch.",
            **fields,
        }
    )


def _archive(base: KnowledgeBase, external_id: str = "doc-1") -> str:
    return json.dumps(
        {
            "op": "archive",
            "tenant_id": TENANT,
            "knowledge_base_id": base.knowledge_base_id,
            "external_id": external_id,
        }
    )


def test_ingest_upsert_creates_a_published_item_and_a_redelivery_changes_nothing(
    ingest: IngestService, store: InProcessKnowledgeStore, base: KnowledgeBase
) -> None:
    first = ingest.ingest(_upsert(base), message_id="m-1", authorization=WRITER)
    again = ingest.ingest(_upsert(base), message_id="m-1", authorization=WRITER)

    item = store.find_item_by_external_id(TENANT, base.knowledge_base_id, "doc-1")
    assert (first, again) == (IngestAction.CREATED, IngestAction.UNCHANGED)
    assert item is not None
    assert (item.status, item.version) == (ItemStatus.PUBLISHED, 1)


def test_ingest_upsert_with_segments_stores_them_and_other_segments_revise(
    ingest: IngestService, store: InProcessKnowledgeStore, base: KnowledgeBase
) -> None:
    pages = [{"offset": 0, "page": 1}, {"offset": 12, "page": 2}]
    created = ingest.ingest(_upsert(base, segments=pages), message_id="m-1", authorization=WRITER)
    same = ingest.ingest(_upsert(base, segments=pages), message_id="m-2", authorization=WRITER)
    revised = ingest.ingest(_upsert(base, segments=pages[:1]), message_id="m-3", authorization=WRITER)

    item = store.find_item_by_external_id(TENANT, base.knowledge_base_id, "doc-1")
    assert item is not None
    latest = store.get_revision(TENANT, item.knowledge_item_id, item.latest_revision_id)
    assert (created, same, revised) == (IngestAction.CREATED, IngestAction.UNCHANGED, IngestAction.REVISED)
    assert latest is not None
    assert latest.segments == (Segment(offset=0, page=1),)


def test_ingest_changed_content_adds_a_revision(ingest: IngestService, base: KnowledgeBase) -> None:
    ingest.ingest(_upsert(base), message_id="m-1", authorization=WRITER)

    assert (
        ingest.ingest(_upsert(base, content="Canary releases."), message_id="m-2", authorization=WRITER)
        is IngestAction.REVISED
    )


def test_ingest_draft_then_publish_of_the_same_content_publishes_it(
    ingest: IngestService, base: KnowledgeBase
) -> None:
    assert (
        ingest.ingest(_upsert(base, publish=False), message_id="m-1", authorization=WRITER)
        is IngestAction.CREATED
    )
    assert ingest.ingest(_upsert(base), message_id="m-2", authorization=WRITER) is IngestAction.PUBLISHED


def test_ingest_archive_archives_the_item_and_a_repeat_finds_nothing(
    ingest: IngestService, store: InProcessKnowledgeStore, base: KnowledgeBase
) -> None:
    ingest.ingest(_upsert(base), message_id="m-1", authorization=WRITER)

    first = ingest.ingest(_archive(base), message_id="m-2", authorization=WRITER)
    again = ingest.ingest(_archive(base), message_id="m-2", authorization=WRITER)

    assert (first, again) == (IngestAction.ARCHIVED, IngestAction.ABSENT)
    assert store.find_item_by_external_id(TENANT, base.knowledge_base_id, "doc-1") is None


def test_ingest_upsert_after_archive_creates_a_new_item(
    ingest: IngestService, store: InProcessKnowledgeStore, base: KnowledgeBase
) -> None:
    ingest.ingest(_upsert(base), message_id="m-1", authorization=WRITER)
    archived = store.find_item_by_external_id(TENANT, base.knowledge_base_id, "doc-1")
    ingest.ingest(_archive(base), message_id="m-2", authorization=WRITER)

    assert ingest.ingest(_upsert(base), message_id="m-3", authorization=WRITER) is IngestAction.CREATED
    recreated = store.find_item_by_external_id(TENANT, base.knowledge_base_id, "doc-1")
    assert archived is not None
    assert recreated is not None
    assert recreated.knowledge_item_id != archived.knowledge_item_id


@pytest.mark.parametrize(
    "body",
    [
        "not json",
        json.dumps({"op": "delete"}),
        json.dumps({"op": "archive", "tenant_id": TENANT, "knowledge_base_id": "kb_x", "external_id": "d"}),
        json.dumps({"op": "archive", "tenant_id": "a#b", "knowledge_base_id": "kb_x", "external_id": "d"}),
    ],
    ids=["not-json", "unknown-op", "malformed-base", "malformed-tenant"],
)
def test_ingest_malformed_message_is_rejected_with_its_fields(ingest: IngestService, body: str) -> None:
    with pytest.raises(MessageRejectedError) as raised:
        ingest.ingest(body, message_id="m-1", authorization=WRITER)

    assert raised.value.code == "validation_error"
    assert raised.value.details["fields"]


def test_ingest_content_over_the_limit_is_rejected_without_the_content(
    ingest: IngestService, base: KnowledgeBase
) -> None:
    content = "secret " * (MAX_CONTENT_CHARS // 7 + 1)

    with pytest.raises(MessageRejectedError) as raised:
        ingest.ingest(_upsert(base, content=content), message_id="m-1", authorization=WRITER)

    assert raised.value.details["max_chars"] == MAX_CONTENT_CHARS
    assert "secret" not in json.dumps(raised.value.details) + raised.value.message


def test_ingest_into_an_unknown_base_raises_resource_unavailable(
    ingest: IngestService, base: KnowledgeBase
) -> None:
    with pytest.raises(ResourceUnavailableError):
        ingest.ingest(
            _upsert(base, knowledge_base_id="kb_01M8MSRAQ70QQ1SJHWP0AMCDPZ"),
            message_id="m-1",
            authorization=WRITER,
        )


# -- memory messages (DESIGN §9) -------------------------------------------------------------------


def _memory(op: str, **fields: Any) -> str:
    return json.dumps({"op": op, "tenant_id": TENANT, "subject_id": SUBJECT, **fields})


def test_ingest_remember_message_keeps_a_note_for_its_subject_once(
    ingest: IngestService, store: InProcessKnowledgeStore
) -> None:
    body = _memory("remember", content="The nightly export lands in bucket exports-7.", path="/ops")

    first = ingest.ingest(body, message_id="m-1", authorization=WRITER)
    again = ingest.ingest(body, message_id="m-1", authorization=WRITER)

    assert (first, again) == (IngestAction.REMEMBERED, IngestAction.REMEMBERED)
    notes = [note for note in store._notes.values() if note.owner_id == "pipeline-agent"]
    assert [(note.content, note.path, note.version) for note in notes] == [
        ("The nightly export lands in bucket exports-7.", "/ops", 1)
    ]


def test_ingest_remember_message_with_pin_pins_the_note_once(
    ingest: IngestService, store: InProcessKnowledgeStore
) -> None:
    body = _memory("remember", content="Escalate outages to the platform lead.", pin=True)

    ingest.ingest(body, message_id="m-1", authorization=WRITER)
    ingest.ingest(body, message_id="m-1", authorization=WRITER)

    [note] = store._notes.values()
    pins = store.list_pins(TENANT, limit=10, next_token=None).entries
    assert [(pin.note_id, pin.created_by) for pin in pins] == [(note.note_id, "pipeline-agent")]
    assert store.get_note(TENANT, note.note_id).pinned is True  # type: ignore[union-attr]


def test_ingest_forget_message_forgets_and_its_redelivery_is_a_no_op(
    ingest: IngestService, store: InProcessKnowledgeStore
) -> None:
    ingest.ingest(_memory("remember", content="Temporary fact."), message_id="m-1", authorization=WRITER)
    [note] = store._notes.values()
    forget = _memory("forget", note_id=note.note_id, mode="hard")

    assert ingest.ingest(forget, message_id="m-2", authorization=WRITER) is IngestAction.FORGOTTEN
    assert ingest.ingest(forget, message_id="m-2", authorization=WRITER) is IngestAction.ABSENT
    assert store.get_note(TENANT, note.note_id) is None


def test_ingest_memory_message_with_unknown_fields_is_rejected(ingest: IngestService) -> None:
    with pytest.raises(MessageRejectedError):
        ingest.ingest(_memory("remember", content="x", colour="red"), message_id="m-1", authorization=WRITER)


def test_ingest_remember_message_out_of_bounds_raises_so_it_reaches_the_dead_letter_queue(
    ingest: IngestService,
) -> None:
    with pytest.raises(MemoryInvalidRequestError):
        ingest.ingest(
            _memory("remember", content="x", importance=2.0), message_id="m-1", authorization=WRITER
        )


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        ({"expected_version": 10**38}, MemoryInvalidRequestError),
        ({"expected_version": -1}, MemoryInvalidRequestError),
        ({"ttl_seconds": 10**38}, MemoryInvalidRequestError),
        ({"expected_version": True}, MessageRejectedError),
        ({"ttl_seconds": 1.5}, MessageRejectedError),
    ],
)
def test_ingest_remember_message_integer_out_of_bounds_or_no_integer_is_rejected_naming_the_field(
    ingest: IngestService, fields: dict[str, Any], error: type[Exception]
) -> None:
    body = _memory("remember", content="A fact.", semantic_key="fact", **fields)

    with pytest.raises(error) as raised:
        ingest.ingest(body, message_id="m-1", authorization=WRITER)

    [field] = fields
    problems = raised.value.details["fields"]  # type: ignore[attr-defined]
    # A malformed message names the field under its op ("remember.ttl_seconds").
    assert [problem["field"].removeprefix("remember.") for problem in problems] == [field]


def test_ingest_remember_message_with_1e400_is_rejected_naming_the_field(ingest: IngestService) -> None:
    body = _memory("remember", content="A fact.", semantic_key="fact", ttl_seconds=1)
    body = body.replace('"ttl_seconds": 1', '"ttl_seconds": 1e400')

    with pytest.raises(MessageRejectedError) as raised:
        ingest.ingest(body, message_id="m-1", authorization=WRITER)

    assert [problem["field"] for problem in raised.value.details["fields"]] == ["remember.ttl_seconds"]


def test_ingest_remember_message_with_a_huge_ttl_is_rejected_and_logged_without_values(
    ingest: IngestService, caplog: pytest.LogCaptureFixture
) -> None:
    body = _memory("remember", content="secret fact", ttl_seconds=9_223_372_036_854_775_807)

    with pytest.raises(MemoryInvalidRequestError) as raised:
        ingest.ingest(body, message_id="m-1", authorization=WRITER)

    assert [problem["field"] for problem in raised.value.details["fields"]] == ["ttl_seconds"]
    [record] = [record for record in caplog.records if record.getMessage() == "ingest message rejected"]
    assert record.__dict__["problems"] == raised.value.details["fields"]
    assert "secret" not in str(record.__dict__["problems"])


def test_ingest_memory_message_failing_unexpectedly_is_logged_with_its_error_type(
    ingest: IngestService, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*_: Any) -> None:
        raise OverflowError("date value out of range: secret")

    monkeypatch.setattr(ingest._notes, "remember", broken)

    with pytest.raises(OverflowError):
        ingest.ingest(_memory("remember", content="secret fact"), message_id="m-1", authorization=WRITER)

    [record] = [record for record in caplog.records if record.getMessage() == "ingest message failed"]
    assert record.__dict__["error_type"] == "OverflowError"
    assert "secret" not in json.dumps({k: str(v) for k, v in record.__dict__.items() if k != "msg"})


def test_ingest_remember_message_with_a_blank_semantic_key_is_rejected(
    ingest: IngestService, store: InProcessKnowledgeStore
) -> None:
    with pytest.raises(MemoryInvalidRequestError) as raised:
        ingest.ingest(
            _memory("remember", content="A fact.", semantic_key=" "), message_id="m-1", authorization=WRITER
        )

    assert [problem["field"] for problem in raised.value.details["fields"]] == ["semantic_key"]
    assert list(store._notes.values()) == []


# -- signed messages: the token decides whom a message writes as -----------------------------------


def _state(store: InProcessKnowledgeStore) -> dict[str, Any]:
    """Everything the store holds (its tables), to show that a rejected message wrote nothing."""
    return copy.deepcopy({name: value for name, value in vars(store).items() if isinstance(value, dict)})


def _bearer(tokens: TokenService, *scopes: str, **fields: Any) -> str:
    token, _ = tokens.issue(
        tenant_id=fields.pop("tenant_id", TENANT),
        subject_id=fields.pop("subject_id", SUBJECT),
        scopes=scopes or WRITE_SCOPES,
        **fields,
    )
    return f"Bearer {token}"


def _revoked_parent(tokens: TokenService, store: InProcessKnowledgeStore) -> str:
    _, parent_record = tokens.issue(tenant_id=TENANT, subject_id="issuer", scopes=WRITE_SCOPES)
    child = _bearer(tokens, ancestor_token_ids=[parent_record.token_hash])
    store.revoke_token(parent_record.token_hash)
    return child


UNAUTHENTICATED = {
    "no-attribute": (lambda tokens, store: None, "missing"),
    "empty-bearer": (lambda tokens, store: "Bearer ", "missing"),
    "unknown-token": (lambda tokens, store: "Bearer kn_made-up", "unknown"),
    "expired-token": (lambda tokens, store: _bearer(tokens, expires_in=timedelta(seconds=1)), "expired"),
    "revoked-token": (
        lambda tokens, store: _revoke(store, _bearer(tokens)),
        "revoked",
    ),
    "revoked-parent-token": (_revoked_parent, "revoked"),
}


def _revoke(store: InProcessKnowledgeStore, authorization: str) -> str:
    store.revoke_token(hash_token(authorization.removeprefix("Bearer ")))
    return authorization


@pytest.mark.parametrize("op", ["upsert", "remember"])
@pytest.mark.parametrize("case", list(UNAUTHENTICATED))
def test_ingest_message_without_a_valid_token_writes_nothing(
    ingest: IngestService,
    tokens: TokenService,
    store: InProcessKnowledgeStore,
    base: KnowledgeBase,
    caplog: pytest.LogCaptureFixture,
    case: str,
    op: str,
) -> None:
    make, reason = UNAUTHENTICATED[case]
    authorization = make(tokens, store)
    body = _upsert(base) if op == "upsert" else _memory("remember", content="A fact.")
    before = _state(store)

    with pytest.raises(AuthenticationRequiredError) as raised:
        ingest.ingest(body, message_id="m-1", authorization=authorization)

    assert raised.value.details == {"reason": reason}
    assert _state(store) == before
    [record] = [record for record in caplog.records if record.getMessage() == "ingest message rejected"]
    assert (record.__dict__["reason"], record.__dict__["error_code"]) == (reason, "authentication_required")
    token = (authorization or "").removeprefix("Bearer ").strip()
    assert not token or token not in caplog.text


@pytest.mark.parametrize(
    ("op", "scopes", "required"),
    [
        ("upsert", (Permission.READ.value, Permission.MEMORY_WRITE.value), Permission.WRITE),
        ("archive", (Permission.MEMORY_WRITE.value,), Permission.WRITE),
        ("remember", (Permission.WRITE.value, Permission.MEMORY_READ.value), Permission.MEMORY_WRITE),
        ("forget", (Permission.WRITE.value,), Permission.MEMORY_WRITE),
    ],
)
def test_ingest_message_whose_token_lacks_the_scope_of_its_op_writes_nothing(
    ingest: IngestService,
    tokens: TokenService,
    store: InProcessKnowledgeStore,
    base: KnowledgeBase,
    op: str,
    scopes: tuple[str, ...],
    required: Permission,
) -> None:
    ingest.ingest(_upsert(base), message_id="m-0", authorization=WRITER)
    ingest.ingest(_memory("remember", content="Kept fact."), message_id="m-0", authorization=WRITER)
    [note] = store._notes.values()
    body = {
        "upsert": _upsert(base, content="Changed."),
        "archive": _archive(base),
        "remember": _memory("remember", content="Another fact."),
        "forget": _memory("forget", note_id=note.note_id, mode="hard"),
    }[op]
    authorization = _bearer(tokens, *scopes)
    before = _state(store)

    with pytest.raises(InsufficientScopeError) as raised:
        ingest.ingest(body, message_id="m-1", authorization=authorization)

    assert raised.value.details == {"required_scope": required.value}
    assert _state(store) == before


def test_ingest_remember_of_a_team_note_without_memory_share_is_insufficient_scope_and_writes_nothing(
    ingest: IngestService, tokens: TokenService, store: InProcessKnowledgeStore
) -> None:
    authorization = _bearer(tokens, Permission.MEMORY_WRITE.value, team_ids=[TEAM])
    body = _memory("remember", content="Team fact.", scope="team", team_id=TEAM, pin=True, team_ids=[TEAM])
    before = _state(store)

    with pytest.raises(InsufficientScopeError) as raised:
        ingest.ingest(body, message_id="m-1", authorization=authorization)

    assert raised.value.details == {"required_scope": "memory:share"}
    assert _state(store) == before


@pytest.mark.parametrize(
    ("message", "field"),
    [
        ("upsert", "tenant_id"),
        ("upsert-subject", "subject_id"),
        ("upsert-teams", "team_ids"),
        ("archive", "tenant_id"),
        ("archive-subject", "subject_id"),
        ("remember-tenant", "tenant_id"),
        ("remember-subject", "subject_id"),
        ("remember-teams", "team_ids"),
        ("forget-subject", "subject_id"),
    ],
)
def test_ingest_message_naming_another_principal_than_its_token_writes_nothing(
    ingest: IngestService,
    store: InProcessKnowledgeStore,
    base: KnowledgeBase,
    caplog: pytest.LogCaptureFixture,
    message: str,
    field: str,
) -> None:
    ingest.ingest(_upsert(base), message_id="m-0", authorization=WRITER)
    ingest.ingest(_memory("remember", content="Kept fact."), message_id="m-0", authorization=WRITER)
    [note] = store._notes.values()
    body = {
        "upsert": _upsert(base, tenant_id="globex", content="Changed."),
        "upsert-subject": _upsert(base, subject_id="someone-else", content="Changed."),
        "upsert-teams": _upsert(base, team_ids=["team-finance"], content="Changed."),
        "archive": json.dumps({**json.loads(_archive(base)), "tenant_id": "globex"}),
        "archive-subject": json.dumps({**json.loads(_archive(base)), "subject_id": "someone-else"}),
        "remember-tenant": _memory("remember", content="A fact.", tenant_id="globex"),
        "remember-subject": _memory("remember", content="A fact.", subject_id="someone-else"),
        "remember-teams": _memory("remember", content="A fact.", team_ids=[TEAM, "team-finance"]),
        "forget-subject": _memory("forget", note_id=note.note_id, mode="hard", subject_id="someone-else"),
    }[message]
    before = _state(store)

    with pytest.raises(MessageRejectedError) as raised:
        ingest.ingest(body, message_id="m-1", authorization=WRITER)

    assert raised.value.details["fields"] == [{"field": field, "problem": "differs_from_token"}]
    assert _state(store) == before
    [record] = [record for record in caplog.records if record.getMessage() == "ingest message rejected"]
    assert record.__dict__["problems"] == raised.value.details["fields"]
    assert WRITER_TOKEN not in caplog.text


def test_ingest_signed_message_without_principal_fields_writes_as_the_token(
    ingest: IngestService, store: InProcessKnowledgeStore, base: KnowledgeBase
) -> None:
    upsert = {**json.loads(_upsert(base)), "external_id": "unsigned-body"}
    del upsert["tenant_id"]
    remember = {"op": "remember", "content": "Team fact.", "scope": "team", "team_id": TEAM}

    created = ingest.ingest(json.dumps(upsert), message_id="m-1", authorization=WRITER)
    remembered = ingest.ingest(json.dumps(remember), message_id="m-2", authorization=WRITER)

    assert (created, remembered) == (IngestAction.CREATED, IngestAction.REMEMBERED)
    item = store.find_item_by_external_id(TENANT, base.knowledge_base_id, "unsigned-body")
    assert item is not None
    assert item.tenant_id == TENANT
    [note] = store._notes.values()
    assert (note.tenant_id, note.owner_id, note.team_id) == (TENANT, SUBJECT, TEAM)


def test_ingest_signed_message_naming_the_token_principal_in_any_team_order_is_applied(
    ingest: IngestService, tokens: TokenService, store: InProcessKnowledgeStore
) -> None:
    authorization = _bearer(tokens, team_ids=["team-b", "team-a"])
    body = _memory("remember", content="A fact.", team_ids=["team-a", "team-b"])

    assert ingest.ingest(body, message_id="m-1", authorization=authorization) is IngestAction.REMEMBERED
    assert [note.owner_id for note in store._notes.values()] == [SUBJECT]


def test_ingest_knowledge_messages_naming_the_token_principal_are_applied(
    ingest: IngestService, store: InProcessKnowledgeStore, base: KnowledgeBase
) -> None:
    principal = {"tenant_id": TENANT, "subject_id": SUBJECT, "team_ids": [TEAM]}
    upsert = {**json.loads(_upsert(base)), **principal}
    archive = {**json.loads(_archive(base)), **principal}

    created = ingest.ingest(json.dumps(upsert), message_id="m-1", authorization=WRITER)
    item = store.find_item_by_external_id(TENANT, base.knowledge_base_id, "doc-1")
    archived = ingest.ingest(json.dumps(archive), message_id="m-2", authorization=WRITER)

    assert (created, archived) == (IngestAction.CREATED, IngestAction.ARCHIVED)
    assert item is not None
    assert item.tenant_id == TENANT


def test_ingest_token_of_another_tenant_cannot_write_into_this_tenants_base(
    ingest: IngestService, tokens: TokenService, store: InProcessKnowledgeStore, base: KnowledgeBase
) -> None:
    # The body names no tenant: the token's tenant (globex) is where the base is looked up.
    body = {**json.loads(_upsert(base)), "external_id": "intruder"}
    del body["tenant_id"]
    authorization = _bearer(tokens, tenant_id="globex")
    before = _state(store)

    with pytest.raises(ResourceUnavailableError):
        ingest.ingest(json.dumps(body), message_id="m-1", authorization=authorization)

    assert _state(store) == before


def test_ingest_token_whose_allow_list_excludes_the_base_writes_nothing(
    ingest: IngestService, tokens: TokenService, store: InProcessKnowledgeStore, base: KnowledgeBase
) -> None:
    other = store.create_base(TENANT, name="Other", owner_id="pipeline", scope=Scope.TENANT, team_id=None)
    authorization = _bearer(tokens, knowledge_base_ids=[other.knowledge_base_id])
    before = _state(store)

    with pytest.raises(ResourceUnavailableError):
        ingest.ingest(_upsert(base), message_id="m-1", authorization=authorization)

    assert _state(store) == before


def test_ingest_into_an_inactive_base_the_token_sees_is_applied(
    ingest: IngestService, store: InProcessKnowledgeStore, base: KnowledgeBase
) -> None:
    store.update_base(
        TENANT, base.knowledge_base_id, expected_version=base.version, status=BaseStatus.INACTIVE
    )

    assert ingest.ingest(_upsert(base), message_id="m-1", authorization=WRITER) is IngestAction.CREATED
