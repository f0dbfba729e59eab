"""A real OpenSearch node on this machine: the engine of ``SEARCH_BACKEND=opensearch`` for tests,
benchmarks and ``make run``, with no Docker and nothing downloaded outside Maven Central.

``tools/opensearch`` is a small Maven project: the OpenSearch server, the modules our mappings and
requests use (HTTP transport, ``analysis-common``, ``lang-painless``, ``reindex`` for
``_delete_by_query``) and the k-NN plugin, all at ``ENGINE_VERSION`` (the template's
``OpenSearch_2.19``), and a launcher (``knowledge.opensearch.LocalNode``) that runs one node with
them on the classpath. ``ensure_built`` runs ``mvn compile`` when the build is missing or older
than its sources; ``start_node`` starts a node as a child process (security plugin absent, HTTP on
``127.0.0.1`` at a free port, its data in a fresh folder) and waits until it answers and its
cluster is at least yellow; ``OpenSearchNode.stop`` stops it (SIGTERM, then SIGKILL after
``STOP_SECONDS``) and removes its folder. The node also stops by itself when the process that
started it dies (it watches its standard input, a pipe from this process).

``python -m knowledge_local.opensearch_node`` builds and serves a node until Ctrl-C
(``make opensearch``); ``... exec -- COMMAND`` runs ``COMMAND`` with ``OPENSEARCH_URL`` naming a
fresh node and stops the node when it ends, passing on its exit status (``make test``).

Errors: ``NodeError`` with a one-line reason (no Java 17 or newer, Maven missing or failing, a node
that exits or does not get healthy within its timeout, with the tail of its log).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

from knowledge_local.state import PROJECT_ROOT

ENGINE_VERSION = "2.19.1"
"""OpenSearch core; ``tools/opensearch/pom.xml`` pins it, and the k-NN plugin's ``2.19.1.0``."""
BUILD_DIR = PROJECT_ROOT / "tools" / "opensearch"
LAUNCHER = "knowledge.opensearch.LocalNode"
DEFAULT_HEAP = "1g"
"""Heap of one node (``-Xms`` = ``-Xmx``): SciFact's 11k chunks of 384 dimensions take ~20 MB of
vectors; 1 GB leaves the rest of a 24 GB, 2-core machine to the service and its tests."""
START_SECONDS = 120.0
STOP_SECONDS = 30.0
MIN_JAVA = 17
_STAMP = ".built"
_SOURCES = ("pom.xml", "src")

# The JVM options of OpenSearch's own distribution (config/jvm.options) that matter for one node
# started without its bootstrap: Netty without Unsafe tricks, no log4j lookups, the locale data the
# date formats were written for, and the heap on both bounds so it is never resized.
_JVM_OPTIONS = (
    "-XX:+UseG1GC",
    "-Djava.awt.headless=true",
    "-Dfile.encoding=UTF-8",
    "-Djna.nosys=true",
    "-XX:-OmitStackTraceInFastThrow",
    "-Dio.netty.noUnsafe=true",
    "-Dio.netty.noKeySetOptimization=true",
    "-Dio.netty.recycler.maxCapacityPerThread=0",
    "-Dlog4j.shutdownHookEnabled=false",
    "-Dlog4j2.disable.jmx=true",
    "-Dlog4j2.formatMsgNoLookups=true",
    "-Djava.locale.providers=SPI,COMPAT",
)

Progress = Callable[[str], None]


class NodeError(Exception):
    """The node cannot be built or started; the message says why and what to do."""


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def java_executable() -> str:
    """``$JAVA_HOME/bin/java`` or ``java`` on the path, checked to be Java ``MIN_JAVA`` or newer.
    Raises ``NodeError`` otherwise."""
    home = os.environ.get("JAVA_HOME")
    java = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    if not java or not Path(java).exists():
        raise NodeError(f"OpenSearch needs Java {MIN_JAVA} or newer: no java on PATH or in JAVA_HOME.")
    answer = subprocess.run([java, "-version"], capture_output=True, text=True, check=False)
    found = re.search(r'version "(\d+)', answer.stderr)
    if found is None or int(found.group(1)) < MIN_JAVA:
        raise NodeError(f"OpenSearch needs Java {MIN_JAVA} or newer; {java} is {answer.stderr.strip()!r}.")
    return java


def _sources_digest() -> str:
    """A digest of the build's sources, recorded by a successful build."""
    digest = hashlib.sha256()
    for name in _SOURCES:
        root = BUILD_DIR / name
        paths = sorted(p for p in root.rglob("*") if p.is_file()) if root.is_dir() else [root]
        for path in paths:
            digest.update(str(path.relative_to(BUILD_DIR)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


def classpath() -> str:
    """The launcher's classes and every jar the node runs on (``ensure_built`` made them)."""
    target = BUILD_DIR / "target"
    return f"{target / 'classes'}{os.pathsep}{target / 'lib' / '*'}"


def ensure_built(progress: Progress = _say) -> None:
    """Build ``tools/opensearch`` with Maven unless a build of the same sources is there.

    The first build downloads the server, modules and plugin (about 80 MB) into Maven's local
    repository; ``progress`` hears how many artifacts have arrived. Raises ``NodeError`` when Maven
    is missing or the build fails (with the end of its output).
    """
    stamp = BUILD_DIR / "target" / _STAMP
    digest = _sources_digest()
    if stamp.exists() and stamp.read_text().strip() == digest:
        return
    mvn = shutil.which("mvn")
    if mvn is None:
        raise NodeError("Building the OpenSearch node needs Maven (mvn) on PATH.")
    java_executable()
    progress(
        f"OpenSearch {ENGINE_VERSION}: building the node with Maven (tools/opensearch; the first "
        "build downloads about 80 MB from Maven Central)..."
    )
    started = time.monotonic()
    command = [mvn, "-B", "-f", str(BUILD_DIR / "pom.xml"), "compile"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert process.stdout is not None
    tail: list[str] = []
    downloaded = size = 0.0
    last = started
    for line in process.stdout:
        tail = [*tail[-39:], line.rstrip()]
        arrived = re.match(r"Downloaded from \S+: \S+ \(([\d.]+) (kB|MB|B)", line)
        if arrived:
            downloaded += 1
            size += float(arrived.group(1)) * {"B": 1e-6, "kB": 1e-3, "MB": 1.0}[arrived.group(2)]
        if time.monotonic() - last >= 5:
            last = time.monotonic()
            phase = re.match(r"\[INFO\] --- (\S+)", line)
            doing = f", now {phase.group(1)}" if phase else ""
            progress(
                f"  {time.monotonic() - started:.0f} s: {downloaded:.0f} artifacts downloaded "
                f"({size:.1f} MB){doing}"
            )
    if process.wait() != 0:
        shown = "\n".join(tail)
        raise NodeError(f"Building the OpenSearch node failed (mvn exit {process.returncode}):\n{shown}")
    stamp.write_text(digest + "\n")
    progress(
        f"OpenSearch {ENGINE_VERSION}: built in {time.monotonic() - started:.0f} s "
        f"({downloaded:.0f} artifacts downloaded, {size:.1f} MB)."
    )


@dataclass
class OpenSearchNode:
    """A running node: ``url`` (``http://127.0.0.1:<port>``), ``transport`` (``host:port`` of its
    transport layer, which other nodes join through), its ``home`` folder and log."""

    url: str
    transport: str
    home: Path
    process: subprocess.Popen[bytes]
    name: str
    started_seconds: float
    _log: Path = field(repr=False)

    @property
    def log(self) -> Path:
        return self._log

    def alive(self) -> bool:
        return self.process.poll() is None

    def kill(self) -> None:
        """Stop the node at once (SIGKILL), as a crash would; its folder stays for ``stop``."""
        if self.alive():
            self.process.kill()
            self.process.wait()

    def stop(self) -> None:
        """Stop the node (SIGTERM, then SIGKILL after ``STOP_SECONDS``) and remove its folder."""
        if self.alive():
            self.process.terminate()
            try:
                self.process.wait(timeout=STOP_SECONDS)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.process.stdin is not None:
            self.process.stdin.close()
        shutil.rmtree(self.home, ignore_errors=True)

    def __enter__(self) -> OpenSearchNode:
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()


def _log_tail(path: Path, lines: int = 25) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def _health(url: str, timeout: float) -> str | None:
    """The cluster's status (``green``, ``yellow``, ``red``) once it is at least yellow or after
    ``timeout`` seconds; None while the node does not answer."""
    query = f"{url}/_cluster/health?wait_for_status=yellow&timeout={max(1, int(timeout))}s"
    try:
        with urllib.request.urlopen(query, timeout=timeout + 5) as answer:
            return str(json.load(answer)["status"])
    except urllib.error.HTTPError as error:  # 408: not yellow yet; the body still has the status
        return str(json.load(error).get("status")) if error.code == 408 else None
    except (OSError, ValueError):
        return None


def claim_cluster(url: str, indexes: Sequence[str], timeout: float = 10.0) -> str:
    """Check that the cluster at ``url`` answers as OpenSearch 2.x, then delete ``indexes`` (those
    missing are ignored) so that the runtime rebuilds them from its table: chunks of an earlier run
    left there would otherwise be searched (and skew BM25's statistics) forever. The cluster's
    version. ``NodeError`` when it does not answer, is not OpenSearch 2.x, or refuses a delete."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as answer:
            root = json.load(answer)
        version = root["version"]
        number, distribution = str(version["number"]), str(version.get("distribution", ""))
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise NodeError(
            f"OpenSearch at OPENSEARCH_URL={url} does not answer ({error}); start one (make opensearch) "
            "or leave OPENSEARCH_URL unset and the runtime starts its own node."
        ) from None
    if distribution != "opensearch" or not number.startswith("2."):
        raise NodeError(
            f"OPENSEARCH_URL={url} answers as {distribution or 'elasticsearch'} {number}; "
            "the runtime needs OpenSearch 2.x."
        )
    for index in indexes:
        request = urllib.request.Request(f"{url}/{index}?ignore_unavailable=true", method="DELETE")
        try:
            urllib.request.urlopen(request, timeout=timeout).close()
        except (OSError, ValueError) as error:
            raise NodeError(f"OpenSearch at {url} refused to delete the index {index} ({error}).") from None
    return number


def start_node(
    *,
    name: str = "knowledge-local",
    cluster: str | None = None,
    heap: str = DEFAULT_HEAP,
    settings: Mapping[str, str] | None = None,
    progress: Progress = _say,
    timeout: float = START_SECONDS,
    parent: Path | None = None,
) -> OpenSearchNode:
    """Start one node (``ensure_built`` first) and wait until it answers with a yellow or green
    cluster.

    ``settings`` adds or replaces node settings (``key: value``): by default a single-node cluster
    (``discovery.type=single-node``) named ``cluster`` (a fresh name unless given), HTTP and transport
    on ``127.0.0.1`` at free ports, disk watermarks off (a full laptop disk must not turn the index
    read-only). The node's folder is a fresh one under ``parent`` (the system's temporary folder by
    default). Raises ``NodeError`` when it exits or is not healthy within ``timeout`` seconds; the
    folder is then removed.
    """
    ensure_built(progress)
    java = java_executable()
    home = Path(tempfile.mkdtemp(prefix=f"opensearch-{name}-", dir=parent))
    log = home / "node.log"
    node_settings = {
        "path.home": str(home),
        "path.data": str(home / "data"),
        "path.logs": str(home / "logs"),
        "node.name": name,
        "cluster.name": cluster or f"knowledge-{os.getpid()}-{home.name[-8:]}",
        "network.host": "127.0.0.1",
        "http.port": "0",
        "transport.port": "0",
        "discovery.type": "single-node",
        "cluster.routing.allocation.disk.threshold_enabled": "false",
        "action.destructive_requires_name": "true",
        **(settings or {}),
    }
    if "discovery.seed_hosts" in node_settings:
        del node_settings["discovery.type"]
    command = [
        java,
        f"-Xms{heap}",
        f"-Xmx{heap}",
        *_JVM_OPTIONS,
        f"-Djava.io.tmpdir={home / 'tmp'}",
        "-cp",
        classpath(),
        LAUNCHER,
        *(f"{key}={value}" for key, value in node_settings.items()),
    ]
    (home / "tmp").mkdir()
    started = time.monotonic()
    progress(f"OpenSearch {ENGINE_VERSION}: starting node {name} (heap {heap}, k-NN, log {log})...")
    with log.open("wb") as sink:
        process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=sink, stderr=subprocess.STDOUT, start_new_session=True
        )
    ready = home / "ready.json"
    last = started
    try:
        while not ready.exists():
            if process.poll() is not None:
                raise NodeError(
                    f"OpenSearch node {name} exited with status {process.returncode}:\n{_log_tail(log)}"
                )
            if time.monotonic() - started > timeout:
                raise NodeError(
                    f"OpenSearch node {name} did not start within {timeout:.0f} s:\n{_log_tail(log)}"
                )
            if time.monotonic() - last >= 5:
                last = time.monotonic()
                progress(f"  {last - started:.0f} s: waiting for the JVM to start the node")
            time.sleep(0.1)
        addresses = json.loads(ready.read_text())
        url = f"http://{addresses['http']}"
        while (status := _health(url, min(5.0, timeout))) not in ("yellow", "green"):
            if process.poll() is not None or time.monotonic() - started > timeout:
                raise NodeError(
                    f"OpenSearch node {name} answered but its cluster is {status or 'unreachable'} "
                    f"after {time.monotonic() - started:.0f} s:\n{_log_tail(log)}"
                )
            progress(
                f"  {time.monotonic() - started:.0f} s: waiting for cluster health yellow "
                f"(now {status or 'no answer'})"
            )
    except BaseException:
        _discard(process, home)
        raise
    seconds = time.monotonic() - started
    progress(f"OpenSearch {ENGINE_VERSION}: node {name} ready at {url} in {seconds:.1f} s.")
    return OpenSearchNode(
        url=url,
        transport=str(addresses["transport"]),
        home=home,
        process=process,
        name=name,
        started_seconds=seconds,
        _log=log,
    )


def _discard(process: subprocess.Popen[bytes], home: Path) -> None:
    if process.poll() is None:
        process.kill()
        process.wait()
    shutil.rmtree(home, ignore_errors=True)


@contextmanager
def running_node(**options: object) -> Iterator[OpenSearchNode]:
    """``start_node(**options)`` for the ``with`` block; stopped and removed after it."""
    node = start_node(**options)  # type: ignore[arg-type]
    try:
        yield node
    finally:
        node.stop()


def _raise_interrupt(signum: int, _frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def _stop_on_signals() -> None:
    """SIGINT and SIGTERM raise ``KeyboardInterrupt``, also where SIGINT came in ignored (a
    background job of a shell without job control)."""
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, _raise_interrupt)


def _serve(heap: str) -> int:
    with running_node(heap=heap) as node:
        print(
            f"OpenSearch {ENGINE_VERSION} with k-NN at {node.url} (Ctrl-C stops it and removes {node.home})",
            flush=True,
        )
        _stop_on_signals()
        try:
            while node.alive():
                time.sleep(0.5)
        except KeyboardInterrupt:
            print("\nStopping the node...", file=sys.stderr, flush=True)
            return 0
    print(f"The node exited:\n{_log_tail(node.log)}", file=sys.stderr)
    return 1


def _exec(command: Sequence[str], heap: str) -> int:
    if not command:
        raise NodeError("exec needs a command after --.")
    with running_node(heap=heap) as node:
        environment = {**os.environ, "OPENSEARCH_URL": node.url}
        child = subprocess.Popen(list(command), env=environment)
        _stop_on_signals()
        try:
            return child.wait()
        except KeyboardInterrupt:
            child.send_signal(signal.SIGINT)
            return child.wait()


def main(argv: list[str] | None = None) -> int:
    """``serve`` (the default), ``build`` or ``exec -- COMMAND``; exit status 1 on ``NodeError``."""
    parser = argparse.ArgumentParser(
        prog="python -m knowledge_local.opensearch_node",
        description=f"A local OpenSearch {ENGINE_VERSION} node with k-NN, built from tools/opensearch.",
    )
    parser.add_argument("action", nargs="?", choices=["serve", "build", "exec"], default="serve")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="exec: the command to run (after --)")
    parser.add_argument(
        "--heap",
        default=os.environ.get("OPENSEARCH_HEAP", DEFAULT_HEAP),
        help=f"the node's heap (default {DEFAULT_HEAP}, or OPENSEARCH_HEAP)",
    )
    arguments = parser.parse_args(argv)
    command = arguments.command[1:] if arguments.command[:1] == ["--"] else arguments.command
    try:
        if arguments.action == "build":
            ensure_built()
            return 0
        if arguments.action == "exec":
            return _exec(command, arguments.heap)
        return _serve(arguments.heap)
    except NodeError as error:
        print(f"Cannot run OpenSearch: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
