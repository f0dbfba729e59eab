"""DynamoDBKnowledgeStore content: pages on the table, the read I/O budget and integrity checks."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from knowledge.domain.models import Revision
from knowledge.errors import DependencyUnavailableError
from tests.conftest import TABLE_NAME
from tests.support.content import PAGE, store_revision, unicode_content
from tests.support.store import counted_calls, make_store, new_client


def test_read_content_large_revision_round_trips_within_one_query_per_window(table: Any) -> None:
    client = new_client()
    store = make_store(client)
    paragraph = "Knowledge for agents — 知識 🧠 e\u0301. " * 3
    content = (paragraph * (1_500_000 // len(paragraph) + 1))[:1_500_000]
    revision = store_revision(store, content)

    pieces: list[str] = []
    for offset in range(0, len(content), 10_000):
        with counted_calls(client, "Query") as queries:
            window = store.read_content(revision, offset=offset, limit=10_000)
        assert len(queries) == 1
        pieces.append(window.text)

    assert "".join(pieces) == content
    assert store.read_all_content(revision) == content
    assert revision.sha256 == hashlib.sha256(content.encode("utf-8")).hexdigest()
    assert (revision.total_chars, revision.page_count) == (1_500_000, 30)


def test_read_content_issues_no_call_beyond_one_query(table: Any) -> None:
    client = new_client()
    store = make_store(client, page_size_chars=PAGE)
    revision = store_revision(store, "x" * 5_000)

    with counted_calls(client, "Query") as queries, counted_calls(client, "GetItem") as gets:
        store.read_content(revision, offset=PAGE - 10, limit=20)

    assert (len(queries), len(gets)) == (1, 0)


def test_read_content_revision_with_other_page_size_reads_by_its_own(table: Any) -> None:
    writer = make_store(page_size_chars=PAGE)
    content = unicode_content()
    revision = store_revision(writer, content)
    reader = make_store(page_size_chars=50_000)

    assert (
        reader.read_content(revision, offset=PAGE - 5, limit=1_500).text == content[PAGE - 5 : PAGE + 1_495]
    )


def _page_key(revision: Revision, number: int) -> dict[str, Any]:
    return {
        "PK": {"S": f"T#{revision.tenant_id}#ITEM#{revision.knowledge_item_id}"},
        "SK": {"S": f"PAGE#{revision.knowledge_revision_id}#{number:06d}"},
    }


def test_read_content_missing_page_raises_dependency_unavailable(table: Any) -> None:
    store = make_store(page_size_chars=PAGE)
    revision = store_revision(store, "y" * 3_000)
    new_client().delete_item(TableName=TABLE_NAME, Key=_page_key(revision, 1))

    with pytest.raises(DependencyUnavailableError):
        store.read_content(revision, offset=900, limit=200)


def test_read_all_content_altered_page_raises_dependency_unavailable(table: Any) -> None:
    store = make_store(page_size_chars=PAGE)
    revision = store_revision(store, "y" * 3_000)
    new_client().update_item(
        TableName=TABLE_NAME,
        Key=_page_key(revision, 2),
        UpdateExpression="SET #text = :text",
        ExpressionAttributeNames={"#text": "text"},
        ExpressionAttributeValues={":text": {"S": "z" * PAGE}},
    )

    with pytest.raises(DependencyUnavailableError):
        store.read_all_content(revision)
