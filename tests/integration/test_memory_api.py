"""The memory tools wired end to end in process: the authorizer and the real Remember, SearchMemory
and ForgetMemory handlers over moto DynamoDB, with the table's stream drained into the real indexer
handler. Covers the answers' shapes, every §9 error code at the HTTP boundary, idempotent writes,
each way of forgetting, and that knowledge and memory never mix."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from knowledge.bootstrap import use_container
from tests.support.memory import SHARING, call, forget, found, memory_token, remember, search_memory
from tests.support.rest import SearchWorld, error_body, new_world, result_items
from tests.support.streams import StreamReader, drain


@pytest.fixture
def world(table: Any) -> Iterator[SearchWorld]:
    built = new_world()
    yield built
    use_container(None)


@pytest.fixture
def stream(world: SearchWorld) -> StreamReader:
    return StreamReader()


@pytest.fixture
def alice(world: SearchWorld) -> str:
    return memory_token(world, "alice", team_ids=["red"], scopes=SHARING)


def _created(alice: str, stream: StreamReader, content: str, **arguments: Any) -> dict[str, Any]:
    reply = remember(alice, content, **arguments)
    assert reply.status in (200, 201), reply.text
    drain(stream)
    note: dict[str, Any] = reply.body["note"]
    return note


def test_remember_answers_201_with_the_note_and_search_finds_it_after_the_stream(
    alice: str, stream: StreamReader
) -> None:
    reply = remember(alice, "The staging cluster is called kestrel.", path="/ops", memory_type="fact")

    assert reply.status == 201
    assert reply.body["type"] == "memory"
    assert reply.body["result"] == "created"
    note = reply.body["note"]
    assert set(note) >= {"note_id", "version", "content", "path", "scope", "owner_id", "pinned", "created_at"}
    assert found(alice, "kestrel cluster") == []
    drain(stream)
    assert found(alice, "kestrel cluster") == ["The staging cluster is called kestrel."]


def test_remember_duplicate_and_update_answer_200(alice: str, stream: StreamReader) -> None:
    first = _created(alice, stream, "Builds run on arm64.", semantic_key="build.arch")

    duplicate = remember(alice, "Builds run on arm64.")
    updated = remember(alice, "Builds run on x86_64.", semantic_key="build.arch")

    assert (duplicate.status, duplicate.body["result"]) == (200, "duplicate")
    assert (updated.status, updated.body["result"], updated.body["note"]["version"]) == (200, "updated", 2)
    drain(stream)
    assert found(alice, "builds run") == ["Builds run on x86_64."]
    assert updated.body["note"]["note_id"] == first["note_id"]


def test_get_note_and_versions_newest_first_with_next_token(alice: str, stream: StreamReader) -> None:
    for n in range(3):
        note = _created(alice, stream, f"Deploy window is slot {n}.", semantic_key="deploy.window")
    path = f"/v1/notes/{note['note_id']}"

    current = call("GET", path, None, alice)
    first = call("GET", f"{path}/versions", None, alice, query={"limit": "2"})
    rest = call(
        "GET", f"{path}/versions", None, alice, query={"limit": "2", "next_token": first.body["next_token"]}
    )

    assert (current.status, current.body["version"]) == (200, 3)
    assert [v["version"] for v in first.body["versions"]] == [3, 2]
    assert [v["content"] for v in rest.body["versions"]] == ["Deploy window is slot 0."]
    assert rest.body["next_token"] is None


def test_remember_with_an_idempotency_key_replays_the_first_answer(alice: str, stream: StreamReader) -> None:
    headers = {"Idempotency-Key": "note-1"}
    body = {"content": "The on-call phone is in drawer 3."}

    first = call("POST", "/v1/tools/remember", body, alice, headers=headers)
    again = call("POST", "/v1/tools/remember", body, alice, headers=headers)
    other = call("POST", "/v1/tools/remember", {"content": "Something else."}, alice, headers=headers)

    assert first.status == again.status == 201
    assert again.body == first.body
    assert again.headers.get("Idempotent-Replayed") == "true"
    error_body(400, "validation_error", other)


def test_memory_tools_without_a_token_are_401(world: SearchWorld) -> None:
    refused = remember("Bearer kn_not-a-token", "A fact.")

    error_body(401, "authentication_required", refused)
    error_body(401, "authentication_required", search_memory("Bearer kn_not-a-token", "fact"))
    assert refused.headers.get("WWW-Authenticate") == "Bearer"


def test_memory_tools_without_memory_scopes_are_403(world: SearchWorld) -> None:
    knowledge_reader = world.token(subject_id="alice")

    write = error_body(403, "insufficient_scope", remember(knowledge_reader, "A fact."))
    read = error_body(403, "insufficient_scope", search_memory(knowledge_reader, "fact"))

    assert write["details"] == {"required_scope": "memory:write"}
    assert read["details"] == {"required_scope": "memory:read"}


def test_platform_admin_token_uses_the_memory_tools(world: SearchWorld) -> None:
    admin = world.token(subject_id="root", scopes=("platform:admin",))

    assert remember(admin, "Admins can keep notes too.").status == 201


def test_absent_and_unauthorized_notes_answer_the_same_bytes(
    world: SearchWorld, alice: str, stream: StreamReader
) -> None:
    private = _created(alice, stream, "Alice's private note.")
    mallory = memory_token(world, "mallory")
    outsider = memory_token(world, "alice", tenant_id="globex")
    absent = "nt_01ARZ3NDEKTSV4RRFFQ69G5FAV"

    replies = [
        call("GET", f"/v1/notes/{private['note_id']}", None, mallory),
        call("GET", f"/v1/notes/{private['note_id']}", None, outsider),
        call("GET", f"/v1/notes/{absent}", None, alice),
    ]
    malformed = call("GET", "/v1/notes/not-an-id", None, alice)

    assert {reply.status for reply in replies} == {404}
    assert len({reply.text for reply in replies}) == 1
    assert (malformed.status, malformed.code) == (400, "validation_error")
    assert replies[0].code == "memory_unavailable"
    assert forget(mallory, private["note_id"], "hard").text == replies[0].text


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({"content": "A fact.", "colour": "red"}, 400, "memory_invalid_request"),
        ({"content": 42}, 400, "validation_error"),
        ({"content": "A fact.", "importance": 3}, 400, "memory_invalid_request"),
        ({"content": "A fact.", "scope": "team"}, 400, "memory_invalid_request"),
        ({"content": "A fact.", "expires_at": "yesterday"}, 400, "validation_error"),
        ({"content": "A fact.", "semantic_key": ""}, 400, "memory_invalid_request"),
        ({"content": "A fact.", "semantic_key": "  "}, 400, "memory_invalid_request"),
    ],
)
def test_remember_bad_input_answers_its_code(
    alice: str, body: dict[str, Any], status: int, code: str
) -> None:
    error_body(status, code, call("POST", "/v1/tools/remember", body, alice))


@pytest.mark.parametrize("ttl", [9_223_372_036_854_775_807, 99_999_999_999_999_999_999, 316_224_001])
def test_remember_huge_ttl_seconds_is_memory_invalid_request_naming_the_field(alice: str, ttl: int) -> None:
    reply = call("POST", "/v1/tools/remember", {"content": "A fact.", "ttl_seconds": ttl}, alice)

    fields = error_body(400, "memory_invalid_request", reply)["details"]["fields"]
    assert [problem["field"] for problem in fields] == ["ttl_seconds"]


def test_search_memory_query_over_2000_chars_is_a_validation_error_without_the_query(alice: str) -> None:
    reply = search_memory(alice, "needle " * 300)

    error = error_body(400, "validation_error", reply)
    assert [problem["field"] for problem in error["details"]["fields"]] == ["query"]
    assert "needle" not in reply.text


def test_search_memory_query_of_2000_chars_is_accepted(alice: str) -> None:
    reply = search_memory(alice, "q" * 2_000)

    assert (reply.status, reply.body["results"]) == (200, [])


def test_search_memory_out_of_bounds_limit_is_memory_invalid_request(alice: str) -> None:
    error_body(400, "memory_invalid_request", search_memory(alice, "fact", limit=0))


def test_remember_stale_expected_version_is_409_with_the_current_version(
    alice: str, stream: StreamReader
) -> None:
    note = _created(alice, stream, "v1", semantic_key="k")
    _created(alice, stream, "v2", semantic_key="k")

    reply = remember(alice, "v3", memory_id=note["note_id"], expected_version=1)

    assert error_body(409, "memory_conflict", reply)["details"]["current_version"] == 2


def test_forget_soft_then_restore_over_rest(alice: str, stream: StreamReader) -> None:
    note = _created(alice, stream, "The garage code is 5512.")

    forgotten = forget(alice, note["note_id"], "soft")
    drain(stream)
    assert forgotten.status == 200
    assert {key: forgotten.body[key] for key in ("type", "note_id", "mode", "dry_run", "indexed")} == {
        "type": "memory_forgotten",
        "note_id": note["note_id"],
        "mode": "soft",
        "dry_run": False,
        "indexed": True,
    }
    assert found(alice, "garage code") == []

    restored = call("POST", f"/v1/notes/{note['note_id']}/restore", None, alice)
    drain(stream)
    assert (restored.status, restored.body["result"]) == (200, "restored")
    assert found(alice, "garage code") == ["The garage code is 5512."]


def test_forget_hard_removes_the_note_everywhere(
    world: SearchWorld, alice: str, stream: StreamReader
) -> None:
    note = _created(alice, stream, "Delete the quokka fact.")

    assert forget(alice, note["note_id"], "hard").status == 200
    drain(stream)

    assert found(alice, "quokka fact") == []
    assert len(world.container.note_index) == 0  # type: ignore[union-attr,arg-type]
    error_body(404, "memory_unavailable", call("GET", f"/v1/notes/{note['note_id']}/versions", None, alice))
    error_body(404, "memory_unavailable", forget(alice, note["note_id"], "hard"))


def test_forget_redact_leaves_only_redacted_versions(
    world: SearchWorld, alice: str, stream: StreamReader
) -> None:
    note = _created(alice, stream, "My locker is 118.")

    assert forget(alice, note["note_id"], "redact").status == 200
    drain(stream)

    versions = world.store.list_note_versions("acme", note["note_id"], limit=10, next_token=None).entries
    assert {version.content for version in versions} == {"[redacted]"}
    assert found(alice, "locker") == []
    error_body(
        400, "memory_invalid_request", call("POST", f"/v1/notes/{note['note_id']}/restore", None, alice)
    )


def test_knowledge_and_memory_never_mix(world: SearchWorld, alice: str, stream: StreamReader) -> None:
    reader = world.token(subject_id="alice", scopes=("knowledge:read", "memory:read", "memory:write"))
    item, _ = world.publish(world.base(), "Narwhal runbook", "The narwhal migration runs nightly.")
    _created(alice, stream, "The narwhal migration runs nightly.")

    knowledge = world.search(reader, "narwhal migration")
    memory = found(reader, "narwhal migration")

    assert result_items(knowledge) == [item.knowledge_item_id]
    assert all("note_id" not in result for result in knowledge.body["results"])
    assert memory == ["The narwhal migration runs nightly."]
    assert all(
        "knowledge_item_id" not in result for result in search_memory(reader, "narwhal").body["results"]
    )


@pytest.mark.parametrize("mode", ["redact", "hard", "soft"])
def test_remember_replay_after_forget_never_answers_the_forgotten_content(
    alice: str, stream: StreamReader, mode: str
) -> None:
    headers = {"Idempotency-Key": f"forgotten-{mode}"}
    body = {"content": "The vault combination is 31-7-22."}
    first = call("POST", "/v1/tools/remember", body, alice, headers=headers)
    assert first.status == 201
    assert forget(alice, first.body["note"]["note_id"], mode).status == 200

    again = call("POST", "/v1/tools/remember", body, alice, headers=headers)

    error_body(404, "memory_unavailable", again)
    assert "31-7-22" not in again.text


def test_remember_replay_of_a_readable_note_still_answers_the_first_answer(
    alice: str, stream: StreamReader
) -> None:
    headers = {"Idempotency-Key": "still-readable"}
    body = {"content": "The printer is on floor 2."}
    first = call("POST", "/v1/tools/remember", body, alice, headers=headers)

    again = call("POST", "/v1/tools/remember", body, alice, headers=headers)

    assert (again.status, again.body) == (201, first.body)
    assert again.headers.get("Idempotent-Replayed") == "true"


def test_restore_replay_after_redact_never_answers_the_forgotten_content(
    alice: str, stream: StreamReader
) -> None:
    note = _created(alice, stream, "The safe key is under the mat.")
    assert forget(alice, note["note_id"], "soft").status == 200
    headers = {"Idempotency-Key": "restore-1"}
    path = f"/v1/notes/{note['note_id']}/restore"
    assert call("POST", path, None, alice, headers=headers).status == 200
    assert forget(alice, note["note_id"], "redact").status == 200

    again = call("POST", path, None, alice, headers=headers)

    error_body(404, "memory_unavailable", again)
    assert "under the mat" not in again.text


def test_remember_key_collision_is_409_not_retryable_with_a_clear_message(
    alice: str, stream: StreamReader
) -> None:
    _created(alice, stream, "Tenant standup is at 9.", semantic_key="standup", scope="tenant")
    private = _created(alice, stream, "My standup is at 10.", semantic_key="standup")

    reply = remember(alice, "My standup is at 10.", memory_id=private["note_id"], scope="tenant")

    assert reply.status == 409
    error = reply.body["error"]
    assert (error["code"], error["retryable"], error["details"]["field"]) == (
        "memory_conflict",
        False,
        "semantic_key",
    )
    assert "retry" not in error["message"].lower()


@pytest.mark.parametrize("key", ["", "  "])
def test_remember_blank_semantic_key_is_refused_naming_the_field(
    alice: str, stream: StreamReader, key: str
) -> None:
    reply = remember(alice, "A keyed fact.", semantic_key=key)

    fields = error_body(400, "memory_invalid_request", reply)["details"]["fields"]
    assert [problem["field"] for problem in fields] == ["semantic_key"]
    assert found(alice, "keyed fact") == []


def test_search_memory_and_recall_as_of_answer_the_version_then_over_http(
    alice: str, stream: StreamReader
) -> None:
    first = _created(alice, stream, "The release train leaves on mondays.", semantic_key="train.day")
    time.sleep(0.01)
    moment = datetime.now(UTC).isoformat()
    time.sleep(0.01)
    _created(alice, stream, "The release train leaves on fridays.", semantic_key="train.day")
    pin = call("POST", "/v1/tools/pin_memory", {"note_id": first["note_id"]}, alice)
    assert pin.status in (200, 201), pin.text

    then = search_memory(alice, "release train", as_of=moment)
    pack = call("POST", "/v1/tools/recall_context", {"as_of": moment}, alice)
    naive = search_memory(alice, "release train", as_of="2026-01-01T00:00:00")
    future = call("POST", "/v1/tools/recall_context", {"as_of": "2999-01-01T00:00:00Z"}, alice)
    number = search_memory(alice, "release train", as_of=1_700_000_000)

    assert then.status == 200, then.text
    assert [(hit["content"], hit["version"]) for hit in then.body["results"]] == [
        ("The release train leaves on mondays.", 1)
    ]
    assert then.body["as_of"] == moment.replace("+00:00", "Z")
    assert pack.status == 200, pack.text
    assert [(item["version"], item["pinned"]) for item in pack.body["items"]] == [(1, False)]
    assert error_body(400, "as_of_invalid", naive)["details"]["as_of"] == "2026-01-01T00:00:00"
    assert "now" in error_body(400, "as_of_invalid", future)["details"]
    error_body(400, "validation_error", number)


def test_list_notes_gives_visible_notes_under_a_path_most_important_first(
    world: SearchWorld, alice: str, stream: StreamReader
) -> None:
    _created(alice, stream, "Runbooks live in the ops wiki.", path="/ops/wiki", importance=0.2)
    _created(alice, stream, "The pager rotation changes on Monday.", path="/ops/pager", importance=0.9)
    _created(alice, stream, "Alice prefers tea.", path="/personal", memory_type="preference")
    bob = memory_token(world, "bob", scopes=SHARING)
    _created(bob, stream, "Bob's private ops note.", path="/ops/bob")

    under_ops = call("GET", "/v1/notes", None, alice, query={"path_prefix": "/ops"})
    preferences = call("GET", "/v1/notes", None, alice, query={"memory_type": "preference"})
    one = call("GET", "/v1/notes", None, alice, query={"limit": "1"})

    assert under_ops.status == 200
    assert under_ops.body["type"] == "notes"
    assert [note["content"] for note in under_ops.body["notes"]] == [
        "The pager rotation changes on Monday.",
        "Runbooks live in the ops wiki.",
    ]
    assert [note["content"] for note in preferences.body["notes"]] == ["Alice prefers tea."]
    assert len(one.body["notes"]) == 1


@pytest.mark.parametrize(
    ("query", "code"),
    [
        ({"limit": "0"}, "memory_invalid_request"),
        ({"limit": "201"}, "memory_invalid_request"),
        ({"memory_type": "gossip"}, "validation_error"),
        ({"scope": "everyone"}, "validation_error"),
        ({"limit": "two"}, "validation_error"),
    ],
)
def test_list_notes_bad_parameter_is_400(alice: str, query: dict[str, str], code: str) -> None:
    reply = call("GET", "/v1/notes", None, alice, query=query)

    assert reply.status == 400
    assert reply.body["error"]["code"] == code


def test_list_notes_without_memory_read_is_403(world: SearchWorld) -> None:
    writer = memory_token(world, "writer", scopes=["memory:write"])

    reply = call("GET", "/v1/notes", None, writer)

    assert reply.status == 403
    assert reply.body["error"]["code"] == "insufficient_scope"


@pytest.mark.parametrize("mode", ["soft", "redact", "hard"])
def test_forget_dry_run_over_rest_changes_nothing_and_its_receipt_is_the_real_calls(
    world: SearchWorld, alice: str, stream: StreamReader, mode: str
) -> None:
    note = _created(alice, stream, "The dry run fact about herons.", semantic_key="herons")
    _created(alice, stream, "The dry run fact about herons, second version.", semantic_key="herons")
    container: Any = world.container
    versions = world.store.list_note_versions("acme", note["note_id"], limit=10, next_token=None).entries
    indexed = container.note_index.document_ids("acme"), container.note_history_index.document_ids("acme")

    preview = call(
        "POST", "/v1/tools/forget_memory", {"note_id": note["note_id"], "mode": mode, "dry_run": True}, alice
    )
    drain(stream)
    assert (preview.status, preview.body["dry_run"], preview.body["receipt"]["dry_run"]) == (200, True, True)
    assert (
        world.store.list_note_versions("acme", note["note_id"], limit=10, next_token=None).entries == versions
    )
    assert (
        container.note_index.document_ids("acme"),
        container.note_history_index.document_ids("acme"),
    ) == indexed
    assert found(alice, "herons") != []

    real = forget(alice, note["note_id"], mode)
    drain(stream)

    assert (real.status, real.body["dry_run"]) == (200, False)
    stores = ("table", "index", "pins", "embedding_cache", "queued_messages")
    assert {store: real.body["receipt"][store] for store in stores} == {
        store: preview.body["receipt"][store] for store in stores
    }
    gone = {entry["kind"]: set(entry["ids"]) for entry in real.body["receipt"]["index"]}
    assert indexed[0] - container.note_index.document_ids("acme") == gone.get("note", set())
    assert indexed[1] - container.note_history_index.document_ids("acme") == gone.get("note_history", set())
    assert found(alice, "herons") == []


@pytest.mark.parametrize(
    "flags",
    [{"dry_run": "yes"}, {"dry_run": None, "mode": "hard"}, {"mode": None}],
    ids=["dry-run-yes", "dry-run-null", "mode-null"],
)
def test_forget_flags_that_are_not_what_they_should_be_are_refused(
    alice: str, stream: StreamReader, flags: dict[str, object]
) -> None:
    note = _created(alice, stream, "A fact that a bad dry run keeps.")

    reply = call("POST", "/v1/tools/forget_memory", {"note_id": note["note_id"], **flags}, alice)

    field = next(name for name in ("dry_run", "mode") if name in flags and flags[name] in ("yes", None))
    assert error_body(400, "validation_error", reply)["details"]["fields"][0]["field"] == field
    assert found(alice, "bad dry run") == ["A fact that a bad dry run keeps."]
