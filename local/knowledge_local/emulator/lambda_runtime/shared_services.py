"""The runtime's search indexes and embedder, shared with the functions' execution environments.

On AWS every function reaches the same OpenSearch domain and the same Bedrock model over the
network. Locally the runtime process holds the one ``EmbeddedIndex`` and the one
``EmbeddedNoteIndex`` (what the indexer writes is what search reads) and the one offline model
with its embedding cache, and serves them to the
environments (``invoker``) with ``multiprocessing.managers`` over a Unix socket, authenticated with
a random key. An environment's container (``knowledge.bootstrap``) gets proxies in place of the
indexes and the embedder (``install_container``, the ``setup`` of every environment), so the
functions run unchanged. Each connection is served by a thread of the runtime process; the indexes
and the embedder are thread-safe.

With ``SEARCH_BACKEND=opensearch`` the indexes are the OpenSearch cluster's, which every
environment reaches over HTTP as a Lambda function would: ``SharedServices(share_indexes=False)``
serves the embedder alone, and each environment's container builds its own OpenSearch adapters from
its settings.

``SharedServices()`` picks the socket and key at once, so the ``setup`` of environments is known
before the index exists; ``start(index, note_index, embedder)`` serves them, and must come before
the first environment starts.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import tempfile
import threading
from collections.abc import Mapping, Sequence
from multiprocessing.connection import Client
from multiprocessing.managers import BaseManager, Server
from pathlib import Path
from typing import Any

from knowledge.ports import Embedder, NoteIndex, SearchIndex, VectorCache
from knowledge_local.emulator.lambda_runtime.worker import Setup

SOCKET_NAME = "services.sock"


class _Services(BaseManager):
    """What environments connect to: ``index()``, ``note_index()`` and ``embedder()`` proxies."""


_Services.register("index")
_Services.register("note_index")
_Services.register("note_history_index")
_Services.register("history_index")
_Services.register("embedder")


class _EmbeddingService:
    """The runtime's embedder as methods: proxies expose methods, not properties."""

    def __init__(self, embedder: Embedder) -> None:
        self._embedder = embedder

    def model(self) -> tuple[str, int]:
        """``(model_id, dimension)``."""
        return self._embedder.model_id, self._embedder.dimension

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return self._embedder.embed(texts)

    def forget(self, texts: Sequence[str]) -> None:
        self._embedder.forget(texts)

    def cached(self, texts: Sequence[str]) -> dict[str, list[float]]:
        """The cached vectors of ``texts`` by cache key (none without a cache)."""
        return self._embedder.cached(texts) if isinstance(self._embedder, VectorCache) else {}

    def keep(self, vectors: Mapping[str, list[float]]) -> int:
        """Store ``vectors`` in the cache; how many were stored (0 without a cache)."""
        return self._embedder.keep(vectors) if isinstance(self._embedder, VectorCache) else 0


class RemoteEmbedder:
    """``Embedder`` and ``VectorCache`` over a proxy of the runtime's ``_EmbeddingService``: an
    export from an environment reads the runtime's embedding cache, an import fills it."""

    def __init__(self, proxy: Any) -> None:
        self._proxy = proxy
        model: tuple[str, int] = proxy.model()
        self._model_id, self._dimension = model

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dimension(self) -> int:
        return self._dimension

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        vectors: list[list[float]] = self._proxy.embed(list(texts))
        return vectors

    def forget(self, texts: Sequence[str]) -> None:
        self._proxy.forget(list(texts))

    def cached(self, texts: Sequence[str]) -> dict[str, list[float]]:
        vectors: dict[str, list[float]] = self._proxy.cached(list(texts))
        return vectors

    def keep(self, vectors: Mapping[str, list[float]]) -> int:
        kept: int = self._proxy.keep(dict(vectors))
        return kept


def install_container(address: str, authkey: bytes, share_indexes: bool = True) -> None:
    """In an environment: install the container of its settings with the runtime's embedder and,
    when ``share_indexes``, its indexes (``SharedServices.setup``); otherwise the container builds
    its indexes from its settings."""
    from knowledge.bootstrap import build_container, use_container
    from knowledge.settings import get_settings

    services = _Services(address=address, authkey=authkey)
    services.connect()
    index: Any = services.index() if share_indexes else None  # type: ignore[attr-defined]
    note_index: Any = services.note_index() if share_indexes else None  # type: ignore[attr-defined]
    history: Any = services.note_history_index() if share_indexes else None  # type: ignore[attr-defined]
    knowledge_history: Any = services.history_index() if share_indexes else None  # type: ignore[attr-defined]
    embedder = RemoteEmbedder(services.embedder())  # type: ignore[attr-defined]
    use_container(
        build_container(
            get_settings(),
            index=index,
            note_index=note_index,
            embedder=embedder,
            note_history_index=history,
            history_index=knowledge_history,
        )
    )


class SharedServices:
    """Serves the indexes (unless ``share_indexes`` is false) and an embedder to execution
    environments over a socket in a private temporary folder; ``setup`` connects an environment to
    them."""

    def __init__(self, *, share_indexes: bool = True) -> None:
        self._directory = Path(tempfile.mkdtemp(prefix="knowledge-"))
        self._address = str(self._directory / SOCKET_NAME)
        self._authkey = os.urandom(32)
        self.setup: Setup = functools.partial(install_container, self._address, self._authkey, share_indexes)
        self._server: Server | None = None
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def start(
        self,
        index: SearchIndex,
        note_index: NoteIndex,
        embedder: Embedder,
        note_history_index: NoteIndex | None = None,
        history_index: SearchIndex | None = None,
    ) -> None:
        """Listen and serve ``index``, ``note_index`` (and ``note_history_index``, ``history_index``)
        and ``embedder`` in a daemon thread."""
        registry: type[BaseManager] = type("_Served", (BaseManager,), {})
        registry.register("index", callable=lambda: index)
        registry.register("note_index", callable=lambda: note_index)
        registry.register("note_history_index", callable=lambda: note_history_index)
        registry.register("history_index", callable=lambda: history_index)
        service = _EmbeddingService(embedder)
        registry.register("embedder", callable=lambda: service)
        server = registry(address=self._address, authkey=self._authkey).get_server()
        # Server.serve_client reads stop_event, which only serve_forever would create; its own
        # accept loop spins on a closed listener, so connections are accepted here instead.
        server.stop_event = threading.Event()  # type: ignore[attr-defined]
        self._server = server
        self._thread = threading.Thread(target=self._accept, name="shared-services", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop serving and remove the socket's folder; safe to call at any point."""
        server, self._server = self._server, None
        if server is None:
            shutil.rmtree(self._directory, ignore_errors=True)
            return
        self._stopping.set()
        # Wake the accept loop up so that it sees it is stopping (the handshake comes after accept).
        with contextlib.suppress(OSError):
            Client(self._address).close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        server.stop_event.set()  # type: ignore[attr-defined]
        server.listener.close()  # type: ignore[attr-defined]
        shutil.rmtree(self._directory, ignore_errors=True)

    def _accept(self) -> None:
        server = self._server
        assert server is not None
        while not self._stopping.is_set():
            try:
                connection = server.listener.accept()  # type: ignore[attr-defined]
            except OSError:
                continue
            if self._stopping.is_set():
                connection.close()
                return
            threading.Thread(target=server.handle_request, args=(connection,), daemon=True).start()
