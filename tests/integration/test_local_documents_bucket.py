"""The local documents bucket on moto's server: provisioned with its events sent to a queue, saved
to the state directory and restored into an empty bucket (``emulator.bucket_files``); and the S3 and
SQS adapters' answers to what is missing. moto's backends live as long as the process, so each test
names its own bucket and queue."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from knowledge.adapters.s3_documents import S3DocumentBucket
from knowledge.adapters.sqs_sync_queue import SqsSyncQueue
from knowledge.contract.data_sources import DOCUMENT_MESSAGE, S3Notification, SyncWork
from knowledge.errors import DependencyUnavailableError
from knowledge_local.account import aws_client
from knowledge_local.emulator import bucket_files
from knowledge_local.emulator.aws_server import AwsServer
from knowledge_local.emulator.provisioning import notify_queue, provision_bucket

KEYS = {"guides/deploy.md": b"# Deploy\n", "a b/c+d.txt": b"spaces and plus", "deep/er/x.pdf": b"%PDF"}


@pytest.fixture
def aws() -> Iterator[AwsServer]:
    with AwsServer(port=0) as server:
        yield server


@pytest.fixture
def bucket(aws: AwsServer) -> str:
    name = f"documents-{uuid.uuid4().hex[:12]}"
    provision_bucket(aws.url, name)
    return name


def _queue(aws: AwsServer) -> str:
    return str(
        aws_client("sqs", aws.url).create_queue(QueueName=f"documents-{uuid.uuid4().hex[:12]}")["QueueUrl"]
    )


def test_bucket_events_reach_the_queue_with_keys_the_worker_decodes(aws: AwsServer, bucket: str) -> None:
    sqs = aws_client("sqs", aws.url)
    queue_url = _queue(aws)
    arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    notify_queue(aws.url, bucket, arn)

    aws_client("s3", aws.url).put_object(Bucket=bucket, Key="a b/c+d.txt", Body=b"x")
    bodies = [
        message["Body"]
        for message in sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10)["Messages"]
    ]

    notifications = [
        message
        for message in map(DOCUMENT_MESSAGE.validate_json, bodies)
        if isinstance(message, S3Notification)
    ]
    assert [record.s3.object.decoded_key for record in notifications[0].Records] == ["a b/c+d.txt"]


def test_bucket_saved_then_restored_into_an_empty_bucket_keeps_every_object(
    aws: AwsServer, bucket: str, tmp_path: Path
) -> None:
    s3 = aws_client("s3", aws.url)
    for key, body in KEYS.items():
        s3.put_object(Bucket=bucket, Key=key, Body=body)

    saved = bucket_files.save(aws.url, bucket, tmp_path)
    again = bucket_files.save(aws.url, bucket, tmp_path)  # replaces the copy whole
    empty = f"{bucket}-restored"
    provision_bucket(aws.url, empty)
    restored = bucket_files.restore(aws.url, empty, tmp_path)
    found = {
        entry["Key"]: s3.get_object(Bucket=empty, Key=entry["Key"])["Body"].read()
        for entry in s3.list_objects_v2(Bucket=empty)["Contents"]
    }

    assert (saved, again, restored) == (3, 3, 3)
    assert found == KEYS
    assert sorted(path.name for path in tmp_path.iterdir()) == [bucket_files.FOLDER]


def test_bucket_restore_without_a_saved_copy_restores_nothing(
    aws: AwsServer, bucket: str, tmp_path: Path
) -> None:
    assert bucket_files.restore(aws.url, bucket, tmp_path) == 0


def test_s3_documents_missing_object_is_none_and_missing_bucket_unavailable(
    aws: AwsServer, bucket: str
) -> None:
    reader = S3DocumentBucket(aws_client("s3", aws.url))

    assert reader.head(bucket, "absent.md") is None
    assert reader.fetch(bucket, "absent.md") is None
    with pytest.raises(DependencyUnavailableError):
        reader.list_page("no-such-bucket", "", continuation_token=None, limit=10)


def test_s3_documents_listing_pages_follow_the_continuation_token(aws: AwsServer, bucket: str) -> None:
    s3 = aws_client("s3", aws.url)
    for key, body in KEYS.items():
        s3.put_object(Bucket=bucket, Key=key, Body=body)
    reader = S3DocumentBucket(s3)

    first = reader.list_page(bucket, "", continuation_token=None, limit=2)
    second = reader.list_page(bucket, "", continuation_token=first.next_token, limit=2)

    assert [entry.key for entry in (*first.objects, *second.objects)] == sorted(KEYS)
    assert second.next_token is None
    assert first.objects[0].size == len(KEYS[first.objects[0].key])


def test_sqs_sync_queue_sends_the_work_and_a_missing_queue_is_unavailable(aws: AwsServer) -> None:
    sqs = aws_client("sqs", aws.url)
    queue_url = _queue(aws)
    work = SyncWork(
        op="sync",
        tenant_id="acme",
        data_source_id="ds_01J9Z3K4QW5E6R7T8Y9V0A1B2C",
        sync_job_id="sj_01J9Z3K4QW5E6R7T8Y9V0A1B2C",
    )

    SqsSyncQueue(queue_url, sqs_client=sqs).send(work)

    (message,) = sqs.receive_message(QueueUrl=queue_url)["Messages"]
    assert json.loads(message["Body"]) == work.model_dump()
    with pytest.raises(DependencyUnavailableError):
        SqsSyncQueue(f"{aws.url}/123456789012/absent", sqs_client=sqs).send(work)
