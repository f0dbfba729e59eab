"""One runtime per state directory: a runtime that still answers keeps its files; the files of one
that is gone are stale and replaced."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from knowledge_local.config import RuntimeSettings
from knowledge_local.stack import InstanceRunningError, LocalStack, PortInUseError
from knowledge_local.state import Endpoints, running_instance, write_endpoints
from tests.support.template import TEMPLATE


class _Health(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        status = 200 if self.path == "/v1/health" else 404
        body = json.dumps({"status": "ok", "runtime_enabled": True}).encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def live_api() -> Iterator[str]:
    """The URL of a server answering ``GET /v1/health`` as a running runtime does."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Health)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _endpoints(api_url: str) -> Endpoints:
    return Endpoints(
        api_url=api_url,
        aws_endpoint_url="http://127.0.0.1:5000",
        table_name="KnowledgeTable",
        ingest_queue_url=None,
        ingest_dlq_url=None,
    )


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _port_is_free(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def test_running_instance_names_a_runtime_that_answers(tmp_path: Path, live_api: str) -> None:
    write_endpoints(tmp_path, _endpoints(live_api))

    found = running_instance(tmp_path)

    assert found is not None
    assert found.api_url == live_api


def test_running_instance_ignores_stale_and_missing_files(tmp_path: Path) -> None:
    stale, missing = tmp_path / "stale", tmp_path / "missing"
    write_endpoints(stale, _endpoints(f"http://127.0.0.1:{free_port()}"))

    assert running_instance(stale) is None
    assert running_instance(missing) is None


def test_local_stack_refuses_to_start_over_a_running_instance(tmp_path: Path, live_api: str) -> None:
    endpoints = write_endpoints(tmp_path, _endpoints(live_api))
    before = endpoints.read_text(encoding="utf-8")
    aws_port = free_port()
    settings = RuntimeSettings(PORT=free_port(), AWS_PORT=aws_port, knowledge_state_dir=tmp_path)
    stack = LocalStack(settings, template=TEMPLATE)

    with pytest.raises(InstanceRunningError) as refused:
        stack.start()
    stack.stop()

    message = str(refused.value)
    assert live_api in message
    assert "KNOWLEDGE_STATE_DIR" in message
    assert "\n" not in message
    assert endpoints.read_text(encoding="utf-8") == before
    assert _port_is_free(aws_port)


@pytest.fixture
def taken_port() -> Iterator[int]:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        yield int(listener.getsockname()[1])


@pytest.mark.parametrize("variable", ["PORT", "AWS_PORT"])
def test_local_stack_on_a_taken_port_creates_no_state_directory(
    tmp_path: Path, taken_port: int, variable: str
) -> None:
    state_dir = tmp_path / "knowledge" / "third"
    ports = {"PORT": free_port(), "AWS_PORT": free_port(), variable: taken_port}
    settings = RuntimeSettings(PORT=ports["PORT"], AWS_PORT=ports["AWS_PORT"], knowledge_state_dir=state_dir)
    stack = LocalStack(settings, template=TEMPLATE)

    with pytest.raises(PortInUseError, match=f"Cannot listen on {variable}={taken_port}"):
        stack.start()
    stack.stop()

    assert list(tmp_path.iterdir()) == []
    assert all(_port_is_free(port) for name, port in ports.items() if name != variable)


@pytest.mark.parametrize("existed", [False, True])
def test_local_stack_failing_after_the_ports_removes_only_the_directories_it_created(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, existed: bool
) -> None:
    state_dir = tmp_path / "knowledge" / "third"
    if existed:
        state_dir.mkdir(parents=True)
        (state_dir / "notes.txt").write_text("kept")

    def fail(*arguments: object) -> None:
        raise RuntimeError("provisioning failed")

    monkeypatch.setattr("knowledge_local.stack.provision", fail)
    ports = {"PORT": free_port(), "AWS_PORT": free_port()}
    settings = RuntimeSettings(PORT=ports["PORT"], AWS_PORT=ports["AWS_PORT"], knowledge_state_dir=state_dir)
    stack = LocalStack(settings, template=TEMPLATE)

    with pytest.raises(RuntimeError, match="provisioning failed"):
        stack.start()

    if existed:
        assert [path.name for path in state_dir.iterdir()] == ["notes.txt"]
    else:
        assert list(tmp_path.iterdir()) == []
    assert all(_port_is_free(port) for port in ports.values())
