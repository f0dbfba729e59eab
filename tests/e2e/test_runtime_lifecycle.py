"""Starting and stopping the runtime: signals stop it cleanly, a taken port, a bad setting or a
runtime already serving from the same state folder is a one-line error. Each test runs its own
short-lived runtime without a seed."""

from __future__ import annotations

import signal
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

from tests.e2e.runtime_process import RuntimeProcess, eventually, free_port, start_runtime


@pytest.fixture
def taken_port() -> Iterator[int]:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        yield int(listener.getsockname()[1])


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "Ctrl-C"])
def test_runtime_signal_stops_everything_and_removes_its_files(tmp_path: Path, signum: int) -> None:
    # without persistence the dev token dies with the table, so its file goes too
    runtime = start_runtime(tmp_path, seed_dir=None, environment={"KNOWLEDGE_PERSIST": "false"})
    runtime.wait_until_ready()
    assert (runtime.state_dir / "endpoints.json").exists()
    environments = runtime.descendants()

    status = runtime.stop(signum)

    assert status == 0, runtime.log
    assert len(environments) > 1  # the fork server and the functions' environments
    # multiprocessing's fork server and resource tracker end when they see the runtime gone
    assert eventually(lambda: not any(Path(f"/proc/{pid}").exists() for pid in environments), timeout=5)
    assert runtime.log.rstrip().endswith("Stopped. Bye.")
    assert not (runtime.state_dir / "endpoints.json").exists()
    assert not (runtime.state_dir / "dev-token").exists()
    with pytest.raises(httpx2.ConnectError):
        httpx2.get(f"{runtime.api_url}/v1/health")


def _load(runtime: RuntimeProcess, stop: threading.Event, answers: list[tuple[object, str]]) -> None:
    """Search and health checks on one kept-alive connection until ``stop``; each answer's status
    (``"transport"`` for a refused or closed connection) and ``Retry-After``."""
    with runtime.http() as api:
        while not stop.is_set():
            try:
                response = api.post("/v1/tools/search_knowledge", json={"query": "anything"})
                answers.append((response.status_code, response.headers.get("retry-after", "")))
                if response.status_code == 503:
                    assert response.json()["error"]["code"] == "service_unavailable"
                health = api.get("/v1/health")
                answers.append((health.status_code, health.headers.get("retry-after", "")))
            except httpx2.TransportError:
                answers.append(("transport", ""))
                time.sleep(0.05)


def test_runtime_stopped_under_load_answers_cleanly_and_leaves_no_process(tmp_path: Path) -> None:
    runtime = start_runtime(tmp_path, seed_dir=None)
    runtime.wait_until_ready()
    processes = runtime.descendants()
    stop, answers = threading.Event(), list[tuple[object, str]]()
    clients = [threading.Thread(target=_load, args=(runtime, stop, answers)) for _ in range(8)]
    for client in clients:
        client.start()
    try:
        eventually(lambda: len(answers) >= 40, timeout=60)
        started = time.monotonic()
        status = runtime.stop(signal.SIGINT)
        seconds = time.monotonic() - started
        left = {pid for pid in processes if Path(f"/proc/{pid}").exists()}
    finally:
        stop.set()
        for client in clients:
            client.join(timeout=30)

    assert status == 0, runtime.log
    assert seconds <= 5, f"stopped in {seconds:.1f} s\n{runtime.log}"
    assert left == set()
    assert {answer for answer, _ in answers} <= {200, 503, "transport"}
    assert all(retry_after == "5" for answer, retry_after in answers if answer == 503)
    assert "Traceback" not in runtime.log
    assert " ERROR " not in runtime.log
    assert runtime.log.rstrip().endswith("Stopped. Bye.")


@pytest.mark.parametrize("variable", ["PORT", "AWS_PORT"])
def test_runtime_port_in_use_exits_with_a_one_line_error_and_leaves_no_state_folder(
    tmp_path: Path, taken_port: int, variable: str
) -> None:
    ports = {"port": taken_port, "aws_port": free_port()}
    if variable == "AWS_PORT":
        ports = {"port": free_port(), "aws_port": taken_port}

    runtime = start_runtime(tmp_path, seed_dir=None, **ports)
    status = runtime.process.wait(timeout=60)

    assert status == 1
    assert f"Cannot listen on {variable}={taken_port}" in runtime.log
    assert "Traceback" not in runtime.log
    assert not runtime.state_dir.exists()


def test_runtime_invalid_port_setting_names_the_variable(tmp_path: Path) -> None:
    runtime = start_runtime(tmp_path, seed_dir=None, environment={"PORT": "http"})
    status = runtime.process.wait(timeout=60)

    assert status == 1
    assert runtime.log.startswith("Invalid setting: PORT")
    assert "Traceback" not in runtime.log


def test_runtime_second_instance_on_one_state_folder_refuses_and_leaves_the_first_alone(
    tmp_path: Path,
) -> None:
    first = start_runtime(tmp_path, seed_dir=None)
    try:
        first.wait_until_ready()
        files = {name: (first.state_dir / name).read_text() for name in ("endpoints.json", "dev-token")}
        second_dir = tmp_path / "second"
        second_dir.mkdir()

        second = start_runtime(
            second_dir, seed_dir=None, environment={"KNOWLEDGE_STATE_DIR": str(first.state_dir)}
        )
        status = second.process.wait(timeout=60)

        assert status == 1
        assert f"Another local runtime is serving {first.api_url}" in second.log
        assert "Traceback" not in second.log
        assert {name: (first.state_dir / name).read_text() for name in files} == files
        assert httpx2.get(f"{first.api_url}/v1/health").status_code == 200
    finally:
        first.stop()


def test_runtime_with_persistence_keeps_the_table_and_rebuilds_the_index(tmp_path: Path) -> None:
    persist: dict[str, str] = {}  # the default
    first = start_runtime(tmp_path, seed_dir=None, environment=persist)
    try:
        first.wait_until_ready()
        token = first.token
        with first.http() as api:
            base = api.post("/v1/knowledge-bases", json={"name": "kept", "scope": "tenant"}).json()
            created = api.post(
                f"/v1/knowledge-bases/{base['knowledge_base_id']}/items",
                json={
                    "title": "Espresso",
                    "content": "Pull the shot for twenty-five seconds.",
                    "publish": True,
                },
            ).json()
    finally:
        assert first.stop() == 0, first.log
    state = first.state_dir

    second = start_runtime(tmp_path, seed_dir=None, environment=persist)  # the same state folder
    try:
        second.wait_until_ready()
        with second.http(token) as api:  # the first runtime's token is in the restored table
            item = api.get(f"/v1/knowledge-items/{created['knowledge_item_id']}").json()
            found = api.post("/v1/tools/search_knowledge", json={"query": "espresso shot"}).json()
    finally:
        assert second.stop() == 0, second.log

    assert "Restoring the state kept in" in second.log
    assert item["current_revision_id"] == created["knowledge_revision_id"]
    assert [result["knowledge_item_id"] for result in found["results"]] == [created["knowledge_item_id"]]
    assert (state / "table.jsonl").exists()


def test_runtime_without_persistence_starts_empty(tmp_path: Path) -> None:
    in_memory = {"KNOWLEDGE_PERSIST": "false"}
    first = start_runtime(tmp_path, seed_dir=None, environment=in_memory)
    try:
        first.wait_until_ready()
        with first.http() as api:
            assert (
                api.post("/v1/knowledge-bases", json={"name": "gone", "scope": "tenant"}).status_code == 201
            )
    finally:
        assert first.stop() == 0, first.log
    second = start_runtime(tmp_path, seed_dir=None, environment=in_memory)  # the same state folder
    try:
        second.wait_until_ready()
        with second.http() as api:
            response = api.get("/v1/knowledge-bases")
    finally:
        second.stop()

    assert response.status_code == 200, response.text
    assert response.json()["knowledge_bases"] == []
    assert not (first.state_dir / "table.jsonl").exists()
    assert not list(first.state_dir.glob("journal-*.log"))
    assert "in memory only (KNOWLEDGE_PERSIST=false)" in second.log
