"""A local API Gateway (HTTP API) for the functions of a SAM template.

``Gateway(template_path)`` serves every ``HttpApi`` route of the template (see ``routes``) on a
threaded HTTP server. Each request becomes a payload 2.0 event (see ``http_api``); routes behind a
Lambda authorizer first call the authorizer's handler and pass its context at
``requestContext.authorizer.lambda``; then the function's handler runs and its answer is written
back. Handlers run through ``invoker.Invoker``: imported once per start like a warm Lambda
container, on worker threads that each keep an event loop until ``stop()``.

Answers the gateway gives itself:

- no route: 404 in the service's envelope (``{"type":"error","error":{"code":"not_found",...}}``);
- body over 10 MiB (the HTTP API payload limit): 413 in the service's envelope;
- identity source missing (e.g. no ``Authorization`` header): 401 ``{"message":"Unauthorized"}``;
- authorizer denies: 403 ``{"message":"Forbidden"}``; authorizer fails: 500
  ``{"message":"Internal Server Error"}``;
- function raises, times out (its ``Timeout``) or answers an invalid response: 502
  ``{"message":"Internal Server Error"}``.

Authorizer answers are not cached (``ReauthorizeEvery`` is ignored), so revocations apply at once.

The server (``GatewayServer``) queues up to ``LISTEN_BACKLOG`` connections that wait to be accepted,
so a burst of clients is never refused. A client that goes away before its answer is written
(``ConnectionError``: a reset, a broken pipe) is logged at DEBUG; any other failure of a connection
is logged at ERROR with its traceback, through ``logging``, never printed.
"""

from __future__ import annotations

import logging
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

from knowledge.domain.contract import ErrorDetail, ErrorResponse
from knowledge_local.http_api import (
    HttpRequest,
    HttpResponse,
    authorization,
    authorizer_event,
    function_response,
    gateway_message,
    request_event,
)
from knowledge_local.invoker import Invoker
from knowledge_local.routes import AuthorizerSpec, FunctionSpec, RouteMatch, RouteTable, load_routes

MAX_BODY_BYTES = 10 * 1024 * 1024
"""The HTTP API request payload limit (10 MB)."""
DEFAULT_WORKERS = 8
LISTEN_BACKLOG = 128
"""Connections the kernel holds for the server before it accepts them (``listen``'s backlog);
with ``socketserver``'s default, 5, a burst of a few dozen clients meets dropped or reset
connections."""

log = logging.getLogger(__name__)


class _BodyTooLargeError(Exception):
    pass


class Gateway:
    """Serves ``template_path``'s HTTP API on ``host:port`` (port 0: any free port) in a background
    thread. ``workers`` bounds how many invocations run at once (requests beyond wait their turn).

    Use ``with Gateway(path) as gateway:`` or ``start()``/``stop()``; ``url`` is the base URL.
    Raises ``routes.TemplateError`` at construction for an HTTP API it cannot serve.
    """

    def __init__(
        self,
        template_path: str | Path,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        workers: int = DEFAULT_WORKERS,
    ) -> None:
        self.routes: RouteTable = load_routes(template_path)
        self._host, self._port, self._worker_count = host, port, workers
        self._invoker: Invoker | None = None
        self._server: GatewayServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """``http://host:port`` of the running server."""
        if self._server is None:
            raise RuntimeError("The gateway is not started.")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def bind(self) -> Gateway:
        """Listen on the port without serving yet (connections wait in the backlog until
        ``start``); ``OSError`` when the port is taken. Returns ``self``."""
        self._listen()
        return self

    def start(self) -> Gateway:
        """Bind (unless ``bind`` did) and serve in a daemon thread; returns ``self``."""
        if self._thread is not None:
            return self
        server = self._listen()
        self._invoker = Invoker(self._worker_count)
        self._thread = threading.Thread(target=server.serve_forever, name="gateway", daemon=True)
        self._thread.start()
        log.info("gateway listening", extra={"url": self.url})
        return self

    def stop(self) -> None:
        """Stop serving (or listening), then stop the workers (waiting briefly for running
        invocations)."""
        server, self._server = self._server, None
        thread, self._thread = self._thread, None
        if server is not None:
            if thread is not None:
                server.shutdown()
            server.server_close()
        if thread is not None:
            thread.join(timeout=5)
        invoker, self._invoker = self._invoker, None
        if invoker is not None:
            invoker.close(timeout=5)

    def _listen(self) -> GatewayServer:
        if self._server is None:
            self._server = GatewayServer((self._host, self._port), _request_handler_for(self))
        return self._server

    def __enter__(self) -> Gateway:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # -- one request ------------------------------------------------------------------------------

    def handle(self, request: HttpRequest, port: int) -> HttpResponse:
        """Route, authorize and invoke for one request; never raises."""
        match = self.routes.match(request.method, request.raw_path)
        if match is None:
            return _envelope(404, "not_found", f"No route matches {request.method} {request.raw_path}.")
        context: dict[str, Any] | None = None
        authorizer = match.route.authorizer
        if authorizer is not None:
            decision = self._authorize(authorizer, request, match, port)
            if isinstance(decision, HttpResponse):
                return decision
            context = decision
        event = request_event(
            request,
            route_key=match.route.route_key,
            path_parameters=match.path_parameters,
            authorizer_context=context,
            port=port,
        )
        try:
            return function_response(self._invoke(match.route.function, event))
        except Exception:
            log.exception("function failed", extra={"function": match.route.function.logical_id})
            return gateway_message(502, "Internal Server Error")

    def _authorize(
        self, authorizer: AuthorizerSpec, request: HttpRequest, match: RouteMatch, port: int
    ) -> HttpResponse | dict[str, Any]:
        headers, query = request.header_map(), request.query_parameters()
        identity = [headers.get(name) for name in authorizer.identity_headers]
        identity += [query.get(name) for name in authorizer.identity_query_strings]
        if any(not value for value in identity):
            return gateway_message(401, "Unauthorized")
        event = authorizer_event(
            request,
            route_key=match.route.route_key,
            path_parameters=match.path_parameters,
            identity_source=[value for value in identity if value],
            port=port,
        )
        try:
            allowed, context = authorization(
                self._invoke(authorizer.function, event), simple_responses=authorizer.simple_responses
            )
        except Exception:
            log.exception("authorizer failed", extra={"authorizer": authorizer.name})
            return gateway_message(500, "Internal Server Error")
        return context if allowed else gateway_message(403, "Forbidden")

    def _invoke(self, function: FunctionSpec, event: dict[str, Any]) -> Any:
        if self._invoker is None:
            raise RuntimeError("The gateway is not started.")
        return self._invoker.invoke(function, event)


class GatewayServer(ThreadingHTTPServer):
    """A threaded HTTP server (one daemon thread per connection) with a ``LISTEN_BACKLOG`` queue of
    pending connections, which logs connection failures instead of printing them."""

    request_queue_size = LISTEN_BACKLOG
    daemon_threads = True

    def handle_error(
        self, request: socket.socket | tuple[bytes, socket.socket], client_address: object
    ) -> None:
        """Called by ``socketserver`` inside the ``except`` of a connection's thread: a client that
        went away is routine (DEBUG); anything else is a bug worth its traceback (ERROR)."""
        error = sys.exc_info()[1]
        if isinstance(error, ConnectionError):
            log.debug("client went away", extra={"client": str(client_address), "error": repr(error)})
            return
        log.error("connection failed", extra={"client": str(client_address)}, exc_info=True)


def _request_handler_for(gateway: Gateway) -> type[BaseHTTPRequestHandler]:
    class RequestHandler(_RequestHandler):
        pass

    RequestHandler.gateway = gateway
    return RequestHandler


class _RequestHandler(BaseHTTPRequestHandler):
    """Reads one HTTP/1.1 request (``Content-Length`` or chunked body), hands it to the gateway,
    writes the answer. Any HTTP method is accepted; routing decides."""

    gateway: Gateway
    protocol_version = "HTTP/1.1"
    server_version = "knowledge-local-gateway"
    timeout = 120
    # Headers and body go out in two writes; with Nagle's algorithm on, a keep-alive client's
    # delayed ACK holds the body back for ~40 ms on every response.
    disable_nagle_algorithm = True

    def handle_one_request(self) -> None:
        try:
            self.raw_requestline = self.rfile.readline(65537)
            if not self.raw_requestline:
                self.close_connection = True
                return
            if not self.parse_request():
                return
            self._serve()
            self.wfile.flush()
        except TimeoutError:
            self.close_connection = True

    def _serve(self) -> None:
        started = time.monotonic()
        try:
            body = self._read_body()
        except _BodyTooLargeError:
            self.close_connection = True
            self._write(_envelope(413, "payload_too_large", "The request body exceeds 10 MB."))
            return
        except ValueError:
            self.close_connection = True
            self._write(gateway_message(400, "Bad Request"))
            return
        split = urlsplit(self.path)
        request = HttpRequest(
            method=self.command,
            raw_path=split.path or "/",
            raw_query=split.query,
            headers=list(self.headers.items()),
            body=body,
            source_ip=self.client_address[0],
        )
        try:
            response = self.gateway.handle(request, self._port())
        except Exception:
            log.exception("gateway failed", extra={"path": request.raw_path})
            response = gateway_message(500, "Internal Server Error")
        response.headers.append(("apigw-requestid", request.request_id))
        self._write(response)
        log.info(
            "request served",
            extra={
                "method": request.method,
                "path": request.raw_path,
                "status": response.status,
                "duration_ms": round((time.monotonic() - started) * 1000, 1),
            },
        )

    def _port(self) -> int:
        address = self.server.server_address
        return int(address[1]) if isinstance(address, tuple) else 0

    def _read_body(self) -> bytes:
        """The request body; ``ValueError`` for a malformed length or chunk size."""
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            return self._read_chunked()
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY_BYTES:
            raise _BodyTooLargeError
        return self.rfile.read(length) if length > 0 else b""

    def _read_chunked(self) -> bytes:
        chunks: list[bytes] = []
        total = 0
        while size := int(self.rfile.readline(1024).split(b";")[0].strip() or b"0", 16):
            total += size
            if total > MAX_BODY_BYTES:
                raise _BodyTooLargeError
            chunks.append(self.rfile.read(size))
            self.rfile.readline(3)
        while self.rfile.readline(65537) not in (b"\r\n", b"\n", b""):
            pass
        return b"".join(chunks)

    def _write(self, response: HttpResponse) -> None:
        self.send_response(response.status)
        for name, value in response.headers:
            if name.lower() not in ("content-length", "connection", "transfer-encoding"):
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(response.body)))
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(response.body)

    def log_message(self, format: str, *args: Any) -> None:
        log.debug(format, *args)


def _envelope(status: int, code: str, message: str) -> HttpResponse:
    body = ErrorResponse(error=ErrorDetail(code=code, message=message)).model_dump_json().encode()
    return HttpResponse(status, [("content-type", "application/json")], body)
