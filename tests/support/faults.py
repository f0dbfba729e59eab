"""Faults injected at the adapters' transports, below their retry logic, so the retries and the
error mapping run as in production.

- ``FaultyConnection``: opensearch-py's ``RequestsHttpConnection`` (to a real OpenSearch node) that
  first answers the faults scheduled with ``FaultyConnection.schedule`` for requests whose path
  contains a given fragment: a timeout (``ConnectionTimeout``), an HTTP status (429, 503, ...), or
  ``KNN_DIMENSION``, which sends the request with one component added to every kNN query vector, so
  the node itself fails each kNN search of the request (a ``_msearch`` leg answers its own 400,
  "all shards failed") while the other searches run.
- ``failing_sends``: botocore's ``before-send`` hook answering the first ``times`` requests of an
  operation with an AWS error, so botocore's retry handler sees (and retries) each one.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, ClassVar

from botocore.awsrequest import AWSResponse
from opensearchpy import RequestsHttpConnection
from opensearchpy.exceptions import ConnectionTimeout

TIMEOUT = "timeout"
KNN_DIMENSION = "knn_dimension"


@dataclass
class Fault:
    path_fragment: str
    kind: int | str
    """An HTTP status, ``TIMEOUT`` or ``KNN_DIMENSION``."""


class FaultyConnection(RequestsHttpConnection):
    """A real HTTP connection that first fails the scheduled requests; ``served`` counts faults."""

    _lock = threading.Lock()
    _faults: ClassVar[deque[Fault]] = deque()
    served: ClassVar[list[Fault]] = []

    @classmethod
    def schedule(cls, path_fragment: str, kind: int | str, times: int = 1) -> None:
        with cls._lock:
            cls._faults.extend(Fault(path_fragment, kind) for _ in range(times))

    @classmethod
    def reset(cls) -> None:
        with cls._lock:
            cls._faults.clear()
            cls.served.clear()

    def perform_request(  # type: ignore[override]
        self,
        method: str,
        url: str,
        params: Mapping[str, Any] | None = None,
        body: bytes | None = None,
        timeout: float | None = None,
        allow_redirects: bool | None = True,
        ignore: Any = (),
        headers: Mapping[str, str] | None = None,
    ) -> Any:
        fault = self._take(url)
        if fault is not None:
            if fault.kind == TIMEOUT:
                raise ConnectionTimeout("TIMEOUT", "injected read timeout", TimeoutError())
            if fault.kind == KNN_DIMENSION:
                body = _widen_knn_vectors(body)
                return super().perform_request(
                    method, url, params, body, timeout, allow_redirects, ignore, headers
                )
            status = int(fault.kind)
            payload = json.dumps({"error": {"type": "injected"}, "status": status})
            self._raise_error(status, payload, "application/json")
        return super().perform_request(method, url, params, body, timeout, allow_redirects, ignore, headers)

    @classmethod
    def _take(cls, url: str) -> Fault | None:
        with cls._lock:
            if cls._faults and cls._faults[0].path_fragment in url:
                fault = cls._faults.popleft()
                cls.served.append(fault)
                return fault
        return None


def _widen_knn_vectors(body: bytes | None) -> bytes | None:
    """The NDJSON ``body`` with a component added to the vector of every ``knn`` query in it."""
    if body is None:
        return None
    lines = []
    for line in body.decode().splitlines():
        document = json.loads(line)
        for clause in document.get("query", {}).get("knn", {}).values():
            clause["vector"] = [*clause["vector"], 0.0]
        lines.append(json.dumps(document))
    return ("\n".join(lines) + "\n").encode()


@contextmanager
def failing_sends(
    client: Any, operation: str, code: str, times: int, status: int = 400
) -> Iterator[list[str]]:
    """The first ``times`` ``operation`` requests of ``client`` answer AWS error ``code`` with
    ``status``; yields the list of codes served (one entry per injected failure)."""
    served: list[str] = []

    def reply(request: Any, **_: Any) -> AWSResponse | None:
        if len(served) >= times:
            return None
        served.append(code)
        body = json.dumps({"__type": code, "message": "injected"}).encode()
        headers = {"x-amzn-ErrorType": code, "Content-Type": "application/x-amz-json-1.0"}
        return AWSResponse(request.url, status, headers, _Raw(body))

    event = f"before-send.{client.meta.service_model.service_name}.{operation}"
    client.meta.events.register(event, reply)
    try:
        yield served
    finally:
        client.meta.events.unregister(event, reply)


class _Raw:
    """The streamed body botocore reads from an ``AWSResponse``."""

    def __init__(self, body: bytes) -> None:
        self._body = body

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self._body

    def read(self, *_: Any) -> bytes:
        body, self._body = self._body, b""
        return body
