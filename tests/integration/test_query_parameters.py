"""Query parameters parse as strictly as JSON bodies: every route's ``limit`` accepts only
canonical decimal digits, and the boolean ones (``dry_run`` of the purges, ``include_superseded``)
only ``true`` or ``false``; the ``dry_run`` of a delete's body only a JSON boolean. Through the
authorizer and the real handlers on moto."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from knowledge.api.query_parameters import (
    NOT_A_BOOLEAN_PROBLEM,
    NOT_CANONICAL_PROBLEM,
    require_canonical_boolean,
    require_canonical_integer,
)
from tests.support.admin import admin_event, invoke_admin
from tests.support.memory import call, remember
from tests.support.rest import Reply, SearchWorld, error_body, moto_world

ADMIN_SCOPES = ("knowledge:read", "knowledge:write", "knowledge:admin", "memory:read", "memory:write")
NOT_CANONICAL = [
    pytest.param("1.0", id="decimal-point"),
    pytest.param("+5", id="sign"),
    pytest.param("-5", id="minus"),
    pytest.param("0005", id="leading-zeros"),
    pytest.param(" 5 ", id="spaces"),
    pytest.param("5 ", id="trailing-space"),
    pytest.param("5_0", id="underscore"),
    pytest.param("5e1", id="exponent"),
    pytest.param("0x10", id="hex"),
    pytest.param("\uff15", id="full-width-digit"),
    pytest.param("\u0665", id="arabic-indic-digit"),
    pytest.param("5\n", id="newline"),
    pytest.param("", id="empty"),
    pytest.param("5,6", id="given-twice"),
]


@pytest.fixture(scope="module")
def world() -> Iterator[SearchWorld]:
    """One moto table for the module: the tests only read what the fixtures wrote."""
    with moto_world() as built:
        yield built


@pytest.fixture(scope="module")
def token(world: SearchWorld) -> str:
    return world.token(subject_id="curator", scopes=ADMIN_SCOPES)


@pytest.fixture(scope="module")
def base_id(token: str) -> str:
    reply = invoke_admin(
        admin_event(
            "POST", "/v1/knowledge-bases", body={"name": "Ops", "scope": "tenant"}, authorization=token
        )
    )
    assert reply.status == 201, reply.text
    return str(reply.body["knowledge_base_id"])


@pytest.fixture(scope="module")
def item_id(token: str, base_id: str) -> str:
    body = {"title": "Runbook", "content": "Roll out with the blue green switch."}
    reply = invoke_admin(
        admin_event("POST", f"/v1/knowledge-bases/{base_id}/items", body=body, authorization=token)
    )
    assert reply.status == 201, reply.text
    return str(reply.body["knowledge_item_id"])


@pytest.fixture(scope="module")
def note_id(token: str) -> str:
    reply = remember(token, "The staging cluster is called kestrel.")
    assert reply.status == 201, reply.text
    return str(reply.body["note"]["note_id"])


def _admin_get(token: str, path: str, limit: str) -> Reply:
    return invoke_admin(admin_event("GET", path, authorization=token, query={"limit": limit}))


@pytest.fixture(params=["bases", "items", "revisions", "tokens", "note-versions", "pins"])
def listing(request: pytest.FixtureRequest, token: str) -> Any:
    """``get(limit)`` on one of the routes taking ``?limit=``, and its invalid-request code."""
    kind = request.param
    if kind == "bases":
        return lambda limit: _admin_get(token, "/v1/knowledge-bases", limit), "knowledge_invalid_request"
    if kind == "items":
        path = f"/v1/knowledge-bases/{request.getfixturevalue('base_id')}/items"
        return lambda limit: _admin_get(token, path, limit), "knowledge_invalid_request"
    if kind == "revisions":
        path = f"/v1/knowledge-items/{request.getfixturevalue('item_id')}/revisions"
        return lambda limit: _admin_get(token, path, limit), "knowledge_invalid_request"
    if kind == "tokens":
        return lambda limit: _admin_get(token, "/v1/tokens", limit), "knowledge_invalid_request"
    if kind == "note-versions":
        path = f"/v1/notes/{request.getfixturevalue('note_id')}/versions"
        return lambda limit: call("GET", path, None, token, query={"limit": limit}), "memory_invalid_request"
    return lambda limit: call(
        "GET", "/v1/pins", None, token, query={"limit": limit}
    ), "memory_invalid_request"


@pytest.mark.parametrize("limit", NOT_CANONICAL)
def test_listing_limit_not_in_canonical_digits_answers_validation_error_naming_it(
    listing: Any, limit: str
) -> None:
    get, _ = listing

    error = error_body(400, "validation_error", get(limit))

    assert error["details"]["fields"] == [
        {"field": "query.limit", "problem": f"Value error, {NOT_CANONICAL_PROBLEM}"}
    ]


@pytest.mark.parametrize("limit", ["1", "10", "100"])
def test_listing_limit_in_canonical_digits_is_answered(listing: Any, limit: str) -> None:
    get, _ = listing

    reply = get(limit)

    assert reply.status == 200, reply.text


@pytest.mark.parametrize("limit", ["0", "1000000000000000000000000"])
def test_listing_limit_canonical_but_out_of_bounds_answers_invalid_request(listing: Any, limit: str) -> None:
    get, invalid_request = listing

    error = error_body(400, invalid_request, get(limit))

    assert [problem["field"] for problem in error["details"]["fields"]] == ["query.limit"]


@pytest.mark.parametrize(
    ("value", "canonical"),
    [("0", True), ("7", True), ("120", True), ("07", False), ("1.0", False), ("", False), ("+1", False)],
)
def test_require_canonical_integer_accepts_only_plain_digits(value: str, canonical: bool) -> None:
    if canonical:
        assert require_canonical_integer(value) == value
    else:
        with pytest.raises(ValueError, match="plain decimal digits"):
            require_canonical_integer(value)


NOT_BOOLEAN = ["off", "on", "yes", "no", "1", "0", "True", "FALSE", "", "true,false"]


@pytest.fixture(params=["purge-item", "purge-base", "note-list"])
def flagged(request: pytest.FixtureRequest, token: str) -> Any:
    """``send(value)`` on a route with a boolean query parameter, and that parameter's name."""
    kind = request.param
    if kind == "note-list":
        return lambda value: call(
            "GET", "/v1/notes", None, token, query={"include_superseded": value}
        ), "include_superseded"
    if kind == "purge-item":
        path = f"/v1/knowledge-items/{request.getfixturevalue('item_id')}"
    else:
        path = f"/v1/knowledge-bases/{request.getfixturevalue('base_id')}"
    return lambda value: invoke_admin(
        admin_event("DELETE", path, authorization=token, query={"dry_run": value, "expected_version": "1"})
    ), "dry_run"


@pytest.mark.parametrize("value", NOT_BOOLEAN)
def test_a_boolean_query_parameter_other_than_true_or_false_answers_validation_error(
    flagged: Any, value: str, token: str, item_id: str
) -> None:
    send, name = flagged

    error = error_body(400, "validation_error", send(value))

    assert error["details"]["fields"] == [
        {"field": f"query.{name}", "problem": f"Value error, {NOT_A_BOOLEAN_PROBLEM}"}
    ]
    still = invoke_admin(admin_event("GET", f"/v1/knowledge-items/{item_id}", authorization=token))
    assert still.status == 200, still.text


def test_a_boolean_query_parameter_of_true_is_answered(flagged: Any, token: str, item_id: str) -> None:
    send, name = flagged

    reply = send("true")

    assert reply.status == 200, reply.text
    if name == "dry_run":
        assert reply.body["dry_run"] is True
    still = invoke_admin(admin_event("GET", f"/v1/knowledge-items/{item_id}", authorization=token))
    assert still.status == 200, still.text


@pytest.mark.parametrize("value", ["yes", "off", 1, 0, "true", None])
def test_a_deletes_body_dry_run_must_be_a_json_boolean(value: Any, token: str, item_id: str) -> None:
    path = f"/v1/knowledge-items/{item_id}/archive"
    body = {"expected_version": 1, "dry_run": value}

    error = error_body(
        400, "validation_error", invoke_admin(admin_event("POST", path, body=body, authorization=token))
    )

    assert [problem["field"] for problem in error["details"]["fields"]] == ["dry_run"]


@pytest.mark.parametrize(
    ("value", "boolean"), [("true", True), ("false", True), ("yes", False), ("1", False), ("off", False)]
)
def test_require_canonical_boolean_accepts_only_true_and_false(value: str, boolean: bool) -> None:
    if boolean:
        assert require_canonical_boolean(value) == value
    else:
        with pytest.raises(ValueError, match="true or false"):
            require_canonical_boolean(value)
