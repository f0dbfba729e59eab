"""The files a running local runtime leaves for its clients, in its state directory
(``.knowledge/`` at the project root unless ``KNOWLEDGE_STATE_DIR`` says otherwise):

- ``endpoints.json``: ``{"api_url", "aws_endpoint_url", "table_name", "ingest_queue_url",
  "ingest_dlq_url", "opensearch_url", "documents_bucket"}`` (``opensearch_url`` is null on the
  embedded index; ``documents_bucket`` is the S3 bucket on ``aws_endpoint_url`` whose object
  events reach the document queue);
- ``dev-token``: the dev token (``dev_token``: one per directory, reused across restarts);
- ``embeddings.sqlite3`` (and its ``-wal`` and ``-shm`` files): the embedding cache, kept across
  runs so restarts embed nothing twice;
- ``table.jsonl`` and ``journal-<generation>.log``: with ``KNOWLEDGE_PERSIST`` (the default), the
  tables and the ingest queues' messages: a snapshot and the write-ahead journal of every write
  since (``durable_state``);
- ``documents-bucket/``: with ``KNOWLEDGE_PERSIST``, the documents bucket's objects as of the last
  clean stop (``emulator.bucket_files``).

The directory is mode 0700 and every file in it 0600 (``make_private``; the runtime also runs
with umask 077), since they hold a token with every scope and every item and note.

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
PRIVATE_FILE_MODE = 0o600
PRIVATE_DIRECTORY_MODE = 0o700
PRIVATE_UMASK = 0o077
"""The runtime's umask: whatever it or its functions create is its owner's alone."""


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
    documents_bucket: str | None = None
    """The local S3 bucket data sources read; its object events reach the document queue."""


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
    """Write ``endpoints.json`` (mode 0600, replaced whole)."""
    return _write_private(directory / ENDPOINTS_FILE, json.dumps(asdict(endpoints), indent=2) + "\n")


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
    """Write ``token`` to ``dev-token``, readable by its owner only (mode 0600, replaced whole)."""
    return _write_private(directory / TOKEN_FILE, token + "\n")


def _write_private(path: Path, text: str) -> Path:
    """Replace ``path`` with ``text`` (UTF-8) at once: written to a mode-0600 file beside it, flushed
    to disk, then renamed over it, so a reader or a crash never sees half of it."""
    path.parent.mkdir(mode=PRIVATE_DIRECTORY_MODE, parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.partial")
    partial.unlink(missing_ok=True)
    descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE_MODE)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    partial.replace(path)
    return path


def make_private(directory: Path) -> None:
    """Make ``directory`` and everything under it its owner's alone: mode 0700 for folders, 0600 for
    files (links are left alone). The runtime calls it on its state directory at each start, so
    files an earlier version left readable by others (the embedding cache was) are closed too."""
    directory.chmod(PRIVATE_DIRECTORY_MODE)
    for root, folders, files in os.walk(directory):
        for name in folders:
            _chmod(Path(root) / name, PRIVATE_DIRECTORY_MODE)
        for name in files:
            _chmod(Path(root) / name, PRIVATE_FILE_MODE)


def _chmod(path: Path, mode: int) -> None:
    if not path.is_symlink():
        path.chmod(mode)


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
