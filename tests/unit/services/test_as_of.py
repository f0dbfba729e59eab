"""``as_of`` (DESIGN §10 "Time"): an item and a keyed note written three times answer, as of each
moment, the revision and the version current then; a hard-forgotten note is absent at every
moment; archived items and rescoped notes follow today's authorization; and a moment without a zone
or in the future is ``as_of_invalid``."""

from __future__ import annotations

from datetime import timedelta

import pytest
from pydantic import ValidationError

from knowledge.adapters.embedded.passages import EmbeddedIndex
from knowledge.adapters.in_process.store import InProcessKnowledgeStore
from knowledge.adapters.runtime_switch import StaticRuntimeSwitch
from knowledge.api.error_envelopes import error_envelope
from knowledge.contract.search import KnowledgeReadResponse, SearchKnowledgeArguments
from knowledge.domain.models import Scope, Source
from knowledge.errors import AsOfInvalidError, InvalidRequestError, ResourceUnavailableError
from knowledge.services.search import SearchService
from tests.support.embedding import HashingEmbedder
from tests.support.store import TickingClock
from tests.unit.services.conftest import READ, TENANT, caller
from tests.unit.services.memory_world import READ as READ_MEMORY
from tests.unit.services.memory_world import SHARE as SHARE_MEMORY
from tests.unit.services.memory_world import WRITE as WRITE_MEMORY
from tests.unit.services.memory_world import MemoryWorld, agent

READER = caller("agent-7", READ)


@pytest.fixture
def search(
    store: InProcessKnowledgeStore, index: EmbeddedIndex, embedder: HashingEmbedder, clock: TickingClock
) -> SearchService:
    return SearchService(store, index, embedder, StaticRuntimeSwitch(True), clock)


def _read(search: SearchService, item_id: str, **arguments: object) -> KnowledgeReadResponse:
    answer = search.search_knowledge(
        READER,
        SearchKnowledgeArguments(knowledge_item_id=item_id, **arguments),  # type: ignore[arg-type]
    )
    assert isinstance(answer, KnowledgeReadResponse)
    return answer


def test_as_of_item_revisions_each_moment_reads_the_revision_current_then(
    search: SearchService, store: InProcessKnowledgeStore
) -> None:
    base = store.create_base(TENANT, name="Handbook", owner_id="owner-1", scope=Scope.TENANT, team_id=None)
    item, _ = store.create_item(
        TENANT,
        base.knowledge_base_id,
        title="Runbook",
        content="v1 content",
        source=Source(),
        external_id=None,
        publish=True,
    )
    moments = [item.updated_at]
    for content in ("v2 content", "v3 content"):
        item, _ = store.add_revision(
            TENANT,
            item.knowledge_item_id,
            content=content,
            title=None,
            source=None,
            publish=True,
            expected_version=item.version,
        )
        moments.append(item.updated_at)
    draft, _ = store.add_revision(
        TENANT,
        item.knowledge_item_id,
        content="v4 draft",
        title=None,
        source=None,
        publish=False,
        expected_version=item.version,
    )
    archived = store.archive_item(TENANT, item.knowledge_item_id, expected_version=draft.version)

    answers = [_read(search, item.knowledge_item_id, as_of=moment) for moment in moments]
    between = _read(search, item.knowledge_item_id, as_of=moments[1] + (moments[2] - moments[1]) / 2)
    after_draft = _read(search, item.knowledge_item_id, as_of=draft.updated_at)

    assert [answer.content for answer in answers] == ["v1 content", "v2 content", "v3 content"]
    assert [answer.as_of for answer in answers] == moments
    assert all(answer.is_current for answer in answers)
    assert (between.content, after_draft.content) == ("v2 content", "v3 content")
    first = answers[0].knowledge_revision_id
    named = _read(search, item.knowledge_item_id, knowledge_revision_id=first, as_of=moments[2])
    assert (named.content, named.is_current, named.current_revision_id) == (
        "v1 content",
        False,
        answers[2].knowledge_revision_id,
    )
    for unavailable in (moments[0] - timedelta(seconds=1), archived.updated_at):
        with pytest.raises(ResourceUnavailableError):
            _read(search, item.knowledge_item_id, as_of=unavailable)
    with pytest.raises(ResourceUnavailableError):  # not published yet then
        _read(
            search,
            item.knowledge_item_id,
            knowledge_revision_id=answers[2].knowledge_revision_id,
            as_of=moments[1],
        )
    with pytest.raises(ResourceUnavailableError):  # archived now, and no as_of
        _read(search, item.knowledge_item_id)


def test_as_of_keyed_note_versions_each_moment_answer_the_version_then_and_a_hard_forgotten_note_never() -> (
    None
):
    world = MemoryWorld()
    owner = agent("alice")
    moments = []
    for version in ("v1", "v2", "v3"):
        world.remember(owner, f"deploy window is {version} of the plan", semantic_key="deploy-window")
        moments.append(world.clock.now)
        world.clock.advance(10)
    doomed = world.remember(owner, "deploy window secret backup plan").note.note_id
    world.clock.advance(10)
    moments.append(world.clock.now)
    world.forget(owner, doomed, "hard")
    world.clock.advance(10)

    searched = [world.search(owner, "deploy window plan", as_of=moment) for moment in moments]
    recalled = [world.recall(owner, as_of=moment) for moment in moments]

    assert [[hit.content for hit in answer.results] for answer in searched] == [
        ["deploy window is v1 of the plan"],
        ["deploy window is v2 of the plan"],
        ["deploy window is v3 of the plan"],
        ["deploy window is v3 of the plan"],
    ]
    assert [[item.version for item in pack.items] for pack in recalled] == [[1], [2], [3], [3]]
    assert all(doomed not in {item.note_id for item in pack.items} for pack in recalled)
    assert [answer.as_of for answer in searched] == moments


def test_as_of_note_rescoped_private_is_hidden_from_other_callers_at_every_moment() -> None:
    world = MemoryWorld()
    owner = agent("alice", READ_MEMORY, WRITE_MEMORY, SHARE_MEMORY)
    reader = agent("bob")
    note = world.remember(owner, "the zephyr release train leaves on fridays", scope="tenant").note
    shared_at = world.clock.now
    world.clock.advance(5)
    world.remember(owner, note.content, memory_id=note.note_id, scope="private")

    assert world.found(reader, "zephyr release", as_of=shared_at) == []
    assert world.found(owner, "zephyr release", as_of=shared_at) == [note.content]


ITEM_ID = "ki_01J9Z3K4QW5E6R7T8Y9V0A1B2C"


@pytest.mark.parametrize("shift", [None, timedelta(days=400)], ids=["naive", "future"])
def test_as_of_without_zone_or_in_future_raises_as_of_invalid(
    search: SearchService, clock: TickingClock, shift: timedelta | None
) -> None:
    world = MemoryWorld()
    owner = agent("alice")
    remembered = world.clock.now.replace(tzinfo=None) if shift is None else world.clock.now + shift
    read = clock().replace(tzinfo=None) if shift is None else clock() + shift
    calls = [
        lambda: world.search(owner, "anything", as_of=remembered),
        lambda: world.recall(owner, as_of=remembered),
        lambda: search.search_knowledge(
            READER, SearchKnowledgeArguments(knowledge_item_id=ITEM_ID, as_of=read)
        ),
    ]
    for call in calls:
        with pytest.raises(AsOfInvalidError) as raised:
            call()
        status, body = error_envelope(raised.value)
        assert (status, body.error.code) == (400, "as_of_invalid")


def test_as_of_query_without_history_index_raises_invalid_request(
    search: SearchService, clock: TickingClock
) -> None:
    with pytest.raises(InvalidRequestError) as raised:
        search.search_knowledge(READER, SearchKnowledgeArguments(query="zephyr", as_of=clock()))
    assert "as_of" in raised.value.details


@pytest.mark.parametrize("value", [1_700_000_000, "yesterday", True])
def test_as_of_that_is_not_iso_text_raises_validation_error(value: object) -> None:
    with pytest.raises(ValidationError):
        SearchKnowledgeArguments.model_validate(
            {"knowledge_item_id": "ki_01J9Z3K4QW5E6R7T8Y9V0A1B2C", "as_of": value}
        )
