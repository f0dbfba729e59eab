"""Export and import routes through the real handlers (the authorizer, then
``KnowledgeAdminFunction``) on moto DynamoDB, SQS and S3; the jobs they queue run in
``DocumentSyncFunction``'s handler, fed the messages the routes sent. Every error code of the routes
is answered here."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from knowledge.bootstrap import use_container
from knowledge.settings import Settings
from tests.conftest import TABLE_NAME
from tests.support.admin import AdminClient
from tests.support.events import lambda_context
from tests.support.queues import sqs_event, sqs_record
from tests.support.rest import SearchWorld, error_body, load_handler, new_world
from tests.support.store import REGION

SOURCE, TARGET = "acme", "globex"
BUCKET = "knowledge-bundles"
OPERATOR = (
    "knowledge:admin",
    "knowledge:read",
    "knowledge:write",
    "memory:admin",
    "memory:read",
    "memory:write",
)
UNKNOWN_BASE = "kb_01J9Z3K4QW5E6R7T8Y9V0A1B2C"
UNKNOWN_EXPORT = "ex_01J9Z3K4QW5E6R7T8Y9V0A1B2C"


@pytest.fixture
def queue_url(table: Any) -> str:
    boto3.client("s3", region_name=REGION).create_bucket(Bucket=BUCKET)
    return str(boto3.client("sqs", region_name=REGION).create_queue(QueueName="documents")["QueueUrl"])


@pytest.fixture
def world(queue_url: str) -> Iterator[SearchWorld]:
    built = new_world(
        settings=Settings(table_name=TABLE_NAME, document_queue_url=queue_url, bundle_bucket=BUCKET)
    )
    yield built
    use_container(None)


def _client(world: SearchWorld, *scopes: str, tenant_id: str = SOURCE, **token: Any) -> AdminClient:
    return AdminClient(world.token(tenant_id, "ops", scopes=scopes, **token))


def _run_queue(queue_url: str) -> list[str]:
    """Every message of the queue through the document worker's handler; the failed ids."""
    sqs = boto3.client("sqs", region_name=REGION)
    failed: list[str] = []
    while messages := sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10).get("Messages", []):
        records = [sqs_record(message["Body"], message_id=message["MessageId"]) for message in messages]
        answer = load_handler("document_sync")(sqs_event(records), lambda_context())
        failed += [entry["itemIdentifier"] for entry in answer["batchItemFailures"]]
        for message in messages:
            sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])
    return failed


def _bundle(key: str) -> bytes:
    return bytes(boto3.client("s3", region_name=REGION).get_object(Bucket=BUCKET, Key=key)["Body"].read())


def test_an_export_and_an_import_through_the_routes_move_a_tenant(world: SearchWorld, queue_url: str) -> None:
    source, target = _client(world, *OPERATOR), _client(world, *OPERATOR, tenant_id=TARGET)
    base = source.ok("POST", "/v1/knowledge-bases", {"name": "Ops", "scope": "tenant"}, status=201)
    source.ok(
        "POST",
        f"/v1/knowledge-bases/{base['knowledge_base_id']}/items",
        {"title": "Runbook", "content": "Roll out with the blue green switch.", "publish": True},
        status=201,
    )

    queued = source.ok("POST", "/v1/exports", {}, status=202)
    assert _run_queue(queue_url) == []
    export = source.ok("GET", f"/v1/exports/{queued['job_id']}")

    assert queued["status"] == "queued"
    assert queued["selection"] == {
        "knowledge_base_ids": None,
        "path_prefix": None,
        "include_notes": True,
        "include_vectors": False,
    }
    assert export["status"] == "succeeded"
    assert export["counts"] == {"base": 1, "item": 1}
    assert export["download_url"].split("?")[0].endswith(f"bundles/{SOURCE}/{queued['job_id']}.jsonl")
    bundle = _bundle(f"bundles/{SOURCE}/{queued['job_id']}.jsonl")
    assert export["bytes"] == len(bundle)

    created = target.ok("POST", "/v1/imports", {}, status=201)
    assert created["status"] == "awaiting_upload"
    refused = target.call("POST", f"/v1/imports/{created['job_id']}/start")
    assert error_body(400, "knowledge_invalid_request", refused)["details"] == {
        "import_id": created["job_id"]
    }
    boto3.client("s3", region_name=REGION).put_object(
        Bucket=BUCKET, Key=f"bundles/{TARGET}/{created['job_id']}.jsonl", Body=bundle
    )
    started = target.ok("POST", f"/v1/imports/{created['job_id']}/start", status=202)
    assert _run_queue(queue_url) == []
    imported = target.ok("GET", f"/v1/imports/{created['job_id']}")

    assert started["status"] == "queued"
    assert imported["status"] == "succeeded"
    assert imported["counts"] == {"base.imported": 1, "item.imported": 1}
    item = json.loads(bundle.splitlines()[2])["item"]
    copy = target.ok("GET", f"/v1/knowledge-items/{item['knowledge_item_id']}")
    assert copy["title"] == "Runbook"
    assert copy["current_revision_id"] == item["current_revision_id"]


@pytest.mark.parametrize(
    "scopes",
    [("knowledge:admin",), ("memory:admin",)],
    ids=["without-memory-admin", "without-knowledge-admin"],
)
def test_an_export_without_both_admin_scopes_answers_403(world: SearchWorld, scopes: tuple[str, ...]) -> None:
    caller = _client(world, *scopes)

    assert error_body(403, "insufficient_scope", caller.call("POST", "/v1/exports", {}))
    assert error_body(403, "insufficient_scope", caller.call("POST", "/v1/imports", {}))
    assert error_body(403, "insufficient_scope", caller.call("GET", f"/v1/exports/{UNKNOWN_EXPORT}"))


@pytest.mark.parametrize(
    "body",
    [
        {"knowledge_base_ids": ["not-a-base"]},
        {"path_prefix": "ops"},
        {"include_vectors": "yes please"},
        {"include_vectors": "yes"},
        {"include_notes": "no"},
        {"include_notes": 0},
        {"include_vectors": 1},
    ],
    ids=["malformed-base-id", "relative-path", "not-a-boolean", "yes", "no", "zero", "one"],
)
def test_a_malformed_export_request_answers_400(world: SearchWorld, body: dict[str, Any]) -> None:
    reply = _client(world, *OPERATOR).call("POST", "/v1/exports", body)

    assert error_body(400, "validation_error", reply)


def test_an_export_request_with_a_field_it_does_not_take_answers_400(world: SearchWorld) -> None:
    reply = _client(world, *OPERATOR).call("POST", "/v1/exports", {"tenant_id": "someone-else"})

    assert error_body(400, "knowledge_invalid_request", reply)["details"]["fields"][0]["field"] == "tenant_id"


def test_an_unknown_base_or_job_answers_404_and_a_malformed_id_400(world: SearchWorld) -> None:
    caller = _client(world, *OPERATOR)

    assert error_body(
        404,
        "knowledge_resource_unavailable",
        caller.call("POST", "/v1/exports", {"knowledge_base_ids": [UNKNOWN_BASE]}),
    )
    assert error_body(
        404, "knowledge_resource_unavailable", caller.call("GET", f"/v1/exports/{UNKNOWN_EXPORT}")
    )
    assert error_body(400, "validation_error", caller.call("GET", "/v1/exports/nope"))
    assert error_body(400, "validation_error", caller.call("GET", f"/v1/imports/{UNKNOWN_EXPORT}"))


def test_without_a_bundle_bucket_exports_answer_503(queue_url: str) -> None:
    world = new_world(settings=Settings(table_name=TABLE_NAME, document_queue_url=queue_url))
    try:
        reply = _client(world, *OPERATOR).call("POST", "/v1/imports", {})
        assert error_body(503, "dependency_unavailable", reply)
    finally:
        use_container(None)
