"""Search through the loss of a node: two OpenSearch nodes on this machine, one lost under load.

```sh
python -m bench.failover                      # 1,000 items (5,000 chunks), 4 clients, SIGKILL the non-manager
python -m bench.failover --lose manager       # lose the elected cluster manager instead
python -m bench.failover --fault freeze       # SIGSTOP instead of SIGKILL: a hung node, sockets left open
```

**The cluster.** Two nodes (``knowledge_local.opensearch_node``: two JVMs on 127.0.0.1, both
cluster-manager-eligible data nodes, both named in ``cluster.initial_cluster_manager_nodes``, each
seeded with both transport ports, which the bench picks below the kernel's ephemeral range so that
nothing else on the machine takes them before the nodes bind them). The chunk index is created
through ``OpenSearchIndex`` with ``--shards`` primaries and the replica count the product leaves to
the engine (one, OpenSearch's default, as on the production profile's domain), filled, and waited
for until green: each node then holds a copy of every shard.

**The corpus.** ``--items`` items of ``--tenants`` tenants, each with one passage (the lexical
leg's unit) and ``CHUNKS_PER_ITEM`` chunks with random unit vectors (the semantic leg's); a tenth
are private to another user, so the visibility filter hides something. Words come from a fixed
vocabulary with Zipf-like frequencies, so BM25 sees rare and common terms. ``--queries`` queries:
three words of a visible item's chunk and a vector at cosine about 0.7 from it, searched by a reader
of the item's tenant on both legs with ``k`` = ``CANDIDATE_DEPTH``, as the search service asks.

**The references.** Before the load, every query is answered on each node's copies alone
(``preference=_only_nodes``). A search of the load is then *identical* to a copy's answer when
every hit of both legs is, in order, with its score.

**The load.** ``--clients`` threads search in a closed loop, each with its own client as Lambda
environments have (the product's ``build_opensearch_client`` with a connection to each node, so
opensearch-py retries a request that cannot connect on the other node) and its own
``OpenSearchIndex``, readied once (``ensure_ready``) as a cold start does. After ``--before``
seconds one node is lost (``--lose``: by default the one that is not the elected cluster manager):
``--fault kill`` sends SIGKILL, as a crash does (the kernel closes its sockets, so its peers see
the connections drop at once); ``--fault freeze`` sends SIGSTOP, as a hung JVM or an unplugged host
looks (connections stay open and nothing answers). The load goes on for ``--after`` seconds while
a thread polls the survivor's cluster health every ``HEALTH_POLL_SECONDS``. Then a fresh writer (a
new client and ``OpenSearchIndex`` on the survivor, as a cold-started indexer builds them) readies
the index and upserts one item: whether the survivor still takes writes.

**The figures.** Phases: *before* (from ``WARMUP_SECONDS`` into the load to the fault),
*failover* (from the fault until the survivor reports one node, yellow, every primary active: the
lost primaries' replicas promoted), *after* (the rest); see ``bench.phases`` for how searches are
counted. Markdown tables on stdout (phases, the seconds around the fault, health changes), progress
on stderr, and with ``--json`` every second of the load. Both nodes are stopped and their folders
removed at the end, on errors and on Ctrl-C too.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import signal
import socket
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from pathlib import Path
from types import FrameType
from typing import Any
from urllib.parse import urlsplit

import numpy as np
import numpy.typing as npt
from opensearchpy.exceptions import ConnectionError as OpenSearchConnectionError
from opensearchpy.exceptions import ConnectionTimeout, TransportError

from bench.phases import (
    Health,
    Outcome,
    Sample,
    changes,
    classify,
    in_flight,
    last_before,
    per_second,
    recovered_at,
    summarise,
)
from knowledge.adapters.opensearch.engine import build_opensearch_client
from knowledge.adapters.opensearch.passages import OpenSearchIndex
from knowledge.domain.access.visibility import VisibilityFilter
from knowledge.domain.models import Principal, Scope
from knowledge.domain.retrieval.hits import (
    CANDIDATE_DEPTH,
    Chunk,
    ChunkHit,
    IndexedChunk,
    IndexedItem,
    IndexQuery,
    LegHits,
)
from knowledge_local.opensearch_node import NodeError, OpenSearchNode, ensure_built, start_node

REGION = "us-east-1"
INDEX = "knowledge-chunks"
MODEL_ID = "synthetic-unit-vectors"
DIMENSION = 384
CHUNKS_PER_ITEM = 5
WORDS_PER_CHUNK = 24
VOCABULARY = 3_000
PRIVATE_SHARE = 0.1
NODE_NAMES = ("failover-1", "failover-2")
PORT_RANGE = (20_000, 32_000)
"""Where the transport ports are picked: below Linux's default ephemeral range (32768-60999), so
neither an outgoing connection nor a ``bind`` to port 0 elsewhere on the machine takes one between
the pick and the node's bind."""
START_ATTEMPTS = 3
WARMUP_SECONDS = 3.0
HEALTH_POLL_SECONDS = 0.05
GREEN_SECONDS = 120

Answer = tuple[tuple[ChunkHit, ...], tuple[ChunkHit, ...]]
"""One search's hits: the lexical leg's, then the semantic leg's, best first."""


class Fault(StrEnum):
    """How the node is lost."""

    KILL = "kill"
    """SIGKILL: the process ends at once and the kernel closes its sockets."""
    FREEZE = "freeze"
    """SIGSTOP: the process stops answering with its sockets open (continued before cleanup)."""


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def failure(error: BaseException) -> str:
    """A short name for a failed request: ``timeout``, ``unreachable``, ``<status> <error type>``
    for an answer of the engine, else the exception's type; a domain error names its cause's."""
    if isinstance(error, ConnectionTimeout):
        return "timeout"
    if isinstance(error, OpenSearchConnectionError):
        return "unreachable"
    if isinstance(error, TransportError):
        return f"{error.status_code} {error.error}"
    if error.__cause__ is not None:
        return f"{type(error).__name__} ({failure(error.__cause__)})"
    return type(error).__name__


# --- the corpus and the queries ---------------------------------------------------------------


def _unit(vectors: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    unit: npt.NDArray[np.float64] = vectors / np.linalg.norm(vectors, axis=-1, keepdims=True)
    return unit


def vocabulary(rng: random.Random, size: int = VOCABULARY) -> list[str]:
    """``size`` distinct pronounceable words of two to four syllables."""
    syllables = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"]
    words: dict[str, None] = {}
    while len(words) < size:
        words["".join(rng.choice(syllables) for _ in range(rng.randint(2, 4)))] = None
    return list(words)


@dataclass(frozen=True)
class Corpus:
    """The items to index and the queries to search (a reader of one tenant each, both legs)."""

    items: list[IndexedItem]
    queries: list[IndexQuery] = field(repr=False)


def corpus(items: int, tenants: int, queries: int, seed: int) -> Corpus:
    """``items`` items spread over ``tenants`` tenants (``CHUNKS_PER_ITEM`` chunks of
    ``WORDS_PER_CHUNK`` words and random unit vectors, one passage of the whole text), and
    ``queries`` queries, each three words of a visible item and a unit vector at cosine about 0.7
    from one of its chunks."""
    rng = random.Random(seed)
    generator = np.random.default_rng(seed)
    words = vocabulary(rng)
    weights = [1 / (rank + 10) for rank in range(len(words))]
    built: list[IndexedItem] = []
    for number in range(items):
        tenant = f"tenant-{number % tenants}"
        private = rng.random() < PRIVATE_SHARE
        texts = [" ".join(rng.choices(words, weights, k=WORDS_PER_CHUNK)) for _ in range(CHUNKS_PER_ITEM)]
        content = " ".join(texts)
        vectors = _unit(generator.standard_normal((CHUNKS_PER_ITEM, DIMENSION)))
        chunks, start = [], 0
        for ordinal, (text, vector) in enumerate(zip(texts, vectors, strict=True)):
            chunks.append(
                IndexedChunk(
                    ordinal=ordinal, start=start, end=start + len(text), text=text, vector=vector.tolist()
                )
            )
            start += len(text) + 1
        built.append(
            IndexedItem(
                tenant_id=tenant,
                knowledge_base_id=f"kb_{tenant}",
                knowledge_item_id=f"ki_{number:06d}",
                knowledge_revision_id=f"kr_{number:06d}",
                version=1,
                owner_id="someone-else" if private else "author",
                scope=Scope.PRIVATE.value if private else Scope.TENANT.value,
                title=" ".join(rng.choices(words, weights, k=3)),
                chunks=chunks,
                passages=[Chunk(ordinal=0, start=0, end=len(content), text=content)],
            )
        )
    visible = [item for item in built if item.scope == Scope.TENANT.value]
    asked = []
    for _ in range(queries):
        item = rng.choice(visible)
        chunk = rng.choice(item.chunks)
        noise = _unit(generator.standard_normal(DIMENSION))
        vector = _unit(np.asarray(chunk.vector) + noise)
        reader = Principal(
            tenant_id=item.tenant_id, subject_id="reader", scopes=frozenset({"knowledge:read"})
        )
        asked.append(
            IndexQuery(
                text=" ".join(rng.sample(chunk.text.split(), 3)),
                vector=vector.tolist(),
                visibility=VisibilityFilter.for_principal(reader),
                k=CANDIDATE_DEPTH,
            )
        )
    return Corpus(built, asked)


def as_answer(hits: LegHits) -> Answer:
    return tuple(hits.lexical), tuple(hits.semantic)


# --- the cluster --------------------------------------------------------------------------------


def free_ports(count: int, rng: random.Random) -> list[int]:
    """``count`` distinct ports of ``PORT_RANGE`` that 127.0.0.1 can bind now."""
    ports: list[int] = []
    while len(ports) < count:
        port = rng.randrange(*PORT_RANGE)
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
        if port not in ports:
            ports.append(port)
    return ports


def _start_both(
    heap: str, parent: Path, ports: Sequence[int]
) -> tuple[list[OpenSearchNode], list[NodeError]]:
    """Start ``NODE_NAMES`` at ``ports`` in parallel: the nodes that started and the errors."""
    settings = {
        "discovery.seed_hosts": ",".join(f"127.0.0.1:{port}" for port in ports),
        "cluster.initial_cluster_manager_nodes": ",".join(NODE_NAMES),
    }
    started: dict[str, OpenSearchNode] = {}
    errors: list[NodeError] = []

    def start(name: str, port: int) -> None:
        try:
            started[name] = start_node(
                name=name,
                cluster=f"failover-{ports[0]}",
                heap=heap,
                settings={**settings, "transport.port": str(port)},
                parent=parent,
            )
        except NodeError as error:
            errors.append(error)

    threads = [
        threading.Thread(target=start, args=(name, port), daemon=True)
        for name, port in zip(NODE_NAMES, ports, strict=True)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return [started[name] for name in NODE_NAMES if name in started], errors


def start_cluster(heap: str, parent: Path, rng: random.Random) -> list[OpenSearchNode]:
    """The two nodes of one cluster, ``NODE_NAMES`` in order, started together (neither is healthy
    before the other joins). A start that fails (a port taken after all) is retried with new ports,
    ``START_ATTEMPTS`` in all. Raises ``NodeError`` after the last."""
    for attempt in range(1, START_ATTEMPTS + 1):
        nodes, errors = _start_both(heap, parent, free_ports(len(NODE_NAMES), rng))
        if not errors:
            return nodes
        for node in nodes:
            node.stop()
        if attempt == START_ATTEMPTS:
            raise errors[0]
        _say(f"starting the cluster failed ({str(errors[0]).splitlines()[0]}); retrying with new ports")
    raise AssertionError("unreachable")


def search_client(urls: Sequence[str]) -> Any:
    """The product's client (``build_opensearch_client``: its timeout, retries on connection
    errors, timeouts and 502/503/504, and connection class) with a connection to every one of
    ``urls``: opensearch-py marks a host it cannot reach dead (for 60 s, doubling) and retries the
    request on the next. On AWS a domain has one endpoint in front of its nodes, so the product's
    client names one host and this is the bench's own."""
    client = build_opensearch_client(urls[0], auth="none", region=REGION)
    hosts = [{"host": parts.hostname, "port": parts.port} for parts in map(urlsplit, urls)]
    client.transport.set_connections(hosts)
    return client


class OneCopy:
    """A client whose ``msearch`` (the one call ``OpenSearchIndex.search`` makes) reads only the
    shard copies on one node (``preference=_only_nodes:<node id>``): that copy's answers."""

    def __init__(self, client: Any, node_id: str) -> None:
        self._client = client
        self._preference = f"_only_nodes:{node_id}"

    def msearch(self, *, index: str, body: list[dict[str, Any]]) -> Any:
        lines = [
            {**line, "preference": self._preference} if n % 2 == 0 else line for n, line in enumerate(body)
        ]
        return self._client.msearch(index=index, body=lines)


@dataclass(frozen=True)
class Layout:
    """Who does what in the cluster: node ids by name, the elected manager's name, the names in the
    voting configuration, and each shard's primary and replica node names."""

    ids: dict[str, str]
    manager: str
    voters: list[str]
    shards: dict[int, dict[str, str]]


def layout(client: Any, index: str) -> Layout:
    """The cluster's ``Layout`` as ``client``'s node sees it, with the shards of ``index``."""
    nodes = client.cat.nodes(format="json", h="id,name", full_id="true")
    ids = {node["name"]: node["id"] for node in nodes}
    names = {node_id: name for name, node_id in ids.items()}
    manager = client.cat.cluster_manager(format="json")[0]["node"]
    state = client.cluster.state(metric="metadata", filter_path="metadata.cluster_coordination")
    voters = [names.get(v, v) for v in state["metadata"]["cluster_coordination"]["last_committed_config"]]
    shards: dict[int, dict[str, str]] = {}
    for row in client.cat.shards(index=index, format="json", h="shard,prirep,state,node"):
        role = "primary" if row["prirep"] == "p" else "replica"
        shards.setdefault(int(row["shard"]), {})[role] = f"{row['node']} ({row['state']})"
    return Layout(ids, manager, voters, shards)


def build_index(client: Any, data: Corpus, shards: int, progress: Callable[[str], None]) -> OpenSearchIndex:
    """The chunk index through the product's adapter, filled with ``data.items``, refreshed and
    green (every replica assigned and started)."""
    index = OpenSearchIndex(client, INDEX, shards=shards)
    index.ensure_ready(model_id=MODEL_ID, dimension=DIMENSION)
    settings = client.indices.get_settings(index=INDEX)[INDEX]["settings"]["index"]
    progress(
        f"index {INDEX}: {settings['number_of_shards']} primaries, {settings['number_of_replicas']} "
        "replica each (the engine's default; the product does not set it)"
    )
    started = time.monotonic()
    batch = 100
    for first in range(0, len(data.items), batch):
        index.upsert_many(data.items[first : first + batch])
        done = min(first + batch, len(data.items))
        progress(f"  indexed {done:,}/{len(data.items):,} items ({done * CHUNKS_PER_ITEM:,} chunks)")
    index.refresh()
    progress(f"  indexed in {time.monotonic() - started:.1f} s; waiting for green (replicas started)...")
    health = client.cluster.health(
        index=INDEX, wait_for_status="green", timeout=f"{GREEN_SECONDS}s", request_timeout=GREEN_SECONDS + 10
    )
    if health["status"] != "green":
        raise NodeError(f"the index did not turn green within {GREEN_SECONDS} s: {health}")
    return index


def tenant_shards(client: Any, tenants: int) -> dict[str, int]:
    """The shard each tenant's documents and searches are routed to."""
    routed = {}
    for number in range(tenants):
        tenant = f"tenant-{number}"
        answer = client.search_shards(index=INDEX, routing=tenant)
        routed[tenant] = int(answer["shards"][0][0]["shard"])
    return routed


def references(client: Any, layout_: Layout, queries: Sequence[IndexQuery]) -> dict[str, list[Answer]]:
    """Every query's answer on each node's copies, by node name."""
    found: dict[str, list[Answer]] = {}
    for name, node_id in layout_.ids.items():
        index = OpenSearchIndex(OneCopy(client, node_id), INDEX)
        found[name] = [as_answer(index.search(query)) for query in queries]
    return found


# --- the load and the health watch ---------------------------------------------------------------


class Load:
    """``clients`` threads searching ``queries`` in a closed loop until ``stop``; each answer is
    classified against the reference answers of the ``survivor`` and the ``lost`` node."""

    def __init__(
        self,
        urls: Sequence[str],
        queries: Sequence[IndexQuery],
        answers: dict[str, list[Answer]],
        survivor: str,
        lost: str,
        clients: int,
    ) -> None:
        self.clients = clients
        self.samples: list[Sample] = []
        self.errors: Counter[str] = Counter()
        self._stop = threading.Event()
        self._ready = threading.Barrier(clients + 1, timeout=120)
        self._queries = queries
        self._survivor = answers[survivor]
        self._lost = answers[lost]
        self._threads = [
            threading.Thread(target=self._run, args=(urls, offset), daemon=True) for offset in range(clients)
        ]

    def start(self) -> None:
        """Start the clients; return once each has readied its index."""
        for thread in self._threads:
            thread.start()
        self._ready.wait()

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join()

    def _run(self, urls: Sequence[str], offset: int) -> None:
        index = OpenSearchIndex(search_client(urls), INDEX)
        index.ensure_ready(model_id=MODEL_ID, dimension=DIMENSION)
        self._ready.wait()
        number = offset
        while not self._stop.is_set():
            position = number % len(self._queries)
            number += self.clients
            started = time.monotonic()
            try:
                answer = as_answer(index.search(self._queries[position]))
            except Exception as error:  # every failure is a figure of the benchmark
                ended = time.monotonic()
                self.samples.append(Sample(ended, ended - started, Outcome.FAILED))
                self.errors[failure(error)] += 1
                continue
            ended = time.monotonic()
            outcome = classify(answer, self._survivor[position], self._lost[position])
            self.samples.append(Sample(ended, ended - started, outcome))


class HealthWatch:
    """Polls ``url``'s ``_cluster/health`` every ``HEALTH_POLL_SECONDS`` until stopped (each poll
    waits at most a second for the cluster manager, and three for the answer)."""

    def __init__(self, url: str) -> None:
        self.polls: list[Health] = []
        self._client = build_opensearch_client(url, auth="none", region=REGION, max_retries=0)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.is_set():
            at = time.monotonic()
            try:
                answer = self._client.cluster.health(
                    timeout="1s", cluster_manager_timeout="1s", request_timeout=3
                )
            except Exception as error:  # no manager, a timeout: the poll's status says which
                self.polls.append(Health(at, failure(error)))
            else:
                self.polls.append(
                    Health(
                        at,
                        str(answer["status"]),
                        int(answer["number_of_nodes"]),
                        int(answer["active_primary_shards"]),
                        int(answer["unassigned_shards"]),
                    )
                )
            self._stop.wait(HEALTH_POLL_SECONDS)


def strike(node: OpenSearchNode, fault: Fault) -> None:
    """Lose ``node`` by ``fault``."""
    if fault is Fault.KILL:
        node.kill()
    else:
        node.process.send_signal(signal.SIGSTOP)


@dataclass(frozen=True)
class WriteProbe:
    """A fresh writer on the survivor after the fault: how ``ensure_ready`` and the upsert of one
    item went (``ok`` or ``failure``'s name) and how long each took in seconds (None: not run)."""

    ready: str
    ready_seconds: float
    upsert: str | None = None
    upsert_seconds: float | None = None

    def __str__(self) -> str:
        ready = f"ensure_ready {self.ready} in {self.ready_seconds:.2f} s"
        if self.upsert is None or self.upsert_seconds is None:
            return f"{ready}, so no upsert"
        return f"{ready}, upsert {self.upsert} in {self.upsert_seconds:.2f} s"


def probe_write(url: str, item: IndexedItem) -> WriteProbe:
    """Ready the index and upsert ``item`` through a new product client on ``url`` (its defaults:
    10 s per request, two retries)."""
    index = OpenSearchIndex(build_opensearch_client(url, auth="none", region=REGION), INDEX)
    started = time.monotonic()
    try:
        index.ensure_ready(model_id=MODEL_ID, dimension=DIMENSION)
    except Exception as error:  # the probe's answer, whatever it is
        return WriteProbe(failure(error), time.monotonic() - started)
    ready = time.monotonic() - started
    started = time.monotonic()
    try:
        index.upsert(item)
    except Exception as error:  # the probe's answer, whatever it is
        return WriteProbe("ok", ready, failure(error), time.monotonic() - started)
    return WriteProbe("ok", ready, "ok", time.monotonic() - started)


# --- the run -------------------------------------------------------------------------------------


@dataclass
class Run:
    """What one run measured; times in seconds on ``time.monotonic``'s clock."""

    arguments: dict[str, Any]
    layout: Layout
    lost: str
    survivor: str
    routing: dict[str, int]
    copies_differ: int
    load_started: float
    struck: float
    recovered: float | None
    ended: float
    samples: list[Sample]
    polls: list[Health]
    errors: dict[str, int]
    probe: WriteProbe
    shards_after: dict[int, dict[str, str]] | None = None


def _rate(samples: Sequence[Sample], since: float, until: float) -> str:
    recent = [sample for sample in samples if since <= sample.ended < until]
    failed = sum(sample.outcome is Outcome.FAILED for sample in recent)
    seconds = max(until - since, 1e-9)
    return f"{(len(recent) - failed) / seconds:.1f} answered/s, {failed / seconds:.1f} failed/s"


def _keep_loading(
    seconds: float, load: Load, watch: HealthWatch, origin: float, doing: Callable[[], str]
) -> None:
    """Wait ``seconds`` while the load runs, printing every two seconds its rates, the survivor's
    health and what the run waits for (``doing``)."""
    deadline = time.monotonic() + seconds
    last = time.monotonic()
    while (now := time.monotonic()) < deadline:
        time.sleep(min(0.25, deadline - now))
        if now - last >= 2:
            poll = watch.polls[-1] if watch.polls else None
            health = f"health {poll.status}, {poll.nodes} node(s)" if poll else "no health poll yet"
            _say(f"{now - origin:6.1f} s: {_rate(load.samples, last, now)}; {health}; {doing()}")
            last = now


def _drive(
    load: Load, watch: HealthWatch, lost: OpenSearchNode, arguments: argparse.Namespace
) -> tuple[float, float, float]:
    """Load for ``--before`` seconds, lose ``lost`` by ``--fault``, load for ``--after`` more;
    return when the load started, the fault and the end."""
    before, after, shards, fault = arguments.before, arguments.after, arguments.shards, arguments.fault
    watch.start()
    load.start()
    origin = time.monotonic()
    _say(f"[before] {load.clients} clients searching; {fault} {lost.name} in {before:.0f} s")
    _keep_loading(before, load, watch, origin, lambda: f"[before] waiting to {fault} {lost.name}")
    struck = time.monotonic()
    strike(lost, fault)
    _say(f"[{fault}] {lost.name} (pid {lost.process.pid}) at {struck - origin:.1f} s")

    def doing() -> str:
        recovered = recovered_at(watch.polls, struck, shards)
        if recovered is None:
            return f"[failover] waiting for one node, yellow, {shards} primaries active"
        return (
            f"[after] recovered {recovered - struck:.2f} s after the fault; load until {after:.0f} s after it"
        )

    _keep_loading(after, load, watch, origin, doing)
    load.stop()
    watch.stop()
    return origin, struck, time.monotonic()


def measure(arguments: argparse.Namespace, parent: Path, nodes: list[OpenSearchNode]) -> Run:
    """One run (see the module docs); the nodes are appended to ``nodes`` once started, for the
    caller to stop."""
    ensure_built(_say)
    data = corpus(arguments.items + 1, arguments.tenants, arguments.queries, arguments.seed)
    probe_item, data = data.items[-1], Corpus(data.items[:-1], data.queries)
    _say(f"cluster: starting {len(NODE_NAMES)} nodes (heap {arguments.heap} each)...")
    nodes += start_cluster(arguments.heap, parent, random.Random(arguments.seed))
    urls = [node.url for node in nodes]
    client = search_client(urls)
    build_index(client, data, arguments.shards, _say)
    before = layout(client, INDEX)
    _say(f"cluster: manager {before.manager}, voting configuration {before.voters}, shards {before.shards}")
    lost_name = (
        before.manager if arguments.lose == "manager" else next(n for n in NODE_NAMES if n != before.manager)
    )
    lost = next(node for node in nodes if node.name == lost_name)
    survivor = next(node for node in nodes if node.name != lost_name)
    routing = tenant_shards(client, arguments.tenants)
    _say(f"tenants by shard: {routing}; reference answers on each node's copies...")
    answers = references(client, before, data.queries)
    differ = sum(a != b for a, b in zip(answers[lost.name], answers[survivor.name], strict=True))
    _say(f"  the two copies answer {len(data.queries) - differ}/{len(data.queries)} queries identically")
    load = Load(urls, data.queries, answers, survivor.name, lost.name, arguments.clients)
    watch = HealthWatch(survivor.url)
    origin, struck, ended = _drive(load, watch, lost, arguments)
    recovered = recovered_at(watch.polls, struck, arguments.shards)
    _say("a fresh writer on the survivor: ensure_ready, then one upsert...")
    probe = probe_write(survivor.url, probe_item)
    _say(f"  {probe}")
    shards_after = None
    if recovered is not None:
        shards_after = layout(build_opensearch_client(survivor.url, auth="none", region=REGION), INDEX).shards
    return Run(
        arguments=vars(arguments),
        layout=before,
        lost=lost.name,
        survivor=survivor.name,
        routing=routing,
        copies_differ=differ,
        load_started=origin,
        struck=struck,
        recovered=recovered,
        ended=ended,
        samples=load.samples,
        polls=watch.polls,
        errors=dict(load.errors),
        probe=probe,
        shards_after=shards_after,
    )


# --- the report ----------------------------------------------------------------------------------


def _ms(value: float | None) -> str:
    return "–" if value is None else f"{value:.0f}"


def phases(run: Run) -> list[tuple[str, float, float]]:
    """The run's phases: before (after the warm-up), failover (fault to recovery), after."""
    start = run.load_started + WARMUP_SECONDS
    if run.recovered is None:
        return [("before", start, run.struck), ("after the fault (no recovery)", run.struck, run.ended)]
    return [
        ("before", start, run.struck),
        ("failover", run.struck, run.recovered),
        ("after", run.recovered, run.ended),
    ]


def _conditions(run: Run) -> str:
    arguments, queries = run.arguments, run.arguments["queries"]
    role = "the elected manager" if run.lost == run.layout.manager else "not the manager"
    running, failed = in_flight(run.samples, run.struck)
    return (
        f"{arguments['items'] * CHUNKS_PER_ITEM:,} chunks in {arguments['shards']} shards with 1 replica, "
        f"{arguments['tenants']} tenants; {arguments['clients']} clients, {queries} queries (both legs, "
        f"k = {CANDIDATE_DEPTH}); {arguments['fault']} {run.lost} ({role}); voting configuration "
        f"{run.layout.voters}; the two copies answer {queries - run.copies_differ}/{queries} queries "
        f"identically; {running} searches in flight at the fault, {failed} of them failed."
    )


def _phase_table(run: Run) -> list[str]:
    lines = [
        "| phase | seconds | answered/s | failed/s | p50 ms | p99 ms | max ms | longest without an answer, s "
        "| identical to the survivor's copy | to the lost copy only | to neither |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in summarise(run.samples, phases(run)):
        lines.append(
            f"| {row.name} | {row.seconds:.2f} | {row.answered_per_second:.1f} | {row.failed_per_second:.1f} "
            f"| {_ms(row.p50_ms)} | {_ms(row.p99_ms)} | {_ms(row.max_ms)} | {row.longest_gap:.2f} "
            f"| {row.same}/{row.answered} | {row.other_copy} | {row.different} |"
        )
    return lines


def _health_table(run: Run) -> list[str]:
    lines = [
        "| health at, s after the fault | status | nodes | active primaries | unassigned |",
        "|---|---|---|---|---|",
    ]
    for poll in changes([poll for poll in run.polls if poll.at >= run.struck - 1]):
        counts = f"{poll.nodes} | {poll.active_primaries} | {poll.unassigned}"
        lines.append(f"| {poll.at - run.struck:+.2f} | {poll.status} | {counts} |")
    return lines


def report(run: Run) -> str:
    """The run as Markdown: conditions, one row per phase, the seconds around the fault, the
    health changes, the write probe."""
    lines = [_conditions(run), "", *_phase_table(run), ""]
    if run.recovered is None:
        lines.append("Recovered (one node, yellow, every primary active): never.")
    else:
        previous = last_before(run.polls, run.recovered)
        seen = "" if previous is None else f"; the poll before, at {previous.at - run.struck:+.2f} s, did not"
        lines.append(
            f"Recovered (one node, yellow, every primary active): seen by the poll sent "
            f"{run.recovered - run.struck:+.2f} s after the fault{seen}."
        )
    last = 12 if run.recovered is None else max(12, int(np.ceil(run.recovered - run.struck)) + 3)
    lines += ["", "| second after the fault | answered | failed | slowest ms |", "|---|---|---|---|"]
    for second in per_second(run.samples, run.struck, -3, last):
        lines.append(f"| {second.second:+d} | {second.answered} | {second.failed} | {_ms(second.max_ms)} |")
    lines += ["", *_health_table(run), ""]
    if run.errors:
        lines.append(f"Failed searches by cause: {run.errors}.")
    lines.append(f"A fresh writer on the survivor afterwards: {run.probe}.")
    if run.shards_after is not None:
        lines.append(f"Shards before: {run.layout.shards}; after: {run.shards_after}.")
    return "\n".join(lines)


def as_json(run: Run) -> dict[str, Any]:
    """The figures of ``report`` with every second of the load and every health change."""
    origin = run.struck
    seconds = per_second(
        run.samples, origin, int(np.floor(run.load_started - origin)), int(np.ceil(run.ended - origin))
    )
    return {
        "arguments": {key: str(value) for key, value in run.arguments.items()},
        "layout": asdict(run.layout),
        "lost": run.lost,
        "survivor": run.survivor,
        "routing": run.routing,
        "copies_differ": run.copies_differ,
        "in_flight_at_fault": in_flight(run.samples, run.struck),
        "recovered_after_fault_seconds": None if run.recovered is None else run.recovered - origin,
        "phases": [
            {
                **asdict(row),
                "seconds": row.seconds,
                "answered_per_second": row.answered_per_second,
                "failed_per_second": row.failed_per_second,
            }
            for row in summarise(run.samples, phases(run))
        ],
        "seconds": [asdict(row) for row in seconds],
        "health": [{**asdict(poll), "at": poll.at - origin} for poll in changes(run.polls)],
        "errors": run.errors,
        "write_probe": asdict(run.probe),
        "shards_after": run.shards_after,
    }


def _raise_interrupt(signum: int, _frame: FrameType | None) -> None:
    raise KeyboardInterrupt


@contextmanager
def _cleaned(parent: Path, nodes: list[OpenSearchNode]) -> Iterator[None]:
    """Stop ``nodes`` (continuing a frozen one first) and remove ``parent`` when the block ends."""
    try:
        yield
    finally:
        for node in nodes:
            if node.alive():
                node.process.send_signal(signal.SIGCONT)
            node.stop()
        shutil.rmtree(parent, ignore_errors=True)


def main(argv: Sequence[str] | None = None) -> int:
    """Run once and print the report; 1 when the cluster cannot start, 130 on Ctrl-C or SIGTERM."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--items", type=int, default=1_000, help=f"items of {CHUNKS_PER_ITEM} chunks each")
    parser.add_argument("--tenants", type=int, default=8)
    parser.add_argument("--shards", type=int, default=2, help="primaries of the chunk index (1 replica each)")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--clients", type=int, default=4, help="threads searching in a closed loop")
    parser.add_argument("--before", type=float, default=30.0, help="seconds of load before the fault")
    parser.add_argument("--after", type=float, default=70.0, help="seconds of load after the fault")
    parser.add_argument("--lose", choices=["non-manager", "manager"], default="non-manager")
    parser.add_argument("--fault", type=Fault, choices=list(Fault), default=Fault.KILL)
    parser.add_argument("--heap", default="512m", help="each node's heap")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    arguments = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, _raise_interrupt)
    parent = Path(tempfile.mkdtemp(prefix="bench-failover-"))
    nodes: list[OpenSearchNode] = []
    try:
        with _cleaned(parent, nodes):
            run = measure(arguments, parent, nodes)
    except NodeError as error:
        _say(f"Cannot run the cluster: {error}")
        return 1
    except KeyboardInterrupt:
        _say("interrupted; the nodes are stopped and their folders removed")
        return 130
    print(report(run))
    if arguments.json is not None:
        arguments.json.write_text(json.dumps(as_json(run), indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
