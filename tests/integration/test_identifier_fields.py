"""Identifier fields refuse control, bidirectional and invisible characters with a 400 naming the
field, on every REST route that takes one (bodies and query strings), through the authorizer and
the real handlers on moto. MCP: ``test_mcp``; the validator itself: ``tests/unit/test_identifiers``."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.support.admin import admin_event, invoke_admin
from tests.support.memory import SHARING, call, memory_token
from tests.support.rest import Reply, SearchWorld, error_body, moto_world

ADMIN_SCOPES = ("knowledge:read", "knowledge:write", "knowledge:admin", "memory:read", "memory:write")
NOTE_ID = "nt_01J9Z3K4QW5E6R7T8Y9V0A1B2C"
REVISION_ID = "kr_01J9Z3K4QW5E6R7T8Y9V0A1B2C"
ONE_OF_EACH_CLASS = [
    pytest.param("\x1b[31m", "a control character (U+001B at character 6)", id="escape"),
    pytest.param("\u202e", "a bidirectional control (U+202E at character 6)", id="right-to-left-override"),
    pytest.param("\u200b", "an invisible or format character (U+200B at character 6)", id="zero-width-space"),
]
"""A suffix of each class after ``alice`` (five characters), and the problem it answers."""
EVERY_CHARACTER = [
    pytest.param("\x00", id="NUL"),
    pytest.param("\x1b", id="ESC"),
    pytest.param("\x7f", id="DEL"),
    pytest.param("\x85", id="C1-NEL"),
    pytest.param("\x9b", id="C1-CSI"),
    pytest.param("\u2028", id="line-separator"),
    pytest.param("\u2029", id="paragraph-separator"),
    pytest.param("\u202a", id="LRE"),
    pytest.param("\u202d", id="LRO"),
    pytest.param("\u202e", id="RLO"),
    pytest.param("\u2066", id="LRI"),
    pytest.param("\u2069", id="PDI"),
    pytest.param("\u200e", id="LRM"),
    pytest.param("\u200f", id="RLM"),
    pytest.param("\u061c", id="ALM"),
    pytest.param("\u200b", id="ZWSP"),
    pytest.param("\u200c", id="ZWNJ"),
    pytest.param("\u200d", id="ZWJ"),
    pytest.param("\u2060", id="word-joiner"),
    pytest.param("\ufeff", id="BOM"),
    pytest.param("\u00ad", id="soft-hyphen"),
    pytest.param("\U000e0041", id="tag-A"),
    pytest.param("\ufe0f", id="variation-selector"),
    pytest.param("\u3164", id="hangul-filler"),
]


@pytest.fixture(scope="module")
def world() -> Iterator[SearchWorld]:
    """One moto table for the module: every request here is refused before it writes."""
    with moto_world() as built:
        yield built


@pytest.fixture(scope="module")
def token(world: SearchWorld) -> str:
    return world.token(subject_id="curator", scopes=ADMIN_SCOPES, team_ids=["red"])


@pytest.fixture(scope="module")
def base_id(token: str) -> str:
    reply = _admin(token, "POST", "/v1/knowledge-bases", {"name": "Ops", "scope": "tenant"})
    assert reply.status == 201, reply.text
    return str(reply.body["knowledge_base_id"])


@pytest.fixture(scope="module")
def item_id(token: str, base_id: str) -> str:
    body = {"title": "Runbook", "content": "Roll out with the blue green switch."}
    reply = _admin(token, "POST", f"/v1/knowledge-bases/{base_id}/items", body)
    assert reply.status == 201, reply.text
    return str(reply.body["knowledge_item_id"])


def _admin(token: str, method: str, path: str, body: Any = None, **query: Any) -> Reply:
    return invoke_admin(admin_event(method, path, body=body, authorization=token, query=query))


Send = Callable[[str, str], Reply]
"""``send(token, value)``: one request carrying ``value`` in the field under test."""


def _request(request: pytest.FixtureRequest, case: str) -> tuple[Send, str]:
    """The request of ``case`` and the field name its 400 must carry."""
    base = lambda: request.getfixturevalue("base_id")  # noqa: E731 - created only when a case needs it
    item = lambda: request.getfixturevalue("item_id")  # noqa: E731
    memory = "/v1/tools/"
    cases: dict[str, tuple[Send, str]] = {
        "token.subject_id": (
            lambda t, v: _admin(t, "POST", "/v1/tokens", {"subject_id": v, "scopes": ["knowledge:read"]}),
            "subject_id",
        ),
        "token.team_ids": (
            lambda t, v: _admin(
                t,
                "POST",
                "/v1/tokens",
                {"subject_id": "bob", "team_ids": ["red", v], "scopes": ["knowledge:read"]},
            ),
            "team_ids.1",
        ),
        "token.tenant_id": (
            lambda t, v: _admin(
                t, "POST", "/v1/tokens", {"tenant_id": v, "subject_id": "bob", "scopes": ["knowledge:read"]}
            ),
            "tenant_id",
        ),
        "base.team_id": (
            lambda t, v: _admin(
                t, "POST", "/v1/knowledge-bases", {"name": "Red", "scope": "team", "team_id": v}
            ),
            "team_id",
        ),
        "item.external_id": (
            lambda t, v: _admin(
                t,
                "POST",
                f"/v1/knowledge-bases/{base()}/items",
                {"title": "T", "content": "C", "external_id": v},
            ),
            "external_id",
        ),
        "publish.revision_id": (
            lambda t, v: _admin(
                t, "POST", f"/v1/knowledge-items/{item()}/publish", {"revision_id": v, "expected_version": 1}
            ),
            "revision_id",
        ),
        "query.external_id": (
            lambda t, v: _admin(t, "GET", f"/v1/knowledge-bases/{base()}/items", external_id=v),
            "query.external_id",
        ),
        "query.tenant_id": (lambda t, v: _admin(t, "GET", "/v1/tokens", tenant_id=v), "query.tenant_id"),
        "remember.team_id": (
            lambda t, v: call(
                "POST", memory + "remember", {"content": "A.", "scope": "team", "team_id": v}, t
            ),
            "team_id",
        ),
        "remember.path": (
            lambda t, v: call("POST", memory + "remember", {"content": "A.", "path": "/ops" + v}, t),
            "path",
        ),
        "search_memory.path_prefix": (
            lambda t, v: call("POST", memory + "search_memory", {"query": "a", "path_prefix": "/ops" + v}, t),
            "path_prefix",
        ),
        "base.name": (
            lambda t, v: _admin(t, "POST", "/v1/knowledge-bases", {"name": "Red" + v, "scope": "tenant"}),
            "name",
        ),
        "remember.agent_id": (
            lambda t, v: call("POST", memory + "remember", {"content": "A.", "agent_id": v}, t),
            "agent_id",
        ),
        "remember.semantic_key": (
            lambda t, v: call("POST", memory + "remember", {"content": "A.", "semantic_key": v}, t),
            "semantic_key",
        ),
        "remember.memory_id": (
            lambda t, v: call("POST", memory + "remember", {"content": "A.", "memory_id": v}, t),
            "memory_id",
        ),
        "remember.supersedes": (
            lambda t, v: call("POST", memory + "remember", {"content": "A.", "supersedes": [NOTE_ID, v]}, t),
            "supersedes.1",
        ),
        "search_memory.team_id": (
            lambda t, v: call("POST", memory + "search_memory", {"query": "a", "team_id": v}, t),
            "team_id",
        ),
        "search_memory.agent_id": (
            lambda t, v: call("POST", memory + "search_memory", {"query": "a", "agent_id": v}, t),
            "agent_id",
        ),
        "recall_context.team_id": (
            lambda t, v: call("POST", memory + "recall_context", {"team_id": v}, t),
            "team_id",
        ),
        "recall_context.agent_id": (
            lambda t, v: call("POST", memory + "recall_context", {"agent_id": v}, t),
            "agent_id",
        ),
        "pin_memory.note_id": (
            lambda t, v: call("POST", memory + "pin_memory", {"note_id": v}, t),
            "note_id",
        ),
        "unpin_memory.note_id": (
            lambda t, v: call("POST", memory + "unpin_memory", {"note_id": v}, t),
            "note_id",
        ),
        "forget_memory.note_id": (
            lambda t, v: call("POST", memory + "forget_memory", {"note_id": v, "mode": "hard"}, t),
            "note_id",
        ),
    }
    return cases[case]


CASES = [
    "token.subject_id",
    "token.team_ids",
    "token.tenant_id",
    "base.team_id",
    "item.external_id",
    "publish.revision_id",
    "query.external_id",
    "query.tenant_id",
    "remember.team_id",
    "remember.agent_id",
    "remember.semantic_key",
    "remember.memory_id",
    "remember.supersedes",
    "search_memory.team_id",
    "search_memory.agent_id",
    "recall_context.team_id",
    "recall_context.agent_id",
    "pin_memory.note_id",
    "unpin_memory.note_id",
    "forget_memory.note_id",
]


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize(("suffix", "problem"), ONE_OF_EACH_CLASS)
def test_identifier_with_a_refused_character_answers_400_naming_the_field(
    request: pytest.FixtureRequest, token: str, case: str, suffix: str, problem: str
) -> None:
    send, field = _request(request, case)

    reply = send(token, f"alice{suffix}")

    error = error_body(400, "validation_error", reply)
    assert error["details"]["fields"] == [
        {"field": field, "problem": f"Value error, must not contain {problem}"}
    ]
    assert suffix not in reply.text  # the value is never echoed


@pytest.mark.parametrize("character", EVERY_CHARACTER)
def test_minting_a_subject_with_any_refused_character_answers_400(token: str, character: str) -> None:
    reply = _admin(
        token, "POST", "/v1/tokens", {"subject_id": f"alice{character}", "scopes": ["knowledge:read"]}
    )

    error = error_body(400, "validation_error", reply)
    assert [problem["field"] for problem in error["details"]["fields"]] == ["subject_id"]
    assert f"U+{ord(character):04X} at character 6" in error["details"]["fields"][0]["problem"]


def test_a_subject_that_looks_like_another_is_refused_and_the_visible_one_is_minted(token: str) -> None:
    # alice\u200b shows as "alice": only the visible spelling may be minted
    lookalike = _admin(
        token, "POST", "/v1/tokens", {"subject_id": "alice\u200b", "scopes": ["knowledge:read"]}
    )
    visible = _admin(token, "POST", "/v1/tokens", {"subject_id": "alice", "scopes": ["knowledge:read"]})

    error_body(400, "validation_error", lookalike)
    assert visible.status == 201, visible.text
    assert visible.body["subject_id"] == "alice"


@pytest.mark.parametrize(
    "value", ["Alice Smith", "équipe-rouge", "チーム", "team/red.v2", "👩🏽", "عربي"], ids=str
)
def test_identifiers_of_visible_characters_are_accepted(world: SearchWorld, token: str, value: str) -> None:
    minted = _admin(
        token, "POST", "/v1/tokens", {"subject_id": value, "team_ids": [value], "scopes": ["memory:write"]}
    )
    assert minted.status == 201, minted.text
    writer = memory_token(world, value, team_ids=[value], scopes=SHARING)

    remembered = call(
        "POST",
        "/v1/tools/remember",
        {"content": "A fact.", "scope": "team", "team_id": value, "agent_id": value},
        writer,
    )

    assert remembered.status == 201, remembered.text
    assert (remembered.body["note"]["team_id"], remembered.body["note"]["agent_id"]) == (value, value)
