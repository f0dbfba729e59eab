"""One local runtime for the whole e2e session, seeded with three small documents.

Every test talks to it over real sockets only: HTTP for the API and MCP, the AWS endpoint for SQS,
the ``knowledge`` command as a child process.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

from tests.e2e.runtime_process import RuntimeProcess, start_runtime

SEED_DOCUMENTS = {
    "runbooks/deploy.md": (
        "# Deployment runbook\n\n"
        "Roll out a release with the blue green switch. Check the health dashboard before and after "
        "the rollout, and keep the previous release warm so that a rollback takes one command.\n\n"
        "## Rollback\n\nSwitch the router back to the previous colour and page the release owner.\n"
    ),
    "oncall.md": (
        "# On-call handbook\n\n"
        "Page the secondary when the primary does not acknowledge an alert within ten minutes. "
        "Hand over open incidents at the end of every shift with a written summary.\n"
    ),
    "notes/espresso.txt": (
        "Espresso extraction\n\n"
        "Grind the beans finely and pull the shot for about twenty-five seconds at nine bars of pressure.\n"
    ),
}


@pytest.fixture(scope="session")
def seed_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("seed")
    for name, text in SEED_DOCUMENTS.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return folder


@pytest.fixture(scope="session")
def runtime(tmp_path_factory: pytest.TempPathFactory, seed_dir: Path) -> Iterator[RuntimeProcess]:
    """The runtime, ready (seed indexed); stopped with Ctrl-C at the end of the session."""
    running = start_runtime(tmp_path_factory.mktemp("runtime"), seed_dir=seed_dir)
    try:
        running.wait_until_ready()
        yield running
    finally:
        running.stop()


@pytest.fixture
def api(runtime: RuntimeProcess) -> Iterator[httpx2.Client]:
    """An HTTP client of the API holding the dev token."""
    with runtime.http() as client:
        yield client
