"""Export and import (``knowledge.services.bundles``) over the in-process store: a tenant's records
go out as a bundle and come back whole in another tenant (the round trip exports an equal bundle),
importing twice changes nothing, conflicts are named, a damaged bundle fails its job with the line
at fault, and the jobs move from queued to succeeded or failed."""

from __future__ import annotations

import array
import json
import math
from collections.abc import Callable, Iterable, Iterator
from functools import partial
from typing import Any

import pytest

from knowledge.adapters.embedding_cache import CachedEmbedder, InProcessEmbeddingCache, embedding_key
from knowledge.contract.bundles import BundleWork, ExportRequest
from knowledge.contract.memory import ForgetMemoryArguments
from knowledge.domain.bundles import BundleJobKind, BundleJobStatus, BundleSelection
from knowledge.domain.models import ItemStatus, Permission, Principal, Scope, Source
from knowledge.domain.retrieval.chunking import Chunker
from knowledge.errors import (
    DependencyUnavailableError,
    InsufficientScopeError,
    InvalidRequestError,
    RequestValidationError,
    ResourceUnavailableError,
)
from knowledge.ports import NoteIndex
from knowledge.services.bundles import BundleFormatError, BundleService, HeldVersions
from knowledge.services.tenant_jobs import JobAction
from tests.support.embedding import HashingEmbedder
from tests.unit.services.memory_world import ADMIN as MEMORY_ADMIN
from tests.unit.services.memory_world import READ, SHARE, WRITE, MemoryWorld, agent

SOURCE, TARGET = "acme", "globex"
KNOWLEDGE_ADMIN = Permission.ADMIN
OPERATOR = agent("ops", KNOWLEDGE_ADMIN, MEMORY_ADMIN, READ, WRITE, SHARE)


class MemoryBundleBucket:
    """The ``BundleBucket`` port in a dictionary; presigned URLs name the key."""

    def __init__(self) -> None:
        self.objects: dict[str, bytes] = {}

    def upload(self, key: str, chunks: Iterable[bytes]) -> int:
        self.objects[key] = b"".join(chunks)
        return len(self.objects[key])

    def lines(self, key: str) -> Iterator[bytes] | None:
        if key not in self.objects:
            return None
        return iter(self.objects[key].splitlines())

    def download_url(self, key: str, *, expires_in: int) -> str:
        return f"https://bundles.example/{key}?get&expires={expires_in}"

    def upload_url(self, key: str, *, expires_in: int) -> str:
        return f"https://bundles.example/{key}?put&expires={expires_in}"


class ListQueue:
    def __init__(self) -> None:
        self.sent: list[Any] = []

    def send(self, work: Any) -> None:
        self.sent.append(work)


class Deployment:
    """One deployment: a store with its memory services, a bucket, a queue and the bundle service."""

    def __init__(
        self,
        *,
        dimension: int = 64,
        held: Callable[[], HeldVersions | None] = lambda: None,
        note_indexes: tuple[Callable[[], NoteIndex], Callable[[], NoteIndex]] | None = None,
        stored_items_limit: int = 0,
    ) -> None:
        """``held`` is the import's view of the search indexes (none by default); ``note_indexes``
        builds the note index and the note history index (in process by default);
        ``stored_items_limit`` is the tenants' quota (0: none)."""
        self.world = (
            MemoryWorld(stored_items_limit=stored_items_limit)
            if note_indexes is None
            else MemoryWorld(
                index_factory=note_indexes[0],
                history_factory=note_indexes[1],
                stored_items_limit=stored_items_limit,
            )
        )
        self.world.embedder = CachedEmbedder(HashingEmbedder(dimension), InProcessEmbeddingCache())
        self.bucket = MemoryBundleBucket()
        self.queue = ListQueue()
        self.service = BundleService(
            self.world.store,
            self.bucket,
            self.queue,
            self.world.clock,
            vectors=lambda: self.world.embedder,
            chunker=lambda: Chunker(max_tokens=64, overlap_tokens=8),
            held=held,
        )

    @property
    def store(self) -> Any:
        return self.world.store

    def bundle(self, tenant_id: str, selection: BundleSelection | None = None) -> list[dict[str, Any]]:
        return [
            json.loads(line) for line in self.service.bundle_lines(tenant_id, selection or BundleSelection())
        ]

    def run_all(self) -> list[JobAction]:
        sent, self.queue.sent = self.queue.sent, []
        return [self.service.run(work) for work in sent]


def seed(deployment: Deployment, tenant_id: str = SOURCE) -> dict[str, str]:
    """A tenant with history: two bases, items with several revisions (one archived, one with an
    external id), notes with versions, a superseded note, a soft-forgotten and a hard-forgotten
    note, a keyed note, and pins."""
    store, world = deployment.store, deployment.world
    alice = agent("alice", READ, WRITE, SHARE, team_ids=["red"]).model_copy(update={"tenant_id": tenant_id})
    handbook = store.create_base(
        tenant_id, name="handbook", owner_id="alice", scope=Scope.TENANT, team_id=None
    )
    private = store.create_base(tenant_id, name="drafts", owner_id="alice", scope=Scope.PRIVATE, team_id=None)
    world.clock.advance(60)
    item, first = store.create_item(
        tenant_id,
        handbook.knowledge_base_id,
        title="Rotor maintenance",
        content="Grease the rotor bearings every 500 hours.\n\nCheck the seals.",
        source=Source(uri="guides/rotor.md"),
        external_id="guides/rotor.md",
        publish=True,
    )
    world.clock.advance(60)
    item, second = store.add_revision(
        tenant_id,
        item.knowledge_item_id,
        content="Grease the rotor bearings every 400 hours.\n\nCheck the seals and the swivel joints.",
        title=None,
        source=None,
        publish=False,
        expected_version=item.version,
    )
    world.clock.advance(60)
    store.publish_revision(
        tenant_id, item.knowledge_item_id, second.knowledge_revision_id, expected_version=item.version
    )
    world.clock.advance(60)
    gone, _ = store.create_item(
        tenant_id,
        handbook.knowledge_base_id,
        title="Old cable guide",
        content="Scour around the cable is checked yearly.",
        source=Source(),
        external_id="guides/cable.md",
        publish=True,
    )
    world.clock.advance(60)
    store.archive_item(tenant_id, gone.knowledge_item_id, expected_version=gone.version)
    draft, _ = store.create_item(
        tenant_id,
        private.knowledge_base_id,
        title="Draft",
        content="A draft about kelp-covered swivel joints.",
        source=Source(),
        external_id=None,
        publish=False,
    )
    world.clock.advance(60)
    remember = partial(world.remember, alice, sync=False)
    kept = remember("The blue pump needs a new seal.", path="/ops/pumps", semantic_key="pump-seal")
    world.clock.advance(60)
    remember("The blue pump's seal was replaced.", path="/ops/pumps", semantic_key="pump-seal")
    world.clock.advance(60)
    old = remember("Tide tables come from the harbour office.", path="/ops/tides")
    world.clock.advance(60)
    new = remember(
        "Tide tables come from the port authority.", path="/ops/tides", supersedes=[old.note.note_id]
    )
    world.clock.advance(60)
    soft = remember("The red crane is out of service.", path="/ops/cranes")
    world.notes.forget(alice, ForgetMemoryArguments(note_id=soft.note.note_id, mode="soft"))
    hard = remember("A secret that must go.", path="/ops/secrets")
    world.notes.forget(alice, ForgetMemoryArguments(note_id=hard.note.note_id, mode="hard"))
    team = remember("Red team meets on Mondays.", path="/team", scope="team", team_id="red")
    world.clock.advance(60)
    world.pin(alice, kept.note.note_id, order=1, reason="safety")
    world.pin(alice, team.note.note_id, order=0)
    world.clock.advance(60)
    return {
        "handbook": handbook.knowledge_base_id,
        "drafts": private.knowledge_base_id,
        "item": item.knowledge_item_id,
        "first_revision": first.knowledge_revision_id,
        "archived": gone.knowledge_item_id,
        "draft": draft.knowledge_item_id,
        "keyed": kept.note.note_id,
        "superseded": old.note.note_id,
        "superseding": new.note.note_id,
        "soft": soft.note.note_id,
        "hard": hard.note.note_id,
    }


def ended(lines: list[str]) -> list[str]:
    """``lines`` (a header and records, no end line) with the end line that counts their records."""
    kinds = [json.loads(line)["kind"] for line in lines[1:]]
    counts = {kind: kinds.count(kind) for kind in ("base", "item", "note", "pin") if kind in kinds}
    return [*lines, json.dumps({"kind": "end", "counts": counts})]


def imported(
    deployment: Deployment, lines: Iterable[str], *, keep_vectors: bool = False
) -> tuple[dict[str, int], list[str]]:
    """The counts and conflicts of importing ``lines`` into ``TARGET`` in one go."""
    progress = deployment.service.import_lines(TARGET, lines, keep_vectors=keep_vectors)
    assert progress is not None
    return progress.counts, progress.conflicts


def records(bundle: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The bundle without its header (which names the tenant and the export's moment)."""
    assert bundle[0]["kind"] == "bundle"
    return bundle[1:]


def test_a_round_trip_into_another_tenant_exports_an_equal_bundle() -> None:
    deployment = Deployment()
    names = seed(deployment)
    exported = deployment.bundle(SOURCE)
    kinds = [line["kind"] for line in exported]
    assert kinds.count("base") == 2
    assert kinds.count("item") == 3  # the archived item too: its past still answers as_of
    assert kinds[-1] == "end"
    assert exported[-1]["counts"] == {"base": 2, "item": 3, "note": 5, "pin": 2}
    assert all("tenant_id" not in json.dumps(line["base"]) for line in exported if line["kind"] == "base")

    counts, conflicts = imported(deployment, (json.dumps(line) for line in exported))

    assert conflicts == []
    assert counts == {"base.imported": 2, "item.imported": 3, "note.imported": 5, "pin.imported": 2}
    assert records(deployment.bundle(TARGET)) == records(exported)
    store = deployment.store
    item = store.get_item(TARGET, names["item"])
    assert item.indexed_revision_id is None  # the target's indexer has not taken it yet
    assert [state.version for state in store.list_item_states(TARGET, names["item"])] == [
        state.version for state in store.list_item_states(SOURCE, names["item"])
    ]
    first = store.get_revision(TARGET, names["item"], names["first_revision"])
    assert store.read_all_content(first).startswith("Grease the rotor bearings every 500 hours.")
    assert store.get_note(TARGET, names["superseded"]).superseded_by == names["superseding"]
    assert store.get_note(TARGET, names["keyed"]).version == 2
    assert store.list_unindexed_notes(TARGET, "alice", limit=100)
    archived = store.get_item(TARGET, names["archived"])
    assert archived is not None
    assert archived.status is ItemStatus.ARCHIVED
    listed = store.list_archived_items(TARGET, names["handbook"], limit=10, next_token=None)
    assert listed.entries == [archived]


def test_the_hard_forgotten_note_stays_gone_and_history_survives_for_as_of() -> None:
    deployment = Deployment()
    names = seed(deployment)
    exported = deployment.bundle(SOURCE)
    deployment.service.import_lines(TARGET, (json.dumps(line) for line in exported))
    store = deployment.store
    assert store.get_note(TARGET, names["hard"]) == store.get_note(SOURCE, names["hard"])
    versions = store.list_note_versions(TARGET, names["keyed"], limit=10, next_token=None).entries
    assert [version.content for version in sorted(versions, key=lambda version: version.version)] == [
        "The blue pump needs a new seal.",
        "The blue pump's seal was replaced.",
    ]
    hard = [line for line in exported if line["kind"] == "note" and line["note"]["note_id"] == names["hard"]]
    assert all("A secret that must go." not in json.dumps(line) for line in hard)


def test_importing_twice_changes_nothing_the_second_time() -> None:
    deployment = Deployment()
    seed(deployment)
    lines = [json.dumps(line) for line in deployment.bundle(SOURCE)]
    deployment.service.import_lines(TARGET, lines)
    before = deployment.bundle(TARGET)

    counts, conflicts = imported(deployment, lines)

    assert counts == {"base.present": 2, "item.present": 3, "note.present": 5, "pin.present": 2}
    assert conflicts == []
    assert records(deployment.bundle(TARGET)) == records(before)


def test_a_record_whose_external_id_another_item_holds_is_a_named_conflict() -> None:
    deployment = Deployment()
    names = seed(deployment)
    lines = [json.dumps(line) for line in deployment.bundle(SOURCE)]
    base = next(json.loads(line)["base"] for line in lines if '"kind":"base"' in line.replace(" ", ""))
    store = deployment.store
    deployment.service.import_lines(TARGET, ended([lines[0], json.dumps({"kind": "base", "base": base})]))
    store.create_item(
        TARGET,
        names["handbook"],
        title="Someone else's rotor guide",
        content="Another text.",
        source=Source(),
        external_id="guides/rotor.md",
        publish=True,
    )

    counts, conflicts = imported(deployment, lines)

    assert conflicts == [f"item:{names['item']}"]
    assert counts["item.conflicts"] == 1
    assert store.get_item(TARGET, names["item"]) is None
    assert store.get_item(TARGET, names["draft"]) is not None


def test_a_selection_takes_the_chosen_bases_and_the_notes_under_a_path() -> None:
    deployment = Deployment()
    names = seed(deployment)
    chosen = BundleSelection(knowledge_base_ids=(names["drafts"],), path_prefix="/ops/tides")
    bundle = deployment.bundle(SOURCE, chosen)
    assert [line["base"]["knowledge_base_id"] for line in bundle if line["kind"] == "base"] == [
        names["drafts"]
    ]
    assert [line["item"]["knowledge_item_id"] for line in bundle if line["kind"] == "item"] == [
        names["draft"]
    ]
    notes = {line["note"]["note_id"] for line in bundle if line["kind"] == "note"}
    assert notes == {names["superseded"], names["superseding"]}
    assert bundle[-1]["counts"] == {"base": 1, "item": 1, "note": 2}
    without = deployment.bundle(SOURCE, BundleSelection(knowledge_base_ids=(), include_notes=False))
    assert [line["kind"] for line in without] == ["bundle", "end"]


def test_vectors_travel_only_to_a_deployment_of_the_same_model() -> None:
    source = Deployment()
    seed(source)
    source.world.embedder.embed(["Red team meets on Mondays."])  # cached, as the indexer leaves it
    bundle = source.bundle(SOURCE, BundleSelection(include_vectors=True))
    assert bundle[0]["embedding"] == {"model_id": "tests/hashing-64", "dimension": 64}
    vectors = [line for line in bundle if line["kind"] == "vectors"]
    assert sum(len(line["vectors"]) for line in vectors) == bundle[-1]["counts"]["vectors"] >= 1

    same, other = Deployment(), Deployment(dimension=32)
    kept, _ = imported(same, (json.dumps(line) for line in bundle), keep_vectors=True)
    skipped, _ = imported(other, (json.dumps(line) for line in bundle), keep_vectors=True)

    assert kept["vectors.kept"] == bundle[-1]["counts"]["vectors"]
    assert "vectors.kept" not in skipped
    assert skipped["vectors.ignored"] == bundle[-1]["counts"]["vectors"]
    assert same.world.embedder.cached(["Red team meets on Mondays."])
    assert not other.world.embedder.cached(["Red team meets on Mondays."])


def _poisoned(deployment: Deployment, texts: dict[str, list[float]]) -> list[str]:
    """A bundle holding only vectors: ``texts`` mapped to the vectors given for them."""
    embedder = deployment.world.embedder
    keys = {
        embedding_key(embedder.model_id, embedder.dimension, text): vector for text, vector in texts.items()
    }
    header = {
        "kind": "bundle",
        "format": "knowledge-bundle",
        "format_version": 1,
        "tenant_id": "mallory",
        "exported_at": "2026-12-05T12:00:00Z",
        "embedding": {"model_id": embedder.model_id, "dimension": embedder.dimension},
        "selection": {},
    }
    lines = [json.dumps(header), json.dumps({"kind": "vectors", "vectors": keys})]
    return [*lines, json.dumps({"kind": "end", "counts": {"vectors": len(keys)}})]


def test_a_tenant_administrators_import_never_writes_the_shared_embedding_cache() -> None:
    deployment = Deployment()
    victim = "The capybara relay is on host nine."
    flipped = [-value for value in HashingEmbedder(64).embed([victim])[0]]

    counts, _ = imported(deployment, _poisoned(deployment, {victim: flipped}))

    assert counts == {"vectors.ignored": 1}
    assert deployment.world.embedder.cached([victim]) == {}
    assert deployment.world.embedder.embed([victim]) == _float32(HashingEmbedder(64).embed([victim]))


def test_a_kept_vector_never_replaces_a_cached_row_and_only_usable_vectors_are_kept() -> None:
    deployment = Deployment()
    embedder = deployment.world.embedder
    computed = embedder.embed(["Cached already."])
    poison = {
        "Cached already.": [1.0] * 64,
        "Not a number.": [math.nan] * 64,
        "Infinite.": [math.inf] + [0.0] * 63,
        "All zero.": [0.0] * 64,
        "Too short.": [1.0] * 3,
        "Fine.": [0.5] * 64,
    }

    counts, _ = imported(deployment, _poisoned(deployment, poison), keep_vectors=True)

    assert counts == {"vectors.ignored": 5, "vectors.kept": 1}
    assert embedder.embed(["Cached already."]) == computed
    assert list(
        embedder.cached(["Fine.", "Not a number.", "Infinite.", "All zero.", "Too short."]).values()
    ) == [[0.5] * 64]


def test_a_cached_row_that_is_not_a_usable_vector_is_embedded_again() -> None:
    deployment = Deployment()
    embedder = deployment.world.embedder
    key = embedding_key(embedder.model_id, embedder.dimension, "Broken row.")
    deployment.world.cache.put_many({key: [math.nan] * 64})

    computed = _float32(HashingEmbedder(64).embed(["Broken row."]))
    assert embedder.embed(["Broken row."]) == computed
    assert list(embedder.cached(["Broken row."]).values()) == computed


def _float32(vectors: list[list[float]]) -> list[list[float]]:
    """``vectors`` as the cache stores them (float32)."""
    return [array.array("f", vector).tolist() for vector in vectors]


@pytest.mark.parametrize(
    ("damage", "line", "message"),
    [
        (lambda lines: lines[:-1], 0, "cut short"),
        (lambda lines: [*lines[:2], "{not json", *lines[2:]], 3, "Not JSON"),
        (lambda lines: [lines[0], json.dumps({"kind": "poem"}), *lines[1:]], 2, "unknown record kind"),
        (
            lambda lines: [lines[0].replace('"format_version":1', '"format_version":9'), *lines[1:]],
            1,
            "version 9",
        ),
        (lambda lines: [*lines, json.dumps({"kind": "base"})], 0, "nothing after its end"),
        (lambda lines: [_tampered(line) for line in lines], 0, "not the revision's"),
        (
            lambda lines: [*lines[:-1], lines[-1].replace('"item":3', '"item":99')],
            0,
            "end line counts 99 item records but the bundle holds 3",
        ),
        (lambda lines: [line for line in lines if '"kind":"pin"' not in line], 0, "counts 2 pin records"),
    ],
)
def test_a_damaged_bundle_is_refused_with_the_line_at_fault(damage: Any, line: int, message: str) -> None:
    deployment = Deployment()
    seed(deployment)
    lines = damage([json.dumps(entry, separators=(",", ":")) for entry in deployment.bundle(SOURCE)])
    with pytest.raises(BundleFormatError, match=message) as raised:
        deployment.service.import_lines(TARGET, lines)
    if line:
        assert raised.value.line == line


def _tampered(line: str) -> str:
    document = json.loads(line)
    if document["kind"] == "item":
        document["revisions"][0]["content"] += " (edited)"
    return json.dumps(document)


def test_an_export_job_runs_from_the_queue_and_offers_a_download() -> None:
    deployment = Deployment()
    seed(deployment)
    started = deployment.service.start_export(OPERATOR, ExportRequest())
    assert started.status is BundleJobStatus.QUEUED
    assert deployment.queue.sent == [BundleWork(op="export", tenant_id=SOURCE, job_id=started.job_id)]

    assert deployment.run_all() == [JobAction.EXPORTED]

    job = deployment.service.get_job(OPERATOR, started.job_id, BundleJobKind.EXPORT)
    assert job.status is BundleJobStatus.SUCCEEDED
    assert job.counts == {"base": 2, "item": 3, "note": 5, "pin": 2}
    assert job.bytes == len(deployment.bucket.objects[f"bundles/{SOURCE}/{started.job_id}.jsonl"]) > 0
    assert job.download_url is not None
    assert job.url_expires_at is not None
    assert (
        deployment.service.run(BundleWork(op="export", tenant_id=SOURCE, job_id=started.job_id))
        is JobAction.SKIPPED
    )


def test_an_import_job_waits_for_its_upload_then_restores_the_bundle() -> None:
    source, target = Deployment(), Deployment()
    seed(source)
    export = source.service.start_export(OPERATOR, ExportRequest())
    source.run_all()
    bundle = source.bucket.objects[f"bundles/{SOURCE}/{export.job_id}.jsonl"]
    operator = OPERATOR.model_copy(update={"tenant_id": TARGET})

    created = target.service.create_import(operator)
    assert created.status is BundleJobStatus.AWAITING_UPLOAD
    assert created.upload_url is not None
    with pytest.raises(InvalidRequestError):
        target.service.start_import(operator, created.job_id)
    target.bucket.objects[f"bundles/{TARGET}/{created.job_id}.jsonl"] = bundle
    assert target.service.start_import(operator, created.job_id).status is BundleJobStatus.QUEUED
    again = target.service.start_import(operator, created.job_id)  # answers as it stands, sends nothing
    assert again.status is BundleJobStatus.QUEUED

    assert target.run_all() == [JobAction.IMPORTED]

    job = target.service.get_job(operator, created.job_id, BundleJobKind.IMPORT)
    assert job.status is BundleJobStatus.SUCCEEDED
    assert job.counts == {"base.imported": 2, "item.imported": 3, "note.imported": 5, "pin.imported": 2}
    assert job.bytes == len(bundle)
    assert records(target.bundle(TARGET)) == records(source.bundle(SOURCE))


def test_a_damaged_upload_fails_its_import_with_the_reason() -> None:
    deployment = Deployment()
    created = deployment.service.create_import(OPERATOR)
    deployment.bucket.objects[f"bundles/{SOURCE}/{created.job_id}.jsonl"] = b'{"kind":"bundle"}\n'
    deployment.service.start_import(OPERATOR, created.job_id)

    assert deployment.run_all() == [JobAction.FAILED]

    job = deployment.service.get_job(OPERATOR, created.job_id, BundleJobKind.IMPORT)
    assert job.status is BundleJobStatus.FAILED
    assert job.error is not None
    assert "line 1" in job.error


def _import_job(deployment: Deployment, lines: list[str]) -> Any:
    """An import of ``lines`` into ``TARGET``, run from the queue once: the job as it then stands."""
    operator = OPERATOR.model_copy(update={"tenant_id": TARGET})
    created = deployment.service.create_import(operator)
    deployment.bucket.objects[f"bundles/{TARGET}/{created.job_id}.jsonl"] = "\n".join(lines).encode()
    deployment.service.start_import(operator, created.job_id)
    assert deployment.run_all() == [JobAction.FAILED]
    return deployment.service.get_job(operator, created.job_id, BundleJobKind.IMPORT)


def test_an_item_whose_base_is_nowhere_fails_the_import_at_once_naming_its_line() -> None:
    source = Deployment()
    seed(source)
    lines = [json.dumps(entry) for entry in source.bundle(SOURCE) if entry["kind"] != "base"]
    target = Deployment()

    job = _import_job(target, lines)

    assert job.status is BundleJobStatus.FAILED
    assert job.error is not None
    assert "knowledge base" in job.error
    assert "neither in the bundle before it nor in the tenant. (line 2)" in job.error
    assert target.queue.sent == []  # failed for good: not handed on, not retried


def test_an_import_past_the_stored_items_quota_fails_at_once_and_keeps_what_came_before() -> None:
    source = Deployment()
    seed(source)
    lines = [json.dumps(entry) for entry in source.bundle(SOURCE)]
    target = Deployment(stored_items_limit=3)

    job = _import_job(target, lines)

    assert job.status is BundleJobStatus.FAILED
    assert job.error is not None
    assert "stored items quota (3) is used up" in job.error
    assert "import the bundle again once there is room" in job.error
    assert target.store.read_counters(TARGET).stored == 3


def test_a_pin_whose_note_is_not_in_the_tenant_is_a_named_conflict() -> None:
    source = Deployment()
    names = seed(source)
    bundle = source.bundle(SOURCE)
    lines = ended([json.dumps(entry) for entry in bundle if entry["kind"] not in ("note", "end")])

    counts, conflicts = imported(Deployment(), lines)

    assert counts["pin.conflicts"] == 2
    assert f"pin:{names['keyed']}" in conflicts
    assert "pin.present" not in counts


def test_a_job_whose_store_keeps_failing_is_failed_on_the_last_delivery() -> None:
    deployment = Deployment()
    seed(deployment)
    started = deployment.service.start_export(OPERATOR, ExportRequest())
    work = deployment.queue.sent[0]

    def broken(key: str, chunks: Iterable[bytes]) -> int:
        raise DependencyUnavailableError("The bucket is unavailable.")

    deployment.bucket.upload = broken  # type: ignore[method-assign]
    with pytest.raises(DependencyUnavailableError):
        deployment.service.run(work)
    deployment.world.clock.advance(3_600)  # the first worker's lease runs out
    assert deployment.service.run(work, give_up=True) is JobAction.FAILED
    job = deployment.service.get_job(OPERATOR, started.job_id, BundleJobKind.EXPORT)
    assert job.status is BundleJobStatus.FAILED
    assert "unavailable" in (job.error or "")


@pytest.mark.parametrize(
    ("principal", "refused"),
    [
        (agent("ops", KNOWLEDGE_ADMIN, READ, WRITE), {"required_scope": "memory:admin"}),
        (agent("ops", MEMORY_ADMIN, READ, WRITE), {"required_scope": "knowledge:admin"}),
        (
            agent("ops", KNOWLEDGE_ADMIN, MEMORY_ADMIN, knowledge_base_ids=["kb_01J9Z3K4QW5E6R7T8Y9V0A1B2C"]),
            {"knowledge_base_ids": "a token without a knowledge base allow-list is needed"},
        ),
    ],
    ids=["knowledge-admin-only", "memory-admin-only", "allow-listed"],
)
def test_only_a_tenant_administrator_of_both_halves_moves_bundles(
    principal: Principal, refused: dict[str, str]
) -> None:
    deployment = Deployment()
    with pytest.raises(InsufficientScopeError) as raised:
        deployment.service.start_export(principal, ExportRequest())
    assert raised.value.details == refused
    with pytest.raises(InsufficientScopeError):
        deployment.service.create_import(principal)
    assert deployment.queue.sent == []


def test_jobs_are_found_only_by_their_kind_in_their_tenant() -> None:
    deployment = Deployment()
    started = deployment.service.start_export(OPERATOR, ExportRequest())
    stranger = OPERATOR.model_copy(update={"tenant_id": TARGET})
    with pytest.raises(ResourceUnavailableError):
        deployment.service.get_job(stranger, started.job_id, BundleJobKind.EXPORT)
    with pytest.raises(RequestValidationError):
        deployment.service.get_job(OPERATOR, started.job_id, BundleJobKind.IMPORT)
    with pytest.raises(ResourceUnavailableError):
        deployment.service.start_export(
            OPERATOR, ExportRequest(knowledge_base_ids=["kb_01J9Z3K4QW5E6R7T8Y9V0A1B2C"])
        )


def test_without_a_bucket_or_a_queue_exports_are_unavailable() -> None:
    deployment = Deployment()
    bare = BundleService(
        deployment.store,
        None,
        None,
        deployment.world.clock,
        vectors=lambda: None,
        chunker=lambda: Chunker(max_tokens=64),
    )
    with pytest.raises(DependencyUnavailableError):
        bare.start_export(OPERATOR, ExportRequest())
    with pytest.raises(DependencyUnavailableError):
        bare.create_import(OPERATOR)


def test_an_import_out_of_time_hands_on_and_the_next_step_goes_on_from_its_checkpoint() -> None:
    source, target = Deployment(), Deployment()
    seed(source)
    body = "".join(source.service.bundle_lines(SOURCE, BundleSelection())).encode()
    operator = OPERATOR.model_copy(update={"tenant_id": TARGET})
    created = target.service.create_import(operator)
    target.bucket.objects[f"bundles/{TARGET}/{created.job_id}.jsonl"] = body
    target.service.start_import(operator, created.job_id)
    applied: list[int] = []
    original = target.service._restore

    def counted(tenant_id: str, document: Any) -> Any:
        applied.append(1)
        return original(tenant_id, document)

    target.service._restore = counted  # type: ignore[method-assign]
    budget = iter([1.0, 1.0, 1.0, 0.0])  # out of time after the fourth line
    first = target.service.run(target.queue.sent.pop(), seconds_left=lambda: next(budget, 0.0))

    paused = target.service.get_job(operator, created.job_id, BundleJobKind.IMPORT)
    assert first is JobAction.PAUSED
    assert paused.status is BundleJobStatus.QUEUED
    assert sum(paused.counts.values()) == 3  # header, then three records
    assert len(target.queue.sent) == 1

    assert target.run_all() == [JobAction.IMPORTED]

    done = target.service.get_job(operator, created.job_id, BundleJobKind.IMPORT)
    assert done.status is BundleJobStatus.SUCCEEDED
    assert done.counts == {"base.imported": 2, "item.imported": 3, "note.imported": 5, "pin.imported": 2}
    assert done.bytes == len(body)
    assert len(applied) == 12  # every record restored once: the second step skipped what the first did
    assert records(target.bundle(TARGET)) == records(source.bundle(SOURCE))
