"""The store contract under concurrent writers: of the writers conditioned on one version, exactly
one wins, and every loser learns the winner's version."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from knowledge.domain.models import KnowledgeBase, KnowledgeItem, Source
from knowledge.errors import ConflictError
from knowledge.ports import KnowledgeStore
from tests.integration.store_contract.conftest import TENANT

WRITERS = 8


def _race(calls: list[Callable[[], Any]]) -> tuple[list[Any], list[ConflictError]]:
    """Run every call at once; the results, and the ``ConflictError`` of every loser."""

    def run(call: Callable[[], Any]) -> Any:
        try:
            return call()
        except ConflictError as error:
            return error

    with ThreadPoolExecutor(max_workers=len(calls)) as pool:
        outcomes = list(pool.map(run, calls))
    losers = [outcome for outcome in outcomes if isinstance(outcome, ConflictError)]
    return [outcome for outcome in outcomes if not isinstance(outcome, ConflictError)], losers


def test_add_revision_writers_of_one_version_one_wins_and_losers_learn_its_version(
    store: KnowledgeStore, base: KnowledgeBase
) -> None:
    item, first = store.create_item(
        TENANT,
        base.knowledge_base_id,
        title="Contended",
        content="draft",
        source=Source(),
        external_id=None,
        publish=True,
    )

    def write(n: int) -> Callable[[], KnowledgeItem]:
        return lambda: store.add_revision(
            TENANT,
            item.knowledge_item_id,
            content=f"writer {n}",
            title=None,
            source=None,
            publish=True,
            expected_version=item.version,
        )[0]

    winners, losers = _race([write(n) for n in range(WRITERS)])

    assert len(winners) == 1
    assert len(losers) == WRITERS - 1
    assert {loser.current_version for loser in losers} == {item.version + 1}
    assert store.get_item(TENANT, item.knowledge_item_id) == winners[0]
    revisions = store.list_revisions(TENANT, item.knowledge_item_id, limit=50, next_token=None).entries
    assert [revision.knowledge_revision_id for revision in revisions] == [
        winners[0].current_revision_id,
        first.knowledge_revision_id,
    ]


def test_create_item_creators_of_one_external_id_create_one_item(
    store: KnowledgeStore, base: KnowledgeBase
) -> None:
    def create() -> KnowledgeItem:
        return store.create_item(
            TENANT,
            base.knowledge_base_id,
            title="Shared",
            content="same document",
            source=Source(),
            external_id="doc-42",
            publish=True,
        )[0]

    winners, losers = _race([create for _ in range(WRITERS)])

    assert (len(winners), len(losers)) == (1, WRITERS - 1)
    assert {loser.current_version for loser in losers} == {1}
    assert store.find_item_by_external_id(TENANT, base.knowledge_base_id, "doc-42") == winners[0]
    assert store.list_items(TENANT, base.knowledge_base_id, limit=20, next_token=None).entries == winners
