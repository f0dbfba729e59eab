"""The ``knowledge`` command's argument handling and output, without a server."""

from __future__ import annotations

import pytest

from knowledge_local.cli import _results_table, main, parse_duration
from knowledge_local.config import ConfigurationError, load_settings


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
        (["read", "ki_1", "--offset", "inf"], "--offset"),
        (["read", "ki_1", "--limit", "nan"], "--limit"),
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

    lines = _results_table(results, width=100).splitlines()

    assert len(lines) == 3
    assert lines[1].startswith(" 1   0.877  Deployment runbook  ki_1")
    assert all(len(line) <= 100 for line in lines[1:])
    assert lines[1].endswith("…")
    assert lines[2].endswith("Page the secondary.")


def test_load_settings_invalid_port_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PORT", "70000")

    with pytest.raises(ConfigurationError, match=r"^PORT: "):
        load_settings()
