"""Real documents through ``knowledge ingest`` into the running runtime: a folder holding a PDF of
several pages, a Word document with headings and a table, a web page with navigation around an
article, a CSV and a workbook; a phrase unique to each page or section is found at rank 1 with a
locator naming its page, section, or sheet and rows, and the read can start at a PDF page."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx2
import pytest

from tests.e2e.runtime_process import RuntimeProcess
from tests.e2e.test_cli import knowledge
from tests.support.documents import (
    article_html,
    docx_bytes,
    encrypted_pdf_bytes,
    pdf_bytes,
    xlsx_bytes,
)

BASE = "documents-e2e"
FILLER = [
    f"Routine log entry {number}: the shift changed and the logbook was signed." for number in range(10)
]


def _folder(root: Path) -> Path:
    folder = root / "documents"
    (folder / "sheets").mkdir(parents=True)
    (folder / "manual.pdf").write_bytes(
        pdf_bytes(
            [
                ["Lighthouse operations manual", *FILLER],
                [*FILLER, "Polish the Fresnel lens with chamois leather before dusk."],
                [*FILLER, "Log every foghorn blast in the vermilion ledger."],
            ],
            title="Lighthouse operations manual",
        )
    )
    (folder / "locked.pdf").write_bytes(encrypted_pdf_bytes([["a secret page"]]))
    (folder / "cranes.docx").write_bytes(
        docx_bytes(
            [
                ("h1", "Crane handbook"),
                *[("p", line) for line in FILLER],
                ("h2", "Winch upkeep"),
                ("p", "Grease the slewing ring with lithium compound monthly."),
                ("table", [["Part", "Interval"], ["Hoist rope", "weekly"], ["Hook latch", "daily"]]),
            ]
        )
    )
    (folder / "turbines.html").write_bytes(
        article_html(rotor="kelp-covered swivel joints", cable="scour pits near the seabed anchor")
    )
    rows = ["station,reading,note"] + [f"S{number},{number * 3},nominal" for number in range(2, 80)]
    rows[50] = "S51,153,albatross nesting detected"
    (folder / "sheets" / "stations.csv").write_text("\n".join(rows) + "\n")
    berths: list[list[object]] = [["Vessel", "Berth", "Cargo"]]
    berths += [[f"Vessel{number}", number, "grain"] for number in range(2, 60)]
    berths[30][2] = "refrigerated mangosteens"
    (folder / "sheets" / "port.xlsx").write_bytes(
        xlsx_bytes({"Summary": [["Port", "Total"], ["North", 58]], "Berths": berths})
    )
    return folder


@pytest.fixture(scope="module")
def ingested(runtime: RuntimeProcess, tmp_path_factory: pytest.TempPathFactory) -> str:
    folder = _folder(tmp_path_factory.mktemp("documents"))
    result = knowledge(runtime, "ingest", str(folder), "--base", BASE)
    assert result.returncode == 0, result.stderr
    assert "5 created" in result.stdout
    assert "locked.pdf: an encrypted PDF that needs a password" in result.stderr
    return result.stdout


def _top(runtime: RuntimeProcess, query: str) -> dict[str, Any]:
    found = knowledge(runtime, "search", query, "--base", BASE, "--json")
    assert found.returncode == 0, found.stderr
    results: list[dict[str, Any]] = json.loads(found.stdout)["results"]
    assert results, query
    return results[0]


@pytest.mark.parametrize(
    ("query", "source", "locator"),
    [
        ("Fresnel lens chamois leather", "manual.pdf", {"page": 2}),
        ("foghorn blast vermilion ledger", "manual.pdf", {"page": 3}),
        ("slewing ring lithium compound", "cranes.docx", {"section": "Winch upkeep"}),
        ("kelp-covered swivel joints", "turbines.html", {"section": "Rotor inspection"}),
        ("scour pits seabed anchor", "turbines.html", {"section": "Subsea cable"}),
        ("refrigerated mangosteens", "sheets/port.xlsx", {"sheet": "Berths"}),
        ("albatross nesting detected", "sheets/stations.csv", {}),
    ],
)
def test_documents_phrase_is_found_first_with_its_locator(
    runtime: RuntimeProcess, ingested: str, query: str, source: str, locator: dict[str, Any]
) -> None:
    top = _top(runtime, query)
    assert top["source"]["uri"] == source
    assert {key: top["locator"][key] for key in locator} == locator


def test_documents_spreadsheet_hits_name_their_rows(runtime: RuntimeProcess, ingested: str) -> None:
    workbook = _top(runtime, "refrigerated mangosteens")["locator"]["rows"]
    assert workbook["first"] <= 31 <= workbook["last"]
    csv = _top(runtime, "albatross nesting detected")["locator"]["rows"]
    assert csv["first"] <= 51 <= csv["last"]


def test_documents_web_page_keeps_no_navigation(
    runtime: RuntimeProcess, ingested: str, api: httpx2.Client
) -> None:
    item_id = _top(runtime, "kelp-covered swivel joints")["knowledge_item_id"]
    read = api.post("/v1/tools/search_knowledge", json={"knowledge_item_id": item_id, "limit_chars": 10_000})
    content = read.json()["content"]
    assert "swivel joints" in content
    assert "Navigation link" not in content
    assert "Copyright footer" not in content


def test_documents_pdf_read_starts_at_a_page(
    runtime: RuntimeProcess, ingested: str, api: httpx2.Client
) -> None:
    item_id = _top(runtime, "Fresnel lens chamois leather")["knowledge_item_id"]
    read = api.post(
        "/v1/tools/search_knowledge", json={"knowledge_item_id": item_id, "page": 3, "limit_chars": 2_000}
    )
    body = read.json()
    assert read.status_code == 200, body
    assert body["locator"]["page"] == 3
    assert "vermilion ledger" in body["content"]
    assert "Fresnel" not in body["content"]
    missing = api.post("/v1/tools/search_knowledge", json={"knowledge_item_id": item_id, "page": 4})
    assert (missing.status_code, missing.json()["error"]["code"]) == (404, "knowledge_page_unavailable")


def test_documents_cli_read_starts_at_a_page_and_names_it(runtime: RuntimeProcess, ingested: str) -> None:
    item_id = _top(runtime, "Fresnel lens chamois leather")["knowledge_item_id"]
    read = knowledge(runtime, "read", item_id, "--page", "2", "--limit", "900")
    assert read.returncode == 0, read.stderr
    assert "Fresnel lens" in read.stdout
    assert "vermilion" not in read.stdout
    assert "in the original: page 2" in read.stderr
