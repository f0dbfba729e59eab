"""Read-your-own-writes on the local runtime (DESIGN §9): a note remembered is found by the very
next ``search_memory`` with ``consistent: true``, however far behind the indexer is; without it the
answer says how many of the caller's writes the index has not taken (``pending_index``).

The first test probes the session runtime 1,000 times under ``make fuzz`` (``KNOWLEDGE_FUZZ=long``),
100 times in the gate, while other writers keep its indexer busy.
A probe's marker is one word, so its note is the only lexical hit; in the default hybrid mode it
can share the top score with the probe's semantically closest older note once the semantic leg's
200 candidates no longer reach it, which the index path does alike, so the test asks for the note
among the results and reports how often it came first. The others start a runtime whose indexer
never receives note or item changes (its template's stream filter leaves them out), so the index is
held back for as long as the test looks: there ``search_memory`` and ``search_knowledge`` report
``pending_index`` and, with ``consistent: true``, find the note or item just written."""

from __future__ import annotations

import re
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest

from tests.e2e.runtime_process import RuntimeProcess, start_runtime
from tests.support.fuzzing import budget
from tests.support.template import ROOT, TEMPLATE

PROBES = budget(fast=100, long=1_000)
LOAD_WRITERS = 2


def _post(client: httpx2.Client, path: str, body: dict[str, Any]) -> dict[str, Any]:
    """The 200/201 answer of ``path``, waiting out 429s as ``Retry-After`` says."""
    while True:
        response = client.post(path, json=body)
        if response.status_code == 429:
            time.sleep(float(response.headers.get("Retry-After", "1")))
            continue
        assert response.status_code in (200, 201), response.text
        answer: dict[str, Any] = response.json()
        return answer


def _tenant_token(api: httpx2.Client, tenant_id: str, subject_id: str) -> str:
    response = api.post(
        "/v1/tokens",
        json={"tenant_id": tenant_id, "subject_id": subject_id, "scopes": ["memory:read", "memory:write"]},
    )
    assert response.status_code == 201, response.text
    token: str = response.json()["token"]
    return token


def _load(runtime: RuntimeProcess, token: str, stop: threading.Event, written: list[int]) -> None:
    """Remember notes until ``stop``, as fast as the tenant's write quota allows."""
    with runtime.http(token) as client:
        while not stop.is_set():
            marker = uuid.uuid4().hex[:12]
            _post(
                client,
                "/v1/tools/remember",
                {"content": f"Load note {marker}: the harbour lantern schedule changes at dusk."},
            )
            written.append(1)


def test_remember_then_consistent_search_memory_finds_the_note_every_time_under_load(
    runtime: RuntimeProcess, api: httpx2.Client
) -> None:
    probe_token = _tenant_token(api, f"ryw-{uuid.uuid4().hex[:8]}", "prober")
    load_tokens = [_tenant_token(api, f"load-{uuid.uuid4().hex[:8]}", "loader") for _ in range(LOAD_WRITERS)]
    stop, loaded = threading.Event(), []  # type: ignore[var-annotated]
    loaders = [threading.Thread(target=_load, args=(runtime, token, stop, loaded)) for token in load_tokens]
    for loader in loaders:
        loader.start()
    misses: list[int] = []
    first = unindexed_at_search = 0
    started = time.monotonic()
    try:
        with runtime.http(probe_token) as client:
            for attempt in range(PROBES):
                marker = f"zq{uuid.uuid4().hex[:10]}"
                written = _post(
                    client, "/v1/tools/remember", {"content": f"Probe {attempt}: the vault code is {marker}."}
                )
                answer = _post(client, "/v1/tools/search_memory", {"query": marker, "consistent": True})
                found = [result["note_id"] for result in answer["results"]]
                if written["note"]["note_id"] not in found:
                    misses.append(attempt)
                first += found[:1] == [written["note"]["note_id"]]
                if not written["indexed"] and answer["pending_index"]["writes"] > 0:
                    unindexed_at_search += 1
    finally:
        stop.set()
        for loader in loaders:
            loader.join()
    elapsed = time.monotonic() - started
    print(
        f"read-your-own-writes: {PROBES} probes, {len(misses)} misses ({first} ranked first), "
        f"{unindexed_at_search} searched before the indexer took the note, {len(loaded)} load notes "
        f"written, {elapsed:.0f} s"
    )

    assert misses == []
    assert unindexed_at_search > PROBES // 2  # the store path was exercised, not only the index


@pytest.fixture(scope="module")
def held_back(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RuntimeProcess]:
    """A runtime whose stream filter never passes a note or item change to the indexer."""
    work = tmp_path_factory.mktemp("held-back")
    text = TEMPLATE.read_text(encoding="utf-8")
    text = text.replace('["item", "base", "note"]', '["base"]')
    text = re.sub(r"(CodeUri|ContentUri): (\S+)", lambda m: f"{m[1]}: {ROOT / m[2]}/", text)
    assert '"note"]' not in text
    assert '["item", ' not in text
    override = work / "template.yaml"
    override.write_text(text, encoding="utf-8")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("E2E_TEMPLATE_OVERRIDE", str(override))
        running = start_runtime(work, seed_dir=None)
    try:
        running.wait_until_ready()
        yield running
    finally:
        running.stop()


def test_search_memory_reports_pending_index_while_the_indexer_is_held_back(
    held_back: RuntimeProcess,
) -> None:
    with held_back.http() as client:
        written = _post(client, "/v1/tools/remember", {"content": "The backup vault is called kestrel."})
        time.sleep(3.0)  # many stream polls: the indexer would have taken it by now

        plain = _post(client, "/v1/tools/search_memory", {"query": "kestrel vault"})
        consistent = _post(client, "/v1/tools/search_memory", {"query": "kestrel vault", "consistent": True})
        recalled = _post(client, "/v1/tools/recall_context", {"query": "kestrel", "consistent": True})
        unpinned = _post(client, "/v1/tools/unpin_memory", {"note_id": written["note"]["note_id"]})

    assert written["indexed"] is False
    assert plain["results"] == []
    assert plain["pending_index"] == {"writes": 1, "included": False}
    assert [result["note_id"] for result in consistent["results"]] == [written["note"]["note_id"]]
    assert consistent["pending_index"] == {"writes": 1, "included": True}
    assert [item["note_id"] for item in recalled["items"]] == [written["note"]["note_id"]]
    assert unpinned["indexed"] is False


def test_search_knowledge_reports_pending_index_while_the_indexer_is_held_back(
    held_back: RuntimeProcess,
) -> None:
    with held_back.http() as client:
        base = _post(client, "/v1/knowledge-bases", {"name": "Held back", "scope": "tenant"})
        item = _post(
            client,
            f"/v1/knowledge-bases/{base['knowledge_base_id']}/items",
            {"title": "Heron", "content": "The staging database is called heron.", "publish": True},
        )
        time.sleep(3.0)  # many stream polls: the indexer would have taken it by now

        query = {"query": "staging heron", "knowledge_base_id": base["knowledge_base_id"]}
        plain = _post(client, "/v1/tools/search_knowledge", query)
        consistent = _post(client, "/v1/tools/search_knowledge", {**query, "consistent": True})

    assert item["indexed"] is False
    assert plain["results"] == []
    assert plain["pending_index"] == {"writes": 1, "included": False}
    assert [(r["knowledge_item_id"], r["knowledge_revision_id"]) for r in consistent["results"]] == [
        (item["knowledge_item_id"], item["knowledge_revision_id"])
    ]
    assert consistent["pending_index"] == {"writes": 1, "included": True}
