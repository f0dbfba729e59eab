"""The store contract: listings paginate completely, and next tokens are bound to their listing and
tenant."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from knowledge.domain.models import KnowledgeBase, Source
from knowledge.errors import RequestValidationError
from knowledge.ports import KnowledgeStore
from tests.integration.store_contract.conftest import OTHER_TENANT as OTHER
from tests.integration.store_contract.conftest import TENANT
from tests.support.store import make_base


def _item(store: KnowledgeStore, tenant_id: str, base: KnowledgeBase, n: int) -> str:
    item, _ = store.create_item(
        tenant_id,
        base.knowledge_base_id,
        title=f"Item {n}",
        content=f"content {n}",
        source=Source(),
        external_id=None,
        publish=n % 2 == 0,
    )
    return item.knowledge_item_id


def _walk_items(store: KnowledgeStore, tenant_id: str, base_id: str, limit: int) -> list[list[str]]:
    pages: list[list[str]] = []
    token: str | None = None
    while True:
        page = store.list_items(tenant_id, base_id, limit=limit, next_token=token)
        pages.append([item.knowledge_item_id for item in page.entries])
        token = page.next_token
        if token is None:
            return pages


def test_list_items_pagination_walks_every_item_exactly_once(store: KnowledgeStore) -> None:
    base = make_base(store, TENANT)
    created = [_item(store, TENANT, base, n) for n in range(23)]
    other_base = make_base(store, TENANT)
    _item(store, TENANT, other_base, 99)

    pages = _walk_items(store, TENANT, base.knowledge_base_id, limit=5)

    walked = [item_id for page in pages for item_id in page]
    assert walked == sorted(created)
    assert [len(page) for page in pages] == [5, 5, 5, 5, 3]


def test_list_items_exact_multiple_of_limit_ends_without_empty_page(store: KnowledgeStore) -> None:
    base = make_base(store, TENANT)
    created = [_item(store, TENANT, base, n) for n in range(6)]

    pages = _walk_items(store, TENANT, base.knowledge_base_id, limit=3)

    assert pages == [sorted(created)[:3], sorted(created)[3:]]


def test_list_items_token_from_other_tenant_raises_request_validation(store: KnowledgeStore) -> None:
    base = make_base(store, TENANT)
    for n in range(3):
        _item(store, TENANT, base, n)
    token = store.list_items(TENANT, base.knowledge_base_id, limit=1, next_token=None).next_token
    assert token is not None
    other_base = make_base(store, OTHER)

    with pytest.raises(RequestValidationError):
        store.list_items(OTHER, other_base.knowledge_base_id, limit=1, next_token=token)
    with pytest.raises(RequestValidationError):
        store.list_items(OTHER, base.knowledge_base_id, limit=1, next_token=token)


def test_list_items_token_from_other_listing_raises_request_validation(store: KnowledgeStore) -> None:
    base = make_base(store, TENANT)
    item_id = _item(store, TENANT, base, 0)
    for n in range(2):
        store.add_revision(
            TENANT, item_id, content=f"v{n}", title=None, source=None, publish=False, expected_version=None
        )
    revisions_token = store.list_revisions(TENANT, item_id, limit=1, next_token=None).next_token
    make_base(store, TENANT)
    bases_token = store.list_bases(TENANT, limit=1, next_token=None).next_token
    assert revisions_token is not None
    assert bases_token is not None

    with pytest.raises(RequestValidationError):
        store.list_items(TENANT, base.knowledge_base_id, limit=1, next_token=revisions_token)
    with pytest.raises(RequestValidationError):
        store.list_items(TENANT, base.knowledge_base_id, limit=1, next_token=bases_token)


def _forged(payload: Any) -> str:
    return base64.urlsafe_b64encode(json.dumps(payload).encode()).decode().rstrip("=")


@pytest.mark.parametrize(
    "token",
    [
        "",
        "%%%not-base64%%%",
        base64.urlsafe_b64encode(b"\xff\xfe not json").decode(),
        _forged(["a", "list"]),
        _forged({"l": "items:T#tenant-a#KB#kb_x", "k": "not a key"}),
        "A" * 5_000,
    ],
)
def test_list_items_malformed_token_raises_request_validation(store: KnowledgeStore, token: str) -> None:
    base = make_base(store, TENANT)

    with pytest.raises(RequestValidationError):
        store.list_items(TENANT, base.knowledge_base_id, limit=1, next_token=token)


def test_list_revisions_returns_newest_first_across_pages(store: KnowledgeStore) -> None:
    base = make_base(store, TENANT)
    item, first = store.create_item(
        TENANT,
        base.knowledge_base_id,
        title="T",
        content="v0",
        source=Source(),
        external_id=None,
        publish=False,
    )
    created = [first.knowledge_revision_id]
    for n in range(1, 5):
        _, revision = store.add_revision(
            TENANT,
            item.knowledge_item_id,
            content=f"v{n}",
            title=None,
            source=None,
            publish=False,
            expected_version=None,
        )
        created.append(revision.knowledge_revision_id)

    walked: list[str] = []
    token: str | None = None
    while True:
        page = store.list_revisions(TENANT, item.knowledge_item_id, limit=2, next_token=token)
        walked.extend(revision.knowledge_revision_id for revision in page.entries)
        token = page.next_token
        if token is None:
            break

    assert walked == list(reversed(created))


def test_list_bases_lists_only_the_tenants_bases_across_pages(store: KnowledgeStore) -> None:
    created = {make_base(store, TENANT).knowledge_base_id for _ in range(7)}
    make_base(store, OTHER)

    walked: list[str] = []
    token: str | None = None
    while True:
        page = store.list_bases(TENANT, limit=3, next_token=token)
        walked.extend(base.knowledge_base_id for base in page.entries)
        token = page.next_token
        if token is None:
            break

    assert sorted(walked) == sorted(created)
    assert len(walked) == len(created)


def test_list_items_limit_below_one_raises_value_error(store: KnowledgeStore) -> None:
    base = make_base(store, TENANT)

    with pytest.raises(ValueError, match="limit"):
        store.list_items(TENANT, base.knowledge_base_id, limit=0, next_token=None)
