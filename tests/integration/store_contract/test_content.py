"""The store contract: revision content read back whole or in code-point windows, across page
boundaries and grapheme clusters, with the revision's SHA-256."""

from __future__ import annotations

import hashlib
import random

import pytest

from tests.integration.store_contract.conftest import StoreFactory
from tests.support.content import FAMILY, PAGE, store_revision, unicode_content


def _windows(total: int) -> list[tuple[int, int]]:
    """Offsets at, just before and just after every page boundary, and random ones, with varied limits."""
    offsets = {0, total}
    for boundary in range(0, total + 1, PAGE):
        offsets.update(offset for offset in (boundary - 1, boundary, boundary + 1) if 0 <= offset <= total)
    rng = random.Random(11)
    offsets.update(rng.randrange(total) for _ in range(20))
    limits = (0, 1, 2, 7, PAGE - 1, PAGE, PAGE + 1, 2_500, 10_000)
    return [(offset, limit) for offset in sorted(offsets) for limit in limits]


def test_read_content_windows_across_pages_equal_code_point_slices(new_store: StoreFactory) -> None:
    store = new_store(page_size_chars=PAGE)
    content = unicode_content()
    assert content[PAGE - 3 : PAGE + 4] == FAMILY
    revision = store_revision(store, content)

    for offset, limit in _windows(len(content)):
        window = store.read_content(revision, offset=offset, limit=limit)

        assert window.text == content[offset : offset + limit], (offset, limit)
        assert (window.offset, window.limit, window.total_chars) == (offset, limit, len(content))
        assert window.truncated == (offset + limit < len(content))


def test_read_content_family_emoji_split_by_page_boundary_reads_whole(new_store: StoreFactory) -> None:
    store = new_store(page_size_chars=PAGE)
    content = unicode_content()
    revision = store_revision(store, content)

    window = store.read_content(revision, offset=PAGE - 3, limit=len(FAMILY))

    assert window.text == FAMILY
    assert revision.page_count == -(-len(content) // PAGE)


def test_read_all_content_multilingual_round_trips_with_hash(new_store: StoreFactory) -> None:
    store = new_store(page_size_chars=PAGE)
    content = unicode_content()
    revision = store_revision(store, content)

    assert store.read_all_content(revision) == content
    assert revision.sha256 == hashlib.sha256(content.encode("utf-8")).hexdigest()
    assert revision.total_chars == len(content)


def test_read_content_offset_at_total_returns_empty_text(new_store: StoreFactory) -> None:
    store = new_store(page_size_chars=PAGE)
    revision = store_revision(store, "abc")

    window = store.read_content(revision, offset=3, limit=10)

    assert (window.text, window.truncated) == ("", False)


def test_read_content_offset_past_total_raises_value_error(new_store: StoreFactory) -> None:
    store = new_store(page_size_chars=PAGE)
    revision = store_revision(store, "abc")

    with pytest.raises(ValueError, match="offset"):
        store.read_content(revision, offset=4, limit=1)


def test_read_content_empty_revision_reads_empty(new_store: StoreFactory) -> None:
    store = new_store(page_size_chars=PAGE)
    revision = store_revision(store, "")

    assert revision.page_count == 0
    assert store.read_content(revision, offset=0, limit=10).text == ""
    assert store.read_all_content(revision) == ""


def test_store_page_size_out_of_range_raises_value_error(new_store: StoreFactory) -> None:
    with pytest.raises(ValueError, match="page_size_chars"):
        new_store(page_size_chars=90_001)
