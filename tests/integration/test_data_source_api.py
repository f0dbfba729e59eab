"""Data source routes of the write API through the real handlers (the authorizer, then
``KnowledgeAdminFunction``), on moto DynamoDB, SQS and S3; the sync they queue is run by
``DocumentSyncFunction``'s handler with an SQS event of the message the route sent."""

from __future__ import annotations

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

TENANT = "acme"
BUCKET = "team-docs"
READ, WRITE = "knowledge:read", "knowledge:write"


@pytest.fixture
def queue_url(table: Any) -> str:
    boto3.client("s3", region_name=REGION).create_bucket(Bucket=BUCKET)
    return str(boto3.client("sqs", region_name=REGION).create_queue(QueueName="documents")["QueueUrl"])


@pytest.fixture
def world(queue_url: str) -> Iterator[SearchWorld]:
    settings = Settings(
        table_name=TABLE_NAME, document_buckets=f"{BUCKET}, other", document_queue_url=queue_url
    )
    built = new_world(settings=settings)
    yield built
    use_container(None)


def _client(world: SearchWorld, *scopes: str, tenant_id: str = TENANT) -> AdminClient:
    return AdminClient(world.token(tenant_id, "ana", scopes=scopes))


@pytest.fixture
def writer(world: SearchWorld) -> AdminClient:
    return _client(world, READ, WRITE)


@pytest.fixture
def base_id(world: SearchWorld) -> str:
    return world.base(TENANT, name="Docs").knowledge_base_id


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


def test_data_source_routes_create_sync_and_report_the_job(
    writer: AdminClient, base_id: str, queue_url: str
) -> None:
    boto3.client("s3", region_name=REGION).put_object(Bucket=BUCKET, Key="guides/a.md", Body=b"# A\n\nAlpha.")
    path = f"/v1/knowledge-bases/{base_id}/data-sources"

    created = writer.ok("POST", path, {"type": "s3", "bucket": BUCKET, "prefix": "guides/"}, status=201)
    source_id = created["data_source_id"]
    listed = writer.ok("GET", path)
    one = writer.ok("GET", f"{path}/{source_id}")
    queued = writer.ok("POST", f"{path}/{source_id}/sync", status=202)
    failed = _run_queue(queue_url)
    job = writer.ok("GET", f"/v1/knowledge-bases/{base_id}/sync-jobs/{queued['sync_job_id']}")

    assert created["include"] == ["**"]
    assert [source["data_source_id"] for source in listed["data_sources"]] == [source_id]
    assert one == created
    assert queued["status"] == "queued"
    assert failed == []
    assert (job["status"], job["phase"], job["counts"]["added"]) == ("succeeded", "done", 1)
    assert writer.call("DELETE", f"{path}/{source_id}").status == 204
    assert writer.call("GET", f"{path}/{source_id}").status == 404


def test_create_data_source_on_a_bucket_not_granted_answers_400(writer: AdminClient, base_id: str) -> None:
    reply = writer.call(
        "POST", f"/v1/knowledge-bases/{base_id}/data-sources", {"type": "s3", "bucket": "nope-1"}
    )

    assert error_body(400, "data_source_bucket_not_allowed", reply)["details"] == {"bucket": "nope-1"}


@pytest.mark.parametrize(
    "body",
    [
        {"type": "s3"},
        {"type": "ftp", "bucket": BUCKET},
        {"type": "s3", "bucket": "Not_A_Bucket"},
        {"type": "s3", "bucket": BUCKET, "include": []},
        {"type": "s3", "bucket": BUCKET, "prefix": "a\nb"},
    ],
)
def test_create_data_source_malformed_answers_400(
    writer: AdminClient, base_id: str, body: dict[str, Any]
) -> None:
    reply = writer.call("POST", f"/v1/knowledge-bases/{base_id}/data-sources", body)

    assert reply.status == 400, reply.text


def test_data_source_routes_follow_the_base_rights(
    world: SearchWorld, writer: AdminClient, base_id: str
) -> None:
    path = f"/v1/knowledge-bases/{base_id}/data-sources"
    source_id = writer.ok("POST", path, {"type": "s3", "bucket": BUCKET}, status=201)["data_source_id"]
    reader = _client(world, READ)
    stranger = _client(world, READ, WRITE, tenant_id="globex")

    assert reader.call("POST", path, {"type": "s3", "bucket": BUCKET}).status == 403
    assert reader.call("POST", f"{path}/{source_id}/sync").status == 403
    assert reader.call("GET", f"{path}/{source_id}").status == 200
    assert stranger.call("GET", f"{path}/{source_id}").status == 404
    assert stranger.call("POST", f"{path}/{source_id}/sync").status == 404
    assert (
        writer.call("GET", f"/v1/knowledge-bases/{base_id}/sync-jobs/sj_01J9Z3K4QW5E6R7T8Y9V0A1B2C").status
        == 404
    )
    assert writer.call("GET", f"/v1/knowledge-bases/{base_id}/sync-jobs/not-a-job").status == 400


def test_poison_message_on_the_document_queue_is_reported_failed(queue_url: str, world: SearchWorld) -> None:
    boto3.client("sqs", region_name=REGION).send_message(QueueUrl=queue_url, MessageBody="{not json")

    assert len(_run_queue(queue_url)) == 1
