"""Fuzzing ``POST /mcp`` with malformed JSON-RPC: bytes that are not JSON, random JSON values,
messages with wrong or missing ``jsonrpc``/``id``/``method``, unknown methods, tool calls with
random arguments, batches and bodies past the size limit. Sent in process through the gateway and
the authorizer to the real MCP function (``tests/support/fuzz_api``), with a valid token.

Whatever is sent, the answer is never a 5xx, and it is a JSON-RPC answer (``result`` or ``error``,
``id`` echoed or ``null``), an empty 202 (a notification or response the server accepts), or, for a
body past the limit, the service's error envelope. ``make fuzz`` raises the budget.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from werkzeug.test import Client

from knowledge.api.http import MAX_BODY_BYTES
from tests.support.fuzz_api import FuzzApi, check_answer, fuzz_api, report
from tests.support.fuzzing import budget

METHODS = (
    "initialize",
    "ping",
    "tools/list",
    "tools/call",
    "resources/list",
    "prompts/list",
    "completion/complete",
    "logging/setLevel",
    "notifications/initialized",
    "notifications/cancelled",
)
TOOLS = (
    "search_knowledge",
    "remember",
    "search_memory",
    "recall_context",
    "forget_memory",
    "pin_memory",
    "unpin_memory",
)


@pytest.fixture(scope="module")
def api(pytestconfig: pytest.Config) -> Iterator[FuzzApi]:
    with fuzz_api() as running:
        yield running
        report(pytestconfig, "MCP fuzz", running)


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=30),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=12,
)
ids = st.one_of(st.integers(), st.text(max_size=12), json_values)
ARGUMENT_NAMES = (
    *("query", "knowledge_item_id", "knowledge_revision_id", "offset", "limit_chars", "max_results"),
    *("mode", "alpha", "content", "note_id", "scope", "max_tokens", "limit", "path", "pin"),
)
tool_arguments = st.dictionaries(
    st.sampled_from(ARGUMENT_NAMES) | st.text(max_size=10), json_values, max_size=5
)
call_params = st.fixed_dictionaries(
    {"name": st.sampled_from(TOOLS) | st.text(max_size=20)},
    optional={"arguments": tool_arguments | json_values},
)
FIELD_VALUES = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=20)
"""Header values a client can send: visible ASCII and spaces (RFC 9110 §5.5), never a line break."""

messages = st.fixed_dictionaries(
    {},
    optional={
        "jsonrpc": st.sampled_from(["2.0", "1.0", "2", ""]) | json_values,
        "id": ids,
        "method": st.sampled_from(METHODS) | st.text(max_size=20) | json_values,
        "params": call_params | json_values,
        "result": json_values,
        "error": json_values,
    },
)
bodies = st.one_of(
    messages.map(json.dumps),
    json_values.map(json.dumps),
    st.lists(messages, min_size=1, max_size=3).map(json.dumps),
    st.binary(max_size=64),
    st.text(max_size=64),
)


def post(api: FuzzApi, body: bytes | str, headers: dict[str, str] | None = None) -> Any:
    client = Client(api.app)
    return client.post(
        "/mcp",
        data=body,
        headers={
            "Authorization": api.authorization,
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            **(headers or {}),
        },
    )


def check_mcp_answer(response: Any, sent: bytes | str) -> None:
    what = f"POST /mcp {sent[:200]!r}"
    status, text = response.status_code, response.get_data(as_text=True)
    assert status < 500, f"{what}: {status} {text[:500]}"
    if status == 202:
        assert text == "", what
        return
    if status == 413:
        check_answer(status, dict(response.headers), response.get_data(), what=what)
        return
    assert response.mimetype == "application/json", f"{what}: {status} {response.mimetype}"
    answer = json.loads(text)
    assert isinstance(answer, dict), what
    assert answer.get("jsonrpc") == "2.0", what
    assert "id" in answer, what
    assert ("result" in answer) != ("error" in answer), what
    if "error" in answer:
        assert isinstance(answer["error"]["code"], int), what
        assert isinstance(answer["error"]["message"], str), what
    try:
        request = json.loads(sent)
    except ValueError:
        request = None
    if isinstance(request, dict) and answer["id"] is not None:
        assert answer["id"] == request.get("id"), what


@settings(
    max_examples=budget(200, 3_000),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(body=bodies)
def test_mcp_fuzz_malformed_json_rpc_answers_json_rpc_below_500(api: FuzzApi, body: bytes | str) -> None:
    check_mcp_answer(post(api, body), body)


@settings(
    max_examples=budget(20, 300),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    size=st.integers(min_value=MAX_BODY_BYTES - 64, max_value=MAX_BODY_BYTES + 4_096),
    method=st.sampled_from(METHODS),
)
def test_mcp_fuzz_huge_params_answer_json_rpc_or_too_large(api: FuzzApi, size: int, method: str) -> None:
    envelope = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": {"query": ""}})
    body = envelope.replace('"query": ""', '"query": "' + "x" * max(0, size - len(envelope)) + '"')

    response = post(api, body)

    check_mcp_answer(response, body)
    assert (response.status_code == 413) is (len(body.encode()) > MAX_BODY_BYTES)


@settings(
    max_examples=budget(30, 300),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    protocol=st.none() | st.sampled_from(["2025-06-18", "2025-03-26", "1999-01-01"]) | FIELD_VALUES,
    accept=st.none() | st.sampled_from(["text/html", "*/*", "application/json"]) | FIELD_VALUES,
    body=messages.map(json.dumps),
)
def test_mcp_fuzz_odd_headers_answer_json_rpc_below_500(
    api: FuzzApi, protocol: str | None, accept: str | None, body: str
) -> None:
    headers = {}
    if protocol is not None:
        headers["MCP-Protocol-Version"] = protocol
    if accept is not None:
        headers["Accept"] = accept

    check_mcp_answer(post(api, body, headers), body)
