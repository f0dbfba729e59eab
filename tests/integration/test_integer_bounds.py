"""Every integer a REST boundary takes is bounded (docs/reliability.md): a number out of its bound
answers 400 in the surface's invalid-request code naming the field and the bound, a value that is
not an integer (``true``, ``1.5``, ``1e400``) answers 400 ``validation_error``, and none is a 500.
10^38 is the first integer DynamoDB cannot hold (38 digits); it used to reach the store."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from knowledge.bootstrap import use_container
from knowledge.domain.bounds import VERSION_MAX
from tests.support.admin import AdminClient
from tests.support.memory import call, memory_token
from tests.support.rest import Reply, SearchWorld, error_body, new_world

HUGE = 10**38
NOT_INTEGERS = ["true", "1.5", "1e400"]
"""JSON number texts (and ``true``) that are no integer: each is a ``validation_error``."""


@pytest.fixture
def world(table: Any) -> Iterator[SearchWorld]:
    built = new_world()
    yield built
    use_container(None)


@pytest.fixture
def admin(world: SearchWorld) -> AdminClient:
    return AdminClient(
        world.token("acme", "curator-1", scopes=("knowledge:admin", "knowledge:read", "knowledge:write"))
    )


@pytest.fixture
def base_path(admin: AdminClient) -> str:
    base = admin.ok("POST", "/v1/knowledge-bases", {"name": "Ops", "scope": "tenant"}, status=201)
    return f"/v1/knowledge-bases/{base['knowledge_base_id']}"


@pytest.fixture
def alice(world: SearchWorld) -> str:
    return memory_token(world, "alice")


def _out_of_bounds(reply: Reply, code: str, field: str) -> str:
    """The problem text of ``field`` in a 400 ``code`` answer, which must name only that field."""
    fields = error_body(400, code, reply)["details"]["fields"]
    assert [problem["field"] for problem in fields] == [field], reply.text
    return str(fields[0]["problem"])


def _raw(field: str, number: str, **others: Any) -> str:
    """A JSON object text with ``field`` set to the literal ``number`` (``1e400`` has no Python value)."""
    rest = json.dumps(others)[1:] if others else "}"
    return f'{{"{field}": {number}' + (", " + rest if others else rest)


# -- search_knowledge ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value", "bound"),
    [
        ("offset", HUGE, "9007199254740991"),
        ("offset", -1, "9007199254740991"),
        ("limit_chars", HUGE, "10000"),
        ("limit_chars", 0, "10000"),
        ("max_results", HUGE, "50"),
        ("max_results", -1, "50"),
    ],
)
def test_search_knowledge_integer_out_of_bounds_is_invalid_request_naming_the_bound(
    world: SearchWorld, field: str, value: int, bound: str
) -> None:
    reply = world.call({"knowledge_item_id": "ki_01M8MSRAQ70QQ1SJHWP0AMCDPZ", field: value}, world.token())

    assert bound in _out_of_bounds(reply, "knowledge_invalid_request", field)


@pytest.mark.parametrize("number", NOT_INTEGERS)
@pytest.mark.parametrize("field", ["offset", "limit_chars", "max_results"])
def test_search_knowledge_integer_field_given_no_integer_is_validation_error(
    world: SearchWorld, field: str, number: str
) -> None:
    reply = world.call(_raw(field, number, knowledge_item_id="ki_01M8MSRAQ70QQ1SJHWP0AMCDPZ"), world.token())

    _out_of_bounds(reply, "validation_error", field)


# -- the write API ---------------------------------------------------------------------------------


@pytest.mark.parametrize("version", [HUGE, VERSION_MAX + 1, 0, -1])
def test_update_base_expected_version_out_of_bounds_is_invalid_request_naming_the_bound(
    admin: AdminClient, base_path: str, version: int
) -> None:
    reply = admin.call("PATCH", base_path, {"name": "Renamed", "expected_version": version})

    problem = _out_of_bounds(reply, "knowledge_invalid_request", "expected_version")
    assert str(VERSION_MAX if version > 0 else 1) in problem
    assert admin.ok("GET", "/v1/knowledge-bases")["knowledge_bases"][0]["name"] == "Ops"


def test_update_base_expected_version_at_the_bound_is_a_conflict(admin: AdminClient, base_path: str) -> None:
    reply = admin.call("PATCH", base_path, {"name": "Renamed", "expected_version": VERSION_MAX})

    assert error_body(409, "knowledge_conflict", reply)["details"] == {"current_version": 1}


@pytest.mark.parametrize("number", NOT_INTEGERS)
def test_update_base_expected_version_given_no_integer_is_validation_error(
    admin: AdminClient, base_path: str, number: str
) -> None:
    _out_of_bounds(
        admin.call("PATCH", base_path, _raw("expected_version", number)),
        "validation_error",
        "expected_version",
    )


def test_archive_expected_version_out_of_bounds_is_invalid_request(
    admin: AdminClient, base_path: str
) -> None:
    item = admin.ok("POST", f"{base_path}/items", {"title": "T", "content": "Text."}, status=201)
    path = f"/v1/knowledge-items/{item['knowledge_item_id']}/archive"

    _out_of_bounds(
        admin.call("POST", path, {"expected_version": HUGE}), "knowledge_invalid_request", "expected_version"
    )


@pytest.mark.parametrize("expires_in", [0, HUGE])
def test_create_token_expires_in_out_of_bounds_is_invalid_request(
    admin: AdminClient, expires_in: int
) -> None:
    body = {"subject_id": "x", "scopes": ["knowledge:read"], "expires_in": expires_in}

    _out_of_bounds(admin.call("POST", "/v1/tokens", body), "knowledge_invalid_request", "expires_in")


@pytest.mark.parametrize(
    ("limit", "code"),
    [
        (str(HUGE), "knowledge_invalid_request"),
        ("0", "knowledge_invalid_request"),
        ("-1", "validation_error"),  # a query-string integer takes no sign
        *[(number, "validation_error") for number in NOT_INTEGERS],
    ],
)
def test_list_limit_query_parameter_bounds_and_types(admin: AdminClient, limit: str, code: str) -> None:
    reply = admin.call("GET", "/v1/knowledge-bases", limit=limit)

    problem = _out_of_bounds(reply, code, "query.limit")
    if code == "knowledge_invalid_request":
        assert ("100" if limit != "0" else "1") in problem


# -- the memory tools ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value"),
    [("expected_version", HUGE), ("expected_version", -1), ("ttl_seconds", HUGE), ("ttl_seconds", -1)],
)
def test_remember_integer_out_of_bounds_is_memory_invalid_request_naming_the_bound(
    alice: str, field: str, value: int
) -> None:
    body = {"content": "A fact.", "semantic_key": "fact", field: value}

    problem = _out_of_bounds(call("POST", "/v1/tools/remember", body, alice), "memory_invalid_request", field)
    assert "between 1 and" in problem


@pytest.mark.parametrize("number", NOT_INTEGERS)
@pytest.mark.parametrize("field", ["expected_version", "ttl_seconds"])
def test_remember_integer_field_given_no_integer_is_validation_error(
    alice: str, field: str, number: str
) -> None:
    body = _raw(field, number, content="A fact.", semantic_key="fact")

    _out_of_bounds(call("POST", "/v1/tools/remember", body, alice), "validation_error", field)


@pytest.mark.parametrize(
    ("limit", "code"), [(HUGE, "memory_invalid_request"), (-1, "memory_invalid_request")]
)
def test_search_memory_limit_out_of_bounds_is_memory_invalid_request(
    alice: str, limit: int, code: str
) -> None:
    reply = call("POST", "/v1/tools/search_memory", {"query": "fact", "limit": limit}, alice)

    assert "50" in _out_of_bounds(reply, code, "limit")


@pytest.mark.parametrize("number", NOT_INTEGERS)
def test_search_memory_limit_given_no_integer_is_validation_error(alice: str, number: str) -> None:
    reply = call("POST", "/v1/tools/search_memory", _raw("limit", number, query="fact"), alice)

    _out_of_bounds(reply, "validation_error", "limit")


@pytest.mark.parametrize(
    ("limit", "code"),
    [
        (str(HUGE), "memory_invalid_request"),
        ("0", "memory_invalid_request"),
        ("-1", "validation_error"),  # a query-string integer takes no sign
        ("1.5", "validation_error"),
        ("true", "validation_error"),
    ],
)
def test_note_versions_limit_query_parameter_bounds_and_types(alice: str, limit: str, code: str) -> None:
    path = "/v1/notes/nt_01M8MSRAQ70QQ1SJHWP0AMCDPZ/versions"

    _out_of_bounds(call("GET", path, None, alice, query={"limit": limit}), code, "query.limit")
