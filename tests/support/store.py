"""Helpers for tests of the knowledge stores: the DynamoDB one under moto and the in-memory one."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any
from unittest import mock

import boto3
from botocore.awsrequest import AWSResponse, HTTPHeaders
from moto.dynamodb.responses import DynamoHandler

from knowledge.adapters.dynamodb.knowledge_store import DynamoDBKnowledgeStore
from knowledge.adapters.in_process.store import InProcessKnowledgeStore
from knowledge.domain.models import KnowledgeBase, Scope
from knowledge.ports import BaseStore, KnowledgeStore
from tests.conftest import TABLE_NAME

REGION = "us-east-1"


def new_client() -> Any:
    """A fresh low-level DynamoDB client (create them on the main thread: boto3's default session is not
    thread-safe)."""
    return boto3.client("dynamodb", region_name=REGION)


class TickingClock:
    """Aware UTC datetimes that advance by ``step`` on every call, so every write has its own instant."""

    def __init__(self, start: datetime | None = None, step: timedelta = timedelta(seconds=1)) -> None:
        self._now = start or datetime(2026, 1, 1, tzinfo=UTC)
        self._step = step
        self._lock = threading.Lock()

    def __call__(self) -> datetime:
        with self._lock:
            self._now += self._step
            return self._now


def make_store(client: Any = None, **kwargs: Any) -> DynamoDBKnowledgeStore:
    """A store on the test table with its own client unless one is given."""
    return DynamoDBKnowledgeStore(TABLE_NAME, dynamodb_client=client or new_client(), **kwargs)


STORES = ("memory", "dynamodb")
"""Every ``KnowledgeStore`` adapter; ``dynamodb`` needs the ``table`` fixture (moto)."""


def open_store(kind: str, **kwargs: Any) -> KnowledgeStore:
    """A new store of ``kind`` (``clock``, ``page_size_chars`` as the adapters take them)."""
    if kind == "memory":
        return InProcessKnowledgeStore(**kwargs)
    return make_store(**kwargs)


def make_base(store: BaseStore, tenant_id: str = "tenant-a") -> KnowledgeBase:
    return store.create_base(tenant_id, name="Handbook", owner_id="owner-1", scope=Scope.TENANT, team_id=None)


@contextmanager
def counted_calls(client: Any, operation: str) -> Iterator[list[str]]:
    """Record every API call ``operation`` (e.g. ``"Query"``) the client makes while the block runs."""
    calls: list[str] = []

    def record(**_: Any) -> None:
        calls.append(operation)

    event = f"before-call.dynamodb.{operation}"
    client.meta.events.register(event, record)
    try:
        yield calls
    finally:
        client.meta.events.unregister(event, record)


Answer = Callable[[dict[str, Any]], dict[str, Any] | None]
"""Maps a request's JSON body to a parsed reply (``{"Error": {"Code": ...}}`` fails) or ``None``."""


@contextmanager
def intercepted(client: Any, operation: str, answer: Answer) -> Iterator[None]:
    """Let ``answer`` reply to the client's ``operation`` calls instead of DynamoDB (``None``: pass through).

    Like botocore's Stubber, but only for one operation, so every other call still reaches moto and
    tests can check the stored state after a failure.
    """

    def reply(params: dict[str, Any], **_: Any) -> tuple[AWSResponse, dict[str, Any]] | None:
        parsed = answer(json.loads(params.get("body") or b"{}"))
        if parsed is None:
            return None
        status = 400 if "Error" in parsed else 200
        return AWSResponse("https://dynamodb.invalid", status, HTTPHeaders(), None), parsed

    event = f"before-call.dynamodb.{operation}"
    client.meta.events.register(event, reply)
    try:
        yield
    finally:
        client.meta.events.unregister(event, reply)


def failing(code: str, times: int, **fields: Any) -> Answer:
    """An ``Answer`` failing the first ``times`` calls with error ``code`` (and modeled ``fields``)."""
    remaining = [times]

    def answer(_: dict[str, Any]) -> dict[str, Any] | None:
        if remaining[0] == 0:
            return None
        remaining[0] -= 1
        return {"Error": {"Code": code, "Message": "injected"}, **fields}

    return answer


@contextmanager
def serialized_dynamodb() -> Iterator[None]:
    """Make moto's in-process DynamoDB answer one request at a time.

    DynamoDB applies each conditional write and transaction atomically; moto does not lock, and its
    transaction rollback restores a copy of the whole table, so threads racing inside moto could
    lose each other's writes. Serializing requests restores DynamoDB's guarantees without hiding
    any race between the store's separate requests.
    """
    lock = threading.Lock()
    original: Callable[..., Any] = DynamoHandler.call_action

    def call_action(self: DynamoHandler) -> Any:
        with lock:
            return original(self)

    with mock.patch.object(DynamoHandler, "call_action", call_action):
        yield


def raw_items(prefix: str) -> list[dict[str, Any]]:
    """Every stored record whose sort key starts with ``prefix`` (a full scan; small tables only)."""
    client = new_client()
    paginator = client.get_paginator("scan")
    found: list[dict[str, Any]] = []
    for page in paginator.paginate(TableName=TABLE_NAME):
        found.extend(item for item in page["Items"] if item["SK"]["S"].startswith(prefix))
    return found
