"""The stored items quota over the real handlers on moto: a tenant at its cap is answered 429
``rate_limited`` (not retryable, no ``Retry-After``) for a new knowledge item or memory; forgetting
or archiving frees room; an idempotent retry counts once; another tenant is unaffected. A note
removed by its own expiry (DynamoDB's TTL sweep, reported on the stream and fed to the indexer's
handler) frees its slot once, however often its record is delivered."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from knowledge.bootstrap import use_container
from tests.support.admin import AdminClient
from tests.support.memory import call, forget, memory_token, remember
from tests.support.rest import SearchWorld, error_body
from tests.support.store import make_store, new_client
from tests.support.streams import StreamReader, drain, run_indexer, ttl_sweep

LIMIT = 3
READ = "knowledge:read"
WRITE = "knowledge:write"
ADMIN = "knowledge:admin"


@pytest.fixture
def world(table: Any) -> Iterator[SearchWorld]:
    client = new_client()
    built = SearchWorld(store=make_store(client, stored_items_limit=LIMIT), dynamodb=client)
    built.install()
    yield built
    use_container(None)


def _curator(world: SearchWorld, tenant_id: str = "acme") -> AdminClient:
    return AdminClient(world.token(tenant_id, "curator-1", scopes=[READ, WRITE, ADMIN]))


def _base_path(curator: AdminClient) -> str:
    base = curator.ok("POST", "/v1/knowledge-bases", {"name": "Ops", "scope": "tenant"}, status=201)
    return f"/v1/knowledge-bases/{base['knowledge_base_id']}/items"


def _new_item(curator: AdminClient, items: str, title: str) -> Any:
    return curator.call("POST", items, {"title": title, "content": f"{title}: switch traffic at the router."})


def test_stored_items_quota_full_tenant_is_refused_not_retryable_without_retry_after(
    world: SearchWorld,
) -> None:
    curator = _curator(world)
    items = _base_path(curator)
    agent = memory_token(world, "alice")
    assert _new_item(curator, items, "First").status == 201
    assert remember(agent, "The staging cluster is called kestrel.").status == 201
    assert _new_item(curator, items, "Second").status == 201

    item_refused = _new_item(curator, items, "Third")
    memory_refused = remember(agent, "Deployments go out on Tuesdays.")

    for reply in (item_refused, memory_refused):
        error = error_body(429, "rate_limited", reply)
        assert error["retryable"] is False
        assert error["details"] == {"quota": "stored_items", "limit": LIMIT}
        assert "Retry-After" not in reply.headers
    listed = curator.ok("GET", items)
    assert sorted(item["title"] for item in listed["items"]) == ["First", "Second"]


def test_stored_items_quota_forget_hard_and_archive_free_room(world: SearchWorld) -> None:
    curator = _curator(world)
    items = _base_path(curator)
    agent = memory_token(world, "alice")
    first = _new_item(curator, items, "First").body
    note = remember(agent, "The staging cluster is called kestrel.").body["note"]
    assert remember(agent, "Deployments go out on Tuesdays.").status == 201
    assert remember(agent, "Releases are tagged from main.").status == 429

    assert forget(agent, note["note_id"], "hard").status == 200
    assert remember(agent, "Releases are tagged from main.").status == 201
    archive = f"/v1/knowledge-items/{first['knowledge_item_id']}/archive"
    curator.ok("POST", archive, {"expected_version": first["version"]})
    assert _new_item(curator, items, "Second").status == 201
    assert _new_item(curator, items, "Third").status == 429


def test_stored_items_quota_idempotent_retry_counts_once(world: SearchWorld) -> None:
    agent = memory_token(world, "alice")
    headers = {"Idempotency-Key": "note-1"}
    body = {"content": "The on-call phone is in drawer 3."}

    first = call("POST", "/v1/tools/remember", body, agent, headers=headers)
    again = call("POST", "/v1/tools/remember", body, agent, headers=headers)
    duplicate = remember(agent, "The on-call phone is in drawer 3.")  # same content, no key

    assert (first.status, again.status, again.body) == (201, 201, first.body)
    assert (duplicate.status, duplicate.body["result"]) == (200, "duplicate")
    assert remember(agent, "Deployments go out on Tuesdays.").status == 201
    assert remember(agent, "Releases are tagged from main.").status == 201
    assert remember(agent, "Builds run on arm64.").status == 429


def test_stored_items_quota_of_one_tenant_leaves_another_unaffected(world: SearchWorld) -> None:
    agent = memory_token(world, "alice")
    for n in range(LIMIT):
        assert remember(agent, f"Fact number {n}.").status == 201
    assert remember(agent, "One fact too many.").status == 429

    neighbour = memory_token(world, "bob", tenant_id="globex")
    curator = _curator(world, "globex")
    items = _base_path(curator)

    assert remember(neighbour, "Fact number 0.").status == 201
    assert _new_item(curator, items, "First").status == 201


AFTER_EXPIRY = 3600.0
"""Seconds past now at which the simulated TTL sweep runs: after every note remembered with
``ttl_seconds=60`` has expired."""


@pytest.fixture
def reader(world: SearchWorld) -> StreamReader:
    return StreamReader()


def _fill_with_an_expiring_note(agent: str, reader: StreamReader) -> dict[str, Any]:
    """Remember ``LIMIT`` notes, the first expiring in a minute; the stream drained through the indexer."""
    expiring = remember(agent, "The staging cluster is called kestrel.", ttl_seconds=60)
    assert expiring.status == 201
    assert remember(agent, "Deployments go out on Tuesdays.").status == 201
    assert remember(agent, "Releases are tagged from main.").status == 201
    assert remember(agent, "Builds run on arm64.").status == 429
    drain(reader)
    note: dict[str, Any] = expiring.body["note"]
    return note


def _sweep(reader: StreamReader) -> list[dict[str, Any]]:
    return ttl_sweep(reader, now=time.time() + AFTER_EXPIRY)


def _entity(record: dict[str, Any]) -> str:
    return str(record["dynamodb"]["OldImage"]["entity"]["S"])


def test_stored_items_quota_note_removed_by_its_expiry_frees_exactly_one_slot(
    world: SearchWorld, reader: StreamReader
) -> None:
    agent = memory_token(world, "alice")
    _fill_with_an_expiring_note(agent, reader)

    removals = _sweep(reader)

    assert sorted(_entity(record) for record in removals) == ["note", "note_claim", "note_version"]
    assert run_indexer(removals) == []
    assert remember(agent, "Builds run on arm64.").status == 201
    assert remember(agent, "The wiki lives in the ops space.").status == 429


def test_stored_items_quota_expiry_record_delivered_again_frees_one_slot(
    world: SearchWorld, reader: StreamReader
) -> None:
    agent = memory_token(world, "alice")
    _fill_with_an_expiring_note(agent, reader)
    removals = _sweep(reader)

    assert run_indexer(removals + removals) == []  # a duplicate within one batch
    assert run_indexer(removals) == []  # and a replay in a later invocation

    assert remember(agent, "Builds run on arm64.").status == 201
    assert remember(agent, "The wiki lives in the ops space.").status == 429


def test_stored_items_quota_removals_of_other_expired_records_free_nothing(
    world: SearchWorld, reader: StreamReader
) -> None:
    agent = memory_token(world, "alice")
    _fill_with_an_expiring_note(agent, reader)
    removals = _sweep(reader)
    others = [record for record in removals if _entity(record) != "note"]

    assert others
    assert run_indexer(others) == []
    assert remember(agent, "Builds run on arm64.").status == 429


def test_stored_items_quota_hard_forget_of_an_expiring_note_frees_one_slot_not_two(
    world: SearchWorld, reader: StreamReader
) -> None:
    agent = memory_token(world, "alice")
    note = _fill_with_an_expiring_note(agent, reader)

    assert forget(agent, note["note_id"], "hard").status == 200
    forgotten = reader.read()
    meta = [record for record in forgotten if record["dynamodb"]["Keys"]["SK"]["S"] == "META"]
    assert [(record["eventName"], "userIdentity" in record) for record in meta][-1:] == [("REMOVE", False)]
    assert run_indexer(forgotten) == []  # the writer's REMOVE, already counted in its transaction
    assert run_indexer(_sweep(reader)) == []  # nothing of the note is left for the sweep

    assert remember(agent, "Builds run on arm64.").status == 201
    assert remember(agent, "The wiki lives in the ops space.").status == 429


def test_stored_bytes_note_removed_by_its_expiry_takes_its_content_off_once(
    world: SearchWorld, reader: StreamReader
) -> None:
    agent = memory_token(world, "alice")
    _fill_with_an_expiring_note(agent, reader)
    before = world.store.read_counters("acme").content_bytes
    removals = _sweep(reader)

    assert run_indexer(removals + removals) == []
    assert run_indexer(removals) == []

    after = world.store.read_counters("acme").content_bytes
    assert before - after == len(b"The staging cluster is called kestrel.")
