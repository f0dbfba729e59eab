"""``IngestQueueFunction``: the ingest queue's consumer (DESIGN §6), with partial batch responses.

Each SQS message is authenticated by the bearer token in its ``Authorization`` message attribute,
validated and applied alone, as the token's principal (``IngestService.ingest``); a message that raises is
listed in ``batchItemFailures``, so SQS redelivers only it and, after ``maxReceiveCount`` receives,
moves it to the dead-letter queue. The answer is always ``{"batchItemFailures": [...]}``, even when
every message failed, so that one contract covers every batch.
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
from knowledge.services.ingest import AUTHORIZATION_ATTRIBUTE, IngestAction

processor = BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)


def record_handler(record: SQSRecord) -> IngestAction:
    attribute = record.message_attributes[AUTHORIZATION_ATTRIBUTE]  # ``None`` when absent
    authorization = attribute.string_value if attribute is not None else None
    action = get_container().ingest.ingest(
        record.body, message_id=record.message_id, authorization=authorization
    )
    metrics.add_metric(name="IngestMessagesApplied", unit=MetricUnit.Count, value=1)
    return action


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics(capture_cold_start_metric=True)
def handler(event: dict[str, Any], context: LambdaContext) -> PartialItemFailureResponse:
    response = process_partial_response(
        event=event, record_handler=record_handler, processor=processor, context=context
    )
    metrics.add_metric(
        name="IngestMessagesFailed", unit=MetricUnit.Count, value=len(response.get("batchItemFailures", []))
    )
    return response
