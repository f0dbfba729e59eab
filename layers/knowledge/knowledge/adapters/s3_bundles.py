"""``S3BundleBucket``: the ``BundleBucket`` port on one S3 bucket (``BUNDLE_BUCKET``): bundles are
written with boto3's managed transfer (multipart past 8 MiB, parts retried), read as a stream of
lines, and handed to callers through presigned GET and PUT URLs.

Errors: any failure but a missing key (S3's ``NoSuchKey`` / ``404``) is
``DependencyUnavailableError`` (logged with S3's error code), so the job is retried.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from boto3.exceptions import S3UploadFailedError
from botocore.exceptions import BotoCoreError, ClientError

from knowledge.errors import DependencyUnavailableError
from knowledge.observability import logger

if TYPE_CHECKING:
    from knowledge.settings import Settings

_MISSING = frozenset({"NoSuchKey", "404", "NotFound"})
CONTENT_TYPE = "application/x-ndjson"


class _ChunkReader(io.RawIOBase):
    """The concatenation of ``chunks`` as a readable file, so the transfer manager streams it."""

    def __init__(self, chunks: Iterable[bytes]) -> None:
        self._chunks = iter(chunks)
        self._pending = b""
        self.size = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while not self._pending:
            try:
                self._pending = next(self._chunks)
            except StopIteration:
                return 0
        taken, self._pending = self._pending[: len(buffer)], self._pending[len(buffer) :]
        buffer[: len(taken)] = taken
        self.size += len(taken)
        return len(taken)


class S3BundleBucket:
    """Bundles in ``bucket`` through ``s3_client`` (a boto3 S3 client)."""

    def __init__(self, bucket: str, s3_client: Any) -> None:
        self._bucket = bucket
        self._s3 = s3_client

    def upload(self, key: str, chunks: Iterable[bytes]) -> int:
        reader = _ChunkReader(chunks)
        self._call(
            "PutObject",
            lambda: self._s3.upload_fileobj(
                io.BufferedReader(reader), self._bucket, key, ExtraArgs={"ContentType": CONTENT_TYPE}
            ),
        )
        return reader.size

    def lines(self, key: str) -> Iterator[bytes] | None:
        answer = self._call("GetObject", lambda: self._s3.get_object(Bucket=self._bucket, Key=key))
        if answer is None:
            return None
        return self._streamed(answer["Body"])

    def _streamed(self, body: Any) -> Iterator[bytes]:
        try:
            yield from body.iter_lines(keepends=False)
        except (BotoCoreError, OSError) as error:
            logger.warning("bundle read failed", extra={"error": type(error).__name__})
            raise DependencyUnavailableError("The bundle bucket is unavailable; retry later.") from error
        finally:
            body.close()

    def download_url(self, key: str, *, expires_in: int) -> str:
        return str(
            self._s3.generate_presigned_url(
                "get_object", Params={"Bucket": self._bucket, "Key": key}, ExpiresIn=expires_in
            )
        )

    def upload_url(self, key: str, *, expires_in: int) -> str:
        return str(
            self._s3.generate_presigned_url(
                "put_object", Params={"Bucket": self._bucket, "Key": key}, ExpiresIn=expires_in
            )
        )

    def _call(self, operation: str, call: Any) -> Any:
        try:
            return call()
        except ClientError as error:
            code = str(error.response.get("Error", {}).get("Code", ""))
            if code in _MISSING:
                return None
            logger.warning("s3 request failed", extra={"operation": operation, "code": code})
            raise DependencyUnavailableError("The bundle bucket is unavailable; retry later.") from error
        except (BotoCoreError, S3UploadFailedError) as error:
            logger.warning("s3 request failed", extra={"operation": operation, "error": type(error).__name__})
            raise DependencyUnavailableError("The bundle bucket is unavailable; retry later.") from error


def build(settings: Settings, *, s3_client: Any = None) -> S3BundleBucket:
    """The bucket of ``settings.bundle_bucket`` (``ValueError`` when it is unset) with a boto3 S3
    client (standard retries, SigV4 so presigned URLs work in every region) unless one is given."""
    if settings.bundle_bucket is None:
        raise ValueError("Exports and imports need BUNDLE_BUCKET.")
    if s3_client is None:
        import boto3
        from botocore.config import Config

        s3_client = boto3.client("s3", config=Config(retries={"mode": "standard"}, signature_version="s3v4"))
    return S3BundleBucket(settings.bundle_bucket, s3_client)
