"""The local runtime on the production engine: ``SEARCH_BACKEND=opensearch`` with no
``OPENSEARCH_URL``, so the runtime starts its own OpenSearch node (as ``SEARCH_BACKEND=opensearch
make run`` does), and every function searches it over HTTP. A slice of the e2e suite runs there:
``search_knowledge`` in every mode and an addressed read, ``remember`` → ``search_memory`` →
``recall_context``, a forget and an archive leaving search, and the node stopped and its folder
removed on Ctrl-C."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from tests.e2e.conftest import SEED_DOCUMENTS
from tests.e2e.runtime_process import RuntimeProcess, eventually, search_knowledge, start_runtime, titles

NODE_BOOT_SECONDS = 240.0
"""The runtime's boot here includes the JVM's and the node's start (7–20 s on two cores)."""
MODES = ("hybrid", "lexical", "semantic", "rrf")


@pytest.fixture(scope="module")
def opensearch_runtime(tmp_path_factory: pytest.TempPathFactory, seed_dir: Path) -> Iterator[RuntimeProcess]:
    work = tmp_path_factory.mktemp("opensearch-runtime")
    environment = {"SEARCH_BACKEND": "opensearch", "OPENSEARCH_HEAP": "512m", "OPENSEARCH_URL": ""}
    running = start_runtime(work, seed_dir=seed_dir, environment=environment)
    try:
        running.wait_until_ready(timeout=NODE_BOOT_SECONDS)
        yield running
    finally:
        running.stop()


@pytest.fixture
def api(opensearch_runtime: RuntimeProcess) -> Iterator[httpx2.Client]:
    with opensearch_runtime.http() as client:
        yield client


def _node(runtime: RuntimeProcess) -> httpx2.Client:
    return httpx2.Client(base_url=runtime.endpoints["opensearch_url"], timeout=30)


def _remember(api: httpx2.Client, content: str, **arguments: Any) -> dict[str, Any]:
    response = api.post("/v1/tools/remember", json={"content": content, **arguments})
    assert response.status_code in (200, 201), response.text
    note: dict[str, Any] = response.json()["note"]
    return note


def _memories(api: httpx2.Client, query: str, mode: str = "lexical") -> list[str]:
    response = api.post("/v1/tools/search_memory", json={"query": query, "mode": mode})
    assert response.status_code == 200, response.text
    return [result["content"] for result in response.json()["results"]]


def test_opensearch_runtime_names_its_node_which_answers_as_2_19(opensearch_runtime: RuntimeProcess) -> None:
    with _node(opensearch_runtime) as node:
        root = node.get("/").json()
        indexes = node.get("/_cat/indices", params={"format": "json"}).json()

    assert root["version"]["number"].startswith("2.19.")
    assert {"knowledge-chunks", "knowledge-notes"} <= {index["index"] for index in indexes}
    assert "OpenSearch    http://127.0.0.1:" in opensearch_runtime.log


def test_opensearch_runtime_holds_the_seed_in_the_node(opensearch_runtime: RuntimeProcess) -> None:
    with _node(opensearch_runtime) as node:
        node.post("/knowledge-chunks/_refresh")
        counted = node.post(
            "/knowledge-chunks/_count", json={"query": {"term": {"doc_type": "chunk"}}}
        ).json()

    assert counted["count"] >= len(SEED_DOCUMENTS)


@pytest.mark.parametrize("mode", MODES)
def test_opensearch_runtime_search_ranks_the_matching_document_first(api: httpx2.Client, mode: str) -> None:
    answer = search_knowledge(api, query="how do I roll back a release", mode=mode, max_results=3)

    assert titles(answer)[0] == "Deployment runbook"
    assert "degraded" not in answer
    scores = answer["results"][0]["scores"]
    assert (scores["lexical"] is not None) == (mode != "semantic")
    assert (scores["semantic"] is not None) == (mode != "lexical")


def test_opensearch_runtime_semantic_search_finds_a_document_without_shared_words(api: httpx2.Client) -> None:
    assert titles(search_knowledge(api, query="making coffee", mode="semantic", max_results=1)) == [
        "Espresso extraction"
    ]


def test_opensearch_runtime_addressed_read_returns_the_located_text(api: httpx2.Client) -> None:
    hit = search_knowledge(api, query="page the secondary", max_results=1)["results"][0]

    located = search_knowledge(
        api,
        knowledge_item_id=hit["knowledge_item_id"],
        knowledge_revision_id=hit["knowledge_revision_id"],
        offset=hit["locator"]["offset"],
        limit_chars=hit["locator"]["length"],
    )

    start = hit["locator"]["offset"]
    assert located["content"] == SEED_DOCUMENTS["oncall.md"][start : start + hit["locator"]["length"]]


def test_opensearch_runtime_memory_is_remembered_searched_recalled_and_forgotten(api: httpx2.Client) -> None:
    kept = _remember(api, "The staging database of the falcon project is pg-falcon-2.", path="/ops")
    gone = _remember(api, "The falcon project's old database was pg-falcon-1.", path="/ops")
    eventually(lambda: len(_memories(api, "falcon database")) == 2)

    semantic = _memories(api, "where does falcon keep its data?", mode="semantic")
    pack = api.post(
        "/v1/tools/recall_context", json={"query": "falcon staging database", "max_tokens": 200}
    ).json()
    forgotten = api.post("/v1/tools/forget_memory", json={"note_id": gone["note_id"], "mode": "hard"})

    assert set(semantic[:2]) == {kept["content"], gone["content"]}
    assert kept["note_id"] in [item["note_id"] for item in pack["items"]]
    assert kept["content"] in pack["text"]
    assert forgotten.status_code == 200, forgotten.text
    assert eventually(lambda: _memories(api, "falcon database") == [kept["content"]])


def test_opensearch_runtime_archived_item_leaves_search(api: httpx2.Client) -> None:
    base = api.post("/v1/knowledge-bases", json={"name": "opensearch-slice", "scope": "tenant"}).json()
    created = api.post(
        f"/v1/knowledge-bases/{base['knowledge_base_id']}/items",
        json={
            "title": "Pelican migration",
            "content": "The pelican service moves to the new cluster on Thursday.",
            "publish": True,
        },
    )
    assert created.status_code == 201, created.text
    item = created.json()

    def found() -> list[str]:
        return [hit["knowledge_item_id"] for hit in search_knowledge(api, query="pelican cluster")["results"]]

    eventually(lambda: item["knowledge_item_id"] in found())

    archived = api.post(
        f"/v1/knowledge-items/{item['knowledge_item_id']}/archive", json={"expected_version": item["version"]}
    )

    assert archived.status_code == 200, archived.text
    assert eventually(lambda: item["knowledge_item_id"] not in found())


def test_opensearch_runtime_ctrl_c_stops_the_node_and_removes_its_folder(
    opensearch_runtime: RuntimeProcess,
) -> None:
    # The module's last test: it stops the runtime the others used.
    url = opensearch_runtime.endpoints["opensearch_url"]
    logged = re.search(r"starting node .* log (\S+)/node\.log\)", opensearch_runtime.log)
    assert logged is not None, opensearch_runtime.log
    folder = Path(logged.group(1))
    assert folder.is_dir()

    status = opensearch_runtime.stop()

    assert status == 0, opensearch_runtime.log
    assert not folder.exists()
    with pytest.raises(httpx2.TransportError):
        httpx2.get(url, timeout=2)
