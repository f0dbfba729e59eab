"""The local stack of a SAM template: moto, the template's tables and queues, its stream and queue
event sources polled into the real handlers, and its HTTP API, all in this process.

``LocalStack(settings).start()`` starts, in order:

1. moto's server on ``127.0.0.1:$AWS_PORT`` (DynamoDB, DynamoDB Streams, SQS; ``aws_server``), and
   a listening socket on ``127.0.0.1:$PORT`` for the HTTP API: nothing is written to the state
   directory before both ports are held, so a taken port leaves no files behind;
2. the template's tables and queues in moto (``resources``, ``provisioning``);
3. the template's event sources: the table's stream polled into the indexer, the ingest queue
   into its consumer and the index work queue into the index worker, as Lambda would invoke them
   (``stream_poller``, ``queue_poller``);
4. the HTTP API on that socket (``gateway``): every route of the template, behind its authorizer,
   served by the real handlers.

Meanwhile the offline embedding model loads on a thread of its own. ``timings`` holds the seconds
of each phase (``startup.StartTimings``), which ``make run`` prints once ready.

Every function runs in execution environments of its own, processes that handle one invocation at
a time (``invoker``), as on Lambda. This process holds the embedded search index and the offline
embedder and serves them to every environment (``shared_services``), so what the indexer writes is
what search reads. With ``SEARCH_BACKEND=opensearch`` the indexes are an OpenSearch cluster's
instead, which every environment reaches over HTTP: the one at ``OPENSEARCH_URL``, or a local node
(``opensearch_node``) that ``start`` starts before anything else and ``stop`` stops last.
Functions' settings come from the process environment:
``config.function_environment`` before anything of ``knowledge`` is imported, the endpoints, table
and queue once they exist. ``dev_token`` and ``seed`` prepare a stack for use; ``stop``
ends everything. With ``KNOWLEDGE_PERSIST`` (the default) the tables and the ingest queues are
kept in the state directory, every write on disk before it is answered (``durable_state``:
restored before the pollers start, indexed before the API serves, compacted on stop); with
``KNOWLEDGE_PERSIST=false`` they live in memory only. The embedding cache survives a restart
either way.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import shlex
import shutil
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from knowledge.adapters.dynamodb.backfill import backfill_archived_item_listing, backfill_note_listing
from knowledge.bootstrap import get_container, use_container
from knowledge.ports import Embedder
from knowledge.settings import get_settings
from knowledge_local.account import aws_client
from knowledge_local.cli import dev_token
from knowledge_local.cli.client import KnowledgeClient
from knowledge_local.cli.dev_token import DevToken
from knowledge_local.cli.documents import DocumentError, SkippedFile, SourceDocument, collect_documents
from knowledge_local.cli.ingestion import IngestSummary, ingest, wait_for_index
from knowledge_local.config import (
    DEFAULT_AWS_PORT,
    DEFAULT_OPENSEARCH_INDEX,
    DEFAULT_OPENSEARCH_NOTES_INDEX,
    DEFAULT_PORT,
    RuntimeSettings,
)
from knowledge_local.emulator import bucket_files, snapshot
from knowledge_local.emulator.api_gateway.address_throttle import AddressThrottle
from knowledge_local.emulator.api_gateway.gateway import Gateway
from knowledge_local.emulator.aws_server import AwsServer
from knowledge_local.emulator.bucket_files import BUNDLES_FOLDER
from knowledge_local.emulator.durable_state import DurableState, Restored
from knowledge_local.emulator.lambda_runtime.invoker import InvocationError, Invoker
from knowledge_local.emulator.lambda_runtime.shared_services import SharedServices
from knowledge_local.emulator.moto_patches import arrivals
from knowledge_local.emulator.pollers.poller import Poller
from knowledge_local.emulator.pollers.queue_poller import QueuePoller, pollers_for
from knowledge_local.emulator.pollers.stream_poller import StreamPoller
from knowledge_local.emulator.provisioning import (
    BUNDLES_BUCKET,
    DOCUMENTS_BUCKET,
    Provisioned,
    notify_queue,
    provision,
    provision_bucket,
)
from knowledge_local.emulator.template.resources import EventSourceSpec, StackSpec, load_stack
from knowledge_local.emulator.template.routes import FunctionSpec
from knowledge_local.opensearch_node import OpenSearchNode, claim_cluster, start_node
from knowledge_local.startup import StartTimings
from knowledge_local.state import (
    DEFAULT_STATE_DIR,
    ENDPOINTS_FILE,
    PROJECT_ROOT,
    TOKEN_FILE,
    Endpoints,
    display_path,
    make_private,
    remove_if_unchanged,
    running_instance,
    write_endpoints,
)

KNOWLEDGE_TABLE = "KnowledgeTable"
INDEX_WORK_QUEUE = "IndexWorkQueue"
"""The queue the stream consumer sends index work to (``INDEX_WORK_QUEUE_URL`` of the functions)."""
DOCUMENT_QUEUE = "DocumentQueue"
"""The queue of sync work and the local bucket's S3 events (``DOCUMENT_QUEUE_URL`` of the functions)."""
DRAIN_SECONDS = 2.0
"""How long the requests in flight may take to be answered when the stack stops."""
INVOCATION_STOP_SECONDS = 0.5
"""How long running invocations (the event sources' ones included) may then take to finish
before their environments are ended: stopping takes a few seconds, never more than five."""
_ORDINALS = ("second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth")

log = logging.getLogger(__name__)


class PortInUseError(OSError):
    """A port the runtime needs is taken; the message names the variable that moves it."""


class StateDirectoryError(RuntimeError):
    """The state directory cannot be created; the message names it and why."""


class InstanceRunningError(RuntimeError):
    """Another runtime still serves from the same state directory; the message names its API URL
    and how to stop it or start this one elsewhere."""


@dataclass(frozen=True)
class SeedPlan:
    """What the runtime ingests on start: ``documents`` into the base ``base_name``; ``skipped``
    are the files of ``origin`` left out (``documents`` module)."""

    base_name: str
    documents: list[SourceDocument]
    origin: str
    skipped: list[SkippedFile]


class LocalStack:
    """The local stack of the SAM template at ``template`` (``TemplateError`` when it cannot be
    served locally). ``start()`` raises ``InstanceRunningError`` when the state directory belongs
    to a runtime that still answers, ``PortInUseError`` for a taken port and
    ``StateDirectoryError`` for a state directory it cannot create; ``stop()`` is safe to call at
    any point, also after a failed start."""

    def __init__(self, settings: RuntimeSettings, *, template: Path) -> None:
        self.settings = settings
        self.template = template
        self.spec: StackSpec = load_stack(template)
        self.spec.table(KNOWLEDGE_TABLE)  # TemplateError when the functions' table is missing
        self.endpoints: Endpoints | None = None
        self._aws: AwsServer | None = None
        self._gateway: Gateway | None = None
        self._services: SharedServices | None = None
        self._invoker: Invoker | None = None
        self._pollers: list[Poller] = []
        self._stop_waking: list[Callable[[], None]] = []
        self._opensearch: OpenSearchNode | None = None
        self._written: dict[Path, str] = {}
        self._durable: DurableState | None = None
        self.restored = Restored()
        """What the start restored from the state directory (``KNOWLEDGE_PERSIST``)."""
        self.timings = StartTimings()
        """Seconds of each phase of ``start``, ``dev_token`` and ``seed`` (``startup``)."""

    # -- lifecycle --------------------------------------------------------------------------------

    def start(self) -> Endpoints:
        """Hold both ports, then provision, start the pollers and serve; write ``endpoints.json``.
        Nothing starts while another runtime answers at the ``endpoints.json`` already there; the
        files of one that is gone are replaced. A start that fails leaves no directory it created."""
        self._refuse_a_running_instance()
        settings = self.settings
        timings = self.timings
        with timings.phase("AWS endpoint"):
            aws = AwsServer(settings.host, settings.aws_port)
            self._aws = _bind(aws.start, "AWS_PORT", settings.aws_port)
        self._services = services = SharedServices(share_indexes=settings.search_backend == "embedded")
        self._invoker = invoker = Invoker(max_environments=settings.max_environments, setup=services.setup)
        gateway = Gateway(
            self.template,
            settings.host,
            settings.port,
            invoker=invoker,
            authorizer_cache=settings.knowledge_authorizer_cache,
            address_throttle=(
                AddressThrottle(settings.knowledge_auth_failures_per_second)
                if settings.knowledge_auth_failures_per_second
                else None
            ),
        )
        self._gateway = _bind(gateway.bind, "PORT", settings.port)
        created = _make_directory(settings.knowledge_state_dir)
        try:
            if settings.search_backend == "opensearch":
                with timings.phase("OpenSearch"):
                    opensearch_url = self._start_opensearch()
            else:
                opensearch_url = None
            with timings.phase("tables and queues"):
                provisioned = provision(self.spec, aws.url)
            table = provisioned.tables[KNOWLEDGE_TABLE]
            ingest_queue, dead_letters = self._ingest_queues(provisioned)
            work_queue = provisioned.queues.get(INDEX_WORK_QUEUE)
            document_queue = provisioned.queues.get(DOCUMENT_QUEUE)
            self._configure_endpoints(aws.url, table.name, work_queue.url if work_queue else None)
            self._configure_documents(document_queue.url if document_queue else None)
            if settings.knowledge_persist:
                with timings.phase("state"):
                    self._durable = DurableState(settings.knowledge_state_dir)
                    others = [other.name for other in provisioned.tables.values() if other is not table]
                    kept = [provisioned.queues[name].name for name in self._kept_queues()]
                    tables = [table.name, *others]
                    self.restored = self._durable.restore(aws, tables=tables, kept_queues=kept)
                    if self.restored.anything:
                        # A table saved by an earlier version: notes it wrote lack the export
                        # listing, items it archived the archived-items listing.
                        client = aws_client("dynamodb", aws.url)
                        backfill_note_listing(client, table.name)
                        backfill_archived_item_listing(client, table.name)
            with timings.phase("documents bucket"):
                self._provision_bucket(aws.url, document_queue.arn if document_queue else None)
            with timings.phase("index"):
                container = get_container()
                services.start(
                    container.index,
                    container.note_index,
                    container.embedder,
                    container.note_history_index,
                    container.history_index,
                )
            if get_settings().embedder == "local":
                self._load_model(container.embedder)
            with timings.phase("pollers"):
                self._start_pollers(provisioned, aws.url, invoker)
            if self.restored.anything:
                with timings.phase("restored index"):
                    self._wait_for_the_index()
            with timings.phase("functions"):
                gateway.start()
                self._warm(invoker, gateway.routes.functions)
            self.endpoints = Endpoints(
                api_url=gateway.url,
                aws_endpoint_url=aws.url,
                table_name=table.name,
                ingest_queue_url=ingest_queue,
                ingest_dlq_url=dead_letters,
                opensearch_url=opensearch_url,
                documents_bucket=DOCUMENTS_BUCKET,
            )
            path = write_endpoints(settings.knowledge_state_dir, self.endpoints)
            self._written[path] = path.read_text(encoding="utf-8")
        except BaseException:
            self.stop()
            if created is not None:
                shutil.rmtree(created, ignore_errors=True)
            raise
        return self.endpoints

    def stop(self) -> None:
        """Stop serving, then the pollers, the functions' environments and the shared index;
        compact the state (``KNOWLEDGE_PERSIST``); stop moto and the OpenSearch node it started;
        remove the files this stack wrote."""
        started = time.monotonic()
        phases: dict[str, float] = {}

        def done(phase: str) -> None:
            phases[f"{phase}_s"] = round(time.monotonic() - started, 2)

        self._stop_pollers_waking()
        for poller in self._pollers:
            poller.request_stop()
        gateway, self._gateway = self._gateway, None
        if gateway is not None:
            gateway.drain(timeout=DRAIN_SECONDS)  # no new request; those in flight may finish
        done("drained")
        invoker, self._invoker = self._invoker, None
        if invoker is not None:
            invoker.close(timeout=INVOCATION_STOP_SECONDS)  # a poller waiting for one returns now
        done("environments")
        if gateway is not None:
            gateway.stop()  # the requests whose invocations were ended answer 503
        for poller in self._pollers:
            poller.stop()
        self._pollers = []
        done("pollers")
        services, self._services = self._services, None
        if services is not None:
            services.stop()
        self._compact_the_state()
        self._save_the_bucket()
        self._stop_servers()
        durable, self._durable = self._durable, None
        if durable is not None:
            durable.close()
        done("servers")
        for path, content in self._written.items():
            remove_if_unchanged(path, content)
        self._written = {}
        use_container(None)
        log.info("stack stopped", extra=phases)

    def _stop_servers(self) -> None:
        """Stop moto, then the OpenSearch node this stack started (its folder is removed)."""
        aws, self._aws = self._aws, None
        if aws is not None:
            aws.stop()
        node, self._opensearch = self._opensearch, None
        if node is not None:
            node.stop()

    # -- dev token and seed -----------------------------------------------------------------------

    def dev_token(self) -> DevToken:
        """The state directory's dev token (tenant ``dev``, every scope; ``dev_token.ensure``): the
        one in ``dev-token`` when the table holds it valid (a restored table), else a new one
        written there. Without ``KNOWLEDGE_PERSIST`` the table dies with the stack, and so the file
        is removed on stop; with it, the file stays for the next start."""
        container = get_container()
        directory = self.settings.knowledge_state_dir
        with self.timings.phase("dev token"):
            token = dev_token.ensure(container.tokens, container.store, directory)
        if not self.settings.knowledge_persist:
            path = directory / TOKEN_FILE
            self._written[path] = path.read_text(encoding="utf-8")
        return token

    def seed_plan(self) -> SeedPlan | None:
        """The documents to ingest on start (``None``: seeding is off); ``DocumentError`` when the
        seed folder cannot be read."""
        configured = self.settings.knowledge_seed_dir
        base = self.settings.knowledge_seed_base
        if configured == "":
            return None
        if configured is not None:
            folder = Path(configured).expanduser()
            if not folder.is_dir():
                raise DocumentError(f"KNOWLEDGE_SEED_DIR is not a folder: {folder}")
            collection = collect_documents(folder)
            return SeedPlan(base, collection.documents, str(folder), collection.skipped)
        readme = collect_documents(PROJECT_ROOT / "README.md", relative_to=PROJECT_ROOT)
        documents, skipped = readme.documents, readme.skipped
        if (PROJECT_ROOT / "docs").is_dir():
            docs = collect_documents(PROJECT_ROOT / "docs", relative_to=PROJECT_ROOT)
            documents, skipped = documents + docs.documents, skipped + docs.skipped
        return SeedPlan(base, documents, "README.md and docs/", skipped)

    def seed(self, plan: SeedPlan, token: str, *, progress: bool | None = None) -> IngestSummary:
        """Ingest ``plan`` through the API and wait until the index holds every document
        (``ingestion.wait_for_index``: ``IndexWaitTimeoutError`` once none has become searchable
        for its stall timeout)."""
        if self.endpoints is None:
            raise RuntimeError("The stack is not started.")
        with KnowledgeClient(self.endpoints.api_url, token) as client:
            with self.timings.phase("seed sent"):
                summary = ingest(client, plan.documents, plan.base_name, progress=progress)
            summary.skipped = len(plan.skipped)
            with self.timings.phase("seed indexed"):
                wait_for_index(client, summary, progress=progress)
        return summary

    # -- parts ------------------------------------------------------------------------------------

    def _refuse_a_running_instance(self) -> None:
        state_dir = self.settings.knowledge_state_dir
        running = running_instance(state_dir)
        if running is not None:
            raise InstanceRunningError(
                f"Another local runtime is serving {running.api_url} from {state_dir / ENDPOINTS_FILE}. "
                "Stop it (Ctrl-C in its terminal), or give this one its own state directory and ports, "
                f"e.g. {_another_runtime(state_dir)} make run "
                "(the knowledge command then needs the same KNOWLEDGE_STATE_DIR)."
            )

    def _start_opensearch(self) -> str | None:
        """The OpenSearch URL the functions search with ``SEARCH_BACKEND=opensearch`` (None on the
        embedded index): ``OPENSEARCH_URL`` (its two indexes dropped, to be rebuilt from the table),
        or a local node started now. ``NodeError`` when the node cannot start or the cluster at
        ``OPENSEARCH_URL`` does not answer."""
        settings = self.settings
        if settings.search_backend != "opensearch":
            return None
        if settings.opensearch_url:
            url = settings.opensearch_url.rstrip("/")
            claim_cluster(url, _opensearch_indexes())
            return url
        self._opensearch = node = start_node(
            name="knowledge-local", heap=settings.opensearch_heap, progress=_say_indented
        )
        os.environ["OPENSEARCH_URL"] = node.url
        return node.url

    def _load_model(self, embedder: Embedder) -> None:
        """Load the offline embedding model on a thread of its own, beside the rest of the start
        (it would otherwise load on the seed's first embedding, after it): one embedding of the
        empty text, which nothing else asks for (queries and chunks are never empty), dropped from
        the embedding cache first so that a cached vector does not stand in for the model. A failure
        is logged; the first real embedding then fails the same way, where it is reported."""
        timings = self.timings

        def load() -> None:
            started = time.monotonic()
            try:
                embedder.forget([""])
                embedder.embed([""])
            except Exception as error:  # reported again by the embedding that needs the model
                log.warning("the embedding model did not load ahead", extra={"error": str(error)})
                return
            timings.record("model load", time.monotonic() - started, overlapped=True)

        threading.Thread(target=load, name="model-load", daemon=True).start()

    def _wait_for_the_index(self) -> None:
        """Serve a restored table only once the indexer has taken it in from the stream."""
        for poller in self._pollers:
            if isinstance(poller, StreamPoller) and not poller.wait_until_caught_up(
                snapshot.RESTORE_INDEX_TIMEOUT_SECONDS
            ):
                log.warning("the index is still catching up with the restored table; serving anyway")

    def _provision_bucket(self, endpoint_url: str, queue_arn: str | None) -> None:
        """The documents bucket, its saved objects put back (``KNOWLEDGE_PERSIST``) before its events
        go to the document queue, so a restart sends no event; and the bundles bucket, its saved
        bundles put back."""
        provision_bucket(endpoint_url, DOCUMENTS_BUCKET)
        provision_bucket(endpoint_url, BUNDLES_BUCKET)
        if self.settings.knowledge_persist:
            state_dir = self.settings.knowledge_state_dir
            restored = bucket_files.restore(endpoint_url, DOCUMENTS_BUCKET, state_dir)
            log.info("documents bucket restored", extra={"objects": restored})
            bundles = bucket_files.restore(endpoint_url, BUNDLES_BUCKET, state_dir, BUNDLES_FOLDER)
            log.info("bundles bucket restored", extra={"objects": bundles})
        if queue_arn is not None:
            notify_queue(endpoint_url, DOCUMENTS_BUCKET, queue_arn)

    def _save_the_bucket(self) -> None:
        """With ``KNOWLEDGE_PERSIST``, write the documents and bundles buckets' objects to the state
        directory (``bucket_files``); a failure is logged, the stop goes on."""
        if self._aws is None or self._durable is None or not self._durable.attached:
            return
        state_dir = self.settings.knowledge_state_dir
        for bucket, folder in ((DOCUMENTS_BUCKET, bucket_files.FOLDER), (BUNDLES_BUCKET, BUNDLES_FOLDER)):
            try:
                saved = bucket_files.save(self._aws.url, bucket, state_dir, folder)
                log.info("bucket saved", extra={"bucket": bucket, "objects": saved})
            except Exception as error:  # botocore or OS errors alike: the rest of the stop must go on
                log.error("a bucket could not be saved", extra={"bucket": bucket, "error": str(error)})

    def _compact_the_state(self) -> None:
        """With ``KNOWLEDGE_PERSIST``, fold the journal into a new snapshot (nothing is lost
        without it: the journal already holds every write); a failure is logged, the stop goes on."""
        if self._durable is None or not self._durable.attached:
            return  # a start that failed (say, on a damaged snapshot) must not replace it
        try:
            saved = self._durable.compact()
            log.info("state saved", extra={"items": saved})
        except (OSError, KeyError, RuntimeError) as error:
            log.error("the state could not be compacted; the journal keeps it", extra={"error": str(error)})

    @staticmethod
    def _warm(invoker: Invoker, functions: list[FunctionSpec]) -> None:
        """Start one execution environment of each of ``functions`` at once, so that no first
        request waits for a cold start (a function that cannot start is logged; its requests fail).
        The event sources' functions start with their first event, as they would on Lambda."""

        def warm(function: FunctionSpec) -> None:
            try:
                invoker.prepare(function)
            except InvocationError as error:
                log.error(
                    "function cannot start", extra={"function": function.logical_id, "error": str(error)}
                )

        with ThreadPoolExecutor(max_workers=len(functions) or 1, thread_name_prefix="warm") as pool:
            list(pool.map(warm, functions))

    def _kept_queues(self) -> list[str]:
        """Logical ids of the queues whose messages are kept across restarts: those producers send
        to (every SQS event source but the index work queue) and their dead-letter queues. The
        others carry work the table's stream gives again after a restart."""
        kept: list[str] = []
        for source in self.spec.event_sources:
            if source.kind == "sqs" and source.source != INDEX_WORK_QUEUE:
                dead_letters = self.spec.queues[source.source].dead_letter_queue
                kept.extend([source.source, *([dead_letters] if dead_letters else [])])
        return kept

    def _ingest_queues(self, provisioned: Provisioned) -> tuple[str | None, str | None]:
        """URLs of the queue producers send to (the SQS event source that is not the index work
        queue), and of its dead-letter queue."""
        for source in self.spec.event_sources:
            if source.kind == "sqs" and source.source != INDEX_WORK_QUEUE:
                dead_letters = self.spec.queues[source.source].dead_letter_queue
                return (
                    provisioned.queues[source.source].url,
                    provisioned.queues[dead_letters].url if dead_letters else None,
                )
        return None, None

    def _configure_endpoints(self, endpoint_url: str, table_name: str, work_queue_url: str | None) -> None:
        """Point every function at the local endpoint, table and index work queue, as the template
        does on AWS (``config.function_environment`` set the rest before ``knowledge`` was
        imported)."""
        os.environ.update({"AWS_ENDPOINT_URL": endpoint_url, "TABLE_NAME": table_name})
        if work_queue_url is not None:
            os.environ["INDEX_WORK_QUEUE_URL"] = work_queue_url
        else:
            os.environ.pop("INDEX_WORK_QUEUE_URL", None)
        get_settings.cache_clear()
        use_container(None)

    @staticmethod
    def _configure_documents(document_queue_url: str | None) -> None:
        """Let data sources read the local bucket, exports and imports keep bundles in theirs, and
        syncs, exports and imports use the document queue."""
        os.environ["DOCUMENT_BUCKETS"] = DOCUMENTS_BUCKET
        os.environ["BUNDLE_BUCKET"] = BUNDLES_BUCKET
        if document_queue_url is not None:
            os.environ["DOCUMENT_QUEUE_URL"] = document_queue_url
        else:
            os.environ.pop("DOCUMENT_QUEUE_URL", None)
        get_settings.cache_clear()
        use_container(None)

    def _start_pollers(self, provisioned: Provisioned, endpoint_url: str, invoker: Invoker) -> None:
        streams, sqs = aws_client("dynamodbstreams", endpoint_url), aws_client("sqs", endpoint_url)
        for source in self.spec.event_sources:
            pollers: list[Poller]
            if source.kind == "dynamodb":
                stream_arn = provisioned.tables[source.source].stream_arn
                if stream_arn is None:
                    log.warning("table has no stream; event source skipped", extra={"table": source.source})
                    continue
                pollers = [
                    StreamPoller(
                        source,
                        stream_arn,
                        streams,
                        invoker,
                        on_failure=_sender(sqs, provisioned, source.on_failure),
                    )
                ]
            else:
                queue = provisioned.queues[source.source]
                pollers = [
                    QueuePoller(source, queue.url, queue.arn, sqs, invoker, number=number)
                    for number in range(pollers_for(source))
                ]
            for poller in pollers:
                self._stop_waking.append(_wake_on_arrival(source, provisioned, poller))
                poller.start()
                self._pollers.append(poller)

    def _stop_pollers_waking(self) -> None:
        for stop_waking in self._stop_waking:
            stop_waking()
        self._stop_waking = []


def _wake_on_arrival(source: EventSourceSpec, provisioned: Provisioned, poller: Poller) -> Callable[[], None]:
    """Wake ``poller`` whenever its source receives a record (``arrivals``); returns the function
    that stops it."""
    if source.kind == "dynamodb":
        return arrivals.on_stream_record(provisioned.tables[source.source].name, poller.wake)
    return arrivals.on_message(provisioned.queues[source.source].name, poller.wake)


def _say_indented(message: str) -> None:
    print(f"  {message.strip()}", flush=True)


def _sender(sqs: Any, provisioned: Provisioned, queue: str | None) -> Callable[[dict[str, Any]], None] | None:
    """Sends an on-failure record to ``queue`` (a logical id), if any."""
    if queue is None:
        return None
    url = provisioned.queues[queue].url

    def send(record: dict[str, Any]) -> None:
        sqs.send_message(QueueUrl=url, MessageBody=json.dumps(record))

    return send


def _another_runtime(state_dir: Path) -> str:
    """Settings for a runtime beside the one of ``state_dir``: the first of ``.knowledge/second``,
    ``.knowledge/third``... that is not ``state_dir`` and holds no ``endpoints.json``, with ports
    counted up from the defaults in step (``KNOWLEDGE_STATE_DIR=.knowledge/second PORT=3001
    AWS_PORT=5001``)."""
    candidates = [(number, DEFAULT_STATE_DIR / name) for number, name in enumerate(_ORDINALS, start=1)]
    unused = [
        (number, candidate)
        for number, candidate in candidates
        if candidate.resolve() != state_dir.resolve() and not (candidate / ENDPOINTS_FILE).exists()
    ]
    number, candidate = (unused or candidates)[0]
    return (
        f"KNOWLEDGE_STATE_DIR={shlex.quote(display_path(candidate))} "
        f"PORT={DEFAULT_PORT + number} AWS_PORT={DEFAULT_AWS_PORT + number}"
    )


def _make_directory(directory: Path) -> Path | None:
    """Create ``directory`` and any missing parent, and make it private (``state.make_private``);
    the outermost directory created (``None``: it existed). ``StateDirectoryError`` when it cannot
    be created or made private."""
    missing = [path for path in (directory, *directory.parents) if not path.exists()]
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise StateDirectoryError(
            f"Cannot create KNOWLEDGE_STATE_DIR={directory}: {error.strerror or error}."
        ) from None
    try:
        make_private(directory)
    except OSError as error:
        raise StateDirectoryError(
            f"Cannot make KNOWLEDGE_STATE_DIR={directory} private (mode 0700, files 0600): "
            f"{error.strerror or error}."
        ) from None
    return missing[-1] if missing else None


_Server = TypeVar("_Server", AwsServer, Gateway)


def _bind(open_port: Callable[[], _Server], variable: str, port: int) -> _Server:
    """``open_port()`` (which binds ``port``); ``PortInUseError`` naming ``variable`` when it fails."""
    try:
        return open_port()
    except OSError as error:
        advice = "Stop what uses it, or choose" if error.errno == errno.EADDRINUSE else "Choose"
        raise PortInUseError(
            f"Cannot listen on {variable}={port}: {error.strerror or error}. "
            f"{advice} another port: {variable}=<port> make run"
        ) from None


def _opensearch_indexes() -> tuple[str, str]:
    """The chunk and note indexes the functions use on OpenSearch (``OPENSEARCH_INDEX``,
    ``OPENSEARCH_NOTES_INDEX``)."""
    return (
        os.environ.get("OPENSEARCH_INDEX", DEFAULT_OPENSEARCH_INDEX),
        os.environ.get("OPENSEARCH_NOTES_INDEX", DEFAULT_OPENSEARCH_NOTES_INDEX),
    )
