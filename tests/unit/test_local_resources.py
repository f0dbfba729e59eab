"""Reading a SAM template's tables, queues and event sources for the local runtime."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from knowledge_local.emulator.pollers.queue_poller import LOCAL_CONCURRENCY, pollers_for
from knowledge_local.emulator.template.resources import TemplateError, load_stack
from tests.support.template import TEMPLATE, create_table_kwargs

POLLERS = Path(__file__).resolve().parents[1] / "fixtures" / "pollers" / "template.yaml"


def test_load_stack_table_matches_the_test_helpers_reading_of_the_template() -> None:
    table = load_stack(TEMPLATE).table("KnowledgeTable")

    assert table.create_table_arguments == create_table_kwargs("KnowledgeTable", table.name)


def test_load_stack_resolves_sub_names_with_parameter_defaults() -> None:
    stack = load_stack(POLLERS)

    assert stack.table("Table").name == "records-test"
    assert stack.queues["Inbox"].name == "Inbox"


def test_load_stack_orders_dead_letter_queues_before_their_sources() -> None:
    stack = load_stack(POLLERS)

    ordered = [queue.logical_id for queue in stack.queues_in_creation_order()]

    assert ordered.index("DeadLetters") < ordered.index("Inbox")
    assert (stack.queues["Inbox"].dead_letter_queue, stack.queues["Inbox"].max_receive_count) == (
        "DeadLetters",
        2,
    )
    assert stack.queues["Inbox"].attributes == {"VisibilityTimeout": "1"}


def test_load_stack_reads_event_sources_with_their_settings() -> None:
    sources = {source.function.logical_id: source for source in load_stack(POLLERS).event_sources}

    stream, queue = sources["StreamRecorder"], sources["QueueRecorder"]
    assert (stream.kind, stream.source, stream.batch_size, stream.starting_position) == (
        "dynamodb",
        "Table",
        10,
        "TRIM_HORIZON",
    )
    assert stream.report_batch_item_failures is True
    assert (stream.maximum_retry_attempts, stream.on_failure) == (2, "Discarded")
    assert stream.filter_patterns == ('{"dynamodb": {"Keys": {"SK": {"S": [{"anything-but": "SKIP"}]}}}}',)
    assert (queue.kind, queue.source, queue.batch_size) == ("sqs", "Inbox", 5)
    assert queue.function.timeout_seconds == 5
    assert queue.function.module_file == POLLERS.parent / "functions" / "recorder" / "app.py"


def test_load_stack_event_source_naming_an_unknown_queue_is_a_template_error(tmp_path: Path) -> None:
    broken = tmp_path / "template.yaml"
    broken.write_text(POLLERS.read_text().replace("Queue: !GetAtt Inbox.Arn", "Queue: !GetAtt Elsewhere.Arn"))

    with pytest.raises(TemplateError, match="Elsewhere"):
        load_stack(broken)


def test_queue_mappings_get_their_maximum_concurrency_in_pollers_up_to_the_local_limit() -> None:
    sources = {source.function.logical_id: source for source in load_stack(TEMPLATE).event_sources}
    worker = sources["IndexWorkerFunction"]
    unbounded = load_stack(POLLERS).event_sources[-1]

    assert (worker.batch_size, worker.maximum_concurrency) == (1, 10)
    assert pollers_for(worker) == LOCAL_CONCURRENCY == 2
    assert pollers_for(replace(worker, maximum_concurrency=1)) == 1
    assert (unbounded.kind, unbounded.maximum_concurrency) == ("sqs", None)
    assert pollers_for(unbounded) == LOCAL_CONCURRENCY
