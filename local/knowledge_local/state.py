"""The files a running local runtime leaves for its clients, in its state directory
(``.knowledge/`` at the project root unless ``KNOWLEDGE_STATE_DIR`` says otherwise):

- ``endpoints.json``: ``{"api_url", "aws_endpoint_url", "table_name", "ingest_queue_url",
  "ingest_dlq_url", "opensearch_url"}`` (``opensearch_url`` is null on the embedded index);
- ``dev-token``: the dev token (readable by its owner only);
- ``embeddings.sqlite3``: the embedding cache, kept across runs so restarts embed nothing twice;
- ``table.jsonl`` and ``journal-<generation>.log``: with ``KNOWLEDGE_PERSIST`` (the default), the
  tables and the ingest queues' messages: a snapshot and the write-ahead journal of every write
  since (``durable_state``).

One runtime owns a state directory at a time: ``running_instance`` tells whether the runtime that
wrote ``endpoints.json`` still answers, so a second one can refuse to start instead of taking over
the files the first one's clients use.
"""

from __future__ import annotations

import json
import os
import shlex
import urllib.request
from dataclasses import asdict, dataclass
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_STATE_DIR = PROJECT_ROOT / ".knowledge"
ENDPOINTS_FILE = "endpoints.json"
TOKEN_FILE = "dev-token"
EMBEDDING_CACHE_FILE = "embeddings.sqlite3"
HEALTH_PROBE_SECONDS = 5.0


class StateError(Exception):
    """A state file is missing or unreadable; the message says what to do."""


@dataclass(frozen=True)
class Endpoints:
    api_url: str
    aws_endpoint_url: str
    table_name: str
    ingest_queue_url: str | None
    ingest_dlq_url: str | None
    opensearch_url: str | None = None
    """The OpenSearch cluster the functions search (``SEARCH_BACKEND=opensearch``); None: the
    embedded index."""


def state_dir() -> Path:
    """``KNOWLEDGE_STATE_DIR``, or ``.knowledge`` at the project root."""
    configured = os.environ.get("KNOWLEDGE_STATE_DIR")
    return Path(configured).expanduser() if configured else DEFAULT_STATE_DIR


def display_path(path: Path) -> str:
    """``path`` relative to the working directory when it is under it, else as it is."""
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def state_dir_prefix(directory: Path) -> str:
    """``"KNOWLEDGE_STATE_DIR=<directory> "`` to put before a printed ``knowledge`` command so that
    it reaches the runtime of ``directory``; empty for the default directory."""
    if directory.resolve() == DEFAULT_STATE_DIR.resolve():
        return ""
    return f"KNOWLEDGE_STATE_DIR={shlex.quote(display_path(directory))} "


def write_endpoints(directory: Path, endpoints: Endpoints) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / ENDPOINTS_FILE
    path.write_text(json.dumps(asdict(endpoints), indent=2) + "\n", encoding="utf-8")
    return path


def read_endpoints(directory: Path) -> Endpoints:
    """The endpoints of the runtime that wrote ``directory``; ``StateError`` when there are none."""
    path = directory / ENDPOINTS_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return Endpoints(**{field: data.get(field) for field in Endpoints.__dataclass_fields__})
    except FileNotFoundError:
        raise StateError(f"{path} does not exist: start the local server with `make run`.") from None
    except (OSError, ValueError, TypeError) as error:
        raise StateError(
            f"{path} is unreadable ({error}): restart the local server with `make run`."
        ) from None


def running_instance(directory: Path, *, timeout: float = HEALTH_PROBE_SECONDS) -> Endpoints | None:
    """The endpoints in ``directory`` when their API answers ``GET /v1/health`` with 200 within
    ``timeout`` seconds; ``None`` when there are none, they are unreadable, or nothing answers (the
    files of a runtime that did not stop cleanly)."""
    try:
        endpoints = read_endpoints(directory)
    except StateError:
        return None
    # No proxy: the URL is a local runtime's, and a proxy would answer for it.
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(f"{endpoints.api_url.rstrip('/')}/v1/health", timeout=timeout) as response:
            return endpoints if response.status == 200 else None
    except (OSError, ValueError):
        return None


def write_token(directory: Path, token: str) -> Path:
    """Write ``token`` readable by its owner only."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / TOKEN_FILE
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(token + "\n")
    path.chmod(0o600)
    return path


def read_token(directory: Path) -> str:
    path = directory / TOKEN_FILE
    try:
        token = path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        raise StateError(f"{path} does not exist: start the local server with `make run`.") from None
    if not token:
        raise StateError(f"{path} is empty: restart the local server with `make run`.")
    return token


def remove_if_unchanged(path: Path, expected: str) -> None:
    """Delete ``path`` if it still holds ``expected`` (another runtime may have replaced it)."""
    try:
        if path.read_text(encoding="utf-8") == expected:
            path.unlink()
    except OSError:
        pass
