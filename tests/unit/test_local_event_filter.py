"""Lambda FilterCriteria for the local pollers, and partial batch answers."""

from __future__ import annotations

from typing import Any

import pytest

from knowledge_local.emulator.pollers.event_filter import EventFilter, InvalidFilterError
from knowledge_local.emulator.pollers.poller import failed_item_identifiers


def test_event_filter_without_patterns_admits_every_record() -> None:
    assert EventFilter([]).admits({"body": "anything"}) is True


def test_event_filter_matches_an_sqs_body_as_json() -> None:
    only_upserts = EventFilter(['{"body": {"op": ["upsert"]}}'])

    assert only_upserts.admits({"body": '{"op": "upsert"}'}) is True
    assert only_upserts.admits({"body": '{"op": "archive"}'}) is False
    assert only_upserts.admits({"body": "plain text"}) is False


def test_event_filter_matches_stream_record_fields_with_any_pattern() -> None:
    patterns = [
        '{"eventName": ["REMOVE"]}',
        '{"dynamodb": {"NewImage": {"SK": {"S": [{"prefix": "META"}]}}}}',
    ]
    event_filter = EventFilter(patterns)

    assert (
        event_filter.admits({"eventName": "MODIFY", "dynamodb": {"NewImage": {"SK": {"S": "META"}}}}) is True
    )
    assert event_filter.admits({"eventName": "REMOVE", "dynamodb": {}}) is True
    assert (
        event_filter.admits({"eventName": "INSERT", "dynamodb": {"NewImage": {"SK": {"S": "PAGE#1"}}}})
        is False
    )


def test_event_filter_invalid_pattern_is_an_invalid_filter_error() -> None:
    with pytest.raises(InvalidFilterError):
        EventFilter(['{"body": "not a list"}'])


@pytest.mark.parametrize(
    ("answer", "failed"),
    [
        (None, []),
        ({}, []),
        ({"batchItemFailures": []}, []),
        ({"batchItemFailures": [{"itemIdentifier": "c"}, {"itemIdentifier": "b"}]}, ["b", "c"]),
        ({"batchItemFailures": [{"itemIdentifier": "z"}]}, None),
        ({"batchItemFailures": [{"itemIdentifier": ""}]}, None),
        ({"batchItemFailures": "b"}, None),
        ("not an object", None),
    ],
)
def test_failed_item_identifiers_follow_lambdas_rules(answer: Any, failed: list[str] | None) -> None:
    assert failed_item_identifiers(answer, ["a", "b", "c"]) == failed
