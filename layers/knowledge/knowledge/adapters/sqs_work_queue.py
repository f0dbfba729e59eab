"""``SqsWorkQueue``: the ``WorkQueue`` port on an SQS queue (the index work queue).

Each ``IndexWork`` is one message whose body is its JSON and whose ``MessageGroupId`` is its tenant;
messages go out with ``SendMessageBatch``, ten per request (SQS's limit). On a standard queue the
group makes it an SQS fair queue: when one tenant's messages pile up, SQS delivers the other
tenants' first, so a tenant indexing many large revisions does not hold up the others.

Errors: a failed request or any entry SQS refuses raises ``DependencyUnavailableError``
(retryable); entries already sent stay sent, which is harmless because index work is idempotent.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from knowledge.domain.retrieval.index_work import IndexWork
from knowledge.errors import DependencyUnavailableError
from knowledge.observability import logger

if TYPE_CHECKING:
    from knowledge.settings import Settings

_BATCH = 10


class SqsWorkQueue:
    """Sends index work to ``queue_url`` with ``sqs`` (a boto3 SQS client)."""

    def __init__(self, queue_url: str, *, sqs_client: Any) -> None:
        self._url = queue_url
        self._sqs = sqs_client

    def send(self, work: Sequence[IndexWork]) -> None:
        """Send every entry of ``work`` (nothing for an empty sequence)."""
        for start in range(0, len(work), _BATCH):
            entries = [
                {"Id": str(number), "MessageBody": entry.model_dump_json(), "MessageGroupId": entry.tenant_id}
                for number, entry in enumerate(work[start : start + _BATCH])
            ]
            try:
                answer = self._sqs.send_message_batch(QueueUrl=self._url, Entries=entries)
            except (BotoCoreError, ClientError) as error:
                logger.warning("index work not sent", extra={"error": type(error).__name__})
                raise DependencyUnavailableError("The index work queue is unavailable.") from error
            failed = answer.get("Failed", [])
            if failed:
                logger.warning(
                    "index work refused", extra={"failed": len(failed), "code": failed[0].get("Code")}
                )
                raise DependencyUnavailableError("The index work queue refused a message.")


def build(settings: Settings, *, sqs_client: Any = None) -> SqsWorkQueue:
    """The queue of ``settings.index_work_queue_url`` (``ValueError`` when it is unset);
    ``sqs_client`` defaults to a new boto3 client with standard retries."""
    if settings.index_work_queue_url is None:
        raise ValueError("The index work queue needs INDEX_WORK_QUEUE_URL.")
    import boto3
    from botocore.config import Config

    client = sqs_client or boto3.client("sqs", config=Config(retries={"mode": "standard"}))
    return SqsWorkQueue(settings.index_work_queue_url, sqs_client=client)
