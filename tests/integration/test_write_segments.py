"""Segments through the write API (create item, upsert by external id, add revision) and the ingest
queue's ``upsert`` message: stored with the revision, part of an upsert's sameness, validated."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import ValidationError

from knowledge.bootstrap import use_container
from knowledge.contract.ingest_messages import INGEST_MESSAGE, UpsertMessage
from knowledge.conversion import convert
from knowledge.domain.segments import Segment
from knowledge.settings import Settings
from tests.conftest import TABLE_NAME
from tests.support.admin import AdminClient
from tests.support.documents import pdf_bytes
from tests.support.rest import SearchWorld, error_body, new_world

TENANT = "acme"
CONTENT = "Page one text.\n\nPage two text.\n"
SEGMENTS = [{"offset": 0, "page": 1}, {"offset": 16, "page": 2, "section": "Two"}]


@pytest.fixture
def world(table: Any) -> Iterator[SearchWorld]:
    built = new_world(settings=Settings(table_name=TABLE_NAME))
    yield built
    use_container(None)


@pytest.fixture
def writer(world: SearchWorld) -> AdminClient:
    return AdminClient(world.token(TENANT, "writer-1", scopes=("knowledge:read", "knowledge:write")))


@pytest.fixture
def items_path(world: SearchWorld) -> str:
    base = world.base(TENANT)
    return f"/v1/knowledge-bases/{base.knowledge_base_id}/items"


def _segments(world: SearchWorld, body: dict[str, Any]) -> tuple[Segment, ...]:
    revision = world.store.get_revision(TENANT, body["knowledge_item_id"], body["knowledge_revision_id"])
    assert revision is not None
    return revision.segments


def test_create_item_with_segments_stores_them(
    world: SearchWorld, writer: AdminClient, items_path: str
) -> None:
    body = writer.ok(
        "POST", items_path, {"title": "Manual", "content": CONTENT, "segments": SEGMENTS}, status=201
    )
    assert _segments(world, body) == (Segment(offset=0, page=1), Segment(offset=16, page=2, section="Two"))


def test_create_item_of_a_converted_pdf_stores_its_pages(
    world: SearchWorld, writer: AdminClient, items_path: str
) -> None:
    document = convert("a.pdf", pdf_bytes([["first page"], ["second page"]]))
    segments = [{"offset": segment.offset, "page": segment.page} for segment in document.segments]
    body = writer.ok(
        "POST", items_path, {"title": "A", "content": document.content, "segments": segments}, status=201
    )
    assert _segments(world, body) == document.segments


def test_upsert_with_other_segments_is_a_new_revision_and_same_ones_are_unchanged(
    world: SearchWorld, writer: AdminClient, items_path: str
) -> None:
    request = {"title": "Manual", "content": CONTENT, "external_id": "manual.pdf", "segments": SEGMENTS}
    first = writer.ok("POST", items_path, request, status=201)
    same = writer.ok("POST", items_path, request, status=200)
    other = writer.ok("POST", items_path, {**request, "segments": SEGMENTS[:1]}, status=201)
    assert same["knowledge_revision_id"] == first["knowledge_revision_id"]
    assert other["knowledge_revision_id"] != first["knowledge_revision_id"]
    assert _segments(world, other) == (Segment(offset=0, page=1),)


def test_add_revision_with_segments_stores_them(
    world: SearchWorld, writer: AdminClient, items_path: str
) -> None:
    item = writer.ok("POST", items_path, {"title": "Manual", "content": "old"}, status=201)
    body = writer.ok(
        "POST",
        f"/v1/knowledge-items/{item['knowledge_item_id']}/revisions",
        {"content": CONTENT, "segments": SEGMENTS},
        status=201,
    )
    assert [segment.page for segment in _segments(world, body)] == [1, 2]
    assert _segments(world, item) == ()


@pytest.mark.parametrize(
    ("segments", "problem"),
    [
        ([{"offset": 16}, {"offset": 0}], "strictly ascending"),
        ([{"offset": 500}], "within the content"),
        ([{"offset": 0, "rows": {"first": 5, "last": 2}}], "rows are [first, last]"),
        ([{"offset": 0, "colour": "red"}], "colour"),
    ],
)
def test_create_item_with_bad_segments_answers_validation_error(
    writer: AdminClient, items_path: str, segments: list[dict[str, Any]], problem: str
) -> None:
    reply = writer.call("POST", items_path, {"title": "Manual", "content": CONTENT, "segments": segments})
    assert reply.status == 400, reply.text
    assert reply.body["error"]["code"] in ("validation_error", "knowledge_invalid_request")
    assert problem in reply.text


def test_create_item_with_page_zero_answers_invalid_request_naming_the_bound(
    writer: AdminClient, items_path: str
) -> None:
    reply = writer.call(
        "POST", items_path, {"title": "Manual", "content": CONTENT, "segments": [{"offset": 0, "page": 0}]}
    )
    error = error_body(400, "knowledge_invalid_request", reply)
    assert "segments.0.page" in str(error["details"])


def _upsert(**fields: Any) -> dict[str, Any]:
    return {
        "op": "upsert",
        "knowledge_base_id": "kb_01M8MRW02Z8QZE1G21Y2AV32Y2",
        "external_id": "manual.pdf",
        "title": "Manual",
        "content": CONTENT,
        **fields,
    }


def test_upsert_message_with_segments_is_accepted() -> None:
    message = INGEST_MESSAGE.validate_python(_upsert(segments=SEGMENTS))
    assert isinstance(message, UpsertMessage)
    assert message.segments is not None
    assert [segment.to_domain().page for segment in message.segments] == [1, 2]


def test_upsert_message_with_segments_past_the_content_is_refused() -> None:
    with pytest.raises(ValidationError, match="within the content"):
        INGEST_MESSAGE.validate_python(_upsert(segments=[{"offset": 10_000}]))
