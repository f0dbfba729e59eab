"""Shared fixtures. Tests never touch real AWS: fake credentials, moto, a fixed region."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from hypothesis import settings
from moto import mock_aws

from knowledge.settings import get_settings
from tests.support.fuzzing import is_long
from tests.support.template import ROOT, create_table_kwargs

# `make test` draws the same examples on every run, so a gate never turns red by chance;
# `make fuzz` (KNOWLEDGE_FUZZ=long) draws fresh ones each time.
settings.register_profile("gate", derandomize=True, database=None)
settings.register_profile("fuzz", derandomize=False)
settings.load_profile("fuzz" if is_long() else "gate")

os.environ.update(
    {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_REGION": "us-east-1",
        "AWS_ACCOUNT_ID_ENDPOINT_MODE": "disabled",
        "POWERTOOLS_SERVICE_NAME": "knowledge-tests",
        "POWERTOOLS_METRICS_NAMESPACE": "KnowledgeTests",
        "POWERTOOLS_TRACE_DISABLED": "true",
        "POWERTOOLS_DEV": "false",
        "HF_HUB_OFFLINE": "1",
        # Tenant quotas off: suites send bursts from one tenant; tests/integration/test_tenant_quotas.py
        # sets its own limits.
        "TENANT_REQUESTS_PER_SECOND": "0",
        "TENANT_WRITES_PER_SECOND": "0",
    }
)
os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(ROOT / ".cache" / "tiktoken"))
for _name in ("AWS_ENDPOINT_URL", "AWS_PROFILE", "SEARCH_BACKEND", "OPENSEARCH_URL_FOR_APP", "TABLE_NAME"):
    os.environ.pop(_name, None)
# The node `make test` started for the whole run; kept out of the environment, where `Settings` would
# read it, and handed to the tests that need it by the `opensearch_url` fixture.
_OPENSEARCH_URL = os.environ.pop("OPENSEARCH_URL", None)

TABLE_NAME = "knowledge-test"


@pytest.fixture(autouse=True)
def _fresh_settings() -> Iterator[None]:
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


@pytest.fixture
def aws() -> Iterator[None]:
    """moto in-process for every AWS service."""
    with mock_aws():
        yield


@pytest.fixture
def table(aws: None) -> Any:
    """The knowledge table, created from ``template.yaml``'s ``KnowledgeTable`` properties."""
    client = boto3.client("dynamodb", region_name="us-east-1")
    client.create_table(**create_table_kwargs("KnowledgeTable", TABLE_NAME))
    return boto3.resource("dynamodb", region_name="us-east-1").Table(TABLE_NAME)


@pytest.fixture(scope="session")
def opensearch_url() -> Iterator[str]:
    """The URL of a real OpenSearch 2.19 node with the k-NN plugin (``knowledge_local.opensearch_node``):
    the one ``make test`` starts for the whole run (``OPENSEARCH_URL``), or, when a test process runs
    without it (``pytest`` by hand), a node of its own, started on first use and stopped at the end."""
    if _OPENSEARCH_URL:
        yield _OPENSEARCH_URL.rstrip("/")
        return
    from knowledge_local.opensearch_node import start_node

    node = start_node(name="tests")
    try:
        yield node.url
    finally:
        node.stop()


@pytest.fixture
def data_dir() -> Path:
    return ROOT / "tests" / "fixtures"
