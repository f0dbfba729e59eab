"""The web console (``/console``) in a real browser: Debian's headless Chromium driven by Playwright,
against the session's local runtime over HTTP.

Each test signs in with a token, works one view the way a person would (typing, clicking, reading
what the page shows) and saves a screenshot: into a temporary folder, or into
``CONSOLE_SCREENSHOTS_DIR`` (``make console-screenshots`` points it at docs/console, the pictures of
docs/console.md). Notes and documents whose text is an HTML/JS payload must render as text
everywhere: the payload would set ``window.__xss``.
"""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright

from tests.e2e.runtime_process import RuntimeProcess, eventually

CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
PAYLOAD = '<script>window.__xss=1</script><img src=x onerror="window.__xss=1"> lighthouse payload'
TIMEOUT_MS = 30_000


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    chosen = os.environ.get("CONSOLE_SCREENSHOTS_DIR")
    folder = Path(chosen) if chosen else tmp_path_factory.mktemp("console-shots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    opened = context.new_page()
    opened.set_default_timeout(TIMEOUT_MS)
    errors: list[str] = []
    opened.on("pageerror", lambda error: errors.append(str(error)))
    try:
        yield opened
    finally:
        context.close()
    assert errors == [], errors


def _ok(response: httpx2.Response) -> dict[str, Any]:
    assert response.status_code in (200, 201), response.text
    answer: dict[str, Any] = response.json()
    return answer


@pytest.fixture(scope="module")
def seeded(runtime: RuntimeProcess) -> dict[str, Any]:
    """A base with an item of two published revisions (the second long enough to page), a document
    and a note carrying the payload, notes under two paths and a pin; all indexed."""
    marker = uuid.uuid4().hex[:8]
    paragraph = "The lighthouse keeper logs the lamp hours, the fog signal tests and the tide tables. "
    first = "# Lighthouse manual\n\n" + "\n".join(f"Line {n}: {paragraph}" for n in range(20))
    second = (
        first.replace("Line 3:", "Line 3 (revised):")
        + "\n"
        + "\n".join(f"Appendix {n}: {paragraph}" for n in range(40))
    )
    with runtime.http() as api:
        base = _ok(api.post("/v1/knowledge-bases", json={"name": f"console-{marker}", "scope": "tenant"}))
        base_id = base["knowledge_base_id"]
        item = _ok(
            api.post(
                f"/v1/knowledge-bases/{base_id}/items",
                json={"title": f"Lighthouse manual {marker}", "content": first, "publish": True},
            )
        )
        item_id = item["knowledge_item_id"]
        revised = _ok(
            api.post(f"/v1/knowledge-items/{item_id}/revisions", json={"content": second, "publish": True})
        )
        hostile = _ok(
            api.post(
                f"/v1/knowledge-bases/{base_id}/items",
                json={"title": f"Payload {marker}", "content": PAYLOAD, "publish": True},
            )
        )
        older = _ok(
            api.post(
                "/v1/tools/remember",
                json={"content": "The lamp was serviced on Sundays.", "path": "/ops/lamp"},
            )
        )
        note = _ok(
            api.post(
                "/v1/tools/remember",
                json={
                    "content": f"The lighthouse lamp is serviced on Mondays {marker}.",
                    "path": "/ops/lamp",
                    "supersedes": [older["note"]["note_id"]],
                },
            )
        )
        _ok(api.post("/v1/tools/remember", json={"content": PAYLOAD, "path": "/ops/payload"}))
        _ok(
            api.post(
                "/v1/tools/remember",
                json={"content": "Tide tables are printed every Friday.", "path": "/ops/tides"},
            )
        )
        long_note = " ".join(f"Harbour log entry {n}: the pilot boat left at dawn." for n in range(30))
        _ok(api.post("/v1/tools/remember", json={"content": long_note, "path": "/ops/harbour"}))
        _ok(api.post("/v1/tools/pin_memory", json={"note_id": note["note"]["note_id"], "reason": "weekly"}))

        def indexed() -> bool | None:
            detail = _ok(api.get(f"/v1/knowledge-items/{hostile['knowledge_item_id']}"))
            current = _ok(api.get(f"/v1/knowledge-items/{item_id}"))
            notes = _ok(api.get("/v1/notes", params={"path_prefix": "/ops"}))["notes"]
            done = (
                detail["indexed_revision_id"] == detail["current_revision_id"]
                and current["indexed_revision_id"] == revised["knowledge_revision_id"]
                and len(notes) >= 4
            )
            return True if done else None

        eventually(indexed, timeout=120)
    return {"marker": marker, "base_id": base_id, "item_id": item_id, "note": note["note"]}


def _sign_in(page: Page, runtime: RuntimeProcess, hash_: str = "") -> None:
    page.goto(f"{runtime.api_url}/console{hash_}")
    page.get_by_label("Bearer token").fill(runtime.token)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("navigation", name="Views")).to_be_visible()


def _no_script_ran(page: Page) -> None:
    assert page.evaluate("() => window.__xss") is None


def test_console_page_is_served_with_a_strict_policy(runtime: RuntimeProcess) -> None:
    answer = httpx2.get(f"{runtime.api_url}/console", timeout=30)

    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/html")
    policy = answer.headers["content-security-policy"]
    assert "script-src 'self'" in policy
    assert "unsafe-inline" not in policy
    assert "frame-ancestors 'none'" in policy
    assert httpx2.get(f"{runtime.api_url}/console/nope.js", timeout=30).status_code == 404


def test_console_refuses_a_wrong_token_and_keeps_none(
    page: Page, runtime: RuntimeProcess, shots: Path
) -> None:
    page.goto(f"{runtime.api_url}/console")
    page.get_by_label("Bearer token").fill("kn_not_a_real_token")
    page.get_by_role("button", name="Sign in").click()

    expect(page.locator("#sign-in-error")).to_contain_text("401")
    assert page.evaluate("() => sessionStorage.length") == 0
    page.screenshot(path=shots / "sign-in.png")


def test_console_search_shows_every_legs_scores_and_the_requests(
    page: Page, runtime: RuntimeProcess, seeded: dict[str, Any], shots: Path
) -> None:
    _sign_in(page, runtime, "#/search")
    page.get_by_label("Query").fill(f"lighthouse lamp hours {seeded['marker']}")
    page.get_by_label("Mode").select_option("hybrid")
    page.get_by_role("button", name="Search", exact=True).click()

    first = page.locator("#search-answer .result").first
    expect(first).to_contain_text(f"Lighthouse manual {seeded['marker']}")
    raw = first.locator('[data-field="lexical-raw"]').inner_text()
    assert re.fullmatch(r"raw \d+\.\d{4}", raw)
    assert float(raw.split()[1]) > 0
    expect(first.locator('[data-field="semantic-rank"]')).to_have_text(re.compile(r"rank \d+"))
    assert first.locator("meter").count() == 2
    expect(page.locator('[data-leg-report="lexical"]')).to_contain_text("terms")
    curl = page.locator(".copyable pre").first.inner_text()
    assert "/v1/tools/search_knowledge" in curl
    assert "$KNOWLEDGE_TOKEN" in curl
    assert runtime.token not in page.content()
    page.screenshot(path=shots / "search.png", full_page=True)

    page.get_by_role("button", name="Four modes side by side").click()
    expect(page.locator(".side-by-side .answer")).to_have_count(4)
    modes = page.locator(".side-by-side .answer").evaluate_all("(all) => all.map((a) => a.dataset.mode)")
    assert modes == ["hybrid", "lexical", "semantic", "rrf"]
    page.screenshot(path=shots / "search-modes.png", full_page=True)


def test_console_knowledge_pages_an_items_content_and_diffs_revisions(
    page: Page, runtime: RuntimeProcess, seeded: dict[str, Any], shots: Path
) -> None:
    _sign_in(page, runtime, "#/knowledge")
    page.get_by_role("link", name=f"console-{seeded['marker']}").click()
    page.get_by_role("link", name=f"Lighthouse manual {seeded['marker']}").click()

    expect(page.locator("tbody tr")).to_have_count(2)
    expect(page.locator(".badge.current")).to_have_count(1)
    position = page.locator("#content-position")
    expect(position).to_contain_text("characters 0–2000 of")
    page.get_by_role("button", name="Next →").click()
    expect(position).to_contain_text("characters 2000–4000 of")
    expect(page.locator("pre.document")).to_contain_text("lighthouse keeper")
    page.screenshot(path=shots / "knowledge-item.png", full_page=True)

    page.get_by_role("button", name="Diff").click()
    expect(page.locator("#diff-summary")).to_have_text("41 lines added, 1 removed")
    expect(page.locator(".diff-lines .removed")).to_contain_text("Line 3: The lighthouse")
    expect(page.locator(".diff-lines .added").first).to_contain_text("Line 3 (revised):")
    page.locator("#diff-out").screenshot(path=shots / "knowledge-diff.png")


def test_console_memory_lists_the_tree_and_previews_the_pack(
    page: Page, runtime: RuntimeProcess, seeded: dict[str, Any], shots: Path
) -> None:
    _sign_in(page, runtime, "#/memory")
    tree = page.locator("#notes-tree")
    expect(tree.get_by_text("/ops/", exact=True)).to_be_visible()
    expect(tree.locator(f'[data-note="{seeded["note"]["note_id"]}"]')).to_contain_text("pinned")
    expect(page.locator("ol.pins")).to_contain_text(seeded["note"]["note_id"])

    page.get_by_label("Max tokens").fill("120")
    page.get_by_role("button", name="Build pack").click()
    expect(page.locator("#pack-text")).to_contain_text("serviced on Mondays")
    bar = page.locator("#budget-bar")
    used, most = float(bar.get_attribute("value") or 0), float(bar.get_attribute("max") or 0)
    assert most == 120
    assert 0 < used <= most
    expect(page.locator("#dropped")).to_contain_text(re.compile(r"nt_\w+: \w+"))
    page.screenshot(path=shots / "memory.png", full_page=True)

    page.locator("#memory-search-title").scroll_into_view_if_needed()
    page.locator("form.inline").nth(1).get_by_label("Query").fill("tide tables Friday")
    page.get_by_role("button", name="Search memory").click()
    expect(page.locator("#memory-results .result").first).to_contain_text(
        "Tide tables are printed every Friday."
    )
    expect(page.locator("#memory-results meter").first).to_be_visible()

    tree.locator(f'[data-note="{seeded["note"]["note_id"]}"]').get_by_role(
        "link", name="versions and chain"
    ).click()
    expect(page.locator("ol.chain")).to_contain_text("The lamp was serviced on Sundays.")
    expect(page.locator("ol.versions li")).to_have_count(1)
    page.screenshot(path=shots / "memory-note.png", full_page=True)


def test_console_renders_html_payloads_as_text_everywhere(
    page: Page, runtime: RuntimeProcess, seeded: dict[str, Any], shots: Path
) -> None:
    _sign_in(page, runtime, "#/memory")
    payload_note = page.locator("#notes-tree .note-content", has_text="lighthouse payload")
    expect(payload_note).to_have_text(PAYLOAD)
    assert page.locator("#notes-tree img").count() == 0
    page.get_by_role("button", name="Build pack").click()
    expect(page.locator("#pack-text")).to_contain_text("<script>window.__xss=1</script>")
    _no_script_ran(page)
    page.locator('section[aria-labelledby="notes-title"]').screenshot(path=shots / "xss-as-text.png")

    page.goto(f"{runtime.api_url}/console#/search")
    page.get_by_label("Query").fill(f"lighthouse payload {seeded['marker']}")
    page.get_by_role("button", name="Search", exact=True).click()
    excerpt = page.locator("#search-answer .result", has_text=f"Payload {seeded['marker']}").locator(
        ".excerpt"
    )
    expect(excerpt).to_contain_text('<img src=x onerror="window.__xss=1">')
    page.get_by_role("link", name=f"Payload {seeded['marker']}").click()
    expect(page.locator("pre.document")).to_contain_text("<script>window.__xss=1</script>")
    assert page.locator("#view script, #view img").count() == 0
    _no_script_ran(page)


def test_console_mints_and_revokes_a_token_with_its_lineage(
    page: Page, runtime: RuntimeProcess, seeded: dict[str, Any], shots: Path
) -> None:
    subject = f"console-agent-{seeded['marker']}"
    _sign_in(page, runtime, "#/tokens")
    page.get_by_label("Subject id").fill(subject)
    page.get_by_label("memory:read").check()
    page.get_by_label("knowledge:read").check()
    page.get_by_role("button", name="Mint").click()

    minted = page.locator("#minted-token").input_value()
    assert minted.startswith("kn_")
    row = page.locator("#tokens-table tr", has_text=subject)
    expect(row).to_have_count(1)  # one listing, however the mint's refresh and the first one overlap
    expect(row).to_contain_text("active")
    with httpx2.Client(base_url=runtime.api_url, headers={"Authorization": f"Bearer {minted}"}) as client:
        assert client.post("/v1/tools/search_memory", json={"query": "lamp"}).status_code == 200
    page.locator("#minted").screenshot(path=shots / "tokens-minted.png")

    page.once("dialog", lambda dialog: dialog.accept())
    row.get_by_role("button", name="Revoke").click()
    expect(page.locator("#tokens-table tr", has_text=subject)).to_contain_text("revoked")
    with httpx2.Client(base_url=runtime.api_url, headers={"Authorization": f"Bearer {minted}"}) as client:
        assert client.post("/v1/tools/search_memory", json={"query": "lamp"}).status_code == 401
    page.screenshot(path=shots / "tokens.png", full_page=True)


def test_console_usage_shows_the_tenants_quotas(page: Page, runtime: RuntimeProcess, shots: Path) -> None:
    _sign_in(page, runtime, "#/usage")

    expect(page.locator("#usage-stored")).to_contain_text("stored")
    expect(page.locator("#usage-stored")).to_contain_text("of content")
    expect(page.locator("table")).to_contain_text("requests_per_second")
    page.screenshot(path=shots / "usage.png", full_page=True)
