"""``knowledge token list`` and ``knowledge token revoke`` against the real write API over HTTP:
the local gateway on ``template.yaml`` runs the real authorizer and handlers over moto DynamoDB."""

from __future__ import annotations

import sys
import uuid
from collections.abc import Iterator

import boto3
import pytest
from moto import mock_aws

from knowledge.bootstrap import use_container
from knowledge.domain.access.bearer_tokens import hash_token
from knowledge_local.cli.client import ApiError, KnowledgeClient
from knowledge_local.cli.dev_token import SCOPES as DEV_SCOPES
from knowledge_local.cli.main import main
from knowledge_local.emulator.api_gateway.gateway import Gateway
from tests.conftest import TABLE_NAME
from tests.support.inline_invoker import InlineInvoker
from tests.support.rest import new_world
from tests.support.template import TEMPLATE, create_table_kwargs

Api = tuple[str, str]


@pytest.fixture(scope="module")
def gateway_url() -> Iterator[tuple[str, str]]:
    """``(api_url, root token)``: the write API, and a root token holding every scope."""
    with mock_aws():
        boto3.client("dynamodb", region_name="us-east-1").create_table(
            **create_table_kwargs("KnowledgeTable", TABLE_NAME)
        )
        world = new_world()
        token = world.token(scopes=DEV_SCOPES).removeprefix("Bearer ")
        with Gateway(TEMPLATE, invoker=InlineInvoker()) as gateway:
            yield gateway.url, token
        use_container(None)


@pytest.fixture
def api(gateway_url: tuple[str, str], capsys: pytest.CaptureFixture[str]) -> Api:
    """The API as the admin of a tenant of its own (minted by the root token, which holds
    ``platform:admin``), so each test lists and revokes only what it made."""
    url, root = gateway_url
    tenant = f"tenant-{uuid.uuid4().hex[:12]}"
    created = knowledge(
        (url, root), "token", "create", "--subject", "curator", "--scopes", _ADMIN, "--tenant", tenant
    )
    assert created == 0
    return url, _stdout(capsys)[0]


_ADMIN = "knowledge:admin,knowledge:read"


def knowledge(api: Api, *arguments: str) -> int:
    """Run the ``knowledge`` command against ``api``; its exit status."""
    try:
        return main(["--api-url", api[0], "--token", api[1], *arguments])
    except SystemExit as exited:
        return int(exited.code or 0)


def _stdout(capsys: pytest.CaptureFixture[str]) -> list[str]:
    """What the command printed on stdout, apart from the in-process handlers' JSON log lines."""
    return [line for line in capsys.readouterr().out.splitlines() if not line.startswith('{"')]


def _mint(api: Api, capsys: pytest.CaptureFixture[str], subject: str, scopes: str = "knowledge:read") -> str:
    assert knowledge(api, "token", "create", "--subject", subject, "--scopes", scopes) == 0
    return _stdout(capsys)[0]


def _rows(lines: list[str]) -> dict[str, list[str]]:
    """The ``token list`` table by subject: each row's cells."""
    assert lines[0].split() == ["token_id", "subject", "scopes", "bases", "issuer", "expires", "state"]
    return {row.split()[1]: row.split() for row in lines[1:]}


def test_cli_token_list_shows_each_token_without_its_secret(
    api: Api, capsys: pytest.CaptureFixture[str]
) -> None:
    agent = _mint(api, capsys, "agent-1")

    assert knowledge(api, "token", "list") == 0

    printed = _stdout(capsys)
    rows = _rows(printed)
    assert rows["agent-1"][0] == hash_token(agent)
    assert rows["agent-1"][2:5] == ["knowledge:read", "all", hash_token(api[1])[:12]]
    assert rows["agent-1"][-1] == "active"
    assert agent not in "\n".join(printed)


def test_cli_token_revoke_revokes_the_token_and_what_it_issued(
    api: Api, capsys: pytest.CaptureFixture[str]
) -> None:
    child = _mint(api, capsys, "child", _ADMIN)
    grandchild = _mint((api[0], child), capsys, "grandchild")

    assert knowledge(api, "token", "revoke", hash_token(child)) == 0
    assert "Revoked" in _stdout(capsys)[0]

    with KnowledgeClient(api[0], grandchild) as client, pytest.raises(ApiError) as refused:
        client.tokens(limit=1)
    assert (refused.value.status, refused.value.code) == (401, "authentication_required")
    assert knowledge(api, "token", "list") == 0
    rows = _rows(_stdout(capsys))
    assert rows["child"][-1] == "revoked"
    assert " ".join(rows["grandchild"][-3:]) == f"revoked (via {hash_token(child)[:12]})"
    assert knowledge(api, "token", "revoke", hash_token(child)) == 0


def test_cli_token_list_prints_a_paging_hint_that_reaches_the_next_page(
    api: Api, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for n in range(2):
        _mint(api, capsys, f"paged-{n}")
    monkeypatch.setattr(sys, "argv", [".venv/bin/knowledge", "token", "list", "--limit", "2"])

    assert knowledge(api, "token", "list", "--limit", "2") == 0
    first = capsys.readouterr()
    [hint] = [line for line in first.err.splitlines() if line.startswith("more tokens: ")]
    assert ".venv/bin/knowledge token list --limit 2 --next-token " in hint  # the command as typed
    next_token = hint.split("--next-token ")[1].strip("'")

    assert knowledge(api, "token", "list", "--limit", "2", "--next-token", next_token) == 0
    second = capsys.readouterr()
    subjects = [
        list(_rows([line for line in out.splitlines() if not line.startswith('{"')]))
        for out in (first.out, second.out)
    ]
    assert subjects == [["curator", "paged-0"], ["paged-1"]]
    assert "more tokens" not in second.err


def test_cli_token_revoke_of_an_unknown_token_prints_the_error_and_a_hint(
    api: Api, capsys: pytest.CaptureFixture[str]
) -> None:
    assert knowledge(api, "token", "revoke", "0" * 64) == 1

    err = capsys.readouterr().err
    assert "error: knowledge_resource_unavailable" in err
    assert "hint: `knowledge token list` shows the tokens you may revoke" in err


def test_cli_token_list_of_another_tenant_prints_the_errors_details(
    api: Api, capsys: pytest.CaptureFixture[str]
) -> None:
    assert knowledge(api, "token", "list", "--tenant", "globex") == 1

    err = capsys.readouterr().err
    assert "error: insufficient_scope" in err
    assert "  required_scope: platform:admin" in err


def test_cli_token_create_with_an_empty_base_list_prints_the_field_at_fault(
    api: Api, capsys: pytest.CaptureFixture[str]
) -> None:
    assert knowledge(api, "token", "create", "--bases", "") == 1

    err = capsys.readouterr().err
    assert "error: validation_error" in err
    assert "  knowledge_base_ids: " in err


@pytest.mark.parametrize("value", ["kn_secretlooking", "<token_id>", "abc"])
def test_cli_token_revoke_needs_a_token_id_and_never_echoes_a_token(
    api: Api, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    assert knowledge(api, "token", "revoke", value) == 2

    err = capsys.readouterr().err
    assert "token_id" in err
    assert "kn_secretlooking" not in err
