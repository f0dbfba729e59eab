"""Tenant erasure on the running runtime, as a user runs it: ``knowledge erase`` refuses without
the tenant confirmed, a dry run counts what would go and changes nothing, and the real erasure,
run by the document queue's worker, leaves the tenant no base, item or note while the dev tenant
keeps its own; the tenant's export from before, imported back, is searchable again (the erasure's
index tombstones do not keep it out)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.e2e.runtime_process import RuntimeProcess, eventually, search_knowledge
from tests.e2e.test_cli import knowledge

DOOMED = "doomed"
SCOPES = "knowledge:read,knowledge:write,knowledge:admin,memory:read,memory:write,memory:admin"


def _found(api: Any) -> list[str]:
    """The dev tenant's answer as item ids (scores move with the index's term statistics, which
    count every tenant's passages)."""
    answer = search_knowledge(api, query="espresso extraction pressure", max_results=5)
    return [result["knowledge_item_id"] for result in answer["results"]]


def test_erase_counts_first_then_empties_only_the_tenant(runtime: RuntimeProcess, tmp_path: Path) -> None:
    made = knowledge(runtime, "token", "create", "--tenant", DOOMED, "--subject", "ops", "--scopes", SCOPES)
    assert made.returncode == 0, made.stderr
    token = made.stdout.strip()
    with runtime.http(token) as api:
        base = api.post("/v1/knowledge-bases", json={"name": "Doomed", "scope": "tenant"})
        assert base.status_code == 201, base.text
        item = api.post(
            f"/v1/knowledge-bases/{base.json()['knowledge_base_id']}/items",
            json={"title": "Lighthouse", "content": "The lighthouse lamp turns every 10 s.", "publish": True},
        )
        assert item.status_code == 201, item.text
        note = api.post(
            "/v1/tools/remember", json={"content": "The keeper's name is Ada.", "path": "/keepers"}
        )
        assert note.status_code == 201, note.text
    with runtime.http() as dev:
        before = _found(dev)
    bundle = tmp_path / "doomed.jsonl"
    exported = knowledge(runtime, "--token", token, "export", "--out", str(bundle))
    assert exported.returncode == 0, exported.stderr

    refused = knowledge(runtime, "--token", token, "erase")
    assert refused.returncode == 2
    assert f"--confirm {DOOMED}" in refused.stderr

    preview = knowledge(runtime, "--token", token, "erase", "--dry-run")
    assert preview.returncode == 0, preview.stderr
    assert "would erase: 1 item, 1 knowledge_base, 1 note" in preview.stdout
    assert "table item: 1 purged" in preview.stdout

    erased = knowledge(runtime, "--token", token, "erase", "--confirm", DOOMED)
    assert erased.returncode == 0, erased.stderr
    assert "erased: 1 item, 1 knowledge_base, 1 note" in erased.stdout
    assert erased.stdout.split("\n", 1)[1] == preview.stdout.split("\n", 1)[1]  # the same receipt
    with runtime.http(token) as api:
        assert api.get("/v1/knowledge-bases").json()["knowledge_bases"] == []
        usage = api.get("/v1/usage").json()["stored"]
        assert (usage["items"], usage["notes"]) == (0, 0)
        found = api.post("/v1/tools/search_memory", json={"query": "keeper name", "consistent": True})
        assert found.json()["results"] == []
    with runtime.http() as dev:
        assert _found(dev) == before

    imported = knowledge(runtime, "--token", token, "import", str(bundle))
    assert imported.returncode == 0, imported.stderr
    assert "1 item.imported" in imported.stdout
    assert "1 note.imported" in imported.stdout
    with runtime.http(token) as api:

        def lighthouse_found() -> bool:
            answer = search_knowledge(api, query="lighthouse lamp", max_results=5)
            return [result["title"] for result in answer["results"]] == ["Lighthouse"]

        assert eventually(lighthouse_found, timeout=120)

        def keeper_found() -> bool:
            answer = api.post("/v1/tools/search_memory", json={"query": "keeper name"}).json()
            found = [result["content"] for result in answer["results"]]
            return found == ["The keeper's name is Ada."] and answer["pending_index"]["writes"] == 0

        assert eventually(keeper_found, timeout=120)
