"""moto in server mode: DynamoDB, DynamoDB Streams and SQS (every API moto emulates) over HTTP on
one port, so any AWS client reaches them with ``endpoint_url`` as it would reach AWS.

DynamoDB requests are answered one at a time. DynamoDB applies every write and transaction
atomically; moto does not lock, and a transaction it rolls back restores a copy of the whole table,
which would wipe writes that other threads made meanwhile. Serializing the DynamoDB (and Streams)
requests restores DynamoDB's guarantees; other services are not serialized, so an SQS long poll
never holds anyone up.

A rolled-back transaction also keeps the table's stream whole (``keep_streams_across_rollback``):
moto's copy of the table carries a copy of its stream shard, and every shard iterator handed out
before the rollback would read the abandoned original forever, so a stream consumer (the local
stream poller, Lambda's stand-in) would silently stop seeing writes.

The server binds in ``start()``, in the caller's thread, so a port in use raises ``OSError`` there
(moto's own ``ThreadedMotoServer`` binds in its thread, and werkzeug exits the process instead).
"""

from __future__ import annotations

import logging
import socket
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from types import TracebackType
from typing import Any

from moto.dynamodb.models import dynamodb_backends
from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication,
    MotoRequestHandler,
    create_backend_app,
)
from werkzeug.serving import BaseWSGIServer, make_server

log = logging.getLogger(__name__)

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]
_SERIALIZED_TARGETS = ("DynamoDB_", "DynamoDBStreams_")
"""``X-Amz-Target`` prefixes of the DynamoDB and DynamoDB Streams JSON APIs."""
_TRANSACT_WRITE_SUFFIX = ".TransactWriteItems"


class SerializedDynamoDB:
    """WSGI middleware: DynamoDB and Streams requests run (and their bodies are read) under one lock;
    ``TransactWriteItems`` also runs inside ``keep_streams_across_rollback``."""

    def __init__(self, app: WsgiApp) -> None:
        self._app = app
        self._lock = threading.Lock()

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        target = str(environ.get("HTTP_X_AMZ_TARGET", ""))
        if not target.startswith(_SERIALIZED_TARGETS):
            return self._app(environ, start_response)
        with self._lock:
            # Consume the body inside the lock: a lazy iterable would run moto after release.
            if target.endswith(_TRANSACT_WRITE_SUFFIX):
                with keep_streams_across_rollback():
                    return list(self._app(environ, start_response))
            return list(self._app(environ, start_response))


@contextmanager
def keep_streams_across_rollback() -> Iterator[None]:
    """Run one DynamoDB transaction so that a rollback leaves every table's stream shard in place.

    moto's ``transact_write_items`` deep-copies each table it touches first and, when the
    transaction fails, puts the copies in place of the tables. The copies carry copies of the
    stream shards, while every shard iterator already handed out stays bound to the original
    shard, which no table writes to any more: ``GetRecords`` answers nothing, for ever. The original
    shard also holds records of the writes that were rolled back, whose sequence numbers the copy
    hands out again to later writes.

    After a rollback this truncates each original shard to the records it held before the
    transaction (exactly the copy's records) and attaches it to the table's copy, so open iterators
    keep reading every later write, and no consumer ever sees a rolled-back one. Re-acquiring
    iterators in the stream poller instead would repair only that consumer, and, resuming after a
    sequence number a rolled-back record held, could skip the write that reuses it.

    Callers hold the DynamoDB lock: nothing else may write to a table in between.
    """
    before = [
        (backend, name, table, table.stream_shard, len(table.stream_shard.items))
        for account in list(dynamodb_backends.values())
        for backend in list(account.values())
        for name, table in list(backend.tables.items())
        if table.stream_shard is not None
    ]
    try:
        yield
    finally:
        for backend, name, table, shard, length in before:
            restored = backend.tables.get(name)
            if restored is not None and restored is not table:
                del shard.items[length:]
                shard.table = restored
                restored.stream_shard = shard


class AwsServer:
    """moto's server on ``host:port`` (port 0: any free port) in a daemon thread; ``url`` is its
    endpoint. Use ``with AwsServer() as aws:`` or ``start()``/``stop()``."""

    def __init__(self, host: str = "127.0.0.1", port: int = 5000) -> None:
        self._host, self._port = host, port
        self._server: BaseWSGIServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """``http://host:port`` of the running server."""
        if self._server is None:
            raise RuntimeError("The AWS server is not started.")
        return f"http://{self._host}:{self._server.port}"

    def start(self) -> AwsServer:
        """Bind (``OSError`` when the port is in use) and serve in a daemon thread; returns ``self``."""
        if self._server is not None:
            return self
        # werkzeug logs every request at INFO through its own handler unless told otherwise.
        logging.getLogger("werkzeug").setLevel(logging.WARNING)
        app = SerializedDynamoDB(DomainDispatcherApplication(create_backend_app))
        # Bound here, not by werkzeug: it answers a taken port with sys.exit(1).
        with socket.create_server((self._host, self._port)) as listener:
            self._server = make_server(
                self._host,
                self._port,
                app,
                threaded=True,
                request_handler=MotoRequestHandler,
                fd=listener.fileno(),
            )
        self._thread = threading.Thread(target=self._server.serve_forever, name="aws-server", daemon=True)
        self._thread.start()
        log.info("aws server listening", extra={"url": self.url})
        return self

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> AwsServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
