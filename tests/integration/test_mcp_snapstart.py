"""McpFunction under Lambda SnapStart, without Lambda: import the handler (its init), run the
before-snapshot hooks, take what the snapshot would hold, run the after-restore hooks as a restored
environment does, and check that what must be fresh is fresh and that the handler then answers an
MCP ``initialize`` and ``tools/list`` (``events/mcp_*.json``) over moto DynamoDB with the tenant
quotas on, so the first request after the restore builds and uses its own DynamoDB client."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from knowledge import snapstart
from knowledge.api.mcp_tools import TOOLS
from knowledge.bootstrap import get_container, use_container
from knowledge.settings import get_settings
from tests.conftest import TABLE_NAME
from tests.support.events import lambda_context, load_event
from tests.support.rest import load_handler


@pytest.fixture
def restored(table: object, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    """The handler's init and snapshot, then a restore; yields what the snapshot held."""
    monkeypatch.setenv("TABLE_NAME", TABLE_NAME)
    monkeypatch.setenv("TENANT_REQUESTS_PER_SECOND", "100")
    get_settings.cache_clear()
    use_container(None)
    load_handler("mcp")
    snapstart.run_before_snapshot()
    # What an init could leave in the snapshot: built clients and the state of ``random``.
    captured = {
        "container": get_container(),
        "store": get_container().store,
        "quotas": get_container().quotas,
        "session": boto3.DEFAULT_SESSION,
        "random": random.getstate(),
    }
    snapstart.run_after_restore()
    yield captured
    use_container(None)


def _call(event_name: str) -> tuple[int, dict[str, Any]]:
    response = load_handler("mcp")(load_event(event_name), lambda_context())
    return response["statusCode"], json.loads(response["body"])


def test_restore_container_and_clients_are_new_objects(restored: dict[str, Any]) -> None:
    container = get_container()

    assert container is not restored["container"]
    assert container.store is not restored["store"]
    assert get_container().quotas is not restored["quotas"]


def test_restore_boto3_default_session_is_not_the_snapshot_one(restored: dict[str, Any]) -> None:
    boto3.client("dynamodb", region_name="us-east-1")

    assert restored["session"] is not None
    assert boto3.DEFAULT_SESSION is not restored["session"]


def test_restore_random_state_differs_from_snapshot(restored: dict[str, Any]) -> None:
    assert random.getstate() != restored["random"]


def test_restore_then_initialize_answers_server_info(restored: dict[str, Any]) -> None:
    status, body = _call("mcp_initialize")

    assert status == 200
    assert body["id"] == 1
    assert body["result"]["serverInfo"]["name"] == "knowledge"
    assert body["result"]["protocolVersion"] == "2025-06-18"


def test_restore_then_tools_list_answers_every_tool(restored: dict[str, Any]) -> None:
    _call("mcp_initialize")

    status, body = _call("mcp_tools_list")

    assert status == 200
    assert body["id"] == 2
    assert sorted(tool["name"] for tool in body["result"]["tools"]) == sorted(TOOLS)


def test_restore_then_request_is_counted_by_a_client_built_after_restore(restored: dict[str, Any]) -> None:
    """The tenant quota's record is written through the DynamoDB client of the restored environment."""
    status, _ = _call("mcp_tools_list")
    quota_records = boto3.client("dynamodb", region_name="us-east-1").scan(TableName=TABLE_NAME)["Items"]

    assert status == 200
    assert any(item["PK"]["S"].endswith("#QUOTA") for item in quota_records)
    assert get_container().quotas is not restored["quotas"]
