"""The local runtime (``python -m knowledge_local.runtime``, what ``make run`` runs) as a child
process on free ports, with its own state and seed folders, for end-to-end tests over sockets."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import boto3
import httpx2

from knowledge_local.emulator.lambda_runtime.processes import descendants
from tests.support.template import ROOT, TEMPLATE

READY_MARKER = "Ready in "
BOOT_TIMEOUT_SECONDS = 120.0
STOP_TIMEOUT_SECONDS = 30.0
T = TypeVar("T")


def free_port() -> int:
    """A port nothing listens on right now (the OS picks it)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@dataclass
class RuntimeProcess:
    """A started runtime: its process, log file (stdout and stderr) and state folder."""

    process: subprocess.Popen[bytes]
    log_path: Path
    state_dir: Path
    port: int
    aws_port: int

    @property
    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    @property
    def endpoints(self) -> dict[str, Any]:
        loaded: dict[str, Any] = json.loads((self.state_dir / "endpoints.json").read_text(encoding="utf-8"))
        return loaded

    @property
    def token(self) -> str:
        return (self.state_dir / "dev-token").read_text(encoding="utf-8").strip()

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def aws(self, service: str) -> Any:
        """A boto3 client of ``service`` on the runtime's AWS endpoint (any credentials do)."""
        return boto3.client(
            service,
            endpoint_url=self.endpoints["aws_endpoint_url"],
            region_name="us-east-1",
            aws_access_key_id="local",
            aws_secret_access_key="local",
        )

    def http(self, token: str | None = None) -> httpx2.Client:
        """A client of the API sending ``token`` (default: the dev token)."""
        return httpx2.Client(
            base_url=self.api_url, headers={"Authorization": f"Bearer {token or self.token}"}, timeout=60
        )

    def descendants(self) -> set[int]:
        """The processes started by the runtime, and by those, that are running now."""
        return descendants(self.process.pid)

    def wait_until_ready(self, timeout: float = BOOT_TIMEOUT_SECONDS) -> None:
        deadline = time.monotonic() + timeout
        while READY_MARKER not in self.log:
            if self.process.poll() is not None:
                raise AssertionError(f"the runtime exited with {self.process.returncode}:\n{self.log}")
            if time.monotonic() > deadline:
                raise AssertionError(f"the runtime was not ready after {timeout:.0f} s:\n{self.log}")
            time.sleep(0.1)

    def stop(self, signum: int = signal.SIGINT) -> int:
        """Send ``signum`` (Ctrl-C by default) and wait for the exit status."""
        if self.process.poll() is None:
            self.process.send_signal(signum)
        try:
            return self.process.wait(timeout=STOP_TIMEOUT_SECONDS)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise AssertionError(f"the runtime did not stop on signal {signum}:\n{self.log}") from None


def start_runtime(
    work_dir: Path,
    *,
    seed_dir: Path | None,
    port: int | None = None,
    aws_port: int | None = None,
    environment: Mapping[str, str] | None = None,
    own_group: bool = False,
) -> RuntimeProcess:
    """Start the runtime on ``port``/``aws_port`` (default: free ones) with ``work_dir/state`` as its
    state folder, seeding ``seed_dir`` (``None``: no seed); it is not waited for. ``own_group``
    starts it in a process group of its own, as a shell starts ``make run``, so that
    ``os.killpg(runtime.process.pid, ...)`` reaches it and every process it starts, as Ctrl-C does."""
    state_dir = work_dir / "state"
    log_path = work_dir / "runtime.log"
    port = port or free_port()
    aws_port = aws_port or free_port()
    env = {
        **os.environ,
        "PORT": str(port),
        "AWS_PORT": str(aws_port),
        "KNOWLEDGE_STATE_DIR": str(state_dir),
        "KNOWLEDGE_SEED_DIR": str(seed_dir) if seed_dir is not None else "",
        "PYTHONUNBUFFERED": "1",
        **(environment or {}),
    }
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "knowledge_local.runtime",
                "--template",
                os.environ.get("E2E_TEMPLATE_OVERRIDE", str(TEMPLATE)),
            ],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            process_group=0 if own_group else None,
        )
    return RuntimeProcess(process, log_path, state_dir, port, aws_port)


def eventually(probe: Callable[[], T | None], *, timeout: float = 60.0, interval: float = 0.2) -> T:
    """The first truthy answer of ``probe``, polled until ``timeout`` seconds have passed."""
    deadline = time.monotonic() + timeout
    while True:
        answer = probe()
        if answer:
            return answer
        if time.monotonic() > deadline:
            raise AssertionError(f"no answer within {timeout:.0f} s")
        time.sleep(interval)


def search_knowledge(api: httpx2.Client, **arguments: Any) -> dict[str, Any]:
    """The tool's 200 answer to ``arguments`` over REST."""
    response = api.post("/v1/tools/search_knowledge", json=arguments)
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


def titles(answer: Mapping[str, Any]) -> list[str]:
    return [result["title"] for result in answer["results"]]
