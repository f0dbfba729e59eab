"""The ``knowledge`` console script against the running runtime, as a user runs it: it finds the
API and the token through the state folder ``make run`` wrote."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from knowledge_local.cli.main import main
from tests.e2e.runtime_process import RuntimeProcess, free_port
from tests.support.template import ROOT

KNOWLEDGE = Path(sys.executable).parent / "knowledge"


def knowledge(runtime: RuntimeProcess, *arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(KNOWLEDGE), *arguments],
        env={**os.environ, "KNOWLEDGE_STATE_DIR": str(runtime.state_dir), "COLUMNS": "160"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    folder = tmp_path / "notes"
    (folder / "team").mkdir(parents=True)
    (folder / "team" / "standup.md").write_text(
        "# Daily standup\n\nEach person says what blocks them; the standup ends after fifteen minutes.\n"
    )
    (folder / "retro.rst").write_text(
        "Retrospective\n=============\n\n"
        "Every second Friday the team lists what went well and what to change.\n"
    )
    (folder / "image.png").write_bytes(b"\x89PNG not a document")
    return folder


def test_cli_ingest_twice_creates_nothing_the_second_time(runtime: RuntimeProcess, notes: Path) -> None:
    first = knowledge(runtime, "ingest", str(notes), "--base", "cli-twice")
    second = knowledge(runtime, "ingest", str(notes), "--base", "cli-twice")

    assert first.returncode == 0, first.stderr
    assert "2 created, 0 updated, 0 unchanged" in first.stdout
    assert second.returncode == 0, second.stderr
    assert "0 created, 0 updated, 2 unchanged" in second.stdout
    # Without a terminal: whole lines of what it does, a line every 10 s at most while it waits.
    kinds = (
        "created knowledge base cli-twice ",
        "cli-twice (kb_",
        "sending to ",
        "sent to ",
        "waiting for ",
        "index: ",
    )
    for output in (first.stderr, second.stderr):
        assert "\r" not in output
        assert [line for line in output.splitlines() if not line.startswith(kinds)] == []
    assert "; waiting for the index...\n" in first.stderr


def test_cli_ingest_changed_file_updates_only_that_item(runtime: RuntimeProcess, notes: Path) -> None:
    knowledge(runtime, "ingest", str(notes), "--base", "cli-changed")
    (notes / "retro.rst").write_text(
        "Retrospective\n=============\n\nNow held monthly, on the last Thursday.\n"
    )

    again = knowledge(runtime, "ingest", str(notes), "--base", "cli-changed")

    assert again.returncode == 0, again.stderr
    assert "0 created, 1 updated, 1 unchanged" in again.stdout


def test_cli_search_prints_a_ranked_table(runtime: RuntimeProcess, notes: Path) -> None:
    knowledge(runtime, "ingest", str(notes), "--base", "cli-search")

    result = knowledge(runtime, "search", "what blocks people at the standup", "--base", "cli-search")

    assert result.returncode == 0, result.stderr
    header, first, *_ = result.stdout.splitlines()
    assert header.split()[:5] == ["#", "score", "base", "title", "item"]
    assert first.split()[:3][0] == "1"
    assert first.split()[2] == "cli-search"
    assert "Daily standup" in first
    assert "ki_" in first


def test_cli_read_prints_content_and_paging_fields(runtime: RuntimeProcess, notes: Path) -> None:
    knowledge(runtime, "ingest", str(notes), "--base", "cli-read")
    hit = knowledge(runtime, "search", "retrospective", "--base", "cli-read", "--json")
    item_id = json.loads(hit.stdout)["results"][0]["knowledge_item_id"]

    result = knowledge(runtime, "read", item_id, "--offset", "14", "--limit", "13")

    assert result.returncode == 0, result.stderr
    assert result.stdout == "=============\n"
    assert "characters 14-27 of 99" in result.stderr
    assert "content_truncated=true" in result.stderr
    assert (
        f"next page: KNOWLEDGE_STATE_DIR={runtime.state_dir} {KNOWLEDGE} read {item_id} --revision kr_"
        in (result.stderr)
    )
    assert " --offset 27 --limit 13" in result.stderr


def test_cli_read_of_an_unknown_item_prints_the_error_code(runtime: RuntimeProcess) -> None:
    result = knowledge(runtime, "read", "ki_01M8MSTVN5K0B8VGNB8TZTQEM9")

    assert result.returncode == 1
    assert result.stderr.startswith("error: knowledge_resource_unavailable: ")
    assert "Traceback" not in result.stderr


def test_cli_token_create_issues_a_read_only_token(runtime: RuntimeProcess) -> None:
    created = knowledge(runtime, "token", "create", "--subject", "agent-1", "--scopes", "knowledge:read")
    token = created.stdout.strip()

    with runtime.http(token) as api:
        searched = api.post("/v1/tools/search_knowledge", json={"query": "rollback"})
        refused = api.post("/v1/knowledge-bases", json={"name": "nope", "scope": "tenant"})

    assert created.returncode == 0, created.stderr
    assert searched.status_code == 200
    assert refused.status_code == 403
    assert refused.json()["error"]["code"] == "insufficient_scope"


def test_cli_without_a_running_server_says_how_to_start_one(tmp_path: Path) -> None:
    result = subprocess.run(
        [str(KNOWLEDGE), "search", "anything"],
        env={**os.environ, "KNOWLEDGE_STATE_DIR": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert result.returncode == 1
    assert "make run" in result.stderr
    assert "Traceback" not in result.stderr


def test_cli_unreachable_api_prints_one_line_and_fails(capsys: pytest.CaptureFixture[str]) -> None:
    api_url = f"http://127.0.0.1:{free_port()}"

    code = main(["--api-url", api_url, "--token", "t", "search", "anything"])

    error = capsys.readouterr().err
    assert code == 1
    assert error.startswith(f"error: unreachable: cannot reach the knowledge API at {api_url}")
    assert error.count("\n") == 1


def test_runtime_try_it_commands_reach_this_runtime_from_a_plain_shell(runtime: RuntimeProcess) -> None:
    block = runtime.log.split("Try it:\n", 1)[1].split("Press Ctrl-C to stop.", 1)[0]
    lines = [line for line in block.splitlines() if line.strip()]
    curl_command, cli_command = "\n".join(lines[:-1]), lines[-1].strip()
    plain = {
        name: value
        for name, value in os.environ.items()
        if name not in {"KNOWLEDGE_STATE_DIR", "KNOWLEDGE_API_URL", "KNOWLEDGE_TOKEN"}
    }

    def shell(command: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", "-c", command],
            cwd=ROOT,
            env={**plain, "COLUMNS": "160"},
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    curled, searched = shell(curl_command), shell(cli_command)

    assert cli_command.startswith(f"KNOWLEDGE_STATE_DIR={runtime.state_dir} ")
    assert curled.returncode == 0, curled.stderr
    assert json.loads(curled.stdout)["results"][0]["title"] == "Deployment runbook"
    assert searched.returncode == 0, searched.stderr
    assert "Deployment runbook" in searched.stdout.splitlines()[1]


def test_runtime_says_where_its_start_went(runtime: RuntimeProcess) -> None:
    ready = runtime.log.split("Ready in ", 1)[1]
    total = float(ready.split(" s:", 1)[0])
    line = ready.splitlines()[1]
    phases = dict(
        (name.strip(), float(seconds))
        for name, seconds in re.findall(
            r"([a-zA-Z ]+) (\d+\.\d) s", line.split(";")[0].removeprefix("  start-up")
        )
    )

    assert line.startswith("  start-up      imports ")
    assert list(phases)[:2] == ["imports", "AWS endpoint"]
    assert {"tables and queues", "functions", "dev token", "seed sent", "seed indexed"} <= set(phases)
    assert sum(phases.values()) == pytest.approx(total, abs=0.1 * len(phases))
    assert "; beside them: model load " in line
