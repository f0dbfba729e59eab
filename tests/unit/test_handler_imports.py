"""Handlers import only what their function needs: no function but the MCP one loads a search engine,
model, OpenSearch client, the MCP SDK, the X-Ray SDK, tiktoken or boto3 at import time (checked in a
fresh process); the adapters that need them import them when the container first builds them."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.support.template import ROOT

HEAVY_MODULES = (
    "aws_xray_sdk",
    "numpy",
    "tantivy",
    "onnxruntime",
    "tokenizers",
    "opensearchpy",
    "mcp",
    "tiktoken",
    "boto3",
)
LIGHT_FUNCTIONS = sorted(
    path.parent.name for path in (ROOT / "functions").glob("*/app.py") if path.parent.name != "mcp"
)
"""Every function but the MCP one, which cannot serve without the MCP SDK."""
PROBE = """
import json, sys
sys.path[:0] = [sys.argv[1], sys.argv[2]]
import app
print(json.dumps(sorted(name for name in json.loads(sys.argv[3]) if name in sys.modules)))
"""


def _heavy_modules_after_import(function: str) -> list[str]:
    environment = {
        **os.environ,
        "AWS_DEFAULT_REGION": "us-east-1",
        "POWERTOOLS_TRACE_DISABLED": "true",
        "POWERTOOLS_SERVICE_NAME": "knowledge",
    }
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            PROBE,
            str(ROOT / "functions" / function),
            str(ROOT / "layers" / "knowledge"),
            json.dumps(HEAVY_MODULES),
        ],
        env=environment,
        capture_output=True,
        text=True,
        check=True,
    )
    loaded: list[str] = json.loads(done.stdout.strip().splitlines()[-1])
    return loaded


@pytest.mark.parametrize("function", LIGHT_FUNCTIONS)
def test_handler_import_loads_no_heavy_module(function: str) -> None:
    assert _heavy_modules_after_import(function) == []


def test_light_functions_are_all_the_functions_but_mcp() -> None:
    assert len(LIGHT_FUNCTIONS) >= 12
    assert "remember" in LIGHT_FUNCTIONS
    assert "indexer" in LIGHT_FUNCTIONS


def test_heavy_module_probe_sees_what_a_handler_loads() -> None:
    # The MCP function needs the MCP SDK: the probe must report it, or the test above proves nothing.
    assert "mcp" in _heavy_modules_after_import("mcp")
