"""The ``as_of`` property (``tests/unit/services/test_as_of_properties.py``) on a real OpenSearch
node: the note index and the note history index are ``OpenSearchNoteIndex`` instances (fresh ones
per history), the store and services as in the unit suite. Fewer histories, each a few seconds."""

from __future__ import annotations

import uuid
from collections.abc import Callable

from hypothesis import HealthCheck, given, settings

from knowledge.adapters.opensearch.engine import build_opensearch_client
from knowledge.adapters.opensearch.notes import OpenSearchNoteIndex
from knowledge.ports import NoteIndex
from tests.support.as_of_history import OWNER, READER, HistoryRun, Op, operations
from tests.support.fuzzing import budget
from tests.unit.services.memory_world import MemoryWorld


def test_as_of_random_histories_on_opensearch_equal_their_replay(opensearch_url: str) -> None:
    client = build_opensearch_client(opensearch_url, auth="none", region="us-east-1")
    created: list[str] = []

    def factory(history: bool) -> Callable[[], NoteIndex]:
        def build() -> NoteIndex:
            name = f"as-of-{'history' if history else 'notes'}-{uuid.uuid4().hex[:12]}"
            created.append(name)
            return OpenSearchNoteIndex(client, name, refresh=True, history=history)

        return build

    @settings(
        max_examples=budget(30, 200),
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )
    @given(history=operations())
    def replayed(history: list[Op]) -> None:
        world = MemoryWorld(index_factory=factory(False), history_factory=factory(True))
        run = HistoryRun(world)
        try:
            run.play(history)
            for moment, at in enumerate(run.moments):
                for who, principal in (("owner", OWNER), ("reader", READER)):
                    answered = run.reads(principal, as_of=at)
                    assert answered == run.expected(moment, who, principal), (who, moment)
        finally:
            while created:
                client.indices.delete(index=created.pop(), ignore_unavailable=True)

    replayed()
