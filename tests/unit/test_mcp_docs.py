"""The MCP guides name every tool ``/mcp`` lists (``knowledge.api.mcp_tools.TOOLS``)."""

from __future__ import annotations

import re

import pytest

from knowledge.api.mcp_tools import TOOLS
from tests.support.template import ROOT

NUMBERS = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight"}


@pytest.mark.parametrize("doc", ["quickstart.md", "mcp-clients.md"])
def test_mcp_guide_lists_every_tool_the_server_lists(doc: str) -> None:
    text = " ".join((ROOT / "docs" / doc).read_text(encoding="utf-8").split())

    match = re.search(r"It lists (\w+) tools?, ((?:`\w+`(?:, | and )?)+)", text)

    assert match is not None
    assert match.group(1) == NUMBERS[len(TOOLS)]
    assert re.findall(r"`(\w+)`", match.group(2)) == list(TOOLS)
