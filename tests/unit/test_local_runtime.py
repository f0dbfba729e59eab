"""What the runtime prints for its user to copy: every command reaches this runtime."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from knowledge_local import stack
from knowledge_local.config import RuntimeSettings
from knowledge_local.runtime import _ready_message, main, switch_notice
from knowledge_local.state import DEFAULT_STATE_DIR, display_path, state_dir_prefix

API_URL = "http://127.0.0.1:3301"


def _cli() -> str:
    """The ``knowledge`` script beside this interpreter, as the runtime names it."""
    return display_path(Path(sys.executable).parent / "knowledge")


def _commands(message: str) -> tuple[str, str]:
    """The curl command (joined) and the ``knowledge`` command of the "Try it" message."""
    lines = message.splitlines()
    assert lines[0] == "Try it:"
    assert lines[-1] == "Press Ctrl-C to stop."
    return " ".join(line.strip().rstrip("\\") for line in lines[1:4]), lines[4].strip()


def test_ready_message_default_state_dir_prints_plain_commands(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(DEFAULT_STATE_DIR.parent)

    curl, knowledge = _commands(_ready_message(API_URL, DEFAULT_STATE_DIR))

    assert curl.startswith(f"curl -s {API_URL}/v1/tools/search_knowledge ")
    assert '"Authorization: Bearer $(cat .knowledge/dev-token)"' in curl
    assert knowledge.startswith(f"{_cli()} search ")


def test_ready_message_other_state_dir_names_it_in_every_command(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(DEFAULT_STATE_DIR.parent)

    curl, knowledge = _commands(_ready_message(API_URL, Path(".knowledge/second")))

    assert curl.startswith(f"curl -s {API_URL}/v1/tools/search_knowledge ")
    assert '"Authorization: Bearer $(cat .knowledge/second/dev-token)"' in curl
    assert knowledge.startswith(f"KNOWLEDGE_STATE_DIR=.knowledge/second {_cli()} search ")


def test_state_dir_prefix_quotes_a_path_with_spaces(tmp_path: Path) -> None:
    directory = tmp_path / "my state"

    assert state_dir_prefix(directory) == f"KNOWLEDGE_STATE_DIR='{directory}' "
    assert state_dir_prefix(DEFAULT_STATE_DIR) == ""


def test_another_runtime_skips_the_refused_state_dir_and_ones_in_use(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(stack, "DEFAULT_STATE_DIR", tmp_path)
    (tmp_path / "third").mkdir()
    (tmp_path / "third" / "endpoints.json").write_text("{}")

    from_default = stack._another_runtime(tmp_path)
    from_second = stack._another_runtime(tmp_path / "second")

    assert from_default == f"KNOWLEDGE_STATE_DIR={tmp_path / 'second'} PORT=3001 AWS_PORT=5001"
    assert from_second == f"KNOWLEDGE_STATE_DIR={tmp_path / 'fourth'} PORT=3003 AWS_PORT=5003"


def test_runtime_help_lists_every_setting_with_its_default(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])

    shown = capsys.readouterr().out
    variables = [
        str(field.validation_alias or name).upper() for name, field in RuntimeSettings.model_fields.items()
    ]
    assert len(variables) == 15
    for variable in [*variables, "OPENSEARCH_INDEX", "EMBEDDER", "EMBEDDING_CACHE_PATH"]:
        assert f"  {variable} (" in shown
    assert "  PORT (3000): " in shown
    assert "  KNOWLEDGE_PERSIST (true): " in shown
    assert "  KNOWLEDGE_AUTHORIZER_CACHE (false): " in shown
    assert "  SEARCH_BACKEND (embedded): " in shown
    assert "  OPENSEARCH_URL (none): " in shown
    assert "  OPENSEARCH_HEAP (1g): " in shown
    assert "  KNOWLEDGE_AUTH_FAILURES_PER_SECOND (10): " in shown


def test_switch_notice_names_the_switch_only_when_the_tools_are_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KNOWLEDGE_RUNTIME_ENABLED", "false")
    off = switch_notice(RuntimeSettings())
    monkeypatch.setenv("KNOWLEDGE_RUNTIME_ENABLED", "true")

    assert off is not None
    assert "OFF (KNOWLEDGE_RUNTIME_ENABLED=false)" in off
    assert "503 knowledge_runtime_disabled" in off
    assert switch_notice(RuntimeSettings()) is None
