"""The console's static files as the admin function serves them: the page, its scripts and style
sheet with their content types and security headers; anything else is 404, never a file outside
the console directory."""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import pytest

from knowledge.api import console
from knowledge.api.http import build_resolver
from tests.support.events import lambda_context, load_event

APP = build_resolver(console.router)


def _get(path: str) -> dict[str, Any]:
    event = copy.deepcopy(load_event("openapi_get"))
    event["rawPath"] = event["requestContext"]["http"]["path"] = path
    event["routeKey"] = event["requestContext"]["routeKey"] = f"GET {path}"
    event["headers"].pop("authorization")
    answer: dict[str, Any] = APP.resolve(event, lambda_context())
    return answer


def test_console_page_is_html_with_the_strict_policy() -> None:
    answer = _get("/console")

    assert answer["statusCode"] == 200
    headers = answer["headers"]
    assert headers["Content-Type"] == "text/html; charset=utf-8"
    assert headers["Content-Security-Policy"] == console.CONTENT_SECURITY_POLICY
    assert "'unsafe-inline'" not in headers["Content-Security-Policy"]
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert '<script type="module" src="/console/app.js">' in answer["body"]


@pytest.mark.parametrize(
    ("name", "content_type"),
    [("app.js", "text/javascript; charset=utf-8"), ("console.css", "text/css; charset=utf-8")],
)
def test_console_asset_has_its_content_type(name: str, content_type: str) -> None:
    answer = _get(f"/console/{name}")

    assert answer["statusCode"] == 200
    assert answer["headers"]["Content-Type"] == content_type
    assert answer["body"] == (console.CONSOLE_DIR / name).read_text(encoding="utf-8")


@pytest.mark.parametrize(
    "name", ["missing.js", "console.py", "..%2Fapi%2Fconsole.py", "%2e%2e", "APP.JS", "index.html.js", ".env"]
)
def test_console_unknown_or_outside_name_is_not_found(name: str) -> None:
    answer = _get(f"/console/{name}")

    assert answer["statusCode"] == 404
    assert json.loads(answer["body"])["error"]["code"] == "knowledge_resource_unavailable"


def test_console_scripts_never_parse_markup_from_data() -> None:
    # Notes and documents are attacker-controlled text: the console builds DOM nodes from it with
    # text nodes and properties only, so no script may assign markup.
    for script in console.CONSOLE_DIR.glob("*.js"):
        text = script.read_text(encoding="utf-8")
        assert not re.search(r"innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(", text), (
            script.name
        )


def test_every_console_file_is_reachable_by_the_allowlist() -> None:
    names = sorted(path.name for path in console.CONSOLE_DIR.iterdir() if path.is_file())

    assert "index.html" in names
    assert all(name == "index.html" or console.ASSET_NAME.fullmatch(name) for name in names)
