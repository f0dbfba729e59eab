"""One dev token per state directory (``knowledge_local.cli.dev_token``) on the moto table: reused while
the table holds it, replaced when it does not, rotated on demand, and never one valid dev token
beside another."""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any

import pytest

from knowledge.adapters.dynamodb.knowledge_store import DynamoDBKnowledgeStore
from knowledge.services.tokens import TokenService
from knowledge_local.cli import dev_token
from knowledge_local.state import TOKEN_FILE
from tests.support.store import make_store


@pytest.fixture
def store(table: Any) -> DynamoDBKnowledgeStore:
    return make_store()


@pytest.fixture
def tokens(store: DynamoDBKnowledgeStore) -> TokenService:
    return TokenService(store)


def _valid_dev_tokens(tokens: TokenService, store: DynamoDBKnowledgeStore) -> list[str]:
    page = store.list_tokens(dev_token.TENANT_ID, limit=100, next_token=None)
    return [
        record.token_hash
        for record in page.entries
        if dev_token.is_dev_token(record) and tokens.rejection(store.get_token(record.token_hash)) is None
    ]


def _file(directory: Path) -> tuple[str, int]:
    path = directory / TOKEN_FILE
    return path.read_text(encoding="utf-8").strip(), stat.S_IMODE(path.stat().st_mode)


def test_dev_token_without_a_file_is_issued_and_saved_owner_only(
    tmp_path: Path, tokens: TokenService, store: DynamoDBKnowledgeStore
) -> None:
    issued = dev_token.ensure(tokens, store, tmp_path)

    record = tokens.resolve(issued.token)
    assert (issued.reused, issued.revoked) == (False, 0)
    assert record is not None
    assert dev_token.is_dev_token(record)
    assert _file(tmp_path) == (issued.token, 0o600)


def test_dev_token_still_valid_in_the_table_is_reused_on_restart(
    tmp_path: Path, tokens: TokenService, store: DynamoDBKnowledgeStore
) -> None:
    first = dev_token.ensure(tokens, store, tmp_path)

    again = [dev_token.ensure(tokens, store, tmp_path) for _ in range(3)]

    assert [(start.token, start.reused) for start in again] == [(first.token, True)] * 3
    assert len(_valid_dev_tokens(tokens, store)) == 1


def test_dev_token_unknown_to_a_fresh_table_is_replaced(
    tmp_path: Path, tokens: TokenService, store: DynamoDBKnowledgeStore
) -> None:
    # without persistence the table starts empty: the file's token is unknown to it
    (tmp_path / TOKEN_FILE).write_text("kn_from-a-table-that-is-gone\n", encoding="utf-8")

    issued = dev_token.ensure(tokens, store, tmp_path)

    assert issued.reused is False
    assert _file(tmp_path) == (issued.token, 0o600)
    assert tokens.resolve(issued.token) is not None


def test_dev_token_file_lost_revokes_the_one_the_table_still_holds(
    tmp_path: Path, tokens: TokenService, store: DynamoDBKnowledgeStore
) -> None:
    first = dev_token.ensure(tokens, store, tmp_path)
    (tmp_path / TOKEN_FILE).unlink()

    second = dev_token.ensure(tokens, store, tmp_path)

    assert (second.reused, second.revoked) == (False, 1)
    current = tokens.resolve(second.token)
    assert tokens.resolve(first.token) is None
    assert current is not None
    assert _valid_dev_tokens(tokens, store) == [current.token_hash]


def test_dev_token_file_holding_another_valid_token_is_not_reused(
    tmp_path: Path, tokens: TokenService, store: DynamoDBKnowledgeStore
) -> None:
    reader, _ = tokens.issue(tenant_id="dev", subject_id="dev", scopes=["knowledge:read"])
    (tmp_path / TOKEN_FILE).write_text(reader + "\n", encoding="utf-8")

    issued = dev_token.ensure(tokens, store, tmp_path)

    assert issued.reused is False
    assert issued.token != reader
    assert tokens.resolve(reader) is not None  # not a dev token: left alone


def test_rotating_revokes_the_old_dev_token_and_what_it_minted(
    tmp_path: Path, tokens: TokenService, store: DynamoDBKnowledgeStore
) -> None:
    old = dev_token.ensure(tokens, store, tmp_path)
    old_record = tokens.resolve(old.token)
    assert old_record is not None
    minted, _ = tokens.issue(
        tenant_id="dev",
        subject_id="agent",
        scopes=["knowledge:read"],
        ancestor_token_ids=[old_record.token_hash],
    )

    rotated = dev_token.rotate(tokens, store, tmp_path)

    assert (rotated.reused, rotated.revoked) == (False, 1)
    assert tokens.resolve(old.token) is None
    assert tokens.resolve(minted) is None
    assert tokens.resolve(rotated.token) is not None
    assert _file(tmp_path) == (rotated.token, 0o600)
    assert dev_token.ensure(tokens, store, tmp_path) == dev_token.DevToken(rotated.token, reused=True)
