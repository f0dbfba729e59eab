"""The shared REST set-up (``knowledge.api.http``): every failure answers the envelope of DESIGN §5."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_lambda_powertools.event_handler.api_gateway import Router
from pydantic import ValidationError

from knowledge.api.error_envelopes import error_envelope, from_validation_errors
from knowledge.api.http import build_resolver, parse_json_body
from knowledge.bootstrap import use_container
from knowledge.contract.writes import CreateItemRequest, CreateTokenRequest
from knowledge.errors import (
    ConflictError,
    ConversionError,
    DependencyUnavailableError,
    DocumentTooLargeError,
    MemoryInvalidRequestError,
    RateLimitedError,
    RequestValidationError,
)
from tests.conftest import TABLE_NAME
from tests.support.events import lambda_context, load_event, with_body

router = Router()


@router.post("/v1/things")
def _conflict() -> dict[str, Any]:
    raise ConflictError("The item changed since it was read.", current_version=7)


@router.get("/v1/things")
def _broken() -> dict[str, Any]:
    raise RuntimeError("secret internal detail in /var/task/handler.py")


@router.get("/v1/throttled")
def _throttled() -> dict[str, Any]:
    raise DependencyUnavailableError("The knowledge store is temporarily unavailable; retry later.")


@router.get("/v1/limited")
def _limited() -> dict[str, Any]:
    raise RateLimitedError("requests_per_second", limit=50, window_seconds=1, retry_after_seconds=1)


@router.get("/v1/things/<thing_id>")
def _thing(thing_id: str) -> dict[str, Any]:
    return {"thing_id": thing_id}


app = build_resolver(router)


@pytest.fixture(autouse=True)
def _settings(monkeypatch: pytest.MonkeyPatch) -> None:
    """The resolver reads the settings for the tenant quotas (off in the tests' environment)."""
    monkeypatch.setenv("TABLE_NAME", TABLE_NAME)
    use_container(None)


def _call(method: str, path: str, body: Any = None) -> tuple[int, dict[str, str], dict[str, Any]]:
    event = load_event(
        "search_knowledge_query", rawPath=path, requestContext={"http": {"method": method, "path": path}}
    )
    if body is not None:
        with_body(event, body)
    response = app.resolve(event, lambda_context())
    return response["statusCode"], response["headers"], json.loads(response["body"])


def test_error_envelope_conflict_maps_to_409_with_current_version() -> None:
    status, body = error_envelope(ConflictError("lost the race", current_version=4))

    assert status == 409
    assert body.model_dump(mode="json") == {
        "type": "error",
        "error": {
            "code": "knowledge_conflict",
            "message": "lost the race",
            "retryable": False,
            "details": {"current_version": 4},
        },
    }


@pytest.mark.parametrize(
    ("error", "status", "code"),
    [
        (ConversionError("an encrypted PDF that needs a password"), 422, "document_unreadable"),
        (DocumentTooLargeError("60,000,000 bytes, over the limit of 52,428,800"), 413, "document_too_large"),
    ],
)
def test_error_envelope_conversion_errors_carry_their_reason(
    error: ConversionError, status: int, code: str
) -> None:
    answered_status, body = error_envelope(error)
    assert answered_status == status
    assert body.error.code == code
    assert body.error.details == {"reason": error.reason}
    assert body.error.message == f"The document cannot be read: {error.reason}."
    assert body.error.retryable is False


def test_resolver_conflict_error_answers_409_envelope() -> None:
    status, headers, body = _call("POST", "/v1/things", {})

    assert status == 409
    assert headers["Content-Type"] == "application/json"
    assert body["error"]["code"] == "knowledge_conflict"
    assert body["error"]["details"] == {"current_version": 7}


def test_resolver_dependency_error_answers_503_retryable() -> None:
    status, _, body = _call("GET", "/v1/throttled")

    assert (status, body["error"]["code"], body["error"]["retryable"]) == (
        503,
        "dependency_unavailable",
        True,
    )


def test_resolver_unexpected_error_answers_500_without_internals() -> None:
    status, _, body = _call("GET", "/v1/things")

    assert status == 500
    assert body == {
        "type": "error",
        "error": {
            "code": "internal_error",
            "message": "An unexpected error occurred.",
            "retryable": True,
            "details": {},
        },
    }


def test_resolver_unknown_path_answers_404_not_found() -> None:
    status, _, body = _call("GET", "/v1/nothing-here")

    assert (status, body["type"], body["error"]["code"]) == (404, "error", "not_found")


def test_resolver_known_path_other_method_answers_405_with_allow() -> None:
    status, headers, body = _call("DELETE", "/v1/things")

    assert (status, body["error"]["code"]) == (405, "method_not_allowed")
    assert headers["Allow"] == "GET, POST"
    assert body["error"]["details"] == {"allowed_methods": ["GET", "POST"]}


def test_resolver_path_with_parameter_other_method_answers_405_with_allow() -> None:
    status, headers, body = _call("PATCH", "/v1/things/t-1")

    assert (status, body["error"]["code"]) == (405, "method_not_allowed")
    assert headers["Allow"] == "GET"


@pytest.mark.parametrize("path", ["/v1/things/t-1/parts", "/v1/things/", "/v1/thingsx"])
def test_resolver_path_a_parameter_cannot_span_answers_404_not_found(path: str) -> None:
    status, _, body = _call("PATCH", path)

    assert (status, body["error"]["code"]) == (404, "not_found")


def test_parse_json_body_over_limit_in_bytes_raises_validation_error() -> None:
    # 15 characters, but 21 bytes of UTF-8: the limit counts bytes.
    with pytest.raises(RequestValidationError) as raised:
        parse_json_body('{"a": "' + "é" * 6 + '"}', max_body_bytes=16)

    assert raised.value.details == {"max_body_bytes": 16, "body_bytes": 21}


@pytest.mark.parametrize(
    "text",
    ["[" * 100_000 + "]" * 100_000, "1" * 4_301, '{"a": 1', "NaN-ish", "\ufeff{}"],
    ids=["deep", "huge-integer", "truncated", "garbage", "bom"],
)
def test_parse_json_body_not_json_raises_validation_error_without_parser_text(text: str) -> None:
    with pytest.raises(RequestValidationError) as raised:
        parse_json_body(text)

    assert raised.value.message == "The request body is not valid JSON."
    assert raised.value.details == {"fields": [{"field": "body", "problem": "The body is not valid JSON."}]}
    assert raised.value.__suppress_context__ is True


@pytest.mark.parametrize("text", ["[]", '[{"a": 1}]', '"a"', "null", "42", "true"])
def test_parse_json_body_not_an_object_raises_validation_error(text: str) -> None:
    with pytest.raises(RequestValidationError) as raised:
        parse_json_body(text)

    assert raised.value.message == "The request body must be a JSON object."


def test_parse_json_body_at_limit_parses() -> None:
    assert parse_json_body('{"a": 1}', max_body_bytes=8) == {"a": 1}


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ({"title": "x" * 1_001, "content": "c"}, "String should have at most 1000 characters"),
        ({"title": "", "content": "c"}, "String should have at least 1 character"),
    ],
)
def test_from_validation_errors_string_length_is_told_in_characters(
    body: dict[str, str], problem: str
) -> None:
    with pytest.raises(ValidationError) as raised:
        CreateItemRequest.model_validate(body)

    error = from_validation_errors(raised.value.errors())

    assert error.details["fields"] == [{"field": "title", "problem": problem}]


def test_from_validation_errors_list_length_is_still_told_in_items() -> None:
    with pytest.raises(ValidationError) as raised:
        CreateTokenRequest.model_validate({"subject_id": "a", "scopes": []})

    [problem] = from_validation_errors(raised.value.errors()).details["fields"]

    assert "item" in problem["problem"]


BOUND = {
    "type": "less_than_equal",
    "loc": ("body", "expected_version"),
    "msg": "Input should be less than or equal to 9",
}
NOT_AN_INTEGER = {"type": "int_type", "loc": ("body", "limit"), "msg": "Input should be a valid integer"}


def test_from_validation_errors_bound_alone_is_the_surfaces_invalid_request_naming_the_bound() -> None:
    error = from_validation_errors([BOUND], MemoryInvalidRequestError)

    assert error.code == "memory_invalid_request"
    assert error.details == {
        "fields": [{"field": "expected_version", "problem": "Input should be less than or equal to 9"}]
    }


def test_from_validation_errors_bound_beside_a_wrong_type_is_validation_error() -> None:
    error = from_validation_errors([BOUND, NOT_AN_INTEGER])

    assert error.code == "validation_error"
    assert [problem["field"] for problem in error.details["fields"]] == ["expected_version", "limit"]


def test_resolver_rate_limited_answers_429_with_retry_after() -> None:
    status, headers, body = _call("GET", "/v1/limited")

    assert status == 429
    assert headers["Retry-After"] == "1"
    assert body["error"]["code"] == "rate_limited"
    assert body["error"]["retryable"] is True
    assert body["error"]["details"]["quota"] == "requests_per_second"
