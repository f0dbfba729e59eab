"""The local OpenSearch node's launcher (``knowledge_local.opensearch_node``), on real JVMs: a node
that cannot start is reported with its log and leaves no folder; ``exec`` hands a node's URL to a
command and passes on its exit status; a node whose starter is killed stops and leaves nothing; a
missing Java is a clear error."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import httpx2
import pytest

from knowledge_local import opensearch_node
from knowledge_local.opensearch_node import (
    ENGINE_VERSION,
    STOP_SECONDS,
    NodeError,
    claim_cluster,
    java_executable,
    main,
    start_node,
)


def test_node_answers_with_the_template_engine_version_and_the_plugins_we_use(opensearch_url: str) -> None:
    root = httpx2.get(opensearch_url, timeout=10).json()
    plugins = httpx2.get(f"{opensearch_url}/_cat/plugins", params={"h": "component"}, timeout=10).text.split()

    assert root["version"]["number"] == ENGINE_VERSION
    assert {name.rsplit(".", 1)[1] for name in plugins} == {
        "CommonAnalysisPlugin",
        "KNNPlugin",
        "Netty4Plugin",
        "PainlessPlugin",
        "ReindexPlugin",
    }


def test_claim_cluster_drops_the_runtime_indexes_and_keeps_the_others(opensearch_url: str) -> None:
    for index in ("claim-chunks", "claim-notes", "claim-other"):
        httpx2.put(f"{opensearch_url}/{index}/_doc/1?refresh=true", json={"text": "left"}, timeout=10)

    version = claim_cluster(opensearch_url, ["claim-chunks", "claim-notes", "claim-missing"])

    assert version == ENGINE_VERSION
    assert httpx2.head(f"{opensearch_url}/claim-chunks", timeout=10).status_code == 404
    assert httpx2.head(f"{opensearch_url}/claim-notes", timeout=10).status_code == 404
    assert httpx2.get(f"{opensearch_url}/claim-other/_count", timeout=10).json()["count"] == 1
    httpx2.delete(f"{opensearch_url}/claim-other", timeout=10)


def test_claim_cluster_where_nothing_answers_says_what_to_do() -> None:
    with pytest.raises(
        NodeError, match=r"OPENSEARCH_URL=http://127.0.0.1:9 does not answer .*make opensearch"
    ):
        claim_cluster("http://127.0.0.1:9", ["knowledge-chunks"], timeout=2)


def test_start_node_with_a_setting_the_node_refuses_reports_its_log_and_removes_its_folder(
    tmp_path: Path,
) -> None:
    with pytest.raises(NodeError) as raised:
        start_node(name="refused", heap="256m", settings={"node.roles": "no_such_role"}, parent=tmp_path)

    assert "exited with status" in str(raised.value)
    assert "no_such_role" in str(raised.value)
    assert list(tmp_path.iterdir()) == []


def test_exec_runs_the_command_with_the_node_url_and_returns_its_status(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENSEARCH_HEAP", "256m")
    probe = (
        "import json, os, sys, urllib.request\n"
        "url = os.environ['OPENSEARCH_URL']\n"
        "version = json.load(urllib.request.urlopen(url))['version']['number']\n"
        "sys.exit(7 if version == sys.argv[1] else 1)\n"
    )

    status = main(["exec", "--", sys.executable, "-c", probe, ENGINE_VERSION])

    assert status == 7


def test_java_executable_without_a_jdk_is_a_clear_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("JAVA_HOME", str(tmp_path))

    with pytest.raises(NodeError, match="needs Java 17 or newer"):
        java_executable()


def test_ensure_built_is_a_no_op_when_the_sources_are_unchanged(monkeypatch: pytest.MonkeyPatch) -> None:
    opensearch_node.ensure_built(lambda _: None)
    monkeypatch.setattr(opensearch_node.shutil, "which", lambda _: None)  # no Maven reachable now

    opensearch_node.ensure_built(lambda _: None)  # the stamp matches: Maven is not needed


def test_node_whose_parent_is_killed_stops_and_removes_its_folder(tmp_path: Path) -> None:
    starter = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\n"
            "from pathlib import Path\n"
            "from knowledge_local.opensearch_node import start_node\n"
            "node = start_node(\n"
            "    name='orphan', heap='256m', parent=Path(sys.argv[1]), progress=lambda _: None\n"
            ")\n"
            "print(node.process.pid, flush=True)\n"
            "time.sleep(600)\n",
            str(tmp_path),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert starter.stdout is not None
    node_pid = int(starter.stdout.readline())
    [home] = tmp_path.iterdir()

    starter.kill()  # SIGKILL: the starter cannot stop the node itself
    starter.wait()

    deadline = time.monotonic() + STOP_SECONDS
    while Path(f"/proc/{node_pid}").exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not Path(f"/proc/{node_pid}").exists()
    assert not home.exists()
