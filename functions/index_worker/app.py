"""``IndexWorkerFunction``: the index work queue's consumer (one part of a revision per message).

Each SQS message body is one ``IndexWork`` (JSON), validated and applied by
``IndexingService.index_part``; a message that raises (a malformed body, or a dependency that is
down) is listed in ``batchItemFailures``, so SQS redelivers only it and, after ``maxReceiveCount``
receives, moves it to the dead-letter queue. The answer is always ``{"batchItemFailures": [...]}``.
Duplicated and replayed messages are harmless: a part already held is not written again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

from knowledge.bootstrap import get_container
from knowledge.domain.retrieval.index_work import IndexWork
from knowledge.observability import logger, metrics, tracer

if TYPE_CHECKING:  # the indexing service is imported when the container builds it (first message)
    from knowledge.domain.changes import IndexAction

processor = BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)


def record_handler(record: SQSRecord) -> IndexAction:
    action = get_container().indexing.index_part(IndexWork.model_validate_json(record.body))
    metrics.add_metric(name="IndexPartsApplied", unit=MetricUnit.Count, value=1)
    return action


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics(capture_cold_start_metric=True)
def handler(event: dict[str, Any], context: LambdaContext) -> PartialItemFailureResponse:
    response = process_partial_response(
        event=event, record_handler=record_handler, processor=processor, context=context
    )
    metrics.add_metric(
        name="IndexPartsFailed", unit=MetricUnit.Count, value=len(response.get("batchItemFailures", []))
    )
    return response
