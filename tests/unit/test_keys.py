"""Key builders of the single table: layout of DESIGN §3, tenant in every key, no key confusion."""

from __future__ import annotations

import hashlib

import pytest

from knowledge.adapters.dynamodb import keys


def test_key_builders_follow_the_documented_layout() -> None:
    ext = hashlib.sha256(b"doc/1").hexdigest()

    assert keys.base_key("t1", "kb_1") == ("T#t1#KB#kb_1", "META")
    assert keys.item_key("t1", "ki_1") == ("T#t1#ITEM#ki_1", "META")
    assert keys.revision_key("t1", "ki_1", "kr_1") == ("T#t1#ITEM#ki_1", "REV#kr_1")
    assert keys.page_key("t1", "ki_1", "kr_1", 7) == ("T#t1#ITEM#ki_1", "PAGE#kr_1#000007")
    assert keys.external_id_key("t1", "kb_1", "doc/1") == (f"T#t1#KB#kb_1#EXT#{ext}", "META")
    assert keys.token_key("abc") == ("TOKEN#abc", "META")
    assert keys.item_index_key("t1", "kb_1", "ki_1") == ("T#t1#KB#kb_1", "ITEM#ki_1")
    assert keys.base_index_key("t1", "kb_1") == ("T#t1#BASES", "KB#kb_1")
    assert keys.note_index_key("t1", "nt_1") == ("T#t1#NOTES", "NOTE#nt_1")
    assert keys.bundle_job_key("t1", "ex_1") == ("T#t1#BUNDLE#ex_1", "META")


def test_page_sort_keys_sort_in_page_order() -> None:
    sort_keys = [keys.page_sort_key("kr_1", number) for number in (0, 9, 10, 99, 100, 999_999)]

    assert sort_keys == sorted(sort_keys)
    assert all(key.startswith(keys.page_prefix("kr_1")) for key in sort_keys)


@pytest.mark.parametrize("number", [-1, 1_000_000])
def test_page_sort_key_out_of_range_raises_value_error(number: int) -> None:
    with pytest.raises(ValueError, match="page number"):
        keys.page_sort_key("kr_1", number)


@pytest.mark.parametrize(
    ("tenant_id", "identifier"),
    [("t1", "kb_1#EXT#abc"), ("t1#KB#x", "kb_1"), ("", "kb_1"), ("t1", "")],
)
def test_base_key_component_with_separator_or_empty_raises_value_error(
    tenant_id: str, identifier: str
) -> None:
    with pytest.raises(ValueError, match="key components"):
        keys.base_key(tenant_id, identifier)


def test_external_id_key_accepts_any_text_and_differs_per_tenant() -> None:
    external_id = "path/with#hash and spaces"

    first = keys.external_id_key("t1", "kb_1", external_id)
    second = keys.external_id_key("t2", "kb_1", external_id)

    assert first != second
    assert "#hash" not in first.pk
