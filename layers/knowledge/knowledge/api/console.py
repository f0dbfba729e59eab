"""The web console's static files (``knowledge/console``), served publicly by the admin function at
``GET /console`` (the page) and ``GET /console/{asset}`` (its scripts and style sheet).

The console is a client of the REST API and nothing more: it holds no secret (the caller's bearer
token is typed in and kept in the browser's ``sessionStorage``), so these routes need no token. Every
answer carries a strict Content-Security-Policy (scripts, styles and requests from this origin only,
nothing inline, no frames), ``X-Content-Type-Options: nosniff`` and ``Referrer-Policy: no-referrer``.

Assets are the files of the console directory whose names match ``ASSET_NAME`` (a flat allowlist,
so no path can leave the directory); anything else is ``404 knowledge_resource_unavailable``.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router

from knowledge.errors import ResourceUnavailableError

CONSOLE_PATH = "/console"
ASSET_PATH = "/console/<asset_name>"
CONSOLE_DIR = Path(__file__).resolve().parent.parent / "console"
ASSET_NAME = re.compile(r"^[a-z][a-z0-9-]{0,40}\.(js|css|svg)$")
CONTENT_TYPES = {
    "html": "text/html; charset=utf-8",
    "js": "text/javascript; charset=utf-8",
    "css": "text/css; charset=utf-8",
    "svg": "image/svg+xml",
}
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
    "font-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-cache",
}

router = Router()  # type: ignore[no-untyped-call]  # Powertools leaves Router.__init__ unannotated


@cache
def _read(name: str) -> str:
    return (CONSOLE_DIR / name).read_text(encoding="utf-8")


def asset(name: str) -> Response[str]:
    """The console file ``name`` with its content type and the security headers; raises
    ``ResourceUnavailableError`` (404) for a name outside the allowlist or a file that is absent."""
    if name != "index.html" and not ASSET_NAME.fullmatch(name):
        raise ResourceUnavailableError("No such console file.")
    if not (CONSOLE_DIR / name).is_file():
        raise ResourceUnavailableError("No such console file.")
    return Response(
        status_code=200,
        content_type=CONTENT_TYPES[name.rsplit(".", 1)[1]],
        body=_read(name),
        headers=dict(SECURITY_HEADERS),
    )


@router.get(CONSOLE_PATH, include_in_schema=False)
def console_page() -> Response[str]:
    return asset("index.html")


@router.get(ASSET_PATH, include_in_schema=False)
def console_asset(asset_name: str) -> Response[str]:
    return asset(asset_name)
