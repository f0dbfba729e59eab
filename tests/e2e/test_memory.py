"""The memory tools on the local runtime, as a new user meets them: remember through REST, MCP,
the ``knowledge`` command and the ingest queue; search; update by key; supersede; expire; forget
each way; and never see another principal's private note or another tenant's note."""

from __future__ import annotations

import json
import time
from typing import Any

import anyio
import httpx2
import mcp.types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.e2e.runtime_process import RuntimeProcess, eventually
from tests.e2e.test_cli import knowledge


def _remember(api: httpx2.Client, content: str, **arguments: Any) -> dict[str, Any]:
    response = api.post("/v1/tools/remember", json={"content": content, **arguments})
    assert response.status_code in (200, 201), response.text
    answer: dict[str, Any] = response.json()
    return answer


def _found(api: httpx2.Client, query: str, **arguments: Any) -> list[str]:
    """The contents found; lexical unless ``mode`` says otherwise, since the semantic leg of the
    other modes ranks every visible note."""
    response = api.post("/v1/tools/search_memory", json={"query": query, "mode": "lexical", **arguments})
    assert response.status_code == 200, response.text
    return [result["content"] for result in response.json()["results"]]


def _token(api: httpx2.Client, subject_id: str, tenant_id: str = "dev") -> str:
    response = api.post(
        "/v1/tokens",
        json={
            "tenant_id": tenant_id,
            "subject_id": subject_id,
            "scopes": ["memory:read", "memory:write", "memory:share"],
        },
    )
    assert response.status_code == 201, response.text
    token: str = response.json()["token"]
    return token


@pytest.fixture
def api(runtime: RuntimeProcess) -> Any:
    with runtime.http() as client:
        yield client


def test_memory_remembered_over_rest_is_found_once_the_stream_indexed_it(api: httpx2.Client) -> None:
    note = _remember(api, "The staging cluster is called osprey.", path="/ops")["note"]

    assert eventually(lambda: _found(api, "osprey cluster")) == ["The staging cluster is called osprey."]
    assert api.get(f"/v1/notes/{note['note_id']}").json()["content"] == note["content"]


def test_memory_update_by_key_leaves_only_the_new_text(api: httpx2.Client) -> None:
    _remember(api, "The release train leaves on Mondays.", semantic_key="e2e.release.day")
    updated = _remember(api, "The release train leaves on Fridays.", semantic_key="e2e.release.day")

    assert updated["result"] == "updated"
    assert eventually(lambda: _found(api, "release train") == ["The release train leaves on Fridays."])
    versions = api.get(f"/v1/notes/{updated['note']['note_id']}/versions").json()["versions"]
    assert [version["version"] for version in versions] == [2, 1]


def test_memory_as_of_a_moment_finds_the_version_then_on_the_runtime(api: httpx2.Client) -> None:
    first = _remember(api, "The kestrel standup is at nine.", semantic_key="e2e.kestrel.standup")["note"]
    assert eventually(lambda: _found(api, "kestrel standup") == ["The kestrel standup is at nine."])
    moment = api.get(f"/v1/notes/{first['note_id']}").json()["updated_at"]
    _remember(api, "The kestrel standup is at ten.", semantic_key="e2e.kestrel.standup")

    assert eventually(lambda: _found(api, "kestrel standup") == ["The kestrel standup is at ten."])
    assert eventually(lambda: _found(api, "kestrel standup", as_of=moment)) == [
        "The kestrel standup is at nine."
    ]
    pack = api.post("/v1/tools/recall_context", json={"query": "kestrel standup", "as_of": moment})
    assert pack.status_code == 200, pack.text
    assert [item["version"] for item in pack.json()["items"] if item["note_id"] == first["note_id"]] == [1]


def test_memory_superseded_and_expired_notes_leave_search(api: httpx2.Client) -> None:
    old = _remember(api, "The heron office wifi is heron-guest.")["note"]
    _remember(api, "The heron office wifi is heron-staff.", supersedes=[old["note_id"]])
    _remember(api, "The heron demo room is free until noon.", ttl_seconds=2)

    assert eventually(lambda: _found(api, "heron office wifi") == ["The heron office wifi is heron-staff."])
    time.sleep(2.5)
    assert "The heron demo room is free until noon." not in _found(api, "demo room")


def test_memory_forget_each_way(api: httpx2.Client, runtime: RuntimeProcess) -> None:
    soft, redact, hard = (
        _remember(api, f"The kiwi {mode} fact number {n}.")["note"]["note_id"]
        for n, mode in enumerate(("soft", "redact", "hard"))
    )
    eventually(lambda: len(_found(api, "kiwi fact")) == 3)

    assert api.post("/v1/tools/forget_memory", json={"note_id": soft, "mode": "soft"}).status_code == 200
    assert api.post("/v1/tools/forget_memory", json={"note_id": redact, "mode": "redact"}).status_code == 200
    forgotten = knowledge(runtime, "forget", hard, "--mode", "hard")

    assert forgotten.returncode == 0, forgotten.stderr
    assert eventually(lambda: _found(api, "kiwi fact") == [])
    assert api.get(f"/v1/notes/{hard}").status_code == 404
    assert api.post(f"/v1/notes/{soft}/restore").json()["result"] == "restored"
    assert eventually(lambda: _found(api, "kiwi fact") == ["The kiwi soft fact number 0."])


def test_memory_of_another_principal_or_tenant_is_never_seen(
    api: httpx2.Client, runtime: RuntimeProcess
) -> None:
    with (
        runtime.http(_token(api, "bob")) as bob,
        runtime.http(_token(api, "dev", tenant_id="globex")) as other,
    ):
        private = _remember(bob, "Bob's private ibex note.")["note"]["note_id"]
        _remember(other, "Globex's ibex note.", scope="tenant")
        _remember(api, "Dev's own ibex note.")
        eventually(lambda: _found(api, "ibex note") == ["Dev's own ibex note."] and _found(bob, "ibex note"))

        for mode in ("hybrid", "lexical", "semantic", "rrf"):
            seen = _found(api, "ibex note", mode=mode, limit=50)
            assert "Dev's own ibex note." in seen
            assert not {"Bob's private ibex note.", "Globex's ibex note."} & set(seen)
        assert api.get(f"/v1/notes/{private}").status_code == 404
        assert other.get(f"/v1/notes/{private}").status_code == 404


def test_memory_through_mcp_and_the_cli(runtime: RuntimeProcess, api: httpx2.Client) -> None:
    async def use(client: Client) -> types.CallToolResult:
        return await client.call_tool(
            "remember", {"content": "The puffin backup runs at 02:00.", "path": "/ops"}
        )

    async def run() -> types.CallToolResult:
        async with (
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {runtime.token}"}, timeout=60) as http,
            Client(
                streamable_http_client(f"{runtime.api_url}/mcp", http_client=http), mode="legacy"
            ) as client,
        ):
            return await use(client)

    result = anyio.run(run)
    content = result.content[0]
    assert isinstance(content, types.TextContent)
    assert json.loads(content.text)["result"] == "created"
    remembered = knowledge(
        runtime, "remember", "The puffin restore drill is monthly.", "--path", "/ops", "--key", "puffin.drill"
    )
    assert remembered.returncode == 0, remembered.stderr
    assert remembered.stdout.startswith("created: nt_")

    expected = {"The puffin backup runs at 02:00.", "The puffin restore drill is monthly."}
    assert eventually(lambda: set(_found(api, "puffin")) == expected)
    listing = knowledge(runtime, "memories", "puffin", "--mode", "lexical")
    assert listing.returncode == 0, listing.stderr
    assert all(content in listing.stdout for content in expected), listing.stdout


def test_memory_from_the_ingest_queue(runtime: RuntimeProcess, api: httpx2.Client) -> None:
    message = {
        "op": "remember",
        "tenant_id": "dev",
        "subject_id": "dev",
        "content": "The queued walrus fact.",
    }

    runtime.aws("sqs").send_message(
        QueueUrl=runtime.endpoints["ingest_queue_url"],
        MessageBody=json.dumps(message),
        MessageAttributes={"Authorization": {"DataType": "String", "StringValue": f"Bearer {runtime.token}"}},
    )

    assert eventually(lambda: _found(api, "walrus")) == ["The queued walrus fact."]


def _recall(runtime: RuntimeProcess, *arguments: str) -> dict[str, Any]:
    recalled = knowledge(runtime, "recall", *arguments, "--json")
    assert recalled.returncode == 0, recalled.stderr
    answer: dict[str, Any] = json.loads(recalled.stdout)
    return answer


def test_memory_pinned_note_is_recalled_first_until_unpinned(
    runtime: RuntimeProcess, api: httpx2.Client
) -> None:
    query = "albatross deploy window"
    relevant = _remember(api, "The albatross deploy window opens at 10:00 on weekdays.", path="/ops")["note"]
    pinned = _remember(api, "Gannet, the office plant, is watered on Thursdays.", path="/office")["note"]
    eventually(lambda: _found(api, "albatross deploy window") and _found(api, "gannet office plant"))
    assert _recall(runtime, query)["items"][0]["note_id"] == relevant["note_id"]

    pin = knowledge(runtime, "pin", pinned["note_id"], "--reason", "e2e")
    again = knowledge(runtime, "pin", pinned["note_id"])
    assert pin.returncode == 0, pin.stderr
    assert pin.stdout.startswith(f"pinned: {pinned['note_id']} (pin pn_")
    assert again.stdout.startswith(f"already pinned: {pinned['note_id']} (pin pn_")
    assert pinned["note_id"] in knowledge(runtime, "pins").stdout

    first = _recall(runtime, query, "--max-tokens", "1200")
    assert [(item["note_id"], item["pinned"]) for item in first["items"][:2]] == [
        (pinned["note_id"], True),
        (relevant["note_id"], False),
    ]
    assert first["budget"]["used_tokens"] <= 1200
    text = knowledge(runtime, "recall", query)
    assert text.returncode == 0, text.stderr
    assert text.stdout.startswith("## fact · ")
    assert " · pinned · own · /office\nGannet, the office plant" in text.stdout
    assert "(1 pinned)" in text.stderr

    unpinned = knowledge(runtime, "unpin", pinned["note_id"])
    assert unpinned.stdout == f"unpinned: {pinned['note_id']}\n", unpinned.stderr
    assert knowledge(runtime, "unpin", pinned["note_id"]).stdout.startswith("not pinned: ")

    after = _recall(runtime, query)
    assert after["items"][0]["note_id"] == relevant["note_id"]
    assert not any(item["pinned"] for item in after["items"])
    assert pinned["note_id"] not in knowledge(runtime, "pins").stdout


def test_memory_remember_pin_through_the_cli(runtime: RuntimeProcess, api: httpx2.Client) -> None:
    remembered = knowledge(runtime, "remember", "The cormorant on-call phone is in the top drawer.", "--pin")
    assert remembered.returncode == 0, remembered.stderr
    assert remembered.stdout.startswith("created: nt_")
    assert remembered.stdout.rstrip().endswith((", pinned)", ", pinned, not indexed yet)"))
    note_id = remembered.stdout.split()[1]
    try:
        assert _recall(runtime, "unrelated espresso question")["items"][0]["note_id"] == note_id
    finally:
        assert knowledge(runtime, "unpin", note_id).returncode == 0
