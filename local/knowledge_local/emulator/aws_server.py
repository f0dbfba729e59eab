"""moto in server mode: DynamoDB, DynamoDB Streams and SQS (every API moto emulates) over HTTP on
one port, so any AWS client reaches them with ``endpoint_url`` as it would reach AWS.

DynamoDB requests are answered one at a time. DynamoDB applies every write and transaction
atomically; moto does not lock, so serializing the DynamoDB (and Streams) requests restores
DynamoDB's guarantees; other services are not serialized, so an SQS long poll never holds anyone up.

Four behaviours of moto are changed for the life of the process (``moto_patches``), because their
cost grows with everything ever written:

- every model object moto creates is no longer kept for moto's dashboard (``instance_tracking``);
- transactions roll back by journal instead of by copying whole tables (``transactions``);
- a query on a table's key reads its partition, not the whole table (``partition_queries``);
- stream records every reader has passed are dropped (``stream_retention``).

Two more cut a cost paid on every request: the answers of the item operations and of
``GetRecords`` are written as the JSON they already are, not walked by moto's generic serializer
(``json_answers``), and moto's list of its service folders is read once, not on each request
(``backend_names``). And moto tells the runtime when a message or a stream record arrives
(``arrivals``), so its pollers need not wait for their next poll.

With a journal attached (``attach_journal``, ``KNOWLEDGE_PERSIST``), every DynamoDB write that
succeeds (``PutItem``, ``UpdateItem``, ``DeleteItem``, ``BatchWriteItem``, ``TransactWriteItems``
and PartiQL statements) is handed to it, request body and all, inside the lock, so the journal's
order is the order of application, and its answer waits until the journal has it on disk (outside
the lock: writers waiting at once share one disk sync). ``replay`` applies such a request again,
under the same lock, without journaling it.

The server binds in ``start()``, in the caller's thread, so a port in use raises ``OSError`` there
(moto's own ``ThreadedMotoServer`` binds in its thread, and werkzeug exits the process instead).
"""

from __future__ import annotations

import io
import logging
import re
import socket
import threading
from collections.abc import Callable, Iterable
from types import TracebackType
from typing import Any, Protocol

from moto.dynamodb.models import dynamodb_backends
from moto.dynamodb.models.utilities import dynamo_json_dump
from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication,
    MotoRequestHandler,
    create_backend_app,
)
from werkzeug.serving import BaseWSGIServer, make_server
from werkzeug.test import EnvironBuilder

from knowledge_local.account import LOCAL_ACCESS_KEY, REGION
from knowledge_local.emulator.journal import Ticket
from knowledge_local.emulator.moto_patches import (
    arrivals,
    backend_names,
    json_answers,
    partition_queries,
    stream_retention,
    transactions,
)
from knowledge_local.emulator.moto_patches.instance_tracking import stop_tracking_instances

log = logging.getLogger(__name__)

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]
_SERIALIZED_TARGETS = ("DynamoDB_", "DynamoDBStreams_")
"""``X-Amz-Target`` prefixes of the DynamoDB and DynamoDB Streams JSON APIs."""
WRITE_OPERATIONS = frozenset(
    {
        "PutItem",
        "UpdateItem",
        "DeleteItem",
        "BatchWriteItem",
        "TransactWriteItems",
        "ExecuteStatement",
        "BatchExecuteStatement",
        "ExecuteTransaction",
    }
)
"""DynamoDB operations that may change items (PartiQL statements may, so they are kept too)."""
_REGION = re.compile(r"Credential=[^/]*/[^/]*/([^/]+)/")


class DynamoDBJournal(Protocol):
    """Where the successful DynamoDB writes go (``durable_state.DurableState``)."""

    def dynamodb_written(self, target: str, region: str, body: bytes) -> Ticket:
        """Journal a write just applied (called under the lock, in the order of application)."""

    def sync(self, ticket: Ticket) -> None:
        """Return once the write of ``ticket`` is on disk."""


class SerializedDynamoDB:
    """WSGI middleware: DynamoDB and Streams requests run (and their bodies are read) under one
    lock; successful writes go to the attached journal before they are answered."""

    def __init__(self, app: WsgiApp) -> None:
        self.app = app
        self.lock = threading.RLock()
        self.journal: DynamoDBJournal | None = None

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        target = str(environ.get("HTTP_X_AMZ_TARGET", ""))
        if not target.startswith(_SERIALIZED_TARGETS):
            return self.app(environ, start_response)
        journal = self.journal
        if journal is None or target.rpartition(".")[2] not in WRITE_OPERATIONS:
            with self.lock:
                # Consume the body inside the lock: a lazy iterable would run moto after release.
                return list(self.app(environ, start_response))
        statuses: list[str] = []

        def recording_start_response(status: str, *arguments: Any) -> Any:
            statuses.append(status)
            return start_response(status, *arguments)

        body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
        environ["wsgi.input"], environ["CONTENT_LENGTH"] = io.BytesIO(body), str(len(body))
        ticket = None
        with self.lock:
            answer = list(self.app(environ, recording_start_response))
            if statuses and statuses[-1].startswith("2"):
                region = _REGION.search(str(environ.get("HTTP_AUTHORIZATION", "")))
                ticket = journal.dynamodb_written(target, region.group(1) if region else REGION, body)
        if ticket is not None:
            journal.sync(ticket)  # the answer leaves only once the write is on disk
        return answer

    def replay(self, target: str, region: str, body: bytes) -> int:
        """Apply a journaled request again (not journaled); its HTTP status."""
        environ = EnvironBuilder(
            path="/",
            method="POST",
            data=body,
            headers=[
                ("X-Amz-Target", target),
                ("Content-Type", "application/x-amz-json-1.0"),
                (
                    "Authorization",
                    f"AWS4-HMAC-SHA256 Credential={LOCAL_ACCESS_KEY}/20260101/{region}"
                    "/dynamodb/aws4_request, SignedHeaders=host, Signature=0",
                ),
            ],
        ).get_environ()
        statuses: list[str] = []

        def record(status: str, *arguments: Any) -> Callable[[bytes], None]:
            statuses.append(status)
            return lambda data: None

        with self.lock:
            list(self.app(environ, record))
        return int(statuses[-1].split()[0]) if statuses else 500


class AwsServer:
    """moto's server on ``host:port`` (port 0: any free port) in a daemon thread; ``url`` is its
    endpoint. Use ``with AwsServer() as aws:`` or ``start()``/``stop()``."""

    def __init__(self, host: str = "127.0.0.1", port: int = 5000) -> None:
        self._host, self._port = host, port
        self._server: BaseWSGIServer | None = None
        self._thread: threading.Thread | None = None
        self._app: SerializedDynamoDB | None = None

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
        stop_tracking_instances()
        transactions.install()
        partition_queries.install()
        stream_retention.install()
        json_answers.install()
        backend_names.install()
        arrivals.install()
        app = self._app = SerializedDynamoDB(DomainDispatcherApplication(create_backend_app))
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

    def attach_journal(self, journal: DynamoDBJournal | None) -> None:
        """Journal every successful DynamoDB write from now on (``None``: no more)."""
        self._started().journal = journal

    def replay(self, target: str, region: str, body: bytes) -> int:
        """Apply a journaled DynamoDB request (``X-Amz-Target`` ``target``, ``region``, ``body``)
        again, not journaled; its HTTP status (2xx: applied)."""
        return self._started().replay(target, region, body)

    @property
    def serialized(self) -> threading.RLock:
        """The lock every DynamoDB request runs under: hold it to see the tables between two
        requests (``export_table`` takes it too)."""
        return self._started().lock

    def _started(self) -> SerializedDynamoDB:
        if self._app is None:
            raise RuntimeError("The AWS server is not started.")
        return self._app

    def export_table(self, table_name: str) -> list[str]:
        """Every item of the table ``table_name`` in DynamoDB's JSON (one string each, binary values
        base64), read from moto's memory between two requests; ``KeyError`` for no such table."""
        with self._started().lock:
            for account in list(dynamodb_backends.values()):
                for backend in list(account.values()):
                    table = backend.tables.get(table_name)
                    if table is not None:
                        return [dynamo_json_dump(item.to_json()["Attributes"]) for item in table.all_items()]
        raise KeyError(table_name)

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
