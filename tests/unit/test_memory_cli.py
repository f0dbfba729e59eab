"""The ``knowledge`` memory commands (``recall``, ``pin``, ``unpin``, ``pins``, ``remember --pin``)
against a fake API on httpx2's mock transport: what each sends, prints and exits with."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import Any

import httpx2
import pytest

from knowledge_local.cli import client as client_module
from knowledge_local.cli.client import ApiError
from knowledge_local.cli.commands.memory import recall_summary
from knowledge_local.cli.main import main

TOKEN = "kn_9hJN21qwElGcgOEz7bymLWFvhW4DhXqaUjLarof5ePM"
API = "http://api.test"
NOTE = "nt_01M8MSTVN5K0B8VGNB8TZTQEM9"
OTHER = "nt_01M8MSTVN5K0B8VGNB8TZTQEMA"
PIN = "pn_01M8MSTVN5K0B8VGNB8TZTQEM9"

Reply = tuple[int, dict[str, Any]]


class FakeApi:
    """Answers each ``(method, path)`` with the next of its queued replies; records every request."""

    def __init__(self) -> None:
        self.replies: dict[tuple[str, str], list[Reply]] = {}
        self.requests: list[httpx2.Request] = []

    def reply(self, method: str, path: str, status: int, body: dict[str, Any]) -> None:
        self.replies.setdefault((method, path), []).append((status, body))

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        queued = self.replies[request.method, request.url.path]
        status, body = queued.pop(0) if len(queued) > 1 else queued[0]
        return httpx2.Response(status, json=body)

    def bodies(self, path: str) -> list[dict[str, Any]]:
        return [json.loads(request.content) for request in self.requests if request.url.path == path]


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch) -> FakeApi:
    fake = FakeApi()
    real_client: Callable[..., httpx2.Client] = httpx2.Client
    monkeypatch.setattr(
        client_module.httpx2, "Client", functools.partial(real_client, transport=httpx2.MockTransport(fake))
    )
    return fake


def run(*arguments: str) -> int:
    try:
        return main([*arguments, "--api-url", API, "--token", TOKEN])
    except SystemExit as exited:
        return int(exited.code or 0)


def _context(text: str, items: list[dict[str, Any]], dropped: list[dict[str, str]], **budget: Any) -> dict:
    return {
        "type": "memory_context",
        "text": text,
        "items": items,
        "budget": {
            "max_tokens": 1200,
            "used_tokens": 0,
            "tokenizer": "cl100k_base",
            "max_items": 8,
            **budget,
        },
        "coverage": {"candidates": len(items) + len(dropped), "included": len(items), "dropped": dropped},
    }


def _item(note_id: str, *, pinned: bool, tokens: int) -> dict[str, Any]:
    return {
        "note_id": note_id,
        "version": 1,
        "path": "/ops",
        "memory_type": "fact",
        "pinned": pinned,
        "tokens": tokens,
        "score": None if pinned else 0.5,
    }


def _pin(note_id: str = NOTE, **fields: Any) -> dict[str, Any]:
    return {
        "type": "pin",
        "pin_id": PIN,
        "note_id": note_id,
        "reason": None,
        "order": 0,
        "expires_at": None,
        "created_at": "2026-06-01T09:00:00Z",
        **fields,
    }


PACK_TEXT = (
    "## /ops · fact · 2026-06-01 · pinned\nThe osprey cluster.\n\n## /ops · fact · 2026-06-01\nThe heron."
)


def test_recall_prints_the_text_on_stdout_and_one_summary_line_on_stderr(
    api: FakeApi, capsys: pytest.CaptureFixture[str]
) -> None:
    dropped = [
        {"note_id": f"nt_{n}", "reason": reason} for n, reason in enumerate(["budget", "duplicate", "budget"])
    ]
    items = [_item(NOTE, pinned=True, tokens=12), _item(OTHER, pinned=False, tokens=9)]
    api.reply("POST", "/v1/tools/recall_context", 200, _context(PACK_TEXT, items, dropped, used_tokens=23))

    status = run(
        "recall", "osprey cluster", "--max-tokens", "1200", "--path-prefix", "/ops", "--type", "fact"
    )

    out, err = capsys.readouterr()
    assert status == 0
    assert out == PACK_TEXT + "\n"
    assert err == (
        "2 notes (1 pinned) of 5 candidates, 23 of 1,200 tokens (cl100k_base); "
        "dropped: 2 budget, 1 duplicate\n"
    )
    assert api.bodies("/v1/tools/recall_context") == [
        {"query": "osprey cluster", "max_tokens": 1200, "path_prefix": "/ops", "memory_type": "fact"}
    ]


def test_recall_without_a_query_sends_only_what_was_given_and_an_empty_pack_prints_no_text(
    api: FakeApi, capsys: pytest.CaptureFixture[str]
) -> None:
    api.reply("POST", "/v1/tools/recall_context", 200, _context("", [], [], max_items=3))

    status = run("recall", "--max-items", "3", "--path", "/ops")

    out, err = capsys.readouterr()
    assert status == 0
    assert out == ""
    assert err == "0 notes of 0 candidates, 0 of 1,200 tokens (cl100k_base)\n"
    assert api.bodies("/v1/tools/recall_context") == [{"max_items": 3, "path_prefix": "/ops"}]


def test_recall_json_prints_the_answer(api: FakeApi, capsys: pytest.CaptureFixture[str]) -> None:
    answer = _context(PACK_TEXT, [_item(NOTE, pinned=True, tokens=12)], [], used_tokens=12)
    api.reply("POST", "/v1/tools/recall_context", 200, answer)

    assert run("recall", "q", "--json") == 0

    out, err = capsys.readouterr()
    assert json.loads(out) == answer
    assert err == ""


def test_recall_error_prints_code_message_and_details(
    api: FakeApi, capsys: pytest.CaptureFixture[str]
) -> None:
    api.reply(
        "POST",
        "/v1/tools/recall_context",
        400,
        {
            "type": "error",
            "error": {
                "code": "memory_invalid_request",
                "message": "A recall_context argument is out of bounds.",
                "retryable": False,
                "details": {"fields": [{"field": "max_tokens", "problem": "must be between 64 and 8000"}]},
            },
        },
    )

    status = run("recall", "--max-tokens", "10")

    assert status == 1
    assert capsys.readouterr().err == (
        "error: memory_invalid_request: A recall_context argument is out of bounds.\n"
        "  max_tokens: must be between 64 and 8000\n"
    )


def test_an_error_without_details_prints_code_and_message_only(
    api: FakeApi, capsys: pytest.CaptureFixture[str]
) -> None:
    error = {"code": "memory_unavailable", "message": "No such memory.", "retryable": False, "details": {}}
    api.reply("POST", "/v1/tools/unpin_memory", 404, {"type": "error", "error": error})

    assert run("unpin", NOTE) == 1
    assert capsys.readouterr().err == "error: memory_unavailable: No such memory.\n"


@pytest.mark.parametrize(("status", "said"), [(201, "pinned"), (200, "already pinned")])
def test_pin_says_whether_the_pin_is_new(
    api: FakeApi, capsys: pytest.CaptureFixture[str], status: int, said: str
) -> None:
    api.reply("POST", "/v1/tools/pin_memory", status, _pin(order=2, reason="always"))

    assert run("pin", NOTE, "--order", "2", "--reason", "always") == 0

    assert capsys.readouterr().out == f"{said}: {NOTE} (pin {PIN}, order 2, reason: always)\n"
    assert api.bodies("/v1/tools/pin_memory") == [{"note_id": NOTE, "order": 2, "reason": "always"}]


@pytest.mark.parametrize(
    ("removed", "said"), [(True, f"unpinned: {NOTE}\n"), (False, f"not pinned: {NOTE} (nothing removed)\n")]
)
def test_unpin_says_whether_a_pin_was_removed(
    api: FakeApi, capsys: pytest.CaptureFixture[str], removed: bool, said: str
) -> None:
    api.reply(
        "POST", "/v1/tools/unpin_memory", 200, {"type": "unpinned", "note_id": NOTE, "removed": removed}
    )

    assert run("unpin", NOTE) == 0
    assert capsys.readouterr().out == said


def test_pins_follows_next_token_and_prints_one_line_per_pin(
    api: FakeApi, capsys: pytest.CaptureFixture[str]
) -> None:
    api.reply("GET", "/v1/pins", 200, {"pins": [_pin(reason="the  cluster\nname")], "next_token": "page2"})
    api.reply("GET", "/v1/pins", 200, {"pins": [_pin(OTHER, order=3)], "next_token": None})

    assert run("pins") == 0

    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["order", "note", "pin", "pinned", "at", "expires", "reason"]
    assert lines[1].split() == ["0", NOTE, PIN, "2026-06-01T09:00:00Z", "-", "the", "cluster", "name"]
    assert lines[2].split() == ["3", OTHER, PIN, "2026-06-01T09:00:00Z", "-"]
    assert [request.url.params.get("next_token") for request in api.requests] == [None, "page2"]


def test_pins_json_holds_every_page_and_no_pins_says_so(
    api: FakeApi, capsys: pytest.CaptureFixture[str]
) -> None:
    api.reply("GET", "/v1/pins", 200, {"pins": [_pin()], "next_token": "page2"})
    api.reply("GET", "/v1/pins", 200, {"pins": [_pin(OTHER)], "next_token": None})
    api.reply("GET", "/v1/pins", 200, {"pins": [], "next_token": None})

    assert run("pins", "--json") == 0
    assert [pin["note_id"] for pin in json.loads(capsys.readouterr().out)["pins"]] == [NOTE, OTHER]
    assert run("pins") == 0
    assert capsys.readouterr().out == "No pins.\n"


def test_remember_pin_sends_pin_and_says_pinned(api: FakeApi, capsys: pytest.CaptureFixture[str]) -> None:
    note = {"note_id": NOTE, "version": 1, "scope": "private", "path": "/ops", "pinned": True}
    api.reply("POST", "/v1/tools/remember", 201, {"type": "memory", "result": "created", "note": note})

    assert run("remember", "The osprey cluster.", "--path", "/ops", "--pin") == 0

    assert capsys.readouterr().out == f"created: {NOTE} (version 1, private, /ops, pinned)\n"
    assert api.bodies("/v1/tools/remember") == [
        {"content": "The osprey cluster.", "path": "/ops", "pin": True}
    ]


@pytest.mark.parametrize("command", ["pin", "unpin"])
@pytest.mark.parametrize("note_id", ["<note_id>", "", "ki_01M8MSTVN5K0B8VGNB8TZTQEM9"])
def test_pin_or_unpin_of_a_malformed_note_id_is_a_usage_error_before_any_request(
    api: FakeApi, capsys: pytest.CaptureFixture[str], command: str, note_id: str
) -> None:
    assert run(command, note_id) == 2
    assert "is not a note id" in capsys.readouterr().err
    assert api.requests == []


def test_recall_summary_of_one_note_and_detail_lines_of_other_keys() -> None:
    answer = _context("x", [_item(NOTE, pinned=False, tokens=1)], [{"note_id": OTHER, "reason": "max_items"}])

    assert (
        recall_summary(answer)
        == "1 note of 2 candidates, 0 of 1,200 tokens (cl100k_base); dropped: 1 max_items"
    )
    error = ApiError(
        409, "memory_conflict", "Changed.", {"current_version": 2, "required_scope": "memory:write"}
    )
    assert error.detail_lines() == ["current_version: 2", "required_scope: memory:write"]


def test_recall_and_memories_as_of_send_the_moment_as_written(api: FakeApi) -> None:
    api.reply("POST", "/v1/tools/recall_context", 200, _context("", [], []))
    api.reply("POST", "/v1/tools/search_memory", 200, {"type": "memory_search", "results": []})

    assert run("recall", "--as-of", "2026-05-01T12:00:00+02:00") == 0
    assert run("memories", "osprey", "--as-of", "2026-05-01T10:00:00Z") == 0

    assert api.bodies("/v1/tools/recall_context")[0]["as_of"] == "2026-05-01T12:00:00+02:00"
    assert api.bodies("/v1/tools/search_memory")[0]["as_of"] == "2026-05-01T10:00:00Z"


@pytest.mark.parametrize("value", ["2026-05-01T12:00:00", "last tuesday"])
def test_as_of_without_zone_or_not_a_date_is_a_usage_error_before_any_request(
    api: FakeApi, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    status = run("recall", "--as-of", value)

    assert status == 2
    assert api.requests == []
    assert "--as-of" in capsys.readouterr().err


def _note(note_id: str = NOTE) -> dict[str, Any]:
    return {"note_id": note_id, "version": 1, "scope": "private", "path": "/ops", "pinned": False}


def test_remember_says_the_note_is_not_indexed_yet(api: FakeApi, capsys: pytest.CaptureFixture[str]) -> None:
    api.reply("POST", "/v1/tools/remember", 201, {"result": "created", "note": _note(), "indexed": False})

    assert run("remember", "The osprey cluster.") == 0

    assert capsys.readouterr().out == f"created: {NOTE} (version 1, private, /ops, not indexed yet)\n"


def test_memories_consistent_is_sent_and_pending_writes_are_told_on_stderr(
    api: FakeApi, capsys: pytest.CaptureFixture[str]
) -> None:
    api.reply(
        "POST",
        "/v1/tools/search_memory",
        200,
        {"results": [], "pending_index": {"writes": 2, "included": False}},
    )

    assert run("memories", "osprey") == 0
    assert run("memories", "osprey", "--consistent") == 0

    printed = capsys.readouterr()
    assert printed.out == "No memories.\nNo memories.\n"
    assert printed.err.count("2 of your notes are not indexed yet; --consistent includes them.") == 2
    assert [body.get("consistent") for body in api.bodies("/v1/tools/search_memory")] == [None, True]


def test_recall_consistent_is_sent(api: FakeApi) -> None:
    api.reply("POST", "/v1/tools/recall_context", 200, _context("", [], []))

    assert run("recall", "osprey", "--consistent") == 0

    assert api.bodies("/v1/tools/recall_context")[0]["consistent"] is True


USAGE = {
    "type": "usage",
    "tenant_id": "dev",
    "measured_at": "2026-06-01T09:00:00Z",
    "stored": {
        "items": 14,
        "notes": 3,
        "total": 17,
        "limit": 100000,
        "remaining": 99983,
        "content_bytes": 52340,
    },
    "rates": [
        {
            "quota": "requests_per_second",
            "limit": 50,
            "window_seconds": 1,
            "used": 1,
            "remaining": 49,
            "reset_seconds": 1,
        },
        {
            "quota": "writes_per_second",
            "limit": None,
            "window_seconds": 1,
            "used": None,
            "remaining": None,
            "reset_seconds": None,
        },
    ],
}


def test_usage_prints_the_stored_counts_and_each_quota(
    api: FakeApi, capsys: pytest.CaptureFixture[str]
) -> None:
    api.reply("GET", "/v1/usage", 200, USAGE)

    assert run("usage") == 0

    assert capsys.readouterr().out.splitlines() == [
        "tenant dev",
        "stored       17 of 100,000 (99,983 left): 14 items, 3 notes, 52,340 bytes of content",
        "requests/s   1 used of 50, 49 left, full again in 1 s",
        "writes/s     no limit",
    ]


def test_usage_json_prints_the_answer(api: FakeApi, capsys: pytest.CaptureFixture[str]) -> None:
    api.reply("GET", "/v1/usage", 200, USAGE)

    assert run("usage", "--json") == 0

    assert json.loads(capsys.readouterr().out) == USAGE


def _receipt(dry_run: bool) -> dict[str, Any]:
    return {
        "type": "memory_forgotten",
        "note_id": NOTE,
        "mode": "hard",
        "dry_run": dry_run,
        "receipt": {
            "dry_run": dry_run,
            "table": [
                {"kind": "note_version", "ids": [f"{NOTE}@1", f"{NOTE}@2"], "count": 2, "state": "purged"}
            ],
            "index": [{"kind": "note", "ids": [NOTE], "count": 1, "state": "scheduled"}],
            "pins": [],
            "embedding_cache": [],
            "queued_messages": [],
        },
    }


def test_forget_dry_run_sends_dry_run_and_prints_what_would_go(
    api: FakeApi, capsys: pytest.CaptureFixture[str]
) -> None:
    api.reply("POST", "/v1/tools/forget_memory", 200, _receipt(True))

    assert run("forget", NOTE, "--mode", "hard", "--dry-run") == 0

    assert capsys.readouterr().out.splitlines() == [
        f"would forget (hard): {NOTE}",
        "  table note_version: 2 purged",
        "  index note: 1 scheduled",
    ]
    assert api.bodies("/v1/tools/forget_memory") == [{"note_id": NOTE, "mode": "hard", "dry_run": True}]


def test_forget_json_prints_the_answer_with_its_receipt(
    api: FakeApi, capsys: pytest.CaptureFixture[str]
) -> None:
    api.reply("POST", "/v1/tools/forget_memory", 200, _receipt(False))

    assert run("forget", NOTE, "--mode", "hard", "--json") == 0

    assert json.loads(capsys.readouterr().out) == _receipt(False)
    assert api.bodies("/v1/tools/forget_memory") == [{"note_id": NOTE, "mode": "hard"}]


def test_search_consistent_is_sent_and_pending_items_are_told_on_stderr(
    api: FakeApi, capsys: pytest.CaptureFixture[str]
) -> None:
    api.reply(
        "POST",
        "/v1/tools/search_knowledge",
        200,
        {"type": "knowledge_search", "results": [], "pending_index": {"writes": 3, "included": False}},
    )

    assert run("search", "osprey") == 0
    assert run("search", "osprey", "--consistent") == 0

    printed = capsys.readouterr()
    assert printed.out == "No results.\nNo results.\n"
    assert printed.err.count("3 published items are not indexed yet; --consistent includes them.") == 2
    assert [body.get("consistent") for body in api.bodies("/v1/tools/search_knowledge")] == [None, True]


def test_search_as_of_sends_the_moment_as_written(api: FakeApi) -> None:
    api.reply("POST", "/v1/tools/search_knowledge", 200, {"type": "knowledge_search", "results": []})

    assert run("search", "osprey", "--as-of", "2026-05-01T10:00:00Z") == 0
    assert run("search", "osprey") == 0

    assert [body.get("as_of") for body in api.bodies("/v1/tools/search_knowledge")] == [
        "2026-05-01T10:00:00Z",
        None,
    ]
