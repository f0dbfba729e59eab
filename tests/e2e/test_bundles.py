"""Export and import on the running runtime, as a user runs them: ``knowledge export`` takes the dev
tenant out through the document queue's worker and a presigned download from the local bundles
bucket, ``knowledge import`` puts it into another tenant through a presigned upload, the copy is
indexed by the stream like any write and answers searches as the original does, and exporting the
copy gives the same records again."""

from __future__ import annotations

import json
import re
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tests.e2e.runtime_process import RuntimeProcess, eventually, search_knowledge
from tests.e2e.test_cli import knowledge

COPY = "dev-copy"
SCOPES = "knowledge:read,knowledge:write,knowledge:admin,memory:read,memory:write,memory:admin"


def _records(path: Path) -> list[dict[str, Any]]:
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert lines[0]["kind"] == "bundle"
    assert lines[-1]["kind"] == "end"
    return lines[1:]


def test_export_then_import_into_another_tenant_answers_the_same(
    runtime: RuntimeProcess, tmp_path: Path
) -> None:
    with runtime.http() as api:
        remembered = api.post(
            "/v1/tools/remember",
            json={
                "content": "The espresso grinder is set to step 12.",
                "path": "/kitchen",
                "semantic_key": "grinder",
            },
        )
        assert remembered.status_code in (200, 201), remembered.text
        original = search_knowledge(api, query="espresso extraction pressure", max_results=5)
    exported = tmp_path / "dev.jsonl"

    out = knowledge(runtime, "export", "--out", str(exported))

    assert out.returncode == 0, out.stderr
    assert str(exported) in out.stdout
    records = _records(exported)
    assert any(record["kind"] == "note" and record["note"]["semantic_key"] == "grinder" for record in records)
    # The same subject as the dev token's, so the private bases and notes it owns are its own there too.
    token = knowledge(runtime, "token", "create", "--tenant", COPY, "--subject", "dev", "--scopes", SCOPES)
    assert token.returncode == 0, token.stderr
    copy_token = token.stdout.strip()

    imported = knowledge(runtime, "--token", copy_token, "import", str(exported))

    assert imported.returncode == 0, imported.stderr
    assert "item.imported" in imported.stdout
    assert "note.imported" in imported.stdout
    with runtime.http(copy_token) as copy:

        def same_answer() -> bool:
            answer = search_knowledge(copy, query="espresso extraction pressure", max_results=5)
            ids = [result["knowledge_item_id"] for result in answer["results"]]
            return ids == [result["knowledge_item_id"] for result in original["results"]]

        assert eventually(same_answer, timeout=180)
        found = copy.post(
            "/v1/tools/search_memory", json={"query": "espresso grinder step", "consistent": True}
        )
        assert found.status_code == 200, found.text
        assert [result["content"] for result in found.json()["results"]][:1] == [
            "The espresso grinder is set to step 12."
        ]

    again = tmp_path / "copy.jsonl"
    second = knowledge(runtime, "--token", copy_token, "export", "--out", str(again))
    assert second.returncode == 0, second.stderr
    assert _records(again) == records

    repeated = knowledge(runtime, "--token", copy_token, "import", str(exported))
    assert repeated.returncode == 0, repeated.stderr
    assert "item.present" in repeated.stdout
    assert ".imported" not in repeated.stdout


def test_an_export_with_vectors_carries_the_runtimes_cached_vectors(
    runtime: RuntimeProcess, tmp_path: Path
) -> None:
    exported = tmp_path / "vectors.jsonl"

    out = knowledge(runtime, "export", "--vectors", "--out", str(exported))

    assert out.returncode == 0, out.stderr
    lines = [json.loads(line) for line in exported.read_text(encoding="utf-8").splitlines()]
    header = lines[0]
    assert header["embedding"]["model_id"]
    assert header["embedding"]["dimension"] > 0
    vectors = {
        key: vector for line in lines if line["kind"] == "vectors" for key, vector in line["vectors"].items()
    }
    assert vectors
    assert {len(vector) for vector in vectors.values()} == {header["embedding"]["dimension"]}
    # a tenant administrator's import leaves the shared cache alone; so does a platform
    # administrator's here, for every text is cached already (a kept vector never replaces a row)
    tenant_admin = knowledge(
        runtime, "token", "create", "--tenant", "dev-vectors", "--subject", "dev", "--scopes", SCOPES
    )
    assert tenant_admin.returncode == 0, tenant_admin.stderr
    operator_scopes = f"{SCOPES},platform:admin"
    platform_admin = knowledge(
        runtime,
        "token",
        "create",
        "--tenant",
        "dev-vectors-op",
        "--subject",
        "ops",
        "--scopes",
        operator_scopes,
    )
    assert platform_admin.returncode == 0, platform_admin.stderr

    ignored = knowledge(runtime, "--token", tenant_admin.stdout.strip(), "import", str(exported))
    trusted = knowledge(runtime, "--token", platform_admin.stdout.strip(), "import", str(exported))

    assert ignored.returncode == 0, ignored.stderr
    assert _counted(ignored.stdout, "vectors.ignored") == len(vectors)
    assert "vectors.kept" not in ignored.stdout
    assert trusted.returncode == 0, trusted.stderr
    assert _counted(trusted.stdout, "vectors.ignored") == len(vectors)


def _counted(out: str, counter: str) -> int:
    found = re.search(rf"([\d,]+) {re.escape(counter)}", out)
    assert found is not None, out
    return int(found.group(1).replace(",", ""))


def test_an_archived_items_past_travels_with_the_bundle(runtime: RuntimeProcess, tmp_path: Path) -> None:
    made = knowledge(
        runtime, "token", "create", "--tenant", "archive-src", "--subject", "ops", "--scopes", SCOPES
    )
    copy = knowledge(
        runtime, "token", "create", "--tenant", "archive-dst", "--subject", "ops", "--scopes", SCOPES
    )
    assert made.returncode == 0, made.stderr
    assert copy.returncode == 0, copy.stderr
    with runtime.http(made.stdout.strip()) as api:
        base = api.post("/v1/knowledge-bases", json={"name": "Birds", "scope": "tenant"}).json()
        item = api.post(
            f"/v1/knowledge-bases/{base['knowledge_base_id']}/items",
            json={"title": "Plover", "content": "The plover service uses queue qx-17.", "publish": True},
        ).json()
        time.sleep(0.05)
        moment = datetime.now(UTC).isoformat()  # the runtime shares this machine's clock
        time.sleep(0.05)
        archived = api.post(
            f"/v1/knowledge-items/{item['knowledge_item_id']}/archive",
            json={"expected_version": item["version"]},
        )
        assert archived.status_code == 200, archived.text
    bundle = tmp_path / "archive.jsonl"
    assert knowledge(runtime, "--token", made.stdout.strip(), "export", "--out", str(bundle)).returncode == 0

    imported = knowledge(runtime, "--token", copy.stdout.strip(), "import", str(bundle))

    assert imported.returncode == 0, imported.stderr
    assert "1 item.imported" in imported.stdout
    with runtime.http(copy.stdout.strip()) as api:
        read = {"knowledge_item_id": item["knowledge_item_id"], "as_of": moment}

        def read_then() -> bool:
            answer = api.post("/v1/tools/search_knowledge", json=read)
            return answer.status_code == 200 and "qx-17" in answer.json()["content"]

        assert eventually(read_then, timeout=120)
        now = api.post("/v1/tools/search_knowledge", json={"knowledge_item_id": item["knowledge_item_id"]})
        assert now.status_code == 404, now.text
