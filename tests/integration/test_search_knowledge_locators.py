"""Locators into the original document through ``POST /v1/tools/search_knowledge``: a converted
PDF's hit names its page and a read can start at a page, a workbook's hit its sheet and rows, a
Word document's its section; a revision without segments keeps plain locators."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from knowledge.bootstrap import use_container
from knowledge.conversion import convert
from knowledge.domain.models import KnowledgeBase, KnowledgeItem
from tests.support.documents import docx_bytes, pdf_bytes, xlsx_bytes
from tests.support.rest import SearchWorld, error_body, new_world

FILLER = [
    f"General remarks line {number} about harbour operations and crew schedules." for number in range(12)
]


@pytest.fixture
def world(table: Any) -> Iterator[SearchWorld]:
    built = new_world()
    built.install()
    yield built
    use_container(None)


@pytest.fixture
def base(world: SearchWorld) -> KnowledgeBase:
    return world.base()


def _publish(world: SearchWorld, base: KnowledgeBase, name: str, data: bytes) -> KnowledgeItem:
    document = convert(name, data)
    item, _ = world.publish(base, document.title or name, document.content, segments=document.segments)
    return item


@pytest.fixture
def manual(world: SearchWorld, base: KnowledgeBase) -> KnowledgeItem:
    pages = [
        ["Harbour manual", *FILLER],
        [*FILLER, "Moor the ferry with quadruple hawsers during equinox gales."],
        [*FILLER, "Dredge the silted basin before the regatta weekend."],
    ]
    return _publish(world, base, "manual.pdf", pdf_bytes(pages))


def test_search_knowledge_pdf_hit_names_its_page(world: SearchWorld, manual: KnowledgeItem) -> None:
    reply = world.search(world.token(), "quadruple hawsers equinox gales")
    top = reply.body["results"][0]
    assert top["knowledge_item_id"] == manual.knowledge_item_id
    assert top["locator"]["page"] == 2
    assert set(top["locator"]) == {"offset", "length", "page"}


def test_search_knowledge_read_of_page_zero_starts_at_offset(
    world: SearchWorld, manual: KnowledgeItem
) -> None:
    body = world.read(world.token(), manual.knowledge_item_id, page=0, offset=3, limit_chars=20).body
    assert (body["content_offset"], body["locator"]["page"]) == (3, 1)


def test_search_knowledge_read_starts_at_a_page(world: SearchWorld, manual: KnowledgeItem) -> None:
    body = world.read(world.token(), manual.knowledge_item_id, page=3, limit_chars=200).body
    assert body["content"].startswith("General remarks line 0")
    assert body["locator"]["page"] == 3
    whole = world.read(world.token(), manual.knowledge_item_id, limit_chars=10_000).body["content"]
    assert whole[body["content_offset"] :].startswith(body["content"])
    assert "silted basin" in whole[body["content_offset"] :]
    assert "quadruple" not in whole[body["content_offset"] :]


def test_search_knowledge_read_of_a_missing_page_is_page_unavailable(
    world: SearchWorld, manual: KnowledgeItem
) -> None:
    error = error_body(
        404, "knowledge_page_unavailable", world.read(world.token(), manual.knowledge_item_id, page=9)
    )
    assert error["details"] == {"page": 9, "first_page": 1, "last_page": 3}


def test_search_knowledge_read_of_a_page_with_an_offset_is_invalid(
    world: SearchWorld, manual: KnowledgeItem
) -> None:
    reply = world.read(world.token(), manual.knowledge_item_id, page=2, offset=5)
    error_body(400, "knowledge_invalid_request", reply)


def test_search_knowledge_read_of_a_negative_page_is_out_of_bounds(
    world: SearchWorld, manual: KnowledgeItem
) -> None:
    error = error_body(
        400, "knowledge_invalid_request", world.read(world.token(), manual.knowledge_item_id, page=-1)
    )
    assert error["details"]["fields"][0]["field"] == "page"


def test_search_knowledge_text_without_pages_has_no_page(world: SearchWorld, base: KnowledgeBase) -> None:
    item, _ = world.publish(base, "Plain", "Plain text with no pages at all.")
    error = error_body(
        404, "knowledge_page_unavailable", world.read(world.token(), item.knowledge_item_id, page=1)
    )
    assert error["details"] == {"page": 1, "first_page": None, "last_page": None}
    hit = world.search(world.token(), "plain text pages").body["results"][0]
    assert set(hit["locator"]) == {"offset", "length"}


def test_search_knowledge_xlsx_hit_names_sheet_and_rows(world: SearchWorld, base: KnowledgeBase) -> None:
    rows: list[list[object]] = [["Vessel", "Berth", "Cargo"]]
    rows += [[f"Vessel{number}", number, "grain"] for number in range(2, 60)]
    rows[40][2] = "refrigerated mangoes"
    item = _publish(
        world,
        base,
        "berths.xlsx",
        xlsx_bytes({"Summary": [["Port", "Total"], ["North", 58]], "Berths": rows}),
    )
    top = world.search(world.token(), "refrigerated mangoes").body["results"][0]
    assert top["knowledge_item_id"] == item.knowledge_item_id
    assert top["locator"]["sheet"] == "Berths"
    first, last = top["locator"]["rows"]["first"], top["locator"]["rows"]["last"]
    assert first <= 41 <= last


def test_search_knowledge_docx_hit_names_its_section(world: SearchWorld, base: KnowledgeBase) -> None:
    data = docx_bytes(
        [
            ("h1", "Crane handbook"),
            *[("p", line) for line in FILLER],
            ("h2", "Winch maintenance"),
            ("p", "Grease the slewing ring with lithium compound monthly."),
            ("table", [["Part", "Interval"], ["Wire rope", "weekly"]]),
        ]
    )
    item = _publish(world, base, "crane.docx", data)
    top = world.search(world.token(), "slewing ring lithium compound").body["results"][0]
    assert top["knowledge_item_id"] == item.knowledge_item_id
    assert top["locator"]["section"] == "Winch maintenance"
