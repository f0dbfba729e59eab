"""The local documents bucket (``documents_bucket`` in ``endpoints.json``) kept in step with a base:
objects put with boto3 become searchable after ``knowledge sync``, and without a sync through the
bucket's S3 events; a deleted object leaves search."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import httpx2
import pytest

from tests.e2e.runtime_process import RuntimeProcess, eventually, search_knowledge, start_runtime, titles
from tests.e2e.test_cli import knowledge
from tests.support.documents import article_html, docx_bytes, encrypted_pdf_bytes, pdf_bytes, xlsx_bytes

EVENT_DEADLINE_SECONDS = 10.0


def _bucket(runtime: RuntimeProcess) -> str:
    bucket = runtime.endpoints["documents_bucket"]
    assert isinstance(bucket, str)
    return bucket


def _counts(summary: str) -> dict[str, int]:
    """The counts of ``knowledge sync``'s summary line (``... succeeded, 2 scanned, 1 added, ...``)."""
    line = next(line for line in summary.splitlines() if "succeeded, " in line)
    pairs = [part.strip().split(" ") for part in line.split("succeeded, ", 1)[1].split(",")]
    return {name: int(number) for number, name in pairs}


def _base_id(api: httpx2.Client, name: str) -> str:
    bases = api.get("/v1/knowledge-bases", params={"limit": 100}).json()["knowledge_bases"]
    return next(base["knowledge_base_id"] for base in bases if base["name"] == name)


def _found(api: httpx2.Client, base_id: str, query: str, title: str) -> dict[str, Any] | None:
    answer = search_knowledge(api, query=query, knowledge_base_id=base_id)
    return answer if answer["results"] and titles(answer)[0] == title else None


def _gone(api: httpx2.Client, base_id: str, query: str, title: str) -> bool:
    return title not in titles(search_knowledge(api, query=query, knowledge_base_id=base_id))


def test_sync_of_the_local_bucket_makes_objects_searchable_and_reports_unchanged_next_time(
    runtime: RuntimeProcess, api: httpx2.Client
) -> None:
    s3 = runtime.aws("s3")
    bucket = _bucket(runtime)
    s3.put_object(
        Bucket=bucket,
        Key="sync-e2e/lighthouse.md",
        Body=b"# Lighthouse keeping\n\nThe keeper trims the lamp wick at dusk and winds the clockwork.\n",
    )
    s3.put_object(
        Bucket=bucket, Key="sync-e2e/tide.txt", Body=b"Tide tables\n\nSpring tides follow the new moon.\n"
    )

    first = knowledge(runtime, "sync", "--base", "bucket-e2e", "--prefix", "sync-e2e/", "--timeout", "60")
    second = knowledge(runtime, "sync", "--base", "bucket-e2e", "--prefix", "sync-e2e/", "--timeout", "60")

    assert first.returncode == 0, first.stderr
    # The objects' S3 events may reach the new data source before the sync does: then the sync
    # finds them already ingested, unchanged.
    counts = _counts(first.stdout)
    assert (counts["scanned"], counts["added"] + counts["unchanged"], counts["failed"]) == (2, 2, 0)
    assert second.returncode == 0, second.stderr
    assert "succeeded, 2 scanned, 0 added, 0 updated, 2 unchanged, 0 deleted, 0 failed" in second.stdout
    base_id = _base_id(api, "bucket-e2e")
    answer = eventually(lambda: _found(api, base_id, "keeper trims the lamp wick", "Lighthouse keeping"))
    assert answer["results"][0]["source"]["uri"] == f"s3://{bucket}/sync-e2e/lighthouse.md"


def test_upload_without_sync_is_searchable_within_seconds_and_delete_removes_it(
    runtime: RuntimeProcess, api: httpx2.Client
) -> None:
    s3 = runtime.aws("s3")
    bucket = _bucket(runtime)
    created = knowledge(runtime, "sync", "--base", "events-e2e", "--prefix", "events-e2e/", "--timeout", "60")
    assert created.returncode == 0, created.stderr
    base_id = _base_id(api, "events-e2e")

    uploaded = time.monotonic()
    s3.put_object(
        Bucket=bucket,
        Key="events-e2e/orchard.md",
        Body=b"# Orchard pruning\n\nPrune the apple trees in late winter, before the buds swell.\n",
    )
    eventually(
        lambda: _found(api, base_id, "prune the apple trees in late winter", "Orchard pruning"),
        timeout=EVENT_DEADLINE_SECONDS,
    )
    searchable_after = time.monotonic() - uploaded
    print(f"upload to searchable: {searchable_after:.2f} s")

    s3.delete_object(Bucket=bucket, Key="events-e2e/orchard.md")
    eventually(
        lambda: _gone(api, base_id, "prune the apple trees in late winter", "Orchard pruning"),
        timeout=EVENT_DEADLINE_SECONDS,
    )
    assert searchable_after < EVENT_DEADLINE_SECONDS


def test_persisted_restart_keeps_the_bucket_objects_and_the_data_source(tmp_path: Path) -> None:
    persist = {"KNOWLEDGE_PERSIST": "true"}
    first = start_runtime(tmp_path, seed_dir=None, environment=persist)
    try:
        first.wait_until_ready()
        first.aws("s3").put_object(Bucket=_bucket(first), Key="kept/a.md", Body=b"# Kept\n\nStill here.\n")
        before = knowledge(first, "sync", "--base", "kept", "--prefix", "kept/", "--timeout", "60")
    finally:
        assert first.stop() == 0, first.log

    second = start_runtime(tmp_path, seed_dir=None, environment=persist)  # the same state folder
    try:
        second.wait_until_ready()
        listed = second.aws("s3").list_objects_v2(Bucket=_bucket(second), Prefix="kept/")
        after = knowledge(second, "sync", "--base", "kept", "--prefix", "kept/", "--timeout", "60")
        with second.http() as api:
            sources = api.get(f"/v1/knowledge-bases/{_base_id(api, 'kept')}/data-sources").json()
    finally:
        assert second.stop() == 0, second.log

    assert before.returncode == 0, before.stderr
    assert [entry["Key"] for entry in listed["Contents"]] == ["kept/a.md"]
    assert after.returncode == 0, after.stderr
    assert _counts(after.stdout) == {
        "scanned": 1,
        "added": 0,
        "updated": 0,
        "unchanged": 1,
        "deleted": 0,
        "failed": 0,
    }
    assert len(sources["data_sources"]) == 1


@pytest.mark.parametrize(
    ("query", "key", "locator"),
    [
        ("Fresnel lens chamois leather", "manual.pdf", {"page": 2}),
        ("foghorn blast vermilion ledger", "manual.pdf", {"page": 3}),
        ("slewing ring lithium compound", "cranes.docx", {"section": "Winch upkeep"}),
        ("scour pits seabed anchor", "turbines.html", {"section": "Subsea cable"}),
        ("refrigerated mangosteens", "sheets/port.xlsx", {"sheet": "Berths"}),
        ("albatross nesting detected", "sheets/stations.csv", {}),
    ],
)
def test_sync_of_documents_in_every_format_finds_each_phrase_first_with_its_locator(
    runtime: RuntimeProcess, formats_synced: str, query: str, key: str, locator: dict[str, Any]
) -> None:
    found = knowledge(runtime, "search", query, "--base", "formats-bucket", "--json")
    assert found.returncode == 0, found.stderr
    top = json.loads(found.stdout)["results"][0]
    assert top["source"]["uri"] == f"s3://{_bucket(runtime)}/formats/{key}"
    assert {name: top["locator"][name] for name in locator} == locator


def _documents() -> dict[str, bytes]:
    """A PDF of three pages, an encrypted PDF, a Word file with headings and a table, a web page with
    navigation around its article, a CSV and a workbook, by key under the prefix."""
    filler = [
        f"Routine log entry {number}: the shift changed and the logbook was signed." for number in range(10)
    ]
    rows = ["station,reading,note"] + [f"S{number},{number * 3},nominal" for number in range(2, 80)]
    rows[50] = "S51,153,albatross nesting detected"
    berths: list[list[object]] = [["Vessel", "Berth", "Cargo"]]
    berths += [[f"Vessel{number}", number, "grain"] for number in range(2, 60)]
    berths[30][2] = "refrigerated mangosteens"
    return {
        "manual.pdf": pdf_bytes(
            [
                ["Lighthouse operations manual", *filler],
                [*filler, "Polish the Fresnel lens with chamois leather before dusk."],
                [*filler, "Log every foghorn blast in the vermilion ledger."],
            ],
            title="Lighthouse operations manual",
        ),
        "locked.pdf": encrypted_pdf_bytes([["a secret page"]]),
        "cranes.docx": docx_bytes(
            [
                ("h1", "Crane handbook"),
                *[("p", line) for line in filler],
                ("h2", "Winch upkeep"),
                ("p", "Grease the slewing ring with lithium compound monthly."),
                ("table", [["Part", "Interval"], ["Hoist rope", "weekly"], ["Hook latch", "daily"]]),
            ]
        ),
        "turbines.html": article_html(
            rotor="kelp-covered swivel joints", cable="scour pits near the seabed anchor"
        ),
        "sheets/stations.csv": ("\n".join(rows) + "\n").encode(),
        "sheets/port.xlsx": xlsx_bytes({"Summary": [["Port", "Total"], ["North", 58]], "Berths": berths}),
    }


@pytest.fixture(scope="module")
def formats_synced(runtime: RuntimeProcess) -> str:
    s3 = runtime.aws("s3")
    for key, body in _documents().items():
        s3.put_object(Bucket=_bucket(runtime), Key=f"formats/{key}", Body=body)
    result = knowledge(
        runtime, "sync", "--base", "formats-bucket", "--prefix", "formats/", "--timeout", "120"
    )
    assert result.returncode == 0, result.stderr
    counts = _counts(result.stdout)
    assert (counts["scanned"], counts["added"] + counts["unchanged"], counts["failed"]) == (6, 5, 1)
    assert "failed formats/locked.pdf: conversion_failed: " in result.stdout
    # Searchable once the index holds every item the sync wrote.
    with runtime.http() as api:
        base_id = _base_id(api, "formats-bucket")
        queries = (
            "refrigerated mangosteens",
            "foghorn blast vermilion ledger",
            "slewing ring lithium compound",
        )
        for query in queries:
            eventually(
                lambda query=query: search_knowledge(api, query=query, knowledge_base_id=base_id)["results"]
            )
    return result.stdout
