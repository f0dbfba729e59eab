"""The local gateway's HTTP/1.1 server: connections, deadlines, request bodies and the answers it
gives before a request reaches the gateway's routing (``gateway``).

Deadlines, each for the whole of its phase (a client trickling one byte every few seconds is cut
all the same):

- ``IDLE_SECONDS`` for the first byte of a request on a kept-alive connection (then the
  connection is closed without an answer, as servers close idle connections);
- ``HEADER_SECONDS`` from that byte to the end of the request line and headers;
- ``BODY_SECONDS`` for the body (``Content-Length`` or chunked, at most ``MAX_BODY_BYTES``).

Answers of the server itself, in the service's error envelope, each closing the connection:
``408 request_timeout`` past a header or body deadline, ``413 payload_too_large`` for a body over
10 MB, ``400 validation_error`` for a request that is not valid HTTP/1.1 (request line, headers,
``Content-Length`` or chunk sizes, a body shorter than announced, another HTTP version such as an
HTTP/2 preface), ``431 validation_error`` for header lines over 64 KiB or more than 100 headers,
``500 internal_error`` when the gateway itself fails. Their messages are fixed: none quotes the
request.

A body is framed by ``Content-Length`` or by ``Transfer-Encoding: chunked``, never by a guess: a
request with more than one ``Content-Length``, with both headers, or with a transfer coding other
than ``chunked`` alone is refused (400, RFC 9112 §6.1 and §6.3), so no second request can hide in
a body that a proxy in front would frame differently.

``GatewayServer`` queues up to ``LISTEN_BACKLOG`` connections that wait to be accepted, so a burst
of clients is never refused. A client that goes away before its answer is written
(``ConnectionError``: a reset, a broken pipe) is logged at DEBUG; any other failure of a connection
is logged at ERROR with its traceback, through ``logging``, never printed.
"""

from __future__ import annotations

import contextlib
import io
import logging
import re
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from knowledge_local.emulator.api_gateway.http_api import HttpRequest, HttpResponse, gateway_error

MAX_BODY_BYTES = 10 * 1024 * 1024
"""The HTTP API request payload limit (10 MB)."""
IDLE_SECONDS = 60.0
HEADER_SECONDS = 10.0
BODY_SECONDS = 30.0
LISTEN_BACKLOG = 128
"""Connections the kernel holds for the server before it accepts them (``listen``'s backlog);
with ``socketserver``'s default, 5, a burst of a few dozen clients meets dropped or reset
connections."""
_MAX_LINE = 65536
_NOT_HTTP_1_1 = "The request is not valid HTTP/1.1."
_HEADERS_TOO_LARGE = "A header line is over 64 KiB, or there are more than 100 headers."
_DIGITS = re.compile(r"[0-9]+")
_HEX = re.compile(rb"[0-9A-Fa-f]+")

log = logging.getLogger(__name__)

Handle = Callable[[HttpRequest, int], HttpResponse]
"""The gateway's routing: one request and the server's port → its answer; never raises."""


class _BadRequestError(Exception):
    """The request is not valid HTTP/1.1; the message says why."""


class _BodyTooLargeError(Exception):
    pass


class _DeadlineReader(io.RawIOBase):
    """A socket's input that refuses to wait past ``deadline`` (``time.monotonic()``; ``None``: no
    deadline), in total, however the reads are split: ``TimeoutError`` once it has passed."""

    def __init__(self, connection: socket.socket) -> None:
        self._connection = connection
        self.deadline: float | None = None

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self.deadline is not None:
            remaining = self.deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("the request took too long to arrive")
            self._connection.settimeout(remaining)
        return self._connection.recv_into(buffer)


class GatewayServer(ThreadingHTTPServer):
    """A threaded HTTP server (one daemon thread per connection) handing each request to
    ``handle``.

    Stopping: ``draining = True`` makes every answer close its connection (``Connection: close``),
    so kept-alive clients come back on a new connection; ``accept_queued()`` takes in the
    connections the kernel accepted before the listening socket closes (their requests are
    answered, not reset); ``server_close`` closes it, so further connections are refused;
    ``close_idle_connections()`` then ends the connections that still wait for a request."""

    request_queue_size = LISTEN_BACKLOG
    daemon_threads = True

    def __init__(self, address: tuple[str, int], handle: Handle) -> None:
        handler = type("RequestHandler", (_RequestHandler,), {"handle_request": staticmethod(handle)})
        self.draining = False
        self._idle: set[socket.socket] = set()
        self._idle_lock = threading.Lock()
        self._answering = 0
        self._answered = threading.Condition()
        super().__init__(address, handler)

    def waiting(self, connection: socket.socket, idle: bool) -> None:
        """A connection's handler waits for a request (``idle``) or reads one."""
        with self._idle_lock:
            if idle:
                self._idle.add(connection)
            else:
                self._idle.discard(connection)

    @contextlib.contextmanager
    def answering(self) -> Iterator[None]:
        """A request is read, handled and answered while the block runs (``wait_for_answers``)."""
        with self._answered:
            self._answering += 1
        try:
            yield
        finally:
            with self._answered:
                self._answering -= 1
                self._answered.notify_all()

    def wait_for_answers(self, deadline: float) -> None:
        """Wait until no request is being answered, or until ``deadline`` (``time.monotonic()``):
        a request counts from its first byte until its answer is written, so a stop that waits
        for it does not end the process under an answer half sent."""
        with self._answered:
            while self._answering and time.monotonic() < deadline:
                self._answered.wait(deadline - time.monotonic())

    @property
    def idle_connections(self) -> int:
        """How many connections wait for a next request (kept alive between requests)."""
        with self._idle_lock:
            return len(self._idle)

    def accept_queued(self) -> None:
        """Accept every connection waiting in the listening socket's backlog and serve each in a
        thread of its own (call it once ``serve_forever`` has returned, before ``server_close``):
        closing a listening socket resets the connections still queued in it, whose clients may
        have sent their request already."""
        self.socket.setblocking(False)
        while True:
            try:
                connection, address = self.socket.accept()
            except OSError:  # BlockingIOError: the backlog is empty
                return
            connection.setblocking(True)
            self.process_request(connection, address)

    def close_idle_connections(self) -> None:
        """End every connection waiting for a request: its handler sees the end and returns."""
        with self._idle_lock:
            idle, self._idle = self._idle, set()
        for connection in idle:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)

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


class _RequestHandler(BaseHTTPRequestHandler):
    """Reads one HTTP/1.1 request at a time under the module's deadlines, hands it to
    ``handle_request`` and writes the answer. Any HTTP method is accepted; routing decides."""

    handle_request: Handle
    protocol_version = "HTTP/1.1"
    server_version = "knowledge-local-gateway"
    # Headers and body go out in two writes; with Nagle's algorithm on, a keep-alive client's
    # delayed ACK holds the body back for ~40 ms on every response.
    disable_nagle_algorithm = True

    def setup(self) -> None:
        super().setup()
        self._input = _DeadlineReader(self.connection)
        self._buffered = io.BufferedReader(self._input)
        self.rfile = self._buffered

    def handle_one_request(self) -> None:
        self.close_connection = True
        self.command = ""  # what send_error reads before a request line is parsed
        server: GatewayServer = self.server  # type: ignore[assignment]
        server.waiting(self.connection, idle=True)
        try:
            # While the server stops, a request that arrives is answered (503, ``gateway``) until
            # ``close_idle_connections`` ends the wait.
            self._input.deadline = time.monotonic() + IDLE_SECONDS
            if not self._buffered.peek(1):
                return  # the client closed the connection, or the server is stopping
        except (TimeoutError, OSError):
            return
        finally:
            server.waiting(self.connection, idle=False)
        with server.answering():
            self._answer_one_request()

    def _answer_one_request(self) -> None:
        self._input.deadline = time.monotonic() + HEADER_SECONDS
        try:
            self.raw_requestline = self.rfile.readline(_MAX_LINE + 1)
            if len(self.raw_requestline) > _MAX_LINE:
                self._refuse(431, "The request line is over 64 KiB.")
                return
            if len(self.raw_requestline.split()) == 2:  # HTTP/0.9's "GET /path": no version, no headers
                self._refuse(400, _NOT_HTTP_1_1)
                return
            if not self.parse_request():  # answers itself, through send_error
                return
            if not self.path.isascii():  # raw bytes in the target, not percent-encoded (RFC 3986)
                self._refuse(400, _NOT_HTTP_1_1)
                return
            self._serve()
        except TimeoutError:
            self._refuse(408, "The request did not arrive in time.", code="request_timeout")

    def _serve(self) -> None:
        started = time.monotonic()
        self._input.deadline = time.monotonic() + BODY_SECONDS
        try:
            body = self._read_body()
        except _BodyTooLargeError:
            self._refuse(413, "The request body exceeds 10 MB.", code="payload_too_large")
            return
        except _BadRequestError as error:
            self._refuse(400, str(error))
            return
        self._input.deadline = None
        self.connection.settimeout(BODY_SECONDS)  # for writing the answer
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
            response = self.handle_request(request, self._port())
        except Exception:
            log.exception("gateway failed", extra={"path": request.raw_path})
            response = gateway_error(500, "internal_error", "The gateway failed.", retryable=True)
        response.headers.append(("apigw-requestid", request.request_id))
        if getattr(self.server, "draining", False):
            self.close_connection = True
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
        """The body as framed by ``Transfer-Encoding: chunked`` or ``Content-Length``; anything
        ambiguous (RFC 9112 §6.1, §6.3) is refused rather than guessed: more than one
        ``Content-Length``, both headers, or a transfer coding other than ``chunked`` alone, since
        a server and a proxy that frame the body differently let a second request hide in it."""
        lengths = self.headers.get_all("Content-Length") or []
        encodings = self.headers.get_all("Transfer-Encoding") or []
        if encodings:
            if lengths:
                raise _BadRequestError("The request has both Content-Length and Transfer-Encoding.")
            codings = [coding.strip().lower() for value in encodings for coding in value.split(",")]
            if codings != ["chunked"]:
                raise _BadRequestError("The only Transfer-Encoding accepted is chunked.")
            return self._read_chunked()
        if len(lengths) > 1:
            raise _BadRequestError("The request has more than one Content-Length.")
        if not lengths:
            return b""
        if not _DIGITS.fullmatch(lengths[0].strip()):
            raise _BadRequestError("The Content-Length header is not a number.")
        length = int(lengths[0])
        if length > MAX_BODY_BYTES:
            raise _BodyTooLargeError
        return self._read_exactly(length)

    def _read_chunked(self) -> bytes:
        chunks: list[bytes] = []
        total = 0
        while size := self._chunk_size():
            total += size
            if total > MAX_BODY_BYTES:
                raise _BodyTooLargeError
            chunks.append(self._read_exactly(size))
            if self.rfile.readline(3) not in (b"\r\n", b"\n"):
                raise _BadRequestError("A chunk is longer than its size.")
        while self.rfile.readline(_MAX_LINE + 1) not in (b"\r\n", b"\n", b""):
            pass
        return b"".join(chunks)

    def _chunk_size(self) -> int:
        line = self.rfile.readline(1024)
        size = line.split(b";")[0].strip()
        if not _HEX.fullmatch(size):
            raise _BadRequestError("A chunk size is not a hexadecimal number.")
        return int(size, 16)

    def _read_exactly(self, length: int) -> bytes:
        data = self.rfile.read(length) if length > 0 else b""
        if len(data) < length:
            raise _BadRequestError("The request body is shorter than announced.")
        return data

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """``BaseHTTPRequestHandler``'s answer to a malformed request line or headers, in the
        envelope (never its HTML page) and with a message of this server's own: ``http.server``'s
        messages quote the request (``Bad request syntax ('HELLO')``). A version it does not
        serve (an HTTP/2 preface: its 505) is one more request that is not HTTP/1.1: 400."""
        if code == HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE:
            self._refuse(code, _HEADERS_TOO_LARGE)
        elif code in (HTTPStatus.BAD_REQUEST, HTTPStatus.HTTP_VERSION_NOT_SUPPORTED):
            self._refuse(HTTPStatus.BAD_REQUEST, _NOT_HTTP_1_1)
        else:
            self._refuse(code, HTTPStatus(code).phrase + ".")

    def _refuse(self, status: int, message: str, *, code: str = "validation_error") -> None:
        """Answer ``status`` in the envelope and close the connection."""
        self.close_connection = True
        self.requestline = getattr(self, "requestline", "")
        if getattr(self, "request_version", "HTTP/0.9") == "HTTP/0.9":
            self.request_version = self.protocol_version  # answer with a status line and headers
        self._write(gateway_error(status, code, message))

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
        self.wfile.flush()

    def log_message(self, format: str, *args: Any) -> None:
        log.debug(format, *args)
