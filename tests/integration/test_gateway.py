"""The local gateway over real HTTP, on a small fixture template (tests/fixtures/gateway)."""

from __future__ import annotations

import base64
import itertools
import json
import logging
import select
import socket
import struct
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from http.client import HTTPConnection
from pathlib import Path
from typing import Any

import httpx2
import pytest

from knowledge_local.emulator.api_gateway import gateway_server
from knowledge_local.emulator.api_gateway.gateway import Gateway
from knowledge_local.emulator.api_gateway.gateway_server import MAX_BODY_BYTES, GatewayServer
from knowledge_local.emulator.api_gateway.http_api import HttpRequest, HttpResponse
from knowledge_local.emulator.lambda_runtime import invoker
from knowledge_local.emulator.lambda_runtime.invoker import Invoker

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "gateway"


@pytest.fixture(scope="module")
def gateway() -> Iterator[Gateway]:
    with Gateway(FIXTURES / "template.yaml") as running:
        yield running


@pytest.fixture
def http(gateway: Gateway) -> Iterator[httpx2.Client]:
    with httpx2.Client(base_url=gateway.url, timeout=10) as client:
        yield client


def _event(response: httpx2.Response) -> dict[str, Any]:
    assert response.status_code == 200, response.text
    event: dict[str, Any] = response.json()["event"]
    return event


def test_gateway_path_parameter_route_builds_v2_event(http: httpx2.Client) -> None:
    response = http.get(
        "/items/a%20b?x=1&x=2&y=",
        headers=[
            ("Authorization", "Bearer alice"),
            ("X-Multi", "1"),
            ("X-Multi", "2"),
            ("Cookie", "c1=v1; c2=v2"),
        ],
    )

    event = _event(response)
    assert event["version"] == "2.0"
    assert event["routeKey"] == "GET /items/{item}"
    assert event["rawPath"] == "/items/a%20b"
    assert event["rawQueryString"] == "x=1&x=2&y="
    assert event["queryStringParameters"] == {"x": "1,2", "y": ""}
    assert event["pathParameters"] == {"item": "a b"}
    assert event["headers"]["x-multi"] == "1,2"
    assert event["headers"]["authorization"] == "Bearer alice"
    assert "cookie" not in event["headers"]
    assert event["cookies"] == ["c1=v1", "c2=v2"]
    assert event["isBase64Encoded"] is False
    assert "body" not in event
    context = event["requestContext"]
    assert context["http"]["method"] == "GET"
    assert context["http"]["path"] == "/items/a%20b"
    assert context["http"]["sourceIp"] == "127.0.0.1"
    assert context["routeKey"] == "GET /items/{item}"
    assert context["stage"] == "$default"
    assert context["requestId"] == response.headers["apigw-requestid"]
    assert abs(context["timeEpoch"] / 1000 - time.time()) < 60
    assert context["authorizer"]["lambda"] == {
        "subject": "alice",
        "route_key": "GET /items/{item}",
        "identity": ["Bearer alice"],
    }


def test_gateway_literal_segment_beats_path_parameter(http: httpx2.Client) -> None:
    event = _event(http.get("/items/special", headers={"Authorization": "Bearer alice"}))

    assert event["routeKey"] == "GET /items/special"
    assert "pathParameters" not in event


def test_gateway_json_body_arrives_as_text(http: httpx2.Client) -> None:
    event = _event(http.post("/echo", json={"q": "déjà vu"}, headers={"Authorization": "Bearer alice"}))

    assert event["isBase64Encoded"] is False
    assert json.loads(event["body"]) == {"q": "déjà vu"}


def test_gateway_binary_body_arrives_base64_encoded(http: httpx2.Client) -> None:
    payload = bytes(range(256))
    event = _event(
        http.post(
            "/echo",
            content=payload,
            headers={"Authorization": "Bearer alice", "Content-Type": "application/octet-stream"},
        )
    )

    assert event["isBase64Encoded"] is True
    assert base64.b64decode(event["body"]) == payload


def test_gateway_greedy_any_route_matches_every_method(http: httpx2.Client) -> None:
    event = _event(http.delete("/files/a/b/c.txt"))

    assert event["routeKey"] == "ANY /files/{proxy+}"
    assert event["pathParameters"] == {"proxy": "a/b/c.txt"}
    assert "authorizer" not in event["requestContext"]


def test_gateway_context_carries_function_settings(http: httpx2.Client) -> None:
    body = http.get("/public").json()

    assert body["context"]["function_name"] == "EchoFunction"
    assert body["context"]["memory_limit_in_mb"] == 256
    assert 0 < body["context"]["remaining_ms"] <= 5000


def test_gateway_unknown_route_answers_not_found_envelope(http: httpx2.Client) -> None:
    response = http.get("/nowhere")

    assert response.status_code == 404
    assert response.json()["type"] == "error"
    assert response.json()["error"]["code"] == "not_found"


def test_gateway_method_without_route_answers_not_found(http: httpx2.Client) -> None:
    response = http.post("/public")

    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


def _error(response: httpx2.Response) -> dict[str, Any]:
    """The envelope's ``error``, after checking the envelope's shape."""
    body: dict[str, Any] = response.json()
    assert body["type"] == "error"
    assert set(body["error"]) == {"code", "message", "retryable", "details"}
    error: dict[str, Any] = body["error"]
    return error


def test_gateway_missing_identity_source_answers_authentication_required(http: httpx2.Client) -> None:
    response = http.get("/items/x")

    assert response.status_code == 401
    assert _error(response)["code"] == "authentication_required"


def test_gateway_denying_authorizer_answers_forbidden(http: httpx2.Client) -> None:
    response = http.get("/items/x", headers={"Authorization": "Bearer deny"})

    assert response.status_code == 403
    assert _error(response)["code"] == "forbidden"


def test_gateway_failing_authorizer_answers_internal_error(http: httpx2.Client) -> None:
    response = http.get("/items/x", headers={"Authorization": "Bearer boom"})

    assert response.status_code == 500
    assert _error(response) == {
        "code": "internal_error",
        "message": "The authorizer failed.",
        "retryable": True,
        "details": {},
    }


@pytest.mark.parametrize("path", ["/boom", "/invalid"])
def test_gateway_failing_function_answers_function_error_and_keeps_serving(
    http: httpx2.Client, path: str
) -> None:
    failed = http.get(path)
    after = http.get("/public")

    assert failed.status_code == 502
    assert _error(failed)["code"] == "function_error"
    assert after.status_code == 200


def test_gateway_function_past_its_timeout_answers_function_timeout(http: httpx2.Client) -> None:
    assert http.get("/sleep", params={"seconds": "0"}).status_code == 200  # a warm environment
    started = time.monotonic()
    response = http.get("/sleep", params={"seconds": "1.5"})

    assert response.status_code == 504
    assert _error(response)["code"] == "function_timeout"
    assert time.monotonic() - started < 1.5


def test_gateway_binary_response_with_cookies_is_decoded(http: httpx2.Client) -> None:
    response = http.get("/binary")

    assert response.status_code == 201
    assert response.headers["content-type"] == "image/png"
    assert response.content == b"\x89PNG\r\n\x1a\n"
    assert response.headers.get_list("set-cookie") == ["first=1; Path=/", "second=2"]


def test_gateway_answer_without_status_code_is_inferred_as_json(http: httpx2.Client) -> None:
    response = http.get("/plain")

    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert response.json() == {"hello": "world"}


def test_gateway_concurrent_requests_run_at_once_one_per_environment(gateway: Gateway) -> None:
    def call(_: int) -> dict[str, Any]:
        with httpx2.Client(base_url=gateway.url, timeout=30) as client:
            response = client.get("/sleep", params={"seconds": "0.3"})
            assert response.status_code == 200, response.text
            answer: dict[str, Any] = response.json()
            return answer

    with ThreadPoolExecutor(max_workers=6) as pool:
        runs = list(pool.map(call, range(6)))

    by_environment: dict[int, list[dict[str, Any]]] = {}
    for run in runs:
        by_environment.setdefault(run["pid"], []).append(run)
    assert len(by_environment) > 1
    for environment_runs in by_environment.values():
        environment_runs.sort(key=lambda run: run["started"])
        pairs = itertools.pairwise(environment_runs)
        assert all(earlier["ended"] <= later["started"] for earlier, later in pairs)


def test_gateway_body_at_payload_limit_is_accepted(http: httpx2.Client) -> None:
    response = http.post(
        "/size", content=b"x" * MAX_BODY_BYTES, headers={"Content-Type": "application/octet-stream"}
    )

    assert response.status_code == 200
    assert response.json() == {"bytes": MAX_BODY_BYTES}


def test_gateway_body_over_payload_limit_answers_payload_too_large(gateway: Gateway) -> None:
    host, port = gateway.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=5) as connection:
        connection.sendall(
            f"POST /size HTTP/1.1\r\nHost: {host}\r\nContent-Type: text/plain\r\n"
            f"Content-Length: {MAX_BODY_BYTES + 1}\r\n\r\n".encode()
        )
        reply = connection.makefile("rb").read()

    head, _, body = reply.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 413")
    assert json.loads(body)["error"]["code"] == "payload_too_large"


def test_gateway_chunked_body_is_reassembled(gateway: Gateway) -> None:
    host, port = gateway.url.removeprefix("http://").split(":")
    connection = HTTPConnection(host, int(port), timeout=5)
    try:
        connection.request(
            "POST",
            "/size",
            body=iter([b"abc", b"defg"]),
            headers={"Content-Type": "text/plain", "Transfer-Encoding": "chunked"},
            encode_chunked=True,
        )
        response = connection.getresponse()
        assert response.status == 200
        assert json.loads(response.read()) == {"bytes": 7}
    finally:
        connection.close()


def test_gateway_catch_all_route_receives_every_request() -> None:
    with Gateway(FIXTURES / "catch_all.yaml") as running, httpx2.Client(base_url=running.url) as client:
        event = _event(client.patch("/any/where?q=1"))

    assert event["routeKey"] == "$default"
    assert event["rawPath"] == "/any/where"
    assert event["requestContext"]["http"]["method"] == "PATCH"


def test_gateway_malformed_content_length_answers_bad_request(gateway: Gateway) -> None:
    host, port = gateway.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=5) as connection:
        connection.sendall(f"POST /size HTTP/1.1\r\nHost: {host}\r\nContent-Length: ten\r\n\r\n".encode())
        reply = connection.makefile("rb").read()

    head, _, body = reply.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400")
    assert json.loads(body)["error"]["code"] == "validation_error"


def _no_content(request: HttpRequest, port: int) -> HttpResponse:
    return HttpResponse(204, [], b"")


def _established(connections: list[socket.socket], bound_seconds: float) -> list[socket.socket]:
    """The non-blocking ``connections`` whose handshake completed, waiting at most ``bound_seconds``."""
    pending, done = list(connections), []
    deadline = time.monotonic() + bound_seconds
    while pending and time.monotonic() < deadline:
        _, writable, _ = select.select([], pending, [], 0.1)
        for connection in writable:
            pending.remove(connection)
            if connection.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0:
                done.append(connection)
    return done


def test_gateway_server_queues_a_burst_of_connections_before_accepting_them() -> None:
    server = GatewayServer(("127.0.0.1", 0), _no_content)
    connections = [socket.socket() for _ in range(100)]
    try:
        for connection in connections:
            connection.setblocking(False)
            connection.connect_ex(server.server_address[:2])
        queued = _established(connections, bound_seconds=5.0)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        replies = []
        for connection in queued:
            connection.setblocking(True)
            connection.settimeout(10)
            connection.sendall(b"GET / HTTP/1.1\r\nHost: test\r\n\r\n")
            replies.append(connection.makefile("rb").readline())
    finally:
        server.shutdown()
        server.server_close()
        for connection in connections:
            connection.close()

    assert len(queued) == 100
    assert set(replies) == {b"HTTP/1.1 204 No Content\r\n"}


def _reset(connection: socket.socket) -> None:
    """Close ``connection`` with a TCP reset instead of an orderly shutdown."""
    connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    connection.close()


def test_gateway_client_gone_before_its_answer_is_logged_quietly(
    gateway: Gateway, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    caplog.set_level(logging.DEBUG, logger="knowledge_local.emulator.api_gateway.gateway_server")
    host, port = gateway.url.removeprefix("http://").split(":")
    connection = socket.create_connection((host, int(port)), timeout=5)
    connection.sendall(f"GET /sleep?seconds=0.2 HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
    _reset(connection)

    deadline = time.monotonic() + 10
    while not any(record.message == "client went away" for record in caplog.records):
        assert time.monotonic() < deadline, "the gateway never noticed the client leaving"
        time.sleep(0.05)
    with httpx2.Client(base_url=gateway.url, timeout=10) as client:
        after = client.get("/public")

    assert after.status_code == 200
    assert [record for record in caplog.records if record.levelno >= logging.WARNING] == []
    assert "Traceback" not in capsys.readouterr().err


def test_gateway_server_logs_any_other_connection_failure_with_its_traceback(
    caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    server = GatewayServer(("127.0.0.1", 0), _no_content)
    try:
        with socket.socket() as request:
            try:
                raise RuntimeError("handler bug")
            except RuntimeError:
                server.handle_error(request, ("127.0.0.1", 4242))
    finally:
        server.server_close()

    [record] = [
        record
        for record in caplog.records
        if record.name == "knowledge_local.emulator.api_gateway.gateway_server"
    ]
    assert record.levelno == logging.ERROR
    assert record.exc_info is not None
    assert isinstance(record.exc_info[1], RuntimeError)
    assert capsys.readouterr().err == ""


def test_gateway_bound_before_start_holds_the_port_and_serves_what_waited() -> None:
    gateway = Gateway(FIXTURES / "template.yaml").bind()
    try:
        with ThreadPoolExecutor(max_workers=1) as pool:
            waiting = pool.submit(httpx2.get, f"{gateway.url}/public", timeout=10)
            time.sleep(0.3)
            held_back = not waiting.done()
            gateway.start()
            response = waiting.result(timeout=10)
    finally:
        gateway.stop()

    assert held_back
    assert response.status_code == 200, response.text


def test_gateway_bound_but_never_started_stops_and_frees_its_port() -> None:
    gateway = Gateway(FIXTURES / "template.yaml").bind()
    port = int(gateway.url.rsplit(":", 1)[1])

    gateway.stop()

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", port))


def _raw(gateway: Gateway, *parts: tuple[bytes, float]) -> tuple[bytes, float]:
    """Send ``parts`` (bytes, then seconds to wait) on a new connection; everything the gateway
    answered before closing it, and how long that took."""
    host, port = gateway.url.removeprefix("http://").split(":")
    started = time.monotonic()
    with socket.create_connection((host, int(port)), timeout=30) as connection:
        try:
            for data, pause in parts:
                connection.sendall(data)
                time.sleep(pause)
        except (BrokenPipeError, ConnectionResetError):
            pass
        reply = connection.makefile("rb").read()
    return reply, time.monotonic() - started


def _status_and_error(reply: bytes) -> tuple[bytes, dict[str, Any]]:
    head, _, body = reply.partition(b"\r\n\r\n")
    error: dict[str, Any] = json.loads(body)["error"]
    return head.split(b"\r\n")[0], error


def test_gateway_headers_trickling_past_their_deadline_answer_request_timeout(
    gateway: Gateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gateway_server, "HEADER_SECONDS", 0.6)
    trickle = [(byte.to_bytes(1, "big"), 0.2) for byte in b"GET /public HTTP/1.1\r\nHost: x\r\n"]

    reply, seconds = _raw(gateway, *trickle)

    status, error = _status_and_error(reply)
    assert status == b"HTTP/1.1 408 Request Timeout"
    assert error["code"] == "request_timeout"
    assert seconds < 3


def test_gateway_body_trickling_past_its_deadline_answers_request_timeout(
    gateway: Gateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gateway_server, "BODY_SECONDS", 0.6)
    head = b"POST /size HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nContent-Length: 50\r\n\r\n"

    reply, seconds = _raw(gateway, (head, 0.1), *[(b"x", 0.2) for _ in range(10)])

    status, error = _status_and_error(reply)
    assert status == b"HTTP/1.1 408 Request Timeout"
    assert error["code"] == "request_timeout"
    assert seconds < 3


def test_gateway_idle_kept_alive_connection_is_closed_without_an_answer(
    gateway: Gateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gateway_server, "IDLE_SECONDS", 0.3)

    reply, seconds = _raw(gateway, (b"GET /public HTTP/1.1\r\nHost: x\r\n\r\n", 0.0))

    assert seconds < 5
    assert reply.startswith(b"HTTP/1.1 200 OK")
    assert b"\r\nHTTP/1.1 " not in reply


def test_gateway_body_shorter_than_announced_answers_validation_error(gateway: Gateway) -> None:
    host, port = gateway.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as connection:
        connection.sendall(b"POST /size HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc")
        connection.shutdown(socket.SHUT_WR)
        reply = connection.makefile("rb").read()

    status, error = _status_and_error(reply)
    assert status == b"HTTP/1.1 400 Bad Request"
    assert error == {
        "code": "validation_error",
        "message": "The request body is shorter than announced.",
        "retryable": False,
        "details": {},
    }


@pytest.mark.parametrize(
    ("request_head", "status"),
    [
        (b"GET /public HTTP/1.1\r\nHost: x\r\n" + b"X-Long: " + b"y" * 70000 + b"\r\n\r\n", b"431"),
        (b"GET /" + b"p" * 70000 + b" HTTP/1.1\r\nHost: x\r\n\r\n", b"431"),
        (b"NOT A REQUEST LINE\r\n\r\n", b"400"),
        (b"GET /public HTTP/1.1\r\nTransfer-Encoding: chunked\r\nHost: x\r\n\r\nzz\r\n", b"400"),
    ],
    ids=["header line too long", "request line too long", "bad request line", "bad chunk size"],
)
def test_gateway_malformed_http_answers_in_the_envelope(
    gateway: Gateway, request_head: bytes, status: bytes
) -> None:
    reply, _ = _raw(gateway, (request_head, 0.0))

    line, error = _status_and_error(reply)
    assert line.split(b" ")[1] == status
    assert error["code"] == "validation_error"


def test_gateway_function_with_every_environment_busy_answers_too_many_requests(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(invoker, "QUEUE_TIMEOUT_SECONDS", 0.2)
    with (
        Gateway(FIXTURES / "template.yaml", invoker=Invoker(max_environments=1)) as running,
        ThreadPoolExecutor(max_workers=2) as pool,
    ):
        assert httpx2.get(f"{running.url}/sleep", params={"seconds": "0"}, timeout=30).status_code == 200
        busy = pool.submit(httpx2.get, f"{running.url}/sleep", params={"seconds": "0.8"}, timeout=30)
        time.sleep(0.3)
        throttled = httpx2.get(f"{running.url}/sleep", params={"seconds": "0"}, timeout=30)
        first = busy.result()

    assert first.status_code == 200
    assert throttled.status_code == 429
    assert _error(throttled) == {
        "code": "too_many_requests",
        "message": "The function is busy; retry later.",
        "retryable": True,
        "details": {},
    }


_SMUGGLED = b"GET /public HTTP/1.1\r\nHost: x\r\n\r\n"


@pytest.mark.parametrize(
    ("framing", "message"),
    [
        (
            f"Content-Length: 2\r\nContent-Length: {2 + len(_SMUGGLED)}\r\n".encode(),
            "The request has more than one Content-Length.",
        ),
        (b"Content-Length: 2\r\nContent-Length: 2\r\n", "The request has more than one Content-Length."),
        (
            f"Content-Length: 2, {2 + len(_SMUGGLED)}\r\n".encode(),
            "The Content-Length header is not a number.",
        ),
        (b"Content-Length: +2\r\n", "The Content-Length header is not a number."),
        (
            b"Content-Length: 2\r\nTransfer-Encoding: chunked\r\n",
            "The request has both Content-Length and Transfer-Encoding.",
        ),
        (b"Transfer-Encoding: gzip, chunked\r\n", "The only Transfer-Encoding accepted is chunked."),
        (b"Transfer-Encoding: chunked, identity\r\n", "The only Transfer-Encoding accepted is chunked."),
        (
            b"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n",
            "The only Transfer-Encoding accepted is chunked.",
        ),
        (b"Transfer-Encoding: identity\r\n", "The only Transfer-Encoding accepted is chunked."),
    ],
    ids=[
        "two content lengths",
        "two equal content lengths",
        "content length list",
        "signed content length",
        "content length and chunked",
        "chunked after another coding",
        "chunked not last",
        "chunked twice",
        "not chunked",
    ],
)
def test_gateway_ambiguous_body_framing_answers_validation_error_and_closes(
    gateway: Gateway, framing: bytes, message: str
) -> None:
    body = b"{}" + _SMUGGLED
    head = b"POST /size HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\n" + framing + b"\r\n"

    reply, _ = _raw(gateway, (head + body, 0.0))

    status, error = _status_and_error(reply)
    assert status == b"HTTP/1.1 400 Bad Request"
    assert error == {"code": "validation_error", "message": message, "retryable": False, "details": {}}
    assert reply.count(b"HTTP/1.1 ") == 1
    assert b"\r\nConnection: close\r\n" in reply


def test_gateway_chunk_longer_than_its_size_answers_validation_error(gateway: Gateway) -> None:
    head = b"POST /size HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n"

    reply, _ = _raw(gateway, (head + b"2\r\nabcd\r\n0\r\n\r\n", 0.0))

    status, error = _status_and_error(reply)
    assert status == b"HTTP/1.1 400 Bad Request"
    assert error["message"] == "A chunk is longer than its size."


def test_gateway_chunk_size_with_a_prefix_answers_validation_error(gateway: Gateway) -> None:
    head = b"POST /size HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n"

    reply, _ = _raw(gateway, (head + b"0x2\r\nab\r\n0\r\n\r\n", 0.0))

    status, error = _status_and_error(reply)
    assert status == b"HTTP/1.1 400 Bad Request"
    assert error["message"] == "A chunk size is not a hexadecimal number."


def test_gateway_single_content_length_still_keeps_the_connection_alive(gateway: Gateway) -> None:
    first = b"POST /size HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\n{}"
    second = b"GET /public HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"

    reply, _ = _raw(gateway, (first + second, 0.0))

    assert reply.count(b"HTTP/1.1 200 OK") == 2
    assert b'{"bytes": 2}' in reply


@pytest.mark.parametrize(
    ("request_head", "status", "message"),
    [
        (b"HELLO\r\n\r\n", b"400", "The request is not valid HTTP/1.1."),
        (b"GET /public HTTP/1.x\r\n\r\n", b"400", "The request is not valid HTTP/1.1."),
        (b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", b"400", "The request is not valid HTTP/1.1."),
        (b"GET /public\r\n", b"400", "The request is not valid HTTP/1.1."),
        (b"GET /public?q=\xff HTTP/1.1\r\nHost: x\r\n\r\n", b"400", "The request is not valid HTTP/1.1."),
        (
            b"GET /public HTTP/1.1\r\n" + b"".join(b"X-%d: v\r\n" % n for n in range(101)) + b"\r\n",
            b"431",
            "A header line is over 64 KiB, or there are more than 100 headers.",
        ),
    ],
    ids=["no version", "bad version", "http2 preface", "http 0.9", "raw byte in target", "too many headers"],
)
def test_gateway_malformed_http_answers_a_fixed_message(
    gateway: Gateway, request_head: bytes, status: bytes, message: str
) -> None:
    reply, _ = _raw(gateway, (request_head, 0.0))

    line, error = _status_and_error(reply)
    assert line.split(b" ")[:2] == [b"HTTP/1.1", status]
    assert error == {"code": "validation_error", "message": message, "retryable": False, "details": {}}


STOPPING = {
    "code": "service_unavailable",
    "message": "The local runtime is stopping; retry once it runs again.",
    "retryable": True,
    "details": {},
}


def _host_port(gateway: Gateway) -> tuple[str, int]:
    host, port = gateway.url.removeprefix("http://").split(":")
    return host, int(port)


def test_gateway_drain_answers_503_on_a_kept_alive_connection_and_refuses_new_ones(
    caplog: pytest.LogCaptureFixture,
) -> None:
    gateway = Gateway(FIXTURES / "template.yaml").start()
    try:
        address = _host_port(gateway)
        connection = HTTPConnection(*address, timeout=30)
        connection.request("GET", "/public")
        first = connection.getresponse()
        first.read()
        # the drain must find the connection waiting for its next request, as a kept-alive
        # connection is between requests (not still finishing the first answer)
        deadline = time.monotonic() + 10
        while gateway.idle_connections != 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert gateway.idle_connections == 1

        gateway.drain(timeout=5)
        connection.request("GET", "/public")
        second = connection.getresponse()
        body = json.loads(second.read())
        with pytest.raises(ConnectionRefusedError), socket.create_connection(address, timeout=5):
            pass
    finally:
        gateway.stop()

    assert first.status == 200
    assert first.getheader("Connection") is None
    assert second.status == 503
    assert body["error"] == STOPPING
    assert second.getheader("Retry-After") == "5"
    assert second.getheader("Connection") == "close"
    assert [record for record in caplog.records if record.levelno >= logging.ERROR] == []


def test_gateway_drain_lets_a_request_in_flight_finish(caplog: pytest.LogCaptureFixture) -> None:
    gateway = Gateway(FIXTURES / "template.yaml").start()
    try:
        assert httpx2.get(f"{gateway.url}/sleep", params={"seconds": "0"}, timeout=30).status_code == 200
        with ThreadPoolExecutor(max_workers=1) as pool:
            in_flight = pool.submit(httpx2.get, f"{gateway.url}/sleep", params={"seconds": "0.5"}, timeout=30)
            time.sleep(0.2)
            gateway.drain(timeout=20)
            response = in_flight.result()
    finally:
        gateway.stop()

    assert response.status_code == 200, response.text
    assert response.headers["connection"] == "close"
    assert [record for record in caplog.records if record.levelno >= logging.ERROR] == []


def test_gateway_stop_ends_an_invocation_past_the_drain_with_503(caplog: pytest.LogCaptureFixture) -> None:
    gateway = Gateway(FIXTURES / "template.yaml").start()
    try:
        assert httpx2.get(f"{gateway.url}/sleep", params={"seconds": "0"}, timeout=30).status_code == 200
        with ThreadPoolExecutor(max_workers=1) as pool:
            # within the function's Timeout of 1 s: the stop, not the timeout, ends the invocation
            in_flight = pool.submit(httpx2.get, f"{gateway.url}/sleep", params={"seconds": "0.9"}, timeout=60)
            time.sleep(0.2)
            gateway.stop(timeout=0.05)
            response = in_flight.result(timeout=30)
    finally:
        gateway.stop()

    assert response.status_code == 503
    assert _error(response) == STOPPING
    assert response.headers["retry-after"] == "5"
    assert [record for record in caplog.records if record.levelno >= logging.ERROR] == []


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _authorizer_context(response: httpx2.Response) -> dict[str, Any]:
    context: dict[str, Any] = _event(response)["requestContext"]["authorizer"]["lambda"]
    return context


def test_gateway_authorizer_cache_replays_a_token_answer_on_every_route_until_it_expires() -> None:
    clock = _Clock()
    alice = {"Authorization": "Bearer alice"}
    with (
        Gateway(FIXTURES / "template.yaml", authorizer_cache=True, clock=clock) as running,
        httpx2.Client(base_url=running.url, timeout=10) as client,
    ):
        first = _authorizer_context(client.get("/items/a", headers=alice))
        replayed = _authorizer_context(client.post("/echo", headers=alice, content=b"{}"))
        bob = _authorizer_context(
            client.post("/echo", headers={"Authorization": "Bearer bob"}, content=b"{}")
        )
        clock.now += 60
        fresh = _authorizer_context(client.post("/echo", headers=alice, content=b"{}"))

    assert first["route_key"] == "GET /items/{item}"
    assert replayed == first  # API Gateway replays the context the authorizer gave on the first route
    assert bob == {"subject": "bob", "route_key": "POST /echo", "identity": ["Bearer bob"]}
    assert fresh == {"subject": "alice", "route_key": "POST /echo", "identity": ["Bearer alice"]}


def test_gateway_without_authorizer_cache_authorizes_every_request_afresh(http: httpx2.Client) -> None:
    alice = {"Authorization": "Bearer alice"}

    first = _authorizer_context(http.get("/items/a", headers=alice))
    second = _authorizer_context(http.post("/echo", headers=alice, content=b"{}"))

    assert (first["route_key"], second["route_key"]) == ("GET /items/{item}", "POST /echo")


def test_gateway_authorizer_cache_keeps_no_failure() -> None:
    with (
        Gateway(FIXTURES / "template.yaml", authorizer_cache=True, clock=_Clock()) as running,
        httpx2.Client(base_url=running.url, timeout=10) as client,
    ):
        statuses = [
            client.get("/items/a", headers={"Authorization": "Bearer boom"}).status_code for _ in range(2)
        ]
        denied = client.get("/items/a", headers={"Authorization": "Bearer deny"})

    assert statuses == [500, 500]
    assert denied.status_code == 403
    assert _error(denied)["code"] == "forbidden"


def test_gateway_drain_answers_a_connection_queued_in_the_backlog_503() -> None:
    gateway = Gateway(FIXTURES / "template.yaml").bind()  # listening, not serving: connections queue
    host, port = gateway.url.removeprefix("http://").split(":")
    try:
        with socket.create_connection((host, int(port)), timeout=10) as client:
            client.sendall(b"GET /public HTTP/1.1\r\nHost: localhost\r\n\r\n")
            gateway.drain(timeout=1)
            answer = b"".join(iter(lambda: client.recv(65536), b""))  # until the server closes it
    finally:
        gateway.stop()

    assert answer.startswith(b"HTTP/1.1 503 ")
    assert b"\r\nretry-after: 5\r\n" in answer.lower()
    assert b'"code":"service_unavailable"' in answer
