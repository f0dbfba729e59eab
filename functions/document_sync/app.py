"""``DocumentSyncFunction``: the document queue's consumer (DESIGN §6, data sources), with partial
batch responses.

Each SQS record is either sync work (run a job's pages until this invocation's time is nearly
spent) or an S3 event notification of a data source's bucket (reconcile the keys it names). A
record that raises is listed in ``batchItemFailures``: SQS delivers it again and, after
``maxReceiveCount`` receives, moves it to the dead-letter queue. On its last delivery, sync work
fails its job instead of raising (``give_up``), so no job stays ``running``.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

from knowledge.bootstrap import get_container
from knowledge.observability import logger, metrics, tracer
from knowledge.services.document_sync import DocumentAction

TIMEOUT_SECONDS = 300
"""The function's timeout (``template.yaml``): a job's lease outlasts one invocation."""
RESERVE_MILLISECONDS = 60_000
"""Time kept back from a sync, for the rest of the batch and the last page's write."""
MAX_RECEIVES = 5
"""The document queue's ``maxReceiveCount``."""

processor = BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)


def record_handler(record: SQSRecord, lambda_context: LambdaContext | None = None) -> DocumentAction:
    context = lambda_context
    receives = int(record.attributes.approximate_receive_count or 1)

    def seconds_left() -> float:
        if context is None:
            return 1.0
        return (context.get_remaining_time_in_millis() - RESERVE_MILLISECONDS) / 1000

    action = (
        get_container()
        .document_sync(lease_seconds=TIMEOUT_SECONDS)
        .handle(
            record.body,
            message_id=record.message_id,
            seconds_left=seconds_left,
            give_up=receives >= MAX_RECEIVES,
        )
    )
    metrics.add_metric(name="DocumentMessagesApplied", unit=MetricUnit.Count, value=1)
    return action


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics(capture_cold_start_metric=True)
def handler(event: dict[str, Any], context: LambdaContext) -> PartialItemFailureResponse:
    response = process_partial_response(
        event=event, record_handler=record_handler, processor=processor, context=context
    )
    metrics.add_metric(
        name="DocumentMessagesFailed", unit=MetricUnit.Count, value=len(response.get("batchItemFailures", []))
    )
    return response
