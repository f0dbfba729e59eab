"""``IndexerFunction``: the table's stream consumer that keeps the search index current (DESIGN §6).

Each record is decoded into a ``StoreChange`` and applied by ``IndexingService`` against the
store's current state; a record that raises is listed in ``batchItemFailures`` (its sequence
number), so Lambda retries from it. The answer is always ``{"batchItemFailures": [...]}``.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.typing import LambdaContext

from knowledge.adapters.dynamodb.stream import decode_stream_record
from knowledge.bootstrap import get_container
from knowledge.observability import logger, metrics, tracer

processor = BatchProcessor(event_type=EventType.DynamoDBStreams, raise_on_entire_batch_failure=False)


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics(capture_cold_start_metric=True)
def handler(event: dict[str, Any], context: LambdaContext) -> PartialItemFailureResponse:
    batch = get_container().indexing.batch()
    response = process_partial_response(
        event=event,
        record_handler=lambda record: batch.apply(decode_stream_record(record.raw_event)),
        processor=processor,
        context=context,
    )
    failed = len(response.get("batchItemFailures", []))
    metrics.add_metric(
        name="StreamRecordsApplied", unit=MetricUnit.Count, value=len(event["Records"]) - failed
    )
    metrics.add_metric(name="StreamRecordsFailed", unit=MetricUnit.Count, value=failed)
    return response
