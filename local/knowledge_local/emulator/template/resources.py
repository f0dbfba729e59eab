"""The non-HTTP resources of a SAM template, read for the local runtime: tables, queues and the
functions' stream and queue event sources (the HTTP API is ``routes``).

Read from the template:

- ``AWS::DynamoDB::Table``: ``CreateTable`` arguments from its ``AttributeDefinitions``,
  ``KeySchema``, ``GlobalSecondaryIndexes``, ``LocalSecondaryIndexes``, ``BillingMode``,
  ``ProvisionedThroughput`` and ``StreamSpecification`` (the stream is enabled when a view type is
  given). Point-in-time recovery, SSE and TTL do not apply to an in-memory table.
- ``AWS::SQS::Queue``: ``CreateQueue`` attributes from its properties (``VisibilityTimeout``,
  ``MessageRetentionPeriod``, ``DelaySeconds``, ``MaximumMessageSize``,
  ``ReceiveMessageWaitTimeSeconds``, ``FifoQueue``, ``ContentBasedDeduplication``, and
  ``RedrivePolicy`` whose ``deadLetterTargetArn`` names another queue of the template).
- ``AWS::Serverless::Function`` events of type ``DynamoDB`` (``Stream: !GetAtt Table.StreamArn``)
  and ``SQS`` (``Queue: !GetAtt Queue.Arn``) with ``BatchSize``, ``StartingPosition``,
  ``FunctionResponseTypes``, ``MaximumRetryAttempts``, ``FilterCriteria``, an SQS
  ``ScalingConfig.MaximumConcurrency`` and a stream's ``DestinationConfig.OnFailure``; defaults
  are Lambda's (batch size 100 for streams and 10 for queues, retries until the record expires).

Physical names: ``TableName`` / ``QueueName`` when the template gives one (``!Sub`` resolved with
parameter defaults and pseudo parameters), else the logical id, as a stack would derive its own.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from knowledge_local.account import ACCOUNT_ID, REGION
from knowledge_local.emulator.template.routes import FunctionSpec, TemplateError, function_spec, load_template

STACK_NAME = "knowledge-local"
DEFAULT_STREAM_BATCH_SIZE = 100
DEFAULT_QUEUE_BATCH_SIZE = 10
REPORT_BATCH_ITEM_FAILURES = "ReportBatchItemFailures"

_TABLE_KEYS = (
    "AttributeDefinitions",
    "KeySchema",
    "GlobalSecondaryIndexes",
    "LocalSecondaryIndexes",
    "BillingMode",
    "ProvisionedThroughput",
)
_QUEUE_ATTRIBUTES = (
    "VisibilityTimeout",
    "MessageRetentionPeriod",
    "DelaySeconds",
    "MaximumMessageSize",
    "ReceiveMessageWaitTimeSeconds",
    "FifoQueue",
    "ContentBasedDeduplication",
)
_SUB_VARIABLE = re.compile(r"\$\{([A-Za-z0-9:.]+)\}")


@dataclass(frozen=True)
class TableSpec:
    """A DynamoDB table: ``create_table_arguments`` are ``CreateTable``'s keyword arguments."""

    logical_id: str
    name: str
    create_table_arguments: dict[str, Any]

    @property
    def has_stream(self) -> bool:
        return "StreamSpecification" in self.create_table_arguments


@dataclass(frozen=True)
class QueueSpec:
    """An SQS queue. ``attributes`` are ``CreateQueue`` attributes (strings) except the redrive
    policy, kept apart because its target ARN exists only once the dead-letter queue does."""

    logical_id: str
    name: str
    attributes: dict[str, str]
    dead_letter_queue: str | None = None
    """Logical id of the ``RedrivePolicy`` target."""
    max_receive_count: int | None = None

    @property
    def visibility_timeout_seconds(self) -> int:
        """SQS's default is 30 seconds."""
        return int(self.attributes.get("VisibilityTimeout", "30"))


@dataclass(frozen=True)
class EventSourceSpec:
    """A function's ``DynamoDB`` or ``SQS`` event source mapping.

    ``source`` is the logical id of the table or queue; ``filter_patterns`` are the raw JSON strings
    of ``FilterCriteria.Filters[].Pattern``; ``maximum_retry_attempts`` ``None`` retries until the
    record expires (Lambda's default for streams; queues use the redrive policy instead).
    """

    name: str
    function: FunctionSpec
    kind: Literal["dynamodb", "sqs"]
    source: str
    batch_size: int
    starting_position: str = "TRIM_HORIZON"
    report_batch_item_failures: bool = False
    maximum_retry_attempts: int | None = None
    filter_patterns: tuple[str, ...] = ()
    on_failure: str | None = None
    """Logical id of the queue of ``DestinationConfig.OnFailure`` (streams)."""
    maximum_concurrency: int | None = None
    """``ScalingConfig.MaximumConcurrency`` (queues): invocations of the mapping at once at most;
    ``None``: Lambda's own limit."""


@dataclass(frozen=True)
class StackSpec:
    """What the local runtime provisions and polls."""

    tables: dict[str, TableSpec]
    queues: dict[str, QueueSpec]
    event_sources: list[EventSourceSpec]

    def table(self, logical_id: str) -> TableSpec:
        if logical_id not in self.tables:
            raise TemplateError(f"The template has no AWS::DynamoDB::Table {logical_id!r}.")
        return self.tables[logical_id]

    def queues_in_creation_order(self) -> list[QueueSpec]:
        """Dead-letter queues before the queues that redrive to them."""
        ordered: list[QueueSpec] = []
        pending = dict(self.queues)
        while pending:
            ready = [
                queue
                for queue in pending.values()
                if queue.dead_letter_queue is None or queue.dead_letter_queue not in pending
            ]
            if not ready:
                raise TemplateError("The queues' redrive policies form a cycle.")
            for queue in ready:
                ordered.append(queue)
                del pending[queue.logical_id]
        return ordered


def load_stack(template_path: str | Path) -> StackSpec:
    """Read the tables, queues and event sources of the SAM template at ``template_path``.

    Raises ``TemplateError`` for a resource the local runtime cannot provision (a redrive target or
    event source that is not in the template, a function without a local handler).
    """
    path = Path(template_path).resolve()
    template = load_template(path)
    resources: Mapping[str, Any] = template.get("Resources") or {}
    parameters = _parameter_defaults(template)
    tables: dict[str, TableSpec] = {}
    queues: dict[str, QueueSpec] = {}
    for logical_id, resource in resources.items():
        properties = resource.get("Properties") or {}
        if resource.get("Type") == "AWS::DynamoDB::Table":
            tables[logical_id] = _table(logical_id, properties, parameters)
        elif resource.get("Type") == "AWS::SQS::Queue":
            queues[logical_id] = _queue(logical_id, properties, parameters)
    for queue in queues.values():
        if queue.dead_letter_queue is not None and queue.dead_letter_queue not in queues:
            raise TemplateError(f"{queue.logical_id}'s RedrivePolicy names no queue of the template.")
    sources = [
        source
        for logical_id, resource in resources.items()
        if resource.get("Type") == "AWS::Serverless::Function"
        for source in _event_sources(logical_id, resource, template, path.parent)
    ]
    for source in sources:
        if source.on_failure is not None and source.on_failure not in queues:
            raise TemplateError(
                f"{source.function.logical_id}.{source.name}'s OnFailure names no queue of the template."
            )
        known = tables if source.kind == "dynamodb" else queues
        if source.source not in known:
            raise TemplateError(
                f"{source.function.logical_id}.{source.name} reads {source.source!r}, not in the template."
            )
    return StackSpec(tables=tables, queues=queues, event_sources=sources)


def _table(logical_id: str, properties: Mapping[str, Any], parameters: Mapping[str, str]) -> TableSpec:
    name = _physical_name(properties.get("TableName"), logical_id, parameters)
    arguments: dict[str, Any] = {key: properties[key] for key in _TABLE_KEYS if key in properties}
    stream = properties.get("StreamSpecification") or {}
    if stream.get("StreamViewType"):
        arguments["StreamSpecification"] = {"StreamEnabled": True, "StreamViewType": stream["StreamViewType"]}
    arguments["TableName"] = name
    return TableSpec(logical_id=logical_id, name=name, create_table_arguments=arguments)


def _queue(logical_id: str, properties: Mapping[str, Any], parameters: Mapping[str, str]) -> QueueSpec:
    name = _physical_name(properties.get("QueueName"), logical_id, parameters)
    attributes = {key: _attribute(properties[key]) for key in _QUEUE_ATTRIBUTES if key in properties}
    redrive = properties.get("RedrivePolicy")
    if isinstance(redrive, str):
        redrive = json.loads(redrive)
    dead_letter_queue = max_receive_count = None
    if isinstance(redrive, Mapping):
        dead_letter_queue = _referenced_resource(redrive.get("deadLetterTargetArn"))
        max_receive_count = int(redrive.get("maxReceiveCount", 1))
    return QueueSpec(
        logical_id=logical_id,
        name=name,
        attributes=attributes,
        dead_letter_queue=dead_letter_queue,
        max_receive_count=max_receive_count,
    )


def _event_sources(
    logical_id: str, resource: Mapping[str, Any], template: Mapping[str, Any], base_dir: Path
) -> list[EventSourceSpec]:
    properties = resource.get("Properties") or {}
    events = properties.get("Events") or {}
    kinds: dict[str, Literal["dynamodb", "sqs"]] = {"DynamoDB": "dynamodb", "SQS": "sqs"}
    wanted = {name: event for name, event in events.items() if event.get("Type") in kinds}
    if not wanted:
        return []
    function = function_spec(logical_id, properties, template.get("Globals") or {}, base_dir)
    sources: list[EventSourceSpec] = []
    for name, event in wanted.items():
        kind = kinds[event["Type"]]
        config = event.get("Properties") or {}
        target = _referenced_resource(config.get("Stream" if kind == "dynamodb" else "Queue"))
        if target is None:
            raise TemplateError(f"{logical_id}.{name} must name its source with !GetAtt.")
        retries = config.get("MaximumRetryAttempts")
        sources.append(
            EventSourceSpec(
                name=name,
                function=function,
                kind=kind,
                source=target,
                batch_size=int(
                    config.get(
                        "BatchSize",
                        DEFAULT_STREAM_BATCH_SIZE if kind == "dynamodb" else DEFAULT_QUEUE_BATCH_SIZE,
                    )
                ),
                starting_position=str(config.get("StartingPosition", "TRIM_HORIZON")),
                report_batch_item_failures=REPORT_BATCH_ITEM_FAILURES
                in (config.get("FunctionResponseTypes") or ()),
                maximum_retry_attempts=None if retries in (None, -1) else int(retries),
                filter_patterns=_filter_patterns(config.get("FilterCriteria")),
                on_failure=_referenced_resource(
                    ((config.get("DestinationConfig") or {}).get("OnFailure") or {}).get("Destination")
                ),
                maximum_concurrency=_maximum_concurrency(config.get("ScalingConfig")),
            )
        )
    return sources


def _maximum_concurrency(scaling: Any) -> int | None:
    if not isinstance(scaling, Mapping) or scaling.get("MaximumConcurrency") is None:
        return None
    return int(scaling["MaximumConcurrency"])


def _filter_patterns(criteria: Any) -> tuple[str, ...]:
    if not isinstance(criteria, Mapping):
        return ()
    patterns: list[str] = []
    for entry in criteria.get("Filters") or ():
        pattern = entry.get("Pattern") if isinstance(entry, Mapping) else None
        if isinstance(pattern, str):
            patterns.append(pattern)
        elif isinstance(pattern, Mapping):
            patterns.append(json.dumps(pattern))
    return tuple(patterns)


def _referenced_resource(value: Any) -> str | None:
    """The logical id in ``!GetAtt X.Arn`` / ``!GetAtt X.StreamArn`` / ``!Ref X``."""
    if not isinstance(value, Mapping):
        return None
    if "Fn::GetAtt" in value:
        target = value["Fn::GetAtt"]
        return str(target[0] if isinstance(target, list) else str(target).split(".")[0])
    if "Ref" in value:
        return str(value["Ref"])
    return None


def _physical_name(value: Any, logical_id: str, parameters: Mapping[str, str]) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping) and isinstance(value.get("Fn::Sub"), str):
        return _SUB_VARIABLE.sub(
            lambda found: parameters.get(found.group(1), found.group(0)), value["Fn::Sub"]
        )
    return logical_id


def _parameter_defaults(template: Mapping[str, Any]) -> dict[str, str]:
    values = {
        "AWS::Region": REGION,
        "AWS::AccountId": ACCOUNT_ID,
        "AWS::StackName": STACK_NAME,
        "AWS::Partition": "aws",
        "AWS::URLSuffix": "amazonaws.com",
    }
    for name, parameter in (template.get("Parameters") or {}).items():
        if isinstance(parameter, Mapping) and "Default" in parameter:
            values[name] = str(parameter["Default"])
    return values


def _attribute(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
