"""The ``knowledge`` command's argument handling and output, without a server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx2
import pytest

from knowledge_local.cli.arguments import parse_duration
from knowledge_local.cli.client import ApiError, KnowledgeClient
from knowledge_local.cli.commands.bases import bases_table
from knowledge_local.cli.commands.search import original_place, results_table
from knowledge_local.cli.ingestion import similar_names, wait_until_indexed
from knowledge_local.cli.main import main, redact
from knowledge_local.config import ConfigurationError, load_settings

TOKEN = "kn_9hJN21qwElGcgOEz7bymLWFvhW4DhXqaUjLarof5ePM"
ITEM = "ki_01M8MSTVN5K0B8VGNB8TZTQEM9"
CLOSED_API = "http://127.0.0.1:9"


def _exit_status(arguments: list[str]) -> int:
    try:
        return main(arguments)
    except SystemExit as exited:
        return int(exited.code or 0)


@pytest.mark.parametrize(
    ("value", "seconds"), [("3600", 3600), ("90m", 5400), ("12h", 43_200), ("30d", 2_592_000)]
)
def test_parse_duration_reads_seconds_and_suffixes(value: str, seconds: int) -> None:
    assert parse_duration(value) == seconds


def test_cli_bad_expiry_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KNOWLEDGE_API_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("KNOWLEDGE_TOKEN", "t")

    with pytest.raises(SystemExit) as exited:
        main(["token", "create", "--expires-in", "soon"])

    assert exited.value.code == 2
    assert "--expires-in must be a positive number" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("arguments", "option"),
    [
        (["search", "q", "--alpha", "nan"], "--alpha"),
        (["search", "q", "--alpha", "inf"], "--alpha"),
        (["search", "q", "--alpha", "-inf"], "--alpha"),
        (["search", "q", "--max-results", "nan"], "--max-results"),
        (["read", "ki_01M8MSTVN5K0B8VGNB8TZTQEM9", "--offset", "inf"], "--offset"),
        (["read", "ki_01M8MSTVN5K0B8VGNB8TZTQEM9", "--limit", "nan"], "--limit"),
        (["ingest", ".", "--base", "b", "--timeout", "nan"], "--timeout"),
        (["ingest", ".", "--base", "b", "--timeout", "inf"], "--timeout"),
        (["ingest", ".", "--base", "b", "--timeout", "0"], "--timeout"),
    ],
)
def test_cli_non_finite_or_out_of_range_number_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, arguments: list[str], option: str
) -> None:
    monkeypatch.setenv("KNOWLEDGE_API_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("KNOWLEDGE_TOKEN", "t")

    with pytest.raises(SystemExit) as exited:
        main(arguments)

    error = capsys.readouterr().err
    assert exited.value.code == 2
    assert f"argument {option}: " in error
    assert "Traceback" not in error


def test_results_table_shortens_each_result_to_one_line() -> None:
    results = [
        {
            "title": "Deployment runbook",
            "knowledge_item_id": "ki_1",
            "excerpt": "Roll out\nthe release " * 20,
            "scores": {"final": 0.87654},
        },
        {
            "title": "On-call",
            "knowledge_item_id": "ki_2",
            "excerpt": "Page the secondary.",
            "scores": {"final": 0.5},
        },
    ]

    lines = results_table(results, width=100).splitlines()

    assert len(lines) == 3
    assert lines[1].startswith(" 1   0.877        Deployment runbook  ki_1")
    assert all(len(line) <= 100 for line in lines[1:])
    assert lines[1].endswith("…")
    assert lines[2].endswith("Page the secondary.")


def test_results_table_names_each_result_base_or_shows_its_id() -> None:
    results = [
        {"knowledge_base_id": "kb_A", "title": "HTTP/2", "knowledge_item_id": "ki_1", "excerpt": "Frames."},
        {"knowledge_base_id": "kb_B", "title": "Timeouts", "knowledge_item_id": "ki_2", "excerpt": "Pools."},
    ]

    header, first, second = results_table(results, width=120, base_names={"kb_A": "httpx"}).splitlines()

    assert header.split()[:5] == ["#", "score", "base", "title", "item"]
    assert first.split()[2:4] == ["httpx", "HTTP/2"]
    assert second.split()[2:4] == ["kb_B", "Timeouts"]


def test_load_settings_invalid_port_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PORT", "70000")

    with pytest.raises(ConfigurationError, match=r"^PORT: "):
        load_settings()


@pytest.mark.parametrize(
    "command",
    [["search", "q"], ["read", ITEM], ["bases"], ["token", "create"], ["ingest", "README.md", "--base", "b"]],
)
@pytest.mark.parametrize("position", ["before", "after"])
def test_cli_connection_options_before_or_after_the_command_reach_the_given_api(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, command: list[str], position: str
) -> None:
    monkeypatch.chdir(Path(__file__).resolve().parents[2])
    monkeypatch.delenv("KNOWLEDGE_API_URL", raising=False)
    monkeypatch.delenv("KNOWLEDGE_TOKEN", raising=False)
    options = ["--api-url", CLOSED_API, "--token", TOKEN]
    arguments = [*options, *command] if position == "before" else [*command, *options]

    status = _exit_status(arguments)

    error = capsys.readouterr().err
    assert status == 1
    assert error.startswith(f"error: unreachable: cannot reach the knowledge API at {CLOSED_API}")
    assert TOKEN not in error


@pytest.mark.parametrize(
    "arguments",
    [
        ["search", "q", "--tokn", TOKEN],
        ["search", "q", f"--tokn={TOKEN}"],
        ["search", "q", TOKEN],
        ["search", "q", "--mode", TOKEN],
        ["read", TOKEN],
        [TOKEN, "search"],
    ],
)
def test_cli_usage_error_masks_a_token_it_repeats(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, arguments: list[str]
) -> None:
    monkeypatch.setenv("KNOWLEDGE_API_URL", CLOSED_API)

    status = _exit_status(arguments)

    error = capsys.readouterr().err
    assert status == 2
    assert TOKEN not in error
    assert "kn_***" in error


def test_cli_api_error_masks_a_token_in_its_message(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(self: KnowledgeClient, **arguments: object) -> dict[str, object]:
        raise ApiError(400, "knowledge_invalid_request", f"bad value {TOKEN}")

    monkeypatch.setattr(KnowledgeClient, "search_knowledge", refuse)

    status = _exit_status(["search", "q", "--api-url", CLOSED_API, "--token", TOKEN])

    error = capsys.readouterr().err
    assert status == 1
    assert error == "error: knowledge_invalid_request: bad value kn_***\n"


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        (f"unrecognized arguments: {TOKEN}", "unrecognized arguments: kn_***"),
        (f"Bearer {TOKEN}.", "Bearer kn_***."),
        ("unrecognized arguments: --tokn plain-secret x", "unrecognized arguments: --tokn *** x"),
        ("unrecognized arguments: --tokn=plain-secret", "unrecognized arguments: --tokn=***"),
        ("argument --token: expected one argument", "argument --token: expected one argument"),
        ("unknown_kn_value stays", "unknown_kn_value stays"),
    ],
)
def test_redact_masks_tokens_and_token_option_values(text: str, masked: str) -> None:
    assert redact(text) == masked


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["read", "<knowledge_item_id>"], "argument item: '<knowledge_item_id>' is a placeholder: "),
        (["read", "ki_123"], "argument item: 'ki_123' is not a knowledge item id: "),
        (["read", ITEM.lower()], f"argument item: '{ITEM.lower()}' is not a knowledge item id: "),
        (["read", ""], "argument item: empty (an unset shell variable?): "),
        (
            ["read", ITEM, "--revision", "kr_1"],
            "argument --revision: 'kr_1' is not a knowledge revision id: ",
        ),
        (["search", "q", "--base", "<base>"], "argument --base: '<base>' is a placeholder: "),
        (["ingest", ".", "--base", " "], "argument --base: empty: "),
    ],
)
def test_cli_placeholder_or_malformed_id_is_a_usage_error_before_any_request(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, arguments: list[str], message: str
) -> None:
    monkeypatch.setenv("KNOWLEDGE_API_URL", CLOSED_API)
    monkeypatch.setenv("KNOWLEDGE_TOKEN", TOKEN)

    status = _exit_status(arguments)

    error = capsys.readouterr().err
    assert status == 2
    assert message in error
    assert "unreachable" not in error


@pytest.mark.parametrize(
    ("name", "names", "close"),
    [
        ("fastpai", ["project-docs", "fastapi", "handbook"], ["fastapi"]),
        ("FastAPI", ["fastapi", "runbooks"], ["fastapi"]),
        ("handbok", ["handbook", "handbooks", "fastapi"], ["handbook", "handbooks"]),
        ("zzz", ["fastapi", "handbook"], []),
        ("fastapi", ["fastapi"], []),
    ],
)
def test_similar_names_finds_close_names_ignoring_case(name: str, names: list[str], close: list[str]) -> None:
    assert similar_names(name, names) == close


def test_bases_table_aligns_id_name_scope_and_status() -> None:
    bases: list[dict[str, Any]] = [
        {
            "knowledge_base_id": "kb_01M8MV2A1210QGTNJ28EFMF0Z9",
            "name": "fastapi",
            "scope": "tenant",
            "team_id": None,
            "status": "active",
        },
        {
            "knowledge_base_id": "kb_01M8MVNYZFC4AD5BG1N31RTX5K",
            "name": "team notes",
            "scope": "team",
            "team_id": "eng",
            "status": "inactive",
        },
    ]

    lines = bases_table(bases).splitlines()

    assert lines == [
        "id                             name        scope     status",
        "kb_01M8MV2A1210QGTNJ28EFMF0Z9  fastapi     tenant    active",
        "kb_01M8MVNYZFC4AD5BG1N31RTX5K  team notes  team eng  inactive",
    ]


def _answer_every_request_with(monkeypatch: pytest.MonkeyPatch, status: int, body: dict[str, Any]) -> None:
    def answer(self: httpx2.Client, method: str, url: str, **_: Any) -> httpx2.Response:
        return httpx2.Response(status, json=body, request=httpx2.Request(method, f"{CLOSED_API}{url}"))

    monkeypatch.setattr(httpx2.Client, "request", answer)


def _envelope(code: str, message: str, details: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "error",
        "error": {"code": code, "message": message, "retryable": False, "details": details},
    }


def test_cli_api_error_prints_each_field_problem_of_its_details(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    problem = {"field": "max_results", "problem": "must be between 1 and 50"}
    _answer_every_request_with(
        monkeypatch,
        400,
        _envelope("knowledge_invalid_request", "A parameter is out of bounds.", {"fields": [problem]}),
    )

    status = _exit_status(["search", "x", "--max-results", "100", "--api-url", CLOSED_API, "--token", TOKEN])

    assert status == 1
    assert capsys.readouterr().err == (
        "error: knowledge_invalid_request: A parameter is out of bounds.\n"
        "  max_results: must be between 1 and 50\n"
    )


def test_cli_api_error_prints_other_details_as_name_and_value(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _answer_every_request_with(
        monkeypatch, 409, _envelope("knowledge_conflict", "The item changed.", {"current_version": 3})
    )

    _exit_status(["read", ITEM, "--api-url", CLOSED_API, "--token", TOKEN])

    assert "\n  current_version: 3\n" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("reason", "hint"),
    [
        ("expired", "hint: the token has expired: issue a new one"),
        ("revoked", "hint: the token was revoked: issue a new one"),
        ("unknown", "hint: this API does not know the token (mistyped, or issued by an earlier `make run`"),
        ("missing", "hint: no token was sent"),
    ],
)
def test_cli_authentication_error_hint_matches_its_reason(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, reason: str, hint: str
) -> None:
    _answer_every_request_with(
        monkeypatch,
        401,
        _envelope("authentication_required", "The bearer token is refused.", {"reason": reason}),
    )

    _exit_status(["search", "x", "--api-url", CLOSED_API, "--token", TOKEN])

    error = capsys.readouterr().err
    assert f"  reason: {reason}\n{hint}" in error
    assert "earlier `make run`" not in error or reason == "unknown"


class _SlowIndex:
    """A client whose items become indexed one every ``every`` polls."""

    def __init__(self, every: int) -> None:
        self.polls, self.every = 0, every

    def item(self, knowledge_item_id: str) -> dict[str, Any]:
        self.polls += 1
        indexed = self.polls % self.every == 0
        return {"current_revision_id": "kr_1", "indexed_revision_id": "kr_1" if indexed else None}


def test_wait_until_indexed_without_a_terminal_prints_a_line_every_ten_seconds_while_it_moves(
    capsys: pytest.CaptureFixture[str],
) -> None:
    now = [0.0]

    def sleep(seconds: float) -> None:
        now[0] += seconds * 5  # each look stands for 5 s

    wait_until_indexed(
        _SlowIndex(every=5),  # type: ignore[arg-type]
        ["ki_1", "ki_2"],
        progress=False,
        clock=lambda: now[0],
        sleep=sleep,
    )

    lines = [line for line in capsys.readouterr().err.splitlines() if "searchable" in line]
    assert lines == [
        "waiting for the index: 1 of 2 searchable, 0.1/s, ETA 10 s; left 1 document, 1 part to embed",
        "index: 2 of 2 searchable after 30 s (4.0/min)",
    ]


def test_wait_until_indexed_with_a_progress_bar_prints_no_heartbeat(
    capsys: pytest.CaptureFixture[str],
) -> None:
    now = [0.0]

    def sleep(seconds: float) -> None:
        now[0] += seconds * 10

    wait_until_indexed(
        _SlowIndex(every=4),  # type: ignore[arg-type]
        ["ki_1"],
        progress=True,
        clock=lambda: now[0],
        sleep=sleep,
    )

    error = capsys.readouterr().err
    assert error.count("\n") == 1  # one line, redrawn in place, ended once done
    assert error.startswith("\rwaiting for the index: 0 of 1 searchable, measuring the rate; ")
    assert error.endswith("\rindex: 1 of 1 searchable after 30 s (2.0/min)\x1b[K\n")


@pytest.mark.parametrize(
    ("arguments", "environment", "named"),
    [
        (["--token", "", "bases"], {}, "--token"),
        (["--token", "  ", "bases"], {}, "--token"),
        (["bases"], {"KNOWLEDGE_TOKEN": ""}, "KNOWLEDGE_TOKEN"),
    ],
)
def test_cli_empty_token_is_a_usage_error_not_the_dev_token(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    arguments: list[str],
    environment: dict[str, str],
    named: str,
) -> None:
    monkeypatch.setenv("KNOWLEDGE_API_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("KNOWLEDGE_STATE_DIR", str(tmp_path))
    (tmp_path / "dev-token").write_text("kn_devtokendevtokendevtokendevtokendevtoken12", encoding="utf-8")
    monkeypatch.delenv("KNOWLEDGE_TOKEN", raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)

    with pytest.raises(SystemExit) as exited:
        main(arguments)

    assert exited.value.code == 2
    assert f"the token given ({named}) is empty" in capsys.readouterr().err


def test_cli_token_rotate_without_a_running_runtime_fails_and_keeps_the_dev_token(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("KNOWLEDGE_STATE_DIR", str(tmp_path))
    (tmp_path / "dev-token").write_text("kn_devtokendevtokendevtokendevtokendevtoken12\n", encoding="utf-8")

    status = main(["token", "rotate"])

    assert status == 1
    assert "No runtime serves from" in capsys.readouterr().err
    assert (tmp_path / "dev-token").read_text(
        encoding="utf-8"
    ) == "kn_devtokendevtokendevtokendevtokendevtoken12\n"


@pytest.mark.parametrize("option", [["--api-url", "http://127.0.0.1:9"], ["--token", "kn_x"]])
def test_cli_token_rotate_with_an_api_or_a_token_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path, option: list[str]
) -> None:
    monkeypatch.setenv("KNOWLEDGE_STATE_DIR", str(tmp_path))

    with pytest.raises(SystemExit) as exited:
        main([*option, "token", "rotate"])

    assert exited.value.code == 2
    assert (
        "token rotate replaces the dev token of the local runtime's state directory"
        in capsys.readouterr().err
    )


@pytest.mark.parametrize(
    ("locator", "place"),
    [
        ({"offset": 0, "length": 5}, ""),
        ({"offset": 0, "length": 5, "page": 3}, "page 3"),
        (
            {"offset": 0, "length": 5, "sheet": "Berths", "rows": {"first": 27, "last": 31}},
            "sheet Berths, rows 27-31",
        ),
        ({"offset": 0, "length": 5, "section": "Rotor inspection"}, "section Rotor inspection"),
    ],
)
def test_original_place_names_page_sheet_rows_and_section(locator: dict[str, Any], place: str) -> None:
    assert original_place(locator) == place
