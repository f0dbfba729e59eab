"""``S3DocumentBucket``: the ``DocumentBucket`` port on S3 (``ListObjectsV2``, ``HeadObject``,
``GetObject``), with the deployment's credentials.

Errors: any failure but a missing key (S3's ``NoSuchKey`` / ``404``) is
``DependencyUnavailableError`` (logged with S3's error code), so the work is retried.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from knowledge.domain.data_sources import FetchedObject, ListedObject, ListingPage, clean_etag
from knowledge.errors import DependencyUnavailableError
from knowledge.observability import logger

if TYPE_CHECKING:
    from knowledge.settings import Settings

_MISSING = frozenset({"NoSuchKey", "404", "NotFound"})


class S3DocumentBucket:
    """Reads buckets with ``s3_client`` (a boto3 S3 client)."""

    def __init__(self, s3_client: Any) -> None:
        self._s3 = s3_client

    def list_page(
        self, bucket: str, prefix: str, *, continuation_token: str | None, limit: int
    ) -> ListingPage:
        arguments: dict[str, Any] = {"Bucket": bucket, "Prefix": prefix, "MaxKeys": limit}
        if continuation_token is not None:
            arguments["ContinuationToken"] = continuation_token
        answer = self._call("ListObjectsV2", bucket, lambda: self._s3.list_objects_v2(**arguments))
        objects = tuple(
            ListedObject(key=entry["Key"], etag=clean_etag(entry["ETag"]), size=int(entry["Size"]))
            for entry in answer.get("Contents", [])
        )
        token = answer.get("NextContinuationToken") if answer.get("IsTruncated") else None
        return ListingPage(objects=objects, next_token=token)

    def head(self, bucket: str, key: str) -> ListedObject | None:
        answer = self._call("HeadObject", bucket, lambda: self._s3.head_object(Bucket=bucket, Key=key))
        if answer is None:
            return None
        return ListedObject(key=key, etag=clean_etag(answer["ETag"]), size=int(answer["ContentLength"]))

    def fetch(self, bucket: str, key: str) -> FetchedObject | None:
        answer = self._call("GetObject", bucket, lambda: self._s3.get_object(Bucket=bucket, Key=key))
        if answer is None:
            return None
        body = answer["Body"]
        try:
            data = body.read()
        except (BotoCoreError, OSError) as error:
            logger.warning("s3 read failed", extra={"bucket": bucket, "error": type(error).__name__})
            raise DependencyUnavailableError("The document bucket is unavailable; retry later.") from error
        finally:
            body.close()
        return FetchedObject(
            key=key, data=data, etag=clean_etag(answer["ETag"]), version_id=answer.get("VersionId")
        )

    @staticmethod
    def _call(operation: str, bucket: str, call: Any) -> Any:
        try:
            return call()
        except ClientError as error:
            code = str(error.response.get("Error", {}).get("Code", ""))
            if code in _MISSING and operation != "ListObjectsV2":
                return None
            logger.warning(
                "s3 request refused", extra={"operation": operation, "bucket": bucket, "code": code}
            )
            raise DependencyUnavailableError("The document bucket is unavailable; retry later.") from error
        except BotoCoreError as error:
            logger.warning("s3 unreachable", extra={"operation": operation, "error": type(error).__name__})
            raise DependencyUnavailableError("The document bucket is unavailable; retry later.") from error


def build(settings: Settings, *, s3_client: Any = None) -> S3DocumentBucket:
    """A bucket reader with a boto3 S3 client (standard retries) unless ``s3_client`` is given."""
    if s3_client is None:
        import boto3
        from botocore.config import Config

        s3_client = boto3.client("s3", config=Config(retries={"mode": "standard"}))
    return S3DocumentBucket(s3_client)
