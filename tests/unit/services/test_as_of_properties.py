"""``as_of`` as a property, on the embedded note indexes: for random note histories (remember,
revise, supersede, forget soft / redact / hard, restore, rescope, expiry, pin, unpin), the answers
``as_of=t`` of ``search_memory`` and ``recall_context`` equal the live answers at ``t`` less what
may not be shown today (``tests.support.as_of_history``), for the owner and for a reader.

``make test`` runs a fast budget; ``make fuzz`` a long one (``tests/support/fuzzing.py``). The same
property runs on a real OpenSearch node in ``tests/integration/test_as_of_opensearch.py``.
"""

from __future__ import annotations

from hypothesis import HealthCheck, event, given, settings

from tests.support.as_of_history import OWNER, READER, HistoryRun, Op, operations
from tests.support.fuzzing import budget
from tests.unit.services.memory_world import MemoryWorld


@settings(
    max_examples=budget(300, 3_000),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(history=operations())
def test_as_of_random_histories_equal_their_replay(history: list[Op]) -> None:
    run = HistoryRun(MemoryWorld())
    run.play(history)
    final = run.reads(OWNER)
    for moment, at in enumerate(run.moments):
        for who, principal in (("owner", OWNER), ("reader", READER)):
            answered = run.reads(principal, as_of=at)
            assert answered == run.expected(moment, who, principal), (who, moment)
            if who == "owner" and answered.current and answered.current != final.current:
                event("a moment answered other notes or versions than now")
            if who == "owner" and any(pinned for _, _, pinned in answered.pack):
                event("a moment's pack held a pin")
