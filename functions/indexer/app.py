"""``IndexerFunction``: the table's stream consumer that keeps the search index current (DESIGN §6).

Each record is decoded into a ``StoreChange``; the batch's changes are applied together by
``IndexingBatch.apply_many`` against the store's current state (the notes of a batch with one
read per tenant, one embedding call and one index write). A record whose decoding or change
raised is listed in ``batchItemFailures`` (its sequence number), so Lambda retries from it. The
answer is always ``{"batchItemFailures": [...]}``.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import DynamoDBRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

from knowledge.adapters.dynamodb.stream import decode_stream_record
from knowledge.bootstrap import get_container
from knowledge.domain.changes import IndexAction, StoreChange
from knowledge.observability import logger, metrics, tracer

processor = BatchProcessor(event_type=EventType.DynamoDBStreams, raise_on_entire_batch_failure=False)


def apply_records(records: list[dict[str, Any]]) -> dict[str, IndexAction | Exception]:
    """The outcome of each record (by sequence number) when the batch's changes are applied
    together: its ``IndexAction``, or the exception that decoding or applying it raised."""
    outcomes: dict[str, IndexAction | Exception] = {}
    changes: list[StoreChange] = []
    decoded: list[str] = []
    for record in records:
        sequence_number = str(record.get("dynamodb", {}).get("SequenceNumber", ""))
        try:
            changes.append(decode_stream_record(record))
        except Exception as error:
            outcomes[sequence_number] = error
            continue
        decoded.append(sequence_number)
    batch = get_container().indexing.batch()
    outcomes.update(zip(decoded, batch.apply_many(changes), strict=True))
    return outcomes


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics(capture_cold_start_metric=True)
def handler(event: dict[str, Any], context: LambdaContext) -> PartialItemFailureResponse:
    outcomes = apply_records(event["Records"])

    def record_handler(record: DynamoDBRecord) -> IndexAction:
        outcome = outcomes[str(record.raw_event["dynamodb"]["SequenceNumber"])]
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    response = process_partial_response(
        event=event, record_handler=record_handler, processor=processor, context=context
    )
    failed = len(response.get("batchItemFailures", []))
    metrics.add_metric(
        name="StreamRecordsApplied", unit=MetricUnit.Count, value=len(event["Records"]) - failed
    )
    metrics.add_metric(name="StreamRecordsFailed", unit=MetricUnit.Count, value=failed)
    return response
