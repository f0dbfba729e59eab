"""A ranked ``search_knowledge`` query ``as_of`` a moment (DESIGN §11), on the embedded indexes: an
item written three times answers, as of each moment, the revision current then; and, as a property
over random item histories (create, revise, roll back, archive, base off and on, index syncs
delivered late or reversed), the items and revisions found ``as_of=t`` are the replay of the
history up to ``t`` under today's authorization (``tests.support.knowledge_history``).

``make test`` runs a fast budget; ``make fuzz`` a long one. The same property runs on a real
OpenSearch node in ``tests/integration/test_as_of_ranked_opensearch.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from hypothesis import HealthCheck, event, given, settings

from knowledge.domain.changes import ChangeKind, StoreChange
from knowledge.domain.models import BaseStatus, Scope, Source
from knowledge.domain.retrieval.chunking import Chunker
from knowledge.domain.retrieval.index_work import PART_TARGET_CHARS, IndexWork
from knowledge.services.indexing import IndexingService
from tests.support.fuzzing import budget
from tests.support.knowledge_history import (
    OWNER,
    READER,
    WORD,
    HistoryRun,
    KnowledgeWorld,
    Op,
    operations,
)
from tests.unit.services.conftest import TENANT


def test_as_of_ranked_query_three_revisions_finds_the_revision_current_then() -> None:
    world = KnowledgeWorld()
    store = world.store
    base = store.create_base(TENANT, name="Handbook", owner_id="alice", scope=Scope.TENANT, team_id=None)
    world.clock.advance(1)
    item, first = store.create_item(
        TENANT,
        base.knowledge_base_id,
        title="Runbook",
        content=f"{WORD} restart the pump v1",
        source=Source(),
        external_id=None,
        publish=True,
    )
    world.indexing.sync_item(TENANT, item.knowledge_item_id, last_known_version=item.version)
    moments = [(world.clock.now, first.knowledge_revision_id)]
    for content in (f"{WORD} drain the tank v2", f"{WORD} call the operator v3"):
        world.clock.advance(1)
        item, revision = store.add_revision(
            TENANT,
            item.knowledge_item_id,
            content=content,
            title=None,
            source=None,
            publish=True,
            expected_version=item.version,
        )
        world.indexing.sync_item(TENANT, item.knowledge_item_id, last_known_version=item.version)
        moments.append((world.clock.now, revision.knowledge_revision_id))
    world.clock.advance(1)
    before = moments[0][0] - timedelta(seconds=1)

    for at, revision_id in moments:
        for mode in ("lexical", "semantic", "hybrid"):
            answer = world.query(READER, as_of=at, mode=mode)
            assert [r.knowledge_revision_id for r in answer.results] == [revision_id], (mode, at)
            assert answer.as_of == at
    assert world.query(READER, as_of=before).results == []
    assert [r.knowledge_revision_id for r in world.query(READER).results] == [moments[-1][1]]
    assert world.query(READER).as_of is None
    # Words of an older revision only: found as of its moment, not later.
    old = world.query(READER, as_of=moments[0][0], mode="lexical")
    assert old.results[0].excerpt.count("pump") == 1
    later = world.query(READER, as_of=moments[2][0], mode="lexical")
    assert "pump" not in later.results[0].excerpt


def test_as_of_ranked_query_inactive_base_today_hides_its_past() -> None:
    world = KnowledgeWorld()
    store = world.store
    base = store.create_base(TENANT, name="Handbook", owner_id="alice", scope=Scope.TENANT, team_id=None)
    world.clock.advance(1)
    item, _ = store.create_item(
        TENANT,
        base.knowledge_base_id,
        title="Runbook",
        content=f"{WORD} once",
        source=Source(),
        external_id=None,
        publish=True,
    )
    world.indexing.sync_item(TENANT, item.knowledge_item_id, last_known_version=item.version)
    then = world.clock.now
    world.clock.advance(1)
    store.update_base(
        TENANT, base.knowledge_base_id, expected_version=base.version, status=BaseStatus.INACTIVE
    )
    world.clock.advance(1)

    assert world.query(OWNER, as_of=then).results == []


@settings(max_examples=budget(150, 1_500), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(history=operations())
def test_as_of_ranked_random_histories_equal_their_replay(history: list[Op]) -> None:
    run = HistoryRun(KnowledgeWorld())
    run.play(history)
    final = run.world.found(OWNER)
    for moment, at in enumerate(run.moments):
        for principal in (OWNER, READER):
            expected = run.expected(moment, principal)
            for mode in ("lexical", "semantic"):
                assert run.world.found(principal, as_of=at, mode=mode) == expected, (moment, mode)
            if principal is OWNER and expected != final:
                event("a moment answered other items or revisions than now")


def _three_revisions(world: KnowledgeWorld, *, sync: bool) -> tuple[str, list[tuple[datetime, str, int]]]:
    """An item published three times, one second apart: its id, and (moment, revision, item version)
    of each write."""
    store = world.store
    base = store.create_base(TENANT, name="Handbook", owner_id="alice", scope=Scope.TENANT, team_id=None)
    world.clock.advance(1)
    item, revision = store.create_item(
        TENANT,
        base.knowledge_base_id,
        title="Runbook",
        content=f"{WORD} one",
        source=Source(),
        external_id=None,
        publish=True,
    )
    written = [(world.clock.now, revision.knowledge_revision_id, item.version)]
    for content in (f"{WORD} two", f"{WORD} three"):
        if sync:
            world.indexing.sync_item(TENANT, item.knowledge_item_id, last_known_version=item.version)
        world.clock.advance(1)
        item, revision = store.add_revision(
            TENANT,
            item.knowledge_item_id,
            content=content,
            title=None,
            source=None,
            publish=True,
            expected_version=item.version,
        )
        written.append((world.clock.now, revision.knowledge_revision_id, item.version))
    world.clock.advance(1)
    return item.knowledge_item_id, written


def test_sync_history_change_writes_only_its_transition() -> None:
    world = KnowledgeWorld()
    item_id, written = _three_revisions(world, sync=True)

    # The third write closes the second state and opens its own: two entries, not three.
    assert world.indexing.sync_history(TENANT, item_id, since_version=written[2][2]) == 2
    assert world.indexing.sync_history(TENANT, "ki_absent", since_version=1) == 0
    without = IndexingService(
        world.store, world.index, world.embedder, Chunker(max_tokens=64, overlap_tokens=8)
    )
    assert without.sync_history(TENANT, item_id, since_version=1) == 0
    for at, revision_id, _ in written:
        assert world.found(READER, as_of=at) == {(item_id, revision_id)}


def test_apply_item_inserted_past_version_one_records_its_whole_history() -> None:
    world = KnowledgeWorld()
    item_id, written = _three_revisions(world, sync=False)
    item = world.store.get_item(TENANT, item_id)
    assert item is not None

    world.indexing.apply(StoreChange(ChangeKind.INSERT, None, item))

    for at, revision_id, _ in written:
        assert world.found(READER, as_of=at) == {(item_id, revision_id)}


class _SentWork:
    def __init__(self) -> None:
        self.sent: list[IndexWork] = []

    def send(self, work: Sequence[IndexWork]) -> None:
        self.sent.extend(work)


def test_with_a_work_queue_a_revision_of_several_parts_enters_the_history_with_its_last_part() -> None:
    world = KnowledgeWorld()
    queue = _SentWork()
    chunker = Chunker(max_tokens=64, overlap_tokens=8)
    queued = IndexingService(
        world.store, world.index, world.embedder, chunker, work=queue, history=world.history
    )
    base = world.store.create_base(TENANT, name="Log", owner_id="alice", scope=Scope.TENANT, team_id=None)
    world.clock.advance(1)
    small, _ = world.store.create_item(
        TENANT,
        base.knowledge_base_id,
        title="Small",
        content=f"{WORD} small",
        source=Source(),
        external_id=None,
        publish=True,
    )
    large, _ = world.store.create_item(
        TENANT,
        base.knowledge_base_id,
        title="Large",
        content=f"{WORD} " + "x " * (PART_TARGET_CHARS + 10),
        source=Source(),
        external_id=None,
        publish=True,
    )

    assert queued.sync_history(TENANT, large.knowledge_item_id, since_version=1) == 0
    assert queued.sync_history(TENANT, small.knowledge_item_id, since_version=1) == 1
    queued.sync_item(TENANT, large.knowledge_item_id, last_known_version=large.version)
    world.clock.advance(1)
    first = world.clock.now
    assert world.found(READER, as_of=first) == {(small.knowledge_item_id, small.current_revision_id)}

    while queue.sent:  # the work consumer, one part after another; the last one records the history
        queued.index_part(queue.sent.pop(0))

    both = {
        (small.knowledge_item_id, small.current_revision_id),
        (large.knowledge_item_id, large.current_revision_id),
    }
    assert world.found(READER, as_of=first) == both
    world.clock.advance(1)
    revised, _ = world.store.add_revision(
        TENANT,
        large.knowledge_item_id,
        content=f"{WORD} short now",
        title=None,
        source=None,
        publish=True,
        expected_version=large.version,
    )
    world.clock.advance(1)
    # The next state closes the large revision's entry from the stream: as of then it is the short one.
    queued.sync_item(TENANT, large.knowledge_item_id, last_known_version=revised.version)
    assert world.found(READER, as_of=world.clock.now) == {
        (small.knowledge_item_id, small.current_revision_id),
        (large.knowledge_item_id, revised.current_revision_id),
    }
    assert world.found(READER, as_of=first) == both
