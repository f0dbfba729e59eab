"""recall_context and the pin tools wired end to end in process: the authorizer and the real
RecallContext, PinMemory and UnpinMemory handlers over moto DynamoDB, with the table's stream
drained into the real indexer handler."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import tiktoken

from knowledge.bootstrap import use_container
from tests.support.memory import (
    call,
    forget,
    memory_token,
    pin_memory,
    recall_context,
    remember,
    unpin_memory,
)
from tests.support.rest import SearchWorld, error_body, new_world
from tests.support.streams import StreamReader, drain

FACTS = [
    "The deploy pipeline runs the integration tests before every release.",
    "The staging database is refreshed from production every Sunday night.",
    "The billing service retries failed card payments three times over five days.",
    "Support tickets tagged P1 page the on-call engineer within five minutes.",
    "The mobile app's minimum supported iOS version is 16.",
]


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
    return memory_token(world, "alice", team_ids=["red"])


@pytest.fixture
def notes(alice: str, stream: StreamReader) -> list[str]:
    ids = []
    for fact in FACTS:
        reply = remember(alice, fact)
        assert reply.status == 201, reply.text
        ids.append(reply.body["note"]["note_id"])
    drain(stream)
    return ids


@pytest.mark.parametrize("budget", [64, 200, 1_200, 8_000])
def test_recall_context_over_rest_reports_the_tiktoken_count_of_its_text(
    alice: str, notes: list[str], budget: int
) -> None:
    reply = recall_context(alice, "release tests", max_tokens=budget, max_items=50)

    assert reply.status == 200, reply.text
    body = reply.body
    assert body["type"] == "memory_context"
    recount = len(tiktoken.get_encoding("cl100k_base").encode_ordinary(body["text"]))
    assert body["budget"] == {
        "max_tokens": budget,
        "used_tokens": recount,
        "tokenizer": "cl100k_base",
        "max_items": 50,
    }
    assert recount <= budget
    assert body["coverage"]["candidates"] == len(notes)
    assert body["coverage"]["included"] == len(body["items"])


def test_pin_over_rest_comes_first_then_unpin_takes_effect_on_the_next_call(
    alice: str, notes: list[str], stream: StreamReader
) -> None:
    created = pin_memory(alice, notes[4], reason="platform rule")
    again = pin_memory(alice, notes[4])
    pins = call("GET", "/v1/pins", None, alice)

    assert created.status == 201
    assert again.status == 200
    assert again.body == created.body
    assert set(created.body) == {
        *("type", "pin_id", "note_id", "reason", "order", "expires_at", "created_at", "indexed")
    }
    assert [pin["note_id"] for pin in pins.body["pins"]] == [notes[4]]
    first = recall_context(alice, "billing card payments").body["items"][0]
    assert (first["note_id"], first["pinned"]) == (notes[4], True)

    removed = unpin_memory(alice, notes[4])

    assert removed.body == {"type": "unpinned", "note_id": notes[4], "removed": True, "indexed": True}
    assert recall_context(alice, "billing card payments").body["items"][0]["note_id"] == notes[2]
    assert call("GET", "/v1/pins", None, alice).body == {"pins": [], "next_token": None}


def test_pin_is_invisible_to_a_caller_who_cannot_see_its_note(
    world: SearchWorld, alice: str, notes: list[str]
) -> None:
    mallory = memory_token(world, "mallory")
    pin_memory(alice, notes[0])

    absent = pin_memory(mallory, "nt_01J0000000000000000000000Z")
    hidden = pin_memory(mallory, notes[0])
    recalled = recall_context(mallory, "deploy pipeline release")

    assert hidden.text == absent.text
    error_body(404, "memory_unavailable", hidden)
    assert recalled.body["items"] == []
    assert recalled.body["text"] == ""
    assert call("GET", "/v1/pins", None, mallory).body["pins"] == []


def test_hard_forget_over_rest_removes_the_pin_from_recall_and_the_listing(
    alice: str, notes: list[str], stream: StreamReader
) -> None:
    pin_memory(alice, notes[1])

    assert forget(alice, notes[1], "hard").status == 200
    drain(stream)

    assert notes[1] not in [item["note_id"] for item in recall_context(alice).body["items"]]
    assert call("GET", "/v1/pins", None, alice).body["pins"] == []


def test_remember_with_pin_over_rest_answers_a_pinned_note(alice: str, stream: StreamReader) -> None:
    reply = remember(alice, "Always answer in French.", pin=True)

    assert reply.status == 201
    assert reply.body["note"]["pinned"] is True
    drain(stream)
    assert recall_context(alice, "unrelated").body["items"][0]["pinned"] is True


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/v1/tools/recall_context", {"max_tokens": 63}, "max_tokens"),
        ("/v1/tools/recall_context", {"max_items": 51}, "max_items"),
        ("/v1/tools/pin_memory", {"note_id": "nt_01J0000000000000000000000Z", "order": -1}, "order"),
    ],
)
def test_pin_and_recall_bounds_answer_memory_invalid_request(
    alice: str, path: str, body: dict[str, Any], field: str
) -> None:
    error = error_body(400, "memory_invalid_request", call("POST", path, body, alice))

    assert [problem["field"] for problem in error["details"]["fields"]] == [field]


def test_pin_tools_need_their_scopes(world: SearchWorld, notes: list[str]) -> None:
    reader = memory_token(world, "alice", scopes=("memory:read",))
    writer = memory_token(world, "alice", scopes=("memory:write",))

    error_body(403, "insufficient_scope", pin_memory(reader, notes[0]))
    error_body(403, "insufficient_scope", unpin_memory(reader, notes[0]))
    error_body(403, "insufficient_scope", recall_context(writer))
    error_body(403, "insufficient_scope", call("GET", "/v1/pins", None, writer))
    error_body(401, "authentication_required", call("POST", "/v1/tools/recall_context", {}, None))


def test_pin_replay_answers_the_first_pin_only_while_it_is_still_the_notes(
    alice: str, notes: list[str]
) -> None:
    key = {"Idempotency-Key": "pin-once"}
    first = call("POST", "/v1/tools/pin_memory", {"note_id": notes[0]}, alice, headers=key)
    replay = call("POST", "/v1/tools/pin_memory", {"note_id": notes[0]}, alice, headers=key)
    unpin_memory(alice, notes[0])

    gone = call("POST", "/v1/tools/pin_memory", {"note_id": notes[0]}, alice, headers=key)

    assert first.status == replay.status == 201
    assert replay.body == first.body
    error = error_body(409, "memory_conflict", gone)
    assert "pin again with a new key" in error["message"]
    assert call("GET", "/v1/pins", None, alice).body["pins"] == []
