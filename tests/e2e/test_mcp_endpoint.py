"""``/mcp`` of the local runtime with the official MCP client over Streamable HTTP."""

from __future__ import annotations

import json
from typing import Any

import anyio
import httpx2
import mcp.types as types
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.e2e.runtime_process import RuntimeProcess


def _session(runtime: RuntimeProcess, use: Any) -> Any:
    async def run() -> Any:
        async with (
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {runtime.token}"}, timeout=60) as http,
            Client(
                streamable_http_client(f"{runtime.api_url}/mcp", http_client=http), mode="legacy"
            ) as client,
        ):
            return await use(client)

    return anyio.run(run)


def test_mcp_initialize_names_the_server_and_its_tools(runtime: RuntimeProcess) -> None:
    async def use(client: Client) -> tuple[types.Implementation | None, list[str]]:
        tools = await client.list_tools()
        return client.server_info, [tool.name for tool in tools.tools]

    info, tools = _session(runtime, use)

    assert info is not None
    assert info.name == "knowledge"
    assert tools == [
        "search_knowledge",
        "remember",
        "search_memory",
        "recall_context",
        "pin_memory",
        "unpin_memory",
        "forget_memory",
    ]


def test_mcp_tool_call_searches_the_seeded_base(runtime: RuntimeProcess) -> None:
    async def use(client: Client) -> types.CallToolResult:
        return await client.call_tool("search_knowledge", {"query": "acknowledge an alert", "max_results": 2})

    result = _session(runtime, use)

    assert result.is_error is not True
    content = result.content[0]
    assert isinstance(content, types.TextContent)
    answer = json.loads(content.text)
    assert answer["type"] == "knowledge_search"
    assert answer["results"][0]["title"] == "On-call handbook"
