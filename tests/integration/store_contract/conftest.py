"""Every test of the store contract runs once per adapter of ``tests.support.store.STORES``."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from knowledge.domain.models import KnowledgeBase
from knowledge.ports import KnowledgeStore
from tests.support.store import STORES, TickingClock, make_base, open_store, serialized_dynamodb

TENANT = "tenant-a"
OTHER_TENANT = "tenant-b"

StoreFactory = Callable[..., KnowledgeStore]


@pytest.fixture(params=STORES)
def new_store(request: pytest.FixtureRequest) -> Iterator[StoreFactory]:
    """Builds stores of one adapter: ``new_store(page_size_chars=...)``. moto answers one request
    at a time, as DynamoDB applies each conditional write atomically (``serialized_dynamodb``)."""
    kind: str = request.param

    def build(**kwargs: Any) -> KnowledgeStore:
        return open_store(kind, **kwargs)

    if kind == "memory":
        yield build
        return
    request.getfixturevalue("table")
    with serialized_dynamodb():
        yield build


@pytest.fixture
def store(new_store: StoreFactory) -> KnowledgeStore:
    """A store whose clock ticks a second on every write."""
    return new_store(clock=TickingClock())


@pytest.fixture
def base(store: KnowledgeStore) -> KnowledgeBase:
    return make_base(store, TENANT)
