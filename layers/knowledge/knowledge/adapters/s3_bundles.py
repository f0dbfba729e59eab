"""``S3BundleBucket``: the ``BundleBucket`` port on one S3 bucket (DESIGN §9 "Export and import").

- ``upload`` streams its chunks: an object of at most ``PART_SIZE`` bytes (8 MiB) is one
  ``PutObject``; a larger one a multipart upload of ``PART_SIZE`` parts (the last one shorter),
  holding at most one part and one chunk in memory. A multipart upload that fails (S3, or the
  chunks' own iterator) is aborted, so no parts are left to bill, and nothing is visible under the
  key: S3 shows an object only once its upload completes.
- ``lines`` reads the object as it streams in (``GetObject``'s body, ``iter_lines``): each line
  without its line break (``\\n``, ``\\r\\n`` or ``\\r``), blank lines as ``b""``.
- ``download_url`` / ``upload_url`` are SigV4 presigned ``GetObject`` / ``PutObject`` requests,
  valid 1 second to 7 days (S3's limit for SigV4; ``ValueError`` outside it). Signing is local: no
  request is made.

Errors: a missing key (``NoSuchKey`` / ``404``) is ``None`` from ``lines``; every other S3 failure,
a connection error and a body that breaks off mid-read are ``DependencyUnavailableError`` (logged
with S3's error code), so the job is retried.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import suppress
from typing import TYPE_CHECKING, Any, TypeVar

from botocore.exceptions import BotoCoreError, ClientError

from knowledge.errors import DependencyUnavailableError
from knowledge.observability import logger

if TYPE_CHECKING:
    from knowledge.ports import BundleBucket

PART_SIZE = 8 * 1024 * 1024
CONTENT_TYPE = "application/x-ndjson"
"""Bundles are JSON Lines."""
"""Bytes of each multipart part, and the size past which an upload is multipart (S3 takes parts of
5 MiB to 5 GiB, the last one shorter, and at most 10,000 of them: about 78 GiB in all)."""
MAX_URL_SECONDS = 7 * 24 * 3600
"""The longest a SigV4 presigned URL may be valid."""
_MISSING = frozenset({"NoSuchKey", "404", "NotFound"})
_UNAVAILABLE = "The bundle bucket is unavailable; retry later."

T = TypeVar("T")


class S3BundleBucket:
    """Bundles under ``bucket`` through ``s3_client`` (a boto3 S3 client); ``part_size`` (5 MiB or
    more, else ``ValueError``) sizes the parts of multipart uploads."""

    def __init__(self, s3_client: Any, bucket: str, *, part_size: int = PART_SIZE) -> None:
        if part_size < 5 * 1024 * 1024:
            raise ValueError("S3 parts are at least 5 MiB")
        self._s3 = s3_client
        self._bucket = bucket
        self._part_size = part_size

    def upload(self, key: str, chunks: Iterable[bytes]) -> int:
        """Write ``chunks`` as the object ``key`` (replacing any); its size in bytes."""
        buffer = bytearray()
        size = 0
        upload_id: str | None = None
        parts: list[dict[str, Any]] = []
        try:
            for chunk in chunks:
                buffer += chunk
                size += len(chunk)
                while len(buffer) > self._part_size:
                    # Strictly past one part: the part sent leaves at least one byte for the last.
                    upload_id = upload_id or self._start(key)
                    parts.append(self._send(key, upload_id, len(parts) + 1, bytes(buffer[: self._part_size])))
                    del buffer[: self._part_size]
            if upload_id is None:
                body = bytes(buffer)
                self._call(
                    "PutObject",
                    key,
                    lambda: self._s3.put_object(
                        Bucket=self._bucket, Key=key, Body=body, ContentType=CONTENT_TYPE
                    ),
                )
            else:
                parts.append(self._send(key, upload_id, len(parts) + 1, bytes(buffer)))
                self._complete(key, upload_id, parts)
        except BaseException:
            if upload_id is not None:
                self._abort(key, upload_id)
            raise
        logger.info("bundle uploaded", extra={"key": key, "bytes": size, "parts": max(1, len(parts))})
        return size

    def lines(self, key: str) -> Iterator[bytes] | None:
        """The object's lines as they stream in; ``None`` when there is no such object."""
        try:
            answer = self._call("GetObject", key, lambda: self._s3.get_object(Bucket=self._bucket, Key=key))
        except _NoSuchKeyError:
            return None
        return self._streamed(key, answer["Body"])

    def download_url(self, key: str, *, expires_in: int) -> str:
        return self._presigned("get_object", key, expires_in)

    def upload_url(self, key: str, *, expires_in: int) -> str:
        return self._presigned("put_object", key, expires_in)

    def _presigned(self, operation: str, key: str, expires_in: int) -> str:
        if not 1 <= expires_in <= MAX_URL_SECONDS:
            raise ValueError(f"expires_in must be within 1..{MAX_URL_SECONDS} seconds")
        url: str = self._call(
            operation,
            key,
            lambda: self._s3.generate_presigned_url(
                operation, Params={"Bucket": self._bucket, "Key": key}, ExpiresIn=expires_in
            ),
        )
        return url

    def _streamed(self, key: str, body: Any) -> Iterator[bytes]:
        try:
            yield from body.iter_lines()
        except (BotoCoreError, OSError) as error:
            logger.warning("s3 read failed", extra={"key": key, "error": type(error).__name__})
            raise DependencyUnavailableError(_UNAVAILABLE) from error
        finally:
            body.close()

    def _start(self, key: str) -> str:
        answer = self._call(
            "CreateMultipartUpload",
            key,
            lambda: self._s3.create_multipart_upload(Bucket=self._bucket, Key=key, ContentType=CONTENT_TYPE),
        )
        return str(answer["UploadId"])

    def _send(self, key: str, upload_id: str, number: int, data: bytes) -> dict[str, Any]:
        """Part ``number`` (from 1) of the upload, as ``CompleteMultipartUpload`` lists it."""
        answer = self._call(
            "UploadPart",
            key,
            lambda: self._s3.upload_part(
                Bucket=self._bucket, Key=key, UploadId=upload_id, PartNumber=number, Body=data
            ),
        )
        return {"PartNumber": number, "ETag": answer["ETag"]}

    def _complete(self, key: str, upload_id: str, parts: list[dict[str, Any]]) -> None:
        self._call(
            "CompleteMultipartUpload",
            key,
            lambda: self._s3.complete_multipart_upload(
                Bucket=self._bucket, Key=key, UploadId=upload_id, MultipartUpload={"Parts": parts}
            ),
        )

    def _abort(self, key: str, upload_id: str) -> None:
        """Best effort: a failed abort leaves the parts to the bucket's lifecycle rule, if any."""
        with suppress(DependencyUnavailableError):
            self._call(
                "AbortMultipartUpload",
                key,
                lambda: self._s3.abort_multipart_upload(Bucket=self._bucket, Key=key, UploadId=upload_id),
            )

    def _call(self, operation: str, key: str, call: Callable[[], T]) -> T:
        try:
            return call()
        except ClientError as error:
            code = str(error.response.get("Error", {}).get("Code", ""))
            if code in _MISSING and operation == "GetObject":
                raise _NoSuchKeyError from error
            logger.warning(
                "s3 request refused",
                extra={"operation": operation, "bucket": self._bucket, "key": key, "code": code},
            )
            raise DependencyUnavailableError(_UNAVAILABLE) from error
        except BotoCoreError as error:
            logger.warning("s3 unreachable", extra={"operation": operation, "error": type(error).__name__})
            raise DependencyUnavailableError(_UNAVAILABLE) from error


class _NoSuchKeyError(Exception):
    """S3 answered ``GetObject`` with no such key; ``lines`` answers ``None``."""


def build(bucket: str, *, s3_client: Any = None) -> S3BundleBucket:
    """The bundle bucket ``bucket`` with a boto3 S3 client (standard retries, SigV4, so presigned
    URLs work in every region) unless ``s3_client`` is given."""
    if s3_client is None:
        import boto3
        from botocore.config import Config

        s3_client = boto3.client("s3", config=Config(retries={"mode": "standard"}, signature_version="s3v4"))
    return S3BundleBucket(s3_client, bucket)


if TYPE_CHECKING:

    def _implements_the_port(bucket: S3BundleBucket) -> BundleBucket:
        return bucket  # mypy checks the BundleBucket protocol here
