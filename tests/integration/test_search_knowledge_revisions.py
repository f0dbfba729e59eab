"""Revisions through ``POST /v1/tools/search_knowledge``: superseded and draft revisions, the read-time
truth check against a stale index, bounded windows over long content, and excerpts as locators."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import pytest

from knowledge.bootstrap import use_container
from knowledge.domain.models import KnowledgeBase, KnowledgeItem, Revision
from knowledge.domain.retrieval.hits import CANDIDATE_DEPTH
from tests.support.rest import SearchWorld, error_body, new_world, result_items


@pytest.fixture
def world(table: Any) -> Iterator[SearchWorld]:
    built = new_world()
    yield built
    use_container(None)


@pytest.fixture
def base(world: SearchWorld) -> KnowledgeBase:
    return world.base()


def _new_revision(
    world: SearchWorld, item: KnowledgeItem, content: str, *, publish: bool
) -> tuple[KnowledgeItem, Revision]:
    return world.store.add_revision(
        item.tenant_id,
        item.knowledge_item_id,
        content=content,
        title=None,
        source=None,
        publish=publish,
        expected_version=item.version,
    )


# -- superseded and draft revisions -------------------------------------------------------------


def test_search_knowledge_superseded_revision_is_readable_when_pinned(
    world: SearchWorld, base: KnowledgeBase
) -> None:
    item, first = world.publish(base, "Runbook", "Version one of the runbook.")
    updated, second = _new_revision(world, item, "Version two of the runbook.", publish=True)

    reply = world.read(
        world.token(), item.knowledge_item_id, knowledge_revision_id=first.knowledge_revision_id
    )

    assert reply.status == 200
    body = reply.body
    assert body["content"] == "Version one of the runbook."
    assert body["knowledge_revision_id"] == first.knowledge_revision_id
    assert (body["is_current"], body["current_revision_id"]) == (False, second.knowledge_revision_id)
    assert updated.current_revision_id == second.knowledge_revision_id


def test_search_knowledge_unpinned_read_answers_current_revision(
    world: SearchWorld, base: KnowledgeBase
) -> None:
    item, _ = world.publish(base, "Runbook", "Version one of the runbook.")
    _, second = _new_revision(world, item, "Version two of the runbook.", publish=True)

    body = world.read(world.token(), item.knowledge_item_id).body

    assert (body["content"], body["knowledge_revision_id"], body["is_current"]) == (
        "Version two of the runbook.",
        second.knowledge_revision_id,
        True,
    )


def test_search_knowledge_draft_revision_is_never_readable_or_found(
    world: SearchWorld, base: KnowledgeBase
) -> None:
    item, _ = world.publish(base, "Runbook", "The published runbook text.")
    updated, draft = _new_revision(world, item, "Unreleased zephyr procedure.", publish=False)
    # Even an index that (wrongly) holds the draft must not surface it.
    world.index_revision(base, updated, draft, "Unreleased zephyr procedure.")
    reader = world.token()

    pinned = world.read(reader, item.knowledge_item_id, knowledge_revision_id=draft.knowledge_revision_id)
    found = world.search(reader, "unreleased zephyr procedure").body["results"]

    error_body(404, "knowledge_resource_unavailable", pinned)
    assert draft.knowledge_revision_id not in {result["knowledge_revision_id"] for result in found}


def test_search_knowledge_revision_of_another_item_is_unavailable(
    world: SearchWorld, base: KnowledgeBase
) -> None:
    item, _ = world.publish(base, "Runbook", "Runbook text.")
    _, other_revision = world.publish(base, "Other", "Other text.")

    reply = world.read(
        world.token(), item.knowledge_item_id, knowledge_revision_id=other_revision.knowledge_revision_id
    )

    error_body(404, "knowledge_resource_unavailable", reply)


# -- read-time truth check ----------------------------------------------------------------------


def test_search_knowledge_superseded_index_entry_is_replaced_by_truth(
    world: SearchWorld, base: KnowledgeBase
) -> None:
    item, first = world.publish(base, "Zephyr", "Zephyr zephyr zephyr: the old procedure.")
    _new_revision(world, item, "Completely rewritten text.", publish=True)  # the index still holds revision 1
    fresh, _ = world.publish(base, "Guide", "A short zephyr note.")

    results = world.search(world.token(), "zephyr").body["results"]

    assert [result["knowledge_item_id"] for result in results] == [fresh.knowledge_item_id]
    assert first.knowledge_revision_id not in {result["knowledge_revision_id"] for result in results}


def test_search_knowledge_stale_candidates_are_skipped_and_list_filled(
    world: SearchWorld, base: KnowledgeBase
) -> None:
    # Stale items outrank every live one in both legs and fill more chunks than the first round of
    # candidates holds (CANDIDATE_DEPTH per leg), so that round has no live item at all: the service
    # must refill from a deeper round.
    stale_text = "\n\n".join(["zephyr zephyr zephyr zephyr ledger ledger ledger " * 12] * 6)
    stale = world.publish_many(base, [(f"Zephyr ledger {number}", stale_text) for number in range(40)])
    for item in stale:
        world.store.archive_item(base.tenant_id, item.knowledge_item_id, expected_version=item.version)
    live = world.publish_many(
        base, [(f"Note {number}", f"One zephyr mention, note {number}.") for number in range(4)]
    )
    assert len(world.index) - len(live) > CANDIDATE_DEPTH

    replies = [world.search(world.token(), "zephyr ledger", max_results=size) for size in (3, 50)]

    assert len(result_items(replies[0])) == 3
    assert set(result_items(replies[1])) == {item.knowledge_item_id for item in live}
    assert result_items(replies[0]) == result_items(replies[1])[:3]


# -- bounded windows ----------------------------------------------------------------------------


def _mixed_script_text(length: int) -> str:
    """Latin, Cyrillic, Greek, Arabic, CJK, Hangul, combining marks, emoji (astral plane) and newlines."""
    alphabet = (
        "abcdefghijklmnopqrstuvwxyz ABCXYZ 0123456789 .,;:!?\n"
        "абвгдеёжзийклмнопрстуфхцчшщъыьэюя"
        "αβγδεζηθικλμνξοπρστυφχψω"
        "ابتثجحخدذرزسشصضطظعغفقكلمنهوي"
        "日本語の文書を検索する知識库中文内容한국어문서"
        "e\u0301a\u0308n\u0303"
        "\U0001f600\U0001f680\U0001f9ea\U0001f1ef\U0001f1f5\U0001f468\u200d\U0001f4bb"
    )
    generator = random.Random(20261129)
    return "".join(generator.choice(alphabet) for _ in range(length))


def test_search_knowledge_walking_long_revision_reproduces_it(
    world: SearchWorld, base: KnowledgeBase
) -> None:
    content = _mixed_script_text(120_000)
    item, _ = world.publish(base, "Long", content, indexed=False)
    reader = world.token()

    windows = [
        world.read(reader, item.knowledge_item_id, offset=offset, limit_chars=10_000).body
        for offset in range(0, 120_000, 10_000)
    ]

    assert "".join(window["content"] for window in windows) == content
    assert [window["content_truncated"] for window in windows] == [True] * 11 + [False]
    assert {window["content_total_chars"] for window in windows} == {120_000}
    assert [window["locator"] for window in windows] == [
        {"offset": offset, "length": 10_000} for offset in range(0, 120_000, 10_000)
    ]


def test_search_knowledge_offset_at_total_returns_empty_content(
    world: SearchWorld, base: KnowledgeBase
) -> None:
    content = _mixed_script_text(5_000)
    item, _ = world.publish(base, "Short", content, indexed=False)

    body = world.read(world.token(), item.knowledge_item_id, offset=5_000).body

    assert (body["content"], body["content_truncated"], body["locator"]) == (
        "",
        False,
        {"offset": 5_000, "length": 0},
    )


def test_search_knowledge_offset_past_total_returns_invalid_request(
    world: SearchWorld, base: KnowledgeBase
) -> None:
    item, _ = world.publish(base, "Short", "twelve chars", indexed=False)

    error = error_body(
        400, "knowledge_invalid_request", world.read(world.token(), item.knowledge_item_id, offset=13)
    )

    assert error["details"] == {"offset": 13, "content_total_chars": 12}


# -- excerpts -----------------------------------------------------------------------------------


def test_search_knowledge_excerpt_is_bounded_and_equals_read_of_its_locator(
    world: SearchWorld, base: KnowledgeBase
) -> None:
    filler = "Background paragraph about unrelated operations topics and procedures. " * 40
    content = f"{filler}\n\nThe zephyr rollback needs the ledger snapshot first.\n\n{filler}"
    item, _ = world.publish(base, "Rollback", content)
    reader = world.token()

    (result,) = world.search(reader, "zephyr rollback ledger").body["results"]
    locator = result["locator"]
    window = world.read(
        reader, item.knowledge_item_id, offset=locator["offset"], limit_chars=locator["length"]
    ).body

    assert 0 < len(result["excerpt"]) <= 320
    assert window["content"] == result["excerpt"]
    assert "zephyr" in result["excerpt"]
    assert result["reference"] == window["reference"]
