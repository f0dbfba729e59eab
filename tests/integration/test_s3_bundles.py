"""The bundle bucket on moto's S3 server (``S3BundleBucket``): uploads streamed as one object or as
a multipart upload past 8 MiB, aborted when they fail; lines read back as they stream; a missing key
is ``None``; presigned URLs that plain HTTP clients use. moto's backends live as long as the
process, so each test names its own bucket."""

from __future__ import annotations

import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from urllib.parse import parse_qs, urlsplit

import boto3
import pytest
from botocore.config import Config

from knowledge.adapters.s3_bundles import PART_SIZE, S3BundleBucket
from knowledge.errors import DependencyUnavailableError
from knowledge_local.account import LOCAL_ACCESS_KEY, LOCAL_SECRET_KEY, REGION
from knowledge_local.emulator.aws_server import AwsServer
from knowledge_local.emulator.provisioning import provision_bucket

KEY = "bundles/tenant-a/ex_01J9Z3K4QW5E6R7T8Y9V0A1B2C"


@pytest.fixture(scope="module")
def aws() -> Iterator[AwsServer]:
    with AwsServer(port=0) as server:
        yield server


@pytest.fixture
def s3(aws: AwsServer) -> object:
    """An S3 client as ``s3_bundles.build`` makes one: SigV4, whose presigned URLs every region takes."""
    return boto3.session.Session().client(
        "s3",
        endpoint_url=aws.url,
        region_name=REGION,
        aws_access_key_id=LOCAL_ACCESS_KEY,
        aws_secret_access_key=LOCAL_SECRET_KEY,
        config=Config(signature_version="s3v4", retries={"mode": "standard"}),
    )


@pytest.fixture
def bucket_name(aws: AwsServer) -> str:
    name = f"bundles-{uuid.uuid4().hex[:12]}"
    provision_bucket(aws.url, name)
    return name


@pytest.fixture
def bundles(s3: object, bucket_name: str) -> S3BundleBucket:
    return S3BundleBucket(s3, bucket_name)


def _jsonl(count: int, width: int) -> list[bytes]:
    """``count`` JSON lines of about ``width`` bytes, each ending in a line break."""
    return [b'{"n": %d, "text": "%s"}\n' % (n, b"x" * width) for n in range(count)]


def test_upload_past_8_mib_is_multipart_and_reads_back_line_by_line(
    bundles: S3BundleBucket, s3: object, bucket_name: str
) -> None:
    lines = _jsonl(9_000, 1_100)  # about 10 MB, sent in chunks of 100 lines
    chunks = (b"".join(lines[start : start + 100]) for start in range(0, len(lines), 100))

    size = bundles.upload(KEY, chunks)

    head = s3.head_object(Bucket=bucket_name, Key=KEY)  # type: ignore[attr-defined]
    assert size == sum(map(len, lines)) == head["ContentLength"]
    assert size > PART_SIZE
    assert head["ETag"].strip('"').endswith("-2")  # S3's ETag of a two-part upload
    read = bundles.lines(KEY)
    assert read is not None
    assert list(read) == [line.rstrip(b"\n") for line in lines]


def test_upload_of_at_most_8_mib_is_one_object(bundles: S3BundleBucket, s3: object, bucket_name: str) -> None:
    body = b"a" * (PART_SIZE - 1) + b"\n"

    assert bundles.upload(KEY, [body[:1000], body[1000:]]) == PART_SIZE

    head = s3.head_object(Bucket=bucket_name, Key=KEY)  # type: ignore[attr-defined]
    assert "-" not in head["ETag"]


def test_lines_keep_blank_lines_and_drop_each_line_break(bundles: S3BundleBucket) -> None:
    bundles.upload(KEY, [b'{"a": 1}\r\n', b"\n", b'{"b"', b': 2}\n{"c": 3}'])

    read = bundles.lines(KEY)

    assert read is not None
    assert list(read) == [b'{"a": 1}', b"", b'{"b": 2}', b'{"c": 3}']


def test_upload_of_nothing_is_an_empty_object(bundles: S3BundleBucket) -> None:
    assert bundles.upload(KEY, []) == 0

    read = bundles.lines(KEY)
    assert read is not None
    assert list(read) == []


def test_lines_of_a_missing_key_is_none(bundles: S3BundleBucket) -> None:
    assert bundles.lines("bundles/tenant-a/absent") is None


def test_lines_and_upload_on_a_missing_bucket_are_unavailable(s3: object) -> None:
    missing = S3BundleBucket(s3, f"absent-{uuid.uuid4().hex[:12]}")

    with pytest.raises(DependencyUnavailableError):
        missing.lines(KEY)
    with pytest.raises(DependencyUnavailableError):
        missing.upload(KEY, [b"line\n"])


def test_upload_whose_chunks_fail_after_a_part_aborts_the_multipart_upload(
    bundles: S3BundleBucket, s3: object, bucket_name: str
) -> None:
    def chunks() -> Iterator[bytes]:
        yield b"x" * (PART_SIZE + 10)
        raise RuntimeError("the export broke off")

    with pytest.raises(RuntimeError, match="broke off"):
        bundles.upload(KEY, chunks())

    assert s3.list_multipart_uploads(Bucket=bucket_name).get("Uploads", []) == []  # type: ignore[attr-defined]
    assert bundles.lines(KEY) is None


def test_presigned_urls_put_then_get_the_object_over_plain_http(bundles: S3BundleBucket) -> None:
    body = b'{"kind": "note"}\n'
    put = urllib.request.Request(
        bundles.upload_url(KEY, expires_in=300),
        data=body,
        method="PUT",
        headers={"Content-Type": "application/x-ndjson"},  # urllib would send a form's type
    )

    with urllib.request.urlopen(put, timeout=10) as answer:
        assert answer.status == 200
    with urllib.request.urlopen(bundles.download_url(KEY, expires_in=300), timeout=10) as answer:
        assert answer.read() == body


def test_presigned_url_carries_its_lifetime_and_the_key(bundles: S3BundleBucket) -> None:
    url = urlsplit(bundles.download_url(KEY, expires_in=900))

    query = parse_qs(url.query)
    assert query["X-Amz-Expires"] == ["900"]
    assert query["X-Amz-Algorithm"] == ["AWS4-HMAC-SHA256"]
    assert url.path.endswith(KEY)


@pytest.mark.parametrize("seconds", [0, 7 * 24 * 3600 + 1])
def test_presigned_url_lifetime_outside_1_second_to_7_days_is_value_error(
    bundles: S3BundleBucket, seconds: int
) -> None:
    with pytest.raises(ValueError, match="expires_in"):
        bundles.download_url(KEY, expires_in=seconds)
    with pytest.raises(ValueError, match="expires_in"):
        bundles.upload_url(KEY, expires_in=seconds)


def test_presigned_get_of_a_missing_key_is_refused_over_http(bundles: S3BundleBucket) -> None:
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(bundles.download_url("bundles/tenant-a/absent", expires_in=60), timeout=10)

    assert refused.value.code == 404


def test_part_size_under_5_mib_is_value_error(s3: object) -> None:
    with pytest.raises(ValueError, match="5 MiB"):
        S3BundleBucket(s3, "any", part_size=1024)
