"""``knowledge purge-item``: it reads the item's version, sends the purge at that version (with
``dry_run=true`` under ``--dry-run``) and prints one line per store and kind of the receipt."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.unit.test_memory_cli import FakeApi, api, run  # noqa: F401  (``api`` is a fixture)

ITEM = "ki_01M8MSRAQ70QQ1SJHWP0AMCDPZ"
BASE = "kb_01M8MSRAQ70QQ1SJHWP0AMCDQ0"
REVISION = "kr_01M8MSRAQ70QQ1SJHWP0AMCDQ1"


def _purged(dry_run: bool) -> dict[str, Any]:
    return {
        "knowledge_item_id": ITEM,
        "knowledge_base_id": BASE,
        "dry_run": dry_run,
        "receipt": {
            "dry_run": dry_run,
            "table": [
                {"kind": "item", "ids": [ITEM], "count": 1, "state": "purged"},
                {"kind": "item_revision", "ids": [REVISION], "count": 1, "state": "purged"},
            ],
            "index": [{"kind": "item_history", "ids": [f"{ITEM}@1"], "count": 1, "state": "purged"}],
            "pins": [],
            "embedding_cache": [{"kind": "cached_vector", "ids": ["ab" * 32], "count": 1, "state": "purged"}],
            "queued_messages": [],
        },
    }


@pytest.mark.parametrize(
    ("flags", "verb", "query"), [((), "purged", ""), (("--dry-run",), "would purge", "&dry_run=true")]
)
def test_purge_item_sends_the_current_version_and_prints_the_receipt(
    api: FakeApi,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
    flags: tuple[str, ...],
    verb: str,
    query: str,
) -> None:
    api.reply("GET", f"/v1/knowledge-items/{ITEM}", 200, {"knowledge_item_id": ITEM, "version": 4})
    api.reply("DELETE", f"/v1/knowledge-items/{ITEM}", 200, _purged(bool(flags)))

    assert run("purge-item", ITEM, *flags) == 0

    assert capsys.readouterr().out.splitlines() == [
        f"{verb}: {ITEM} (base {BASE})",
        "  table item: 1 purged",
        "  table item_revision: 1 purged",
        "  index item_history: 1 purged",
        "  embedding_cache cached_vector: 1 purged",
    ]
    deletes = [request for request in api.requests if request.method == "DELETE"]
    assert [request.url.query.decode() for request in deletes] == [f"expected_version=4{query}"]


def test_purge_item_json_prints_the_answer(api: FakeApi, capsys: pytest.CaptureFixture[str]) -> None:  # noqa: F811
    api.reply("GET", f"/v1/knowledge-items/{ITEM}", 200, {"knowledge_item_id": ITEM, "version": 1})
    api.reply("DELETE", f"/v1/knowledge-items/{ITEM}", 200, _purged(False))

    assert run("purge-item", ITEM, "--json") == 0

    assert json.loads(capsys.readouterr().out) == _purged(False)


def test_purge_item_of_a_malformed_id_is_a_usage_error_before_any_request(api: FakeApi) -> None:  # noqa: F811
    assert run("purge-item", "not-an-item") == 2
    assert api.requests == []


ERASURE = "er_01M8MSRAQ70QQ1SJHWP0AMCDQ2"
OLD_BASE = {"knowledge_base_id": BASE, "name": "old-docs", "status": "inactive", "version": 2}


def _erasure(dry_run: bool) -> dict[str, Any]:
    return {
        "erasure_id": ERASURE,
        "tenant_id": "acme",
        "status": "succeeded",
        "dry_run": dry_run,
        "phase": "done",
        "knowledge_base_ids": [BASE],
        "erased": {"item": 2, "knowledge_base": 1},
        "receipt": _purged(dry_run)["receipt"],
    }


def test_erase_of_a_base_named_by_an_inactive_bases_name_erases_that_base(
    api: FakeApi,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    api.reply("GET", "/v1/knowledge-bases", 200, {"knowledge_bases": [OLD_BASE], "next_token": None})
    api.reply("POST", "/v1/erasures", 202, _erasure(True) | {"status": "queued"})
    api.reply("GET", f"/v1/erasures/{ERASURE}", 200, _erasure(True))

    assert run("erase", "--dry-run", "--base", "old-docs") == 0

    assert api.bodies("/v1/erasures") == [{"dry_run": True, "knowledge_base_ids": [BASE]}]
    assert capsys.readouterr().out.splitlines()[0] == "would erase: 2 item, 1 knowledge_base of tenant acme"


@pytest.mark.parametrize(
    "command", [("erase", "--dry-run"), ("export", "--out", "x.jsonl"), ("search", "pumps")]
)
def test_a_malformed_base_id_is_a_usage_error_naming_the_shape_before_any_request(
    api: FakeApi,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
    command: tuple[str, ...],
) -> None:
    assert run(*command, "--base", "kb_123") == 2

    assert (
        "'kb_123' is not a knowledge base id (kb_ and 26 Crockford base32 characters)"
        in capsys.readouterr().err
    )
    assert api.requests == []


def test_a_search_of_an_inactive_base_by_name_says_it_is_inactive(
    api: FakeApi,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    api.reply("GET", "/v1/knowledge-bases", 200, {"knowledge_bases": [OLD_BASE], "next_token": None})

    assert run("search", "pumps", "--base", "old-docs") == 1

    error = capsys.readouterr().err
    assert f"The knowledge base 'old-docs' ({BASE}) is inactive" in error
    assert "No knowledge base named" not in error


def test_erase_confirming_another_tenant_names_the_tokens_tenant(
    api: FakeApi,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    refused = {
        "error": {
            "code": "knowledge_invalid_request",
            "message": "confirm_tenant_id names another tenant than the token's (details.tenant_id).",
            "details": {"field": "confirm_tenant_id", "tenant_id": "acme"},
        }
    }
    api.reply("POST", "/v1/erasures", 400, refused)

    assert run("erase", "--dry-run", "--confirm", "dev") == 2

    error = capsys.readouterr().err
    assert "--confirm dev names another tenant than this token's (acme): give --confirm acme" in error
    assert "or with --dry-run" not in error


def test_export_into_a_missing_folder_is_a_usage_error_before_any_request(
    api: FakeApi,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
    tmp_path: Any,
) -> None:
    missing = tmp_path / "nowhere" / "x.jsonl"

    assert run("export", "--out", str(missing)) == 2

    assert f"the folder {missing.parent} does not exist" in capsys.readouterr().err
    assert api.requests == []


class _ClosedPipe:
    """Standard output whose reader has gone (``| head``)."""

    def write(self, text: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")

    def flush(self) -> None:
        raise BrokenPipeError(32, "Broken pipe")


def test_output_cut_short_by_its_reader_ends_quietly(
    api: FakeApi,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    api.reply("GET", f"/v1/knowledge-items/{ITEM}", 200, {"knowledge_item_id": ITEM, "version": 1})
    api.reply("DELETE", f"/v1/knowledge-items/{ITEM}", 200, _purged(True))
    monkeypatch.setattr("sys.stdout", _ClosedPipe())

    assert run("purge-item", ITEM, "--dry-run") == 141
