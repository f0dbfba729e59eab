"""Tenant erasure through the real handlers (the authorizer, then ``KnowledgeAdminFunction``) on
moto DynamoDB and SQS; the job runs in ``DocumentSyncFunction``'s handler, fed the messages the
route sent. The dry run's receipt equals the erasure's; afterwards the tenant has no base, item or
note and its usage counts nothing stored, while another tenant keeps everything. Every error code
of the routes is answered here."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from knowledge.bootstrap import use_container
from knowledge.settings import Settings
from tests.conftest import TABLE_NAME
from tests.integration.test_bundle_api import OPERATOR, SOURCE, TARGET, _run_queue
from tests.support.admin import AdminClient
from tests.support.memory import remember
from tests.support.rest import SearchWorld, error_body, new_world
from tests.support.store import REGION

UNKNOWN_ERASURE = "er_01J9Z3K4QW5E6R7T8Y9V0A1B2C"


@pytest.fixture
def queue_url(table: Any) -> str:
    return str(boto3.client("sqs", region_name=REGION).create_queue(QueueName="documents")["QueueUrl"])


@pytest.fixture
def world(queue_url: str) -> Iterator[SearchWorld]:
    built = new_world(settings=Settings(table_name=TABLE_NAME, document_queue_url=queue_url))
    yield built
    use_container(None)


def _operator(world: SearchWorld, tenant_id: str) -> tuple[AdminClient, str]:
    token = world.token(tenant_id, "ops", scopes=OPERATOR)
    return AdminClient(token), token


def _seed(client: AdminClient, token: str) -> dict[str, Any]:
    base = client.ok("POST", "/v1/knowledge-bases", {"name": "Ops", "scope": "tenant"}, status=201)
    path = f"/v1/knowledge-bases/{base['knowledge_base_id']}/items"
    kept = client.ok(
        "POST", path, {"title": "Runbook", "content": "Roll out blue green.", "publish": True}, status=201
    )
    old = client.ok("POST", path, {"title": "Old", "content": "Retired page.", "publish": True}, status=201)
    client.ok(
        "POST",
        f"/v1/knowledge-items/{old['knowledge_item_id']}/archive",
        {"expected_version": old["version"]},
    )
    notes = [
        remember(token, text, path="/ops").body["note"]["note_id"]
        for text in ("The pump seal was replaced.", "Tide tables come from the port.")
    ]
    return {
        "base": base["knowledge_base_id"],
        "items": {kept["knowledge_item_id"], old["knowledge_item_id"]},
        "notes": set(notes),
    }


def _stored(client: AdminClient) -> dict[str, Any]:
    return dict(client.ok("GET", "/v1/usage")["stored"])


def test_an_erasure_through_the_routes_empties_the_tenant_and_equals_its_dry_run(
    world: SearchWorld, queue_url: str
) -> None:
    source, source_token = _operator(world, SOURCE)
    target, target_token = _operator(world, TARGET)
    seeded = _seed(source, source_token)
    _seed(target, target_token)
    kept = _stored(target)
    before = _stored(source)

    preview = source.ok("POST", "/v1/erasures", {"dry_run": True}, status=202)
    assert _run_queue(queue_url) == []
    previewed = source.ok("GET", f"/v1/erasures/{preview['erasure_id']}")
    assert _stored(source) == before  # a dry run deletes nothing

    started = source.ok("POST", "/v1/erasures", {"confirm_tenant_id": SOURCE}, status=202)
    assert (started["status"], started["phase"], started["dry_run"]) == ("queued", "bases", False)
    assert _run_queue(queue_url) == []
    erased = source.ok("GET", f"/v1/erasures/{started['erasure_id']}")

    assert (previewed["status"], erased["status"]) == ("succeeded", "succeeded")
    assert erased["phase"] == "done"
    assert erased["erased"] == previewed["erased"] == {"item": 2, "knowledge_base": 1, "note": 2}
    strip = ("dry_run",)
    assert {k: v for k, v in erased["receipt"].items() if k not in strip} == {
        k: v for k, v in previewed["receipt"].items() if k not in strip
    }
    table = {entry["kind"]: set(entry["ids"]) for entry in erased["receipt"]["table"]}
    assert table["item"] == seeded["items"]
    assert table["note"] == seeded["notes"]
    assert table["knowledge_base"] == {seeded["base"]}
    assert source.ok("GET", "/v1/knowledge-bases")["knowledge_bases"] == []
    for item_id in seeded["items"]:
        reply = source.call("GET", f"/v1/knowledge-items/{item_id}")
        assert error_body(404, "knowledge_resource_unavailable", reply)
    stored = _stored(source)
    assert (stored["items"], stored["notes"], stored["content_bytes"]) == (0, 0, 0)
    assert _stored(target) == kept
    assert len(target.ok("GET", "/v1/knowledge-bases")["knowledge_bases"]) == 1


def test_a_real_erasure_without_the_tenant_confirmed_answers_400(world: SearchWorld) -> None:
    client, _ = _operator(world, SOURCE)
    for body in ({}, {"confirm_tenant_id": TARGET}, {"dry_run": True, "confirm_tenant_id": TARGET}):
        reply = client.call("POST", "/v1/erasures", body)
        assert error_body(400, "knowledge_invalid_request", reply)["details"] == {
            "field": "confirm_tenant_id",
            "tenant_id": SOURCE,
        }


@pytest.mark.parametrize(
    "body",
    [
        {"dry_run": "maybe"},
        {"dry_run": "off"},
        {"tenant_id": "someone-else"},
        {"confirm_tenant_id": ""},
        {"dry_run": True, "knowledge_base_ids": ["nope"]},
        {"dry_run": True, "knowledge_base_ids": []},
    ],
    ids=[
        "not-a-boolean",
        "off-string",
        "unknown-field",
        "empty-confirmation",
        "malformed-base-id",
        "no-base",
    ],
)
def test_a_malformed_erasure_request_answers_400(world: SearchWorld, body: dict[str, Any]) -> None:
    client, _ = _operator(world, SOURCE)
    reply = client.call("POST", "/v1/erasures", body)
    assert reply.status == 400
    assert reply.code in ("validation_error", "knowledge_invalid_request")


@pytest.mark.parametrize(
    "scopes",
    [("knowledge:admin",), ("memory:admin",)],
    ids=["without-memory-admin", "without-knowledge-admin"],
)
def test_an_erasure_without_both_admin_scopes_answers_403(
    world: SearchWorld, scopes: tuple[str, ...]
) -> None:
    caller = AdminClient(world.token(SOURCE, "ops", scopes=scopes))
    assert error_body(403, "insufficient_scope", caller.call("POST", "/v1/erasures", {"dry_run": True}))
    assert error_body(403, "insufficient_scope", caller.call("GET", f"/v1/erasures/{UNKNOWN_ERASURE}"))


def test_an_unknown_erasure_answers_404_and_a_malformed_id_400(world: SearchWorld) -> None:
    client, _ = _operator(world, SOURCE)
    other, _ = _operator(world, TARGET)
    started = client.ok("POST", "/v1/erasures", {"dry_run": True}, status=202)
    assert error_body(
        404, "knowledge_resource_unavailable", client.call("GET", f"/v1/erasures/{UNKNOWN_ERASURE}")
    )
    assert error_body(
        404, "knowledge_resource_unavailable", other.call("GET", f"/v1/erasures/{started['erasure_id']}")
    )
    assert error_body(400, "validation_error", client.call("GET", "/v1/erasures/nope"))
    unknown_base = {"dry_run": True, "knowledge_base_ids": ["kb_01J9Z3K4QW5E6R7T8Y9V0A1B2C"]}
    assert error_body(
        404, "knowledge_resource_unavailable", client.call("POST", "/v1/erasures", unknown_base)
    )


def test_an_erasure_of_a_chosen_base_leaves_the_other_bases_and_the_notes(
    world: SearchWorld, queue_url: str
) -> None:
    client, token = _operator(world, SOURCE)
    seeded = _seed(client, token)
    other = client.ok("POST", "/v1/knowledge-bases", {"name": "Kept", "scope": "tenant"}, status=201)
    body = {"confirm_tenant_id": SOURCE, "knowledge_base_ids": [seeded["base"]]}

    started = client.ok("POST", "/v1/erasures", body, status=202)
    assert _run_queue(queue_url) == []
    erased = client.ok("GET", f"/v1/erasures/{started['erasure_id']}")

    assert erased["knowledge_base_ids"] == [seeded["base"]]
    assert erased["erased"] == {"item": 2, "knowledge_base": 1}
    bases = client.ok("GET", "/v1/knowledge-bases")["knowledge_bases"]
    assert [base["knowledge_base_id"] for base in bases] == [other["knowledge_base_id"]]
    assert _stored(client)["notes"] == 2


def test_without_a_document_queue_an_erasure_answers_503(table: Any) -> None:
    world = new_world(settings=Settings(table_name=TABLE_NAME))
    try:
        client, _ = _operator(world, SOURCE)
        assert error_body(
            503, "dependency_unavailable", client.call("POST", "/v1/erasures", {"dry_run": True})
        )
    finally:
        use_container(None)
