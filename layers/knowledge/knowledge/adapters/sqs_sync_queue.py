"""``SqsSyncQueue``: the ``SyncWorkQueue`` port on the document queue (``DOCUMENT_QUEUE_URL``).

Errors: a failed request is ``DependencyUnavailableError`` (retryable).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from knowledge.contract.bundles import BundleWork
from knowledge.contract.data_sources import SyncWork
from knowledge.errors import DependencyUnavailableError
from knowledge.observability import logger

if TYPE_CHECKING:
    from knowledge.settings import Settings


class SqsSyncQueue:
    """Sends sync work to ``queue_url`` with ``sqs_client`` (a boto3 SQS client)."""

    def __init__(self, queue_url: str, *, sqs_client: Any) -> None:
        self._url = queue_url
        self._sqs = sqs_client

    def send(self, work: SyncWork | BundleWork) -> None:
        try:
            self._sqs.send_message(QueueUrl=self._url, MessageBody=work.model_dump_json())
        except (BotoCoreError, ClientError) as error:
            logger.warning("sync work not sent", extra={"error": type(error).__name__})
            raise DependencyUnavailableError("The document queue is unavailable; retry later.") from error


def build(settings: Settings, *, sqs_client: Any = None) -> SqsSyncQueue:
    """The queue of ``settings.document_queue_url`` (``ValueError`` when it is unset)."""
    if settings.document_queue_url is None:
        raise ValueError("Data source syncs need DOCUMENT_QUEUE_URL.")
    import boto3
    from botocore.config import Config

    client = sqs_client or boto3.client("sqs", config=Config(retries={"mode": "standard"}))
    return SqsSyncQueue(settings.document_queue_url, sqs_client=client)
