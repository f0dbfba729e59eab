"""The first token of a deployment, written to the table with AWS credentials (moto here)."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from knowledge.services.tokens import TokenService
from knowledge_local.cli.admin_token import main
from tests.conftest import TABLE_NAME
from tests.support.store import make_store


def test_admin_token_prints_a_tenant_admin_token_the_store_resolves(
    table: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["--table", TABLE_NAME, "--tenant", "acme", "--subject", "ops", "--region", "us-east-1"])

    token = capsys.readouterr().out.strip()
    record = TokenService(make_store()).resolve(f"Bearer {token}")
    assert code == 0
    assert record is not None
    assert (record.tenant_id, record.subject_id) == ("acme", "ops")
    assert record.scopes == {
        "knowledge:read",
        "knowledge:write",
        "knowledge:admin",
        "memory:read",
        "memory:write",
        "memory:share",
        "memory:admin",
    }
    assert record.expires_at is None


def test_admin_token_platform_admin_with_expiry(table: Any, capsys: pytest.CaptureFixture[str]) -> None:
    main(["--table", TABLE_NAME, "--tenant", "ops", "--platform-admin", "--expires-in", "12h"])

    record = TokenService(make_store()).resolve(capsys.readouterr().out.strip())
    assert record is not None
    assert "platform:admin" in record.scopes
    assert record.expires_at is not None
    assert (record.expires_at - record.created_at).total_seconds() == 12 * 3600


def test_admin_token_missing_table_fails_with_one_line(
    table: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["--table", "absent", "--tenant", "acme", "--region", "us-east-1"])

    captured = capsys.readouterr()
    assert code == 1
    assert captured.out == ""
    assert captured.err.startswith("error: cannot write a token to table 'absent'")
    assert captured.err.count("\n") == 1


@pytest.mark.parametrize(
    ("option", "value", "problem"),
    [
        ("--subject", "ops\u200b", "--subject must not contain an invisible or format character (U+200B"),
        ("--subject", "o\x1bps", "--subject must not contain a control character (U+001B"),
        ("--subject", "x" * 129, "--subject must be 1-128 characters"),
        ("--tenant", "acme\u202e", "--tenant must be 1-128 characters without '#'"),
    ],
    ids=["zero-width", "escape", "too-long", "bidi-tenant"],
)
def test_admin_token_refuses_an_identifier_with_a_refused_character_and_writes_nothing(
    table: Any, capsys: pytest.CaptureFixture[str], option: str, value: str, problem: str
) -> None:
    arguments = {"--tenant": "acme", "--subject": "ops", option: value}

    with pytest.raises(SystemExit) as exited:
        main(["--table", TABLE_NAME, *[part for pair in arguments.items() for part in pair]])

    assert exited.value.code == 2
    assert problem in capsys.readouterr().err
    assert make_store().list_tokens("acme", limit=10, next_token=None).entries == []


def test_admin_token_runs_as_the_documented_module() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "knowledge_local.admin_token", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )

    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: python -m knowledge_local.admin_token")
    assert "--table" in done.stdout
