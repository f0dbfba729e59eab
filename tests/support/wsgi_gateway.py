"""The local gateway as a WSGI application, so HTTP test clients (schemathesis, werkzeug) drive the
real routes, authorizer and handlers in the test's process without a socket.

Each WSGI request becomes the ``HttpRequest`` the gateway's HTTP server would build and goes through
``Gateway.handle``: routing from ``template.yaml``, the authorizer, the payload 2.0 event and the
function, as ``make run`` serves them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from http import HTTPStatus
from typing import Any
from urllib.parse import quote

from knowledge_local.emulator.api_gateway.gateway import Gateway
from knowledge_local.emulator.api_gateway.http_api import HttpRequest

StartResponse = Callable[[str, list[tuple[str, str]]], Any]
PORT = 3000
"""The port the events name (``x-forwarded-port``); nothing listens on it."""


class WsgiGateway:
    """``gateway`` (started, with an in-process invoker) as a WSGI callable."""

    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway
        self.requests = 0
        """Requests answered so far."""
        self.server_errors = 0
        """Of those, answers with a 5xx status."""

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(length) if length else b""
        request = HttpRequest(
            method=environ["REQUEST_METHOD"],
            raw_path=_raw_path(environ),
            raw_query=environ.get("QUERY_STRING", ""),
            headers=_headers(environ),
            body=body,
            source_ip=environ.get("REMOTE_ADDR") or "127.0.0.1",
        )
        response = self.gateway.handle(request, PORT)
        self.requests += 1
        self.server_errors += response.status >= 500
        reason = (
            HTTPStatus(response.status).phrase if response.status in HTTPStatus._value2member_map_ else ""
        )
        start_response(f"{response.status} {reason}".strip(), list(response.headers))
        return [response.body]


def _raw_path(environ: dict[str, Any]) -> str:
    """The path as sent: ``RAW_URI``/``REQUEST_URI`` when the server gives it, else ``PATH_INFO``
    (which WSGI decodes to latin-1) encoded back."""
    raw = environ.get("RAW_URI") or environ.get("REQUEST_URI")
    if raw:
        return str(raw).split("?", 1)[0]
    path = str(environ.get("PATH_INFO", "/")).encode("latin-1").decode("utf-8", "replace")
    return quote(path, safe="/:@!$&'()*+,;=-._~")


def _headers(environ: dict[str, Any]) -> list[tuple[str, str]]:
    headers = [
        (key[5:].replace("_", "-").lower(), str(value))
        for key, value in environ.items()
        if key.startswith("HTTP_")
    ]
    for key, name in (("CONTENT_TYPE", "content-type"), ("CONTENT_LENGTH", "content-length")):
        if environ.get(key):
            headers.append((name, str(environ[key])))
    return headers
