"""DynamoDBKnowledgeStore: paged content, code-point windows, the read I/O budget and integrity checks."""

from __future__ import annotations

import hashlib
import random
from typing import Any

import pytest

from knowledge.adapters.dynamodb_store import DynamoDBKnowledgeStore
from knowledge.domain.models import Revision, Source
from knowledge.errors import DependencyUnavailableError
from tests.conftest import TABLE_NAME
from tests.support.store import counted_calls, make_base, make_store, new_client

TENANT = "tenant-a"
PAGE = 1_000
FAMILY = "\U0001f469\u200d\U0001f469\u200d\U0001f467\u200d\U0001f466"  # 7 code points, one grapheme
FLAG = "\U0001f1eb\U0001f1f7"
THUMBS = "\U0001f44d\U0001f3fd"
CJK = "知識ベースの検索"
COMBINING = "e\u0301te\u0301 cafe\u0301 n\u0303"


def _unicode_content() -> str:
    """About 3,600 code points mixing scripts, with a ZWJ sequence straddling the first page boundary."""
    pieces = ["a" * (PAGE - 3), FAMILY]
    rng = random.Random(7)
    alphabet = [FAMILY, FLAG, THUMBS, CJK, COMBINING, "plain words ", "\n\n## Heading\n", "Ω≈ç√"]
    while sum(map(len, pieces)) < 3_600:
        pieces.append(rng.choice(alphabet))
    return "".join(pieces)


def _store_revision(store: DynamoDBKnowledgeStore, content: str) -> Revision:
    base = make_base(store, TENANT)
    _, revision = store.create_item(
        TENANT,
        base.knowledge_base_id,
        title="Doc",
        content=content,
        source=Source(),
        external_id=None,
        publish=True,
    )
    return revision


def _windows(total: int) -> list[tuple[int, int]]:
    """Offsets at, just before and just after every page boundary, and random ones, with varied limits."""
    offsets = {0, total}
    for boundary in range(0, total + 1, PAGE):
        offsets.update(offset for offset in (boundary - 1, boundary, boundary + 1) if 0 <= offset <= total)
    rng = random.Random(11)
    offsets.update(rng.randrange(total) for _ in range(20))
    limits = (0, 1, 2, 7, PAGE - 1, PAGE, PAGE + 1, 2_500, 10_000)
    return [(offset, limit) for offset in sorted(offsets) for limit in limits]


def test_read_content_windows_across_pages_equal_code_point_slices(table: Any) -> None:
    store = make_store(page_size_chars=PAGE)
    content = _unicode_content()
    assert content[PAGE - 3 : PAGE + 4] == FAMILY
    revision = _store_revision(store, content)

    for offset, limit in _windows(len(content)):
        window = store.read_content(revision, offset=offset, limit=limit)

        assert window.text == content[offset : offset + limit], (offset, limit)
        assert (window.offset, window.limit, window.total_chars) == (offset, limit, len(content))
        assert window.truncated == (offset + limit < len(content))


def test_read_content_family_emoji_split_by_page_boundary_reads_whole(table: Any) -> None:
    store = make_store(page_size_chars=PAGE)
    content = _unicode_content()
    revision = _store_revision(store, content)

    window = store.read_content(revision, offset=PAGE - 3, limit=len(FAMILY))

    assert window.text == FAMILY
    assert revision.page_count == -(-len(content) // PAGE)


def test_read_all_content_multilingual_round_trips_with_hash(table: Any) -> None:
    store = make_store(page_size_chars=PAGE)
    content = _unicode_content()
    revision = _store_revision(store, content)

    assert store.read_all_content(revision) == content
    assert revision.sha256 == hashlib.sha256(content.encode("utf-8")).hexdigest()
    assert revision.total_chars == len(content)


def test_read_content_large_revision_round_trips_within_one_query_per_window(table: Any) -> None:
    client = new_client()
    store = make_store(client)
    paragraph = "Knowledge for agents — 知識 🧠 e\u0301. " * 3
    content = (paragraph * (1_500_000 // len(paragraph) + 1))[:1_500_000]
    revision = _store_revision(store, content)

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
    revision = _store_revision(store, "x" * 5_000)

    with counted_calls(client, "Query") as queries, counted_calls(client, "GetItem") as gets:
        store.read_content(revision, offset=PAGE - 10, limit=20)

    assert (len(queries), len(gets)) == (1, 0)


def test_read_content_offset_at_total_returns_empty_text(table: Any) -> None:
    store = make_store(page_size_chars=PAGE)
    revision = _store_revision(store, "abc")

    window = store.read_content(revision, offset=3, limit=10)

    assert (window.text, window.truncated) == ("", False)


def test_read_content_offset_past_total_raises_value_error(table: Any) -> None:
    store = make_store(page_size_chars=PAGE)
    revision = _store_revision(store, "abc")

    with pytest.raises(ValueError, match="offset"):
        store.read_content(revision, offset=4, limit=1)


def test_read_content_empty_revision_reads_empty(table: Any) -> None:
    store = make_store(page_size_chars=PAGE)
    revision = _store_revision(store, "")

    assert revision.page_count == 0
    assert store.read_content(revision, offset=0, limit=10).text == ""
    assert store.read_all_content(revision) == ""


def test_read_content_revision_with_other_page_size_reads_by_its_own(table: Any) -> None:
    writer = make_store(page_size_chars=PAGE)
    content = _unicode_content()
    revision = _store_revision(writer, content)
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
    revision = _store_revision(store, "y" * 3_000)
    new_client().delete_item(TableName=TABLE_NAME, Key=_page_key(revision, 1))

    with pytest.raises(DependencyUnavailableError):
        store.read_content(revision, offset=900, limit=200)


def test_read_all_content_altered_page_raises_dependency_unavailable(table: Any) -> None:
    store = make_store(page_size_chars=PAGE)
    revision = _store_revision(store, "y" * 3_000)
    new_client().update_item(
        TableName=TABLE_NAME,
        Key=_page_key(revision, 2),
        UpdateExpression="SET #text = :text",
        ExpressionAttributeNames={"#text": "text"},
        ExpressionAttributeValues={":text": {"S": "z" * PAGE}},
    )

    with pytest.raises(DependencyUnavailableError):
        store.read_all_content(revision)
