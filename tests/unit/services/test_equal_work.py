"""Absent and invisible resources take the same store calls and the same answer, so neither the body
nor the time to answer tells a caller that something it may not see exists (docs/reliability.md)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import pytest

from knowledge.adapters.embedded.passages import EmbeddedIndex
from knowledge.adapters.in_process.store import InProcessKnowledgeStore
from knowledge.adapters.runtime_switch import StaticRuntimeSwitch
from knowledge.api.error_envelopes import error_envelope
from knowledge.contract.memory import RememberArguments
from knowledge.contract.search import SearchKnowledgeArguments
from knowledge.domain.models import Scope, Source
from knowledge.errors import KnowledgeError
from knowledge.ports import KnowledgeStore
from knowledge.services.curation import CurationService
from knowledge.services.indexing import IndexingService
from knowledge.services.notes import NoteService
from knowledge.services.search import SearchService
from tests.support.embedding import HashingEmbedder
from tests.unit.services.conftest import MAX_CONTENT_CHARS, READ, TENANT, caller
from tests.unit.services.memory_world import ManualClock, agent

ABSENT_ITEM = "ki_01M8MSRAQ70QQ1SJHWP0AMCDPZ"
ABSENT_NOTE = "nt_01M8MSRAQ70QQ1SJHWP0AMCDPZ"
READER = caller("agent-7", READ)


class CountingStore:
    """The in-memory store, recording the name of every store method called through it."""

    def __init__(self, inner: InProcessKnowledgeStore) -> None:
        self.inner = inner
        self.calls: list[str] = []

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self.inner, name)
        if not callable(attribute):
            return attribute

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls.append(name)
            return attribute(*args, **kwargs)

        return counted

    def measure(self, call: Callable[[], object]) -> tuple[list[str], str]:
        """The store calls ``call`` makes and the JSON body its error answers, byte for byte."""
        self.calls.clear()
        with pytest.raises(KnowledgeError) as raised:
            call()
        _, body = error_envelope(raised.value)
        return list(self.calls), body.model_dump_json()


@pytest.fixture
def counting(store: InProcessKnowledgeStore) -> CountingStore:
    return CountingStore(store)


def _hidden_item(store: InProcessKnowledgeStore) -> str:
    """A published, indexed item in a private base of another owner: it exists, READER cannot see it."""
    base = store.create_base(TENANT, name="Private", owner_id="owner-1", scope=Scope.PRIVATE, team_id=None)
    item, _ = store.create_item(
        TENANT,
        base.knowledge_base_id,
        title="Secret",
        content="The zephyr plan.",
        source=Source(),
        external_id=None,
        publish=True,
    )
    return item.knowledge_item_id


def _draft_item(store: InProcessKnowledgeStore) -> str:
    """A draft in a base READER can see: it exists, READER may not read it."""
    base = store.create_base(TENANT, name="Open", owner_id="owner-1", scope=Scope.TENANT, team_id=None)
    item, _ = store.create_item(
        TENANT,
        base.knowledge_base_id,
        title="Draft",
        content="Not yet.",
        source=Source(),
        external_id=None,
        publish=False,
    )
    return item.knowledge_item_id


def test_addressed_read_absent_invisible_and_draft_take_equal_store_calls_and_equal_bodies(
    store: InProcessKnowledgeStore, counting: CountingStore, index: EmbeddedIndex, embedder: HashingEmbedder
) -> None:
    search = SearchService(cast(KnowledgeStore, counting), index, embedder, StaticRuntimeSwitch(True))
    hidden, draft = _hidden_item(store), _draft_item(store)

    def read(item_id: str) -> Callable[[], object]:
        return lambda: search.search_knowledge(READER, SearchKnowledgeArguments(knowledge_item_id=item_id))

    absent_calls, absent_body = counting.measure(read(ABSENT_ITEM))
    hidden_calls, hidden_body = counting.measure(read(hidden))
    draft_calls, draft_body = counting.measure(read(draft))

    assert absent_calls == hidden_calls == draft_calls == ["get_item", "get_base"]
    assert absent_body == hidden_body == draft_body
    assert '"code":"knowledge_resource_unavailable"' in absent_body


def test_get_item_absent_and_invisible_take_equal_store_calls_and_equal_bodies(
    store: InProcessKnowledgeStore, counting: CountingStore, indexing: IndexingService
) -> None:
    curation = CurationService(
        cast(KnowledgeStore, counting),
        indexing,
        StaticRuntimeSwitch(True),
        max_content_chars=MAX_CONTENT_CHARS,
    )
    hidden = _hidden_item(store)

    absent_calls, absent_body = counting.measure(lambda: curation.get_item(READER, ABSENT_ITEM))
    hidden_calls, hidden_body = counting.measure(lambda: curation.get_item(READER, hidden))
    revisions_calls, revisions_body = counting.measure(
        lambda: curation.list_revisions(READER, hidden, limit=10, next_token=None)
    )

    assert absent_calls == hidden_calls == revisions_calls == ["get_item", "get_base"]
    assert absent_body == hidden_body == revisions_body


def test_note_read_absent_and_invisible_take_equal_store_calls_and_equal_bodies() -> None:
    clock = ManualClock()
    inner = InProcessKnowledgeStore(clock=clock)
    counting = CountingStore(inner)
    notes = NoteService(cast(KnowledgeStore, counting), lambda texts: None, StaticRuntimeSwitch(True), clock)
    private = notes.remember(agent("alice"), RememberArguments(content="Alice's locker code is 4711."))
    hidden = private.response.note.note_id

    absent_calls, absent_body = counting.measure(lambda: notes.get_note(agent("bob"), ABSENT_NOTE))
    hidden_calls, hidden_body = counting.measure(lambda: notes.get_note(agent("bob"), hidden))

    assert absent_calls == hidden_calls == ["get_note"]
    assert absent_body == hidden_body
    assert '"code":"memory_unavailable"' in absent_body
