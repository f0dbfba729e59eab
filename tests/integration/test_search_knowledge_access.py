"""Who sees what through ``POST /v1/tools/search_knowledge`` (DESIGN §5, visibility): tenants, scopes,
the token's base allow-list, narrowing, inactive bases and archived items, by search and by id."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from knowledge.domain.ids import KB_PREFIX, shape_of
from knowledge.domain.models import BaseStatus, Scope, Source
from tests.support.index import ADAPTERS
from tests.support.rest import SearchWorld, engine_world, error_body, result_items

SECRET = "The quarterly zephyr migration plan moves billing onto the new ledger service."


@pytest.fixture(params=ADAPTERS)
def world(request: pytest.FixtureRequest, table: Any) -> Iterator[SearchWorld]:
    """A world on each engine: the embedded index, and OpenSearch on the real node."""
    url = request.getfixturevalue("opensearch_url") if request.param == "opensearch" else None
    with engine_world(request.param, url) as built:
        yield built


@pytest.mark.parametrize("mode", ["lexical", "semantic", "hybrid", "rrf"])
def test_search_knowledge_other_tenant_content_is_not_found_by_search(world: SearchWorld, mode: str) -> None:
    foreign, _ = world.publish(world.base("globex"), "Zephyr migration", SECRET)
    world.publish(world.base("acme"), "Cafeteria menu", "Soup of the day is tomato.")

    as_acme = result_items(world.search(world.token("acme"), "zephyr migration ledger", mode=mode))
    as_globex = result_items(world.search(world.token("globex"), "zephyr migration ledger", mode=mode))

    assert foreign.knowledge_item_id not in as_acme
    assert as_globex == [foreign.knowledge_item_id]


def test_search_knowledge_other_tenant_item_is_not_readable_by_guessed_id(world: SearchWorld) -> None:
    item, revision = world.publish(world.base("globex"), "Zephyr migration", SECRET)
    reader = world.token("acme", scopes=("knowledge:read", "knowledge:admin"))

    by_item = world.read(reader, item.knowledge_item_id)
    by_revision = world.read(
        reader, item.knowledge_item_id, knowledge_revision_id=revision.knowledge_revision_id
    )

    error_body(404, "knowledge_resource_unavailable", by_item)
    error_body(404, "knowledge_resource_unavailable", by_revision)


@pytest.mark.parametrize(
    ("scope", "team_id", "owner_id", "subject_id", "team_ids", "visible"),
    [
        (Scope.TENANT, None, "owner-1", "agent-7", (), True),
        (Scope.TEAM, "platform", "owner-1", "agent-7", ("platform",), True),
        (Scope.TEAM, "platform", "owner-1", "agent-7", ("billing",), False),
        (Scope.TEAM, "platform", "agent-7", "agent-7", (), True),
        (Scope.PRIVATE, None, "agent-7", "agent-7", (), True),
        (Scope.PRIVATE, None, "owner-1", "agent-7", ("platform",), False),
    ],
)
def test_search_knowledge_scope_decides_visibility_by_search_and_read(
    world: SearchWorld,
    scope: Scope,
    team_id: str | None,
    owner_id: str,
    subject_id: str,
    team_ids: tuple[str, ...],
    visible: bool,
) -> None:
    item, _ = world.publish(world.base(scope=scope, team_id=team_id, owner_id=owner_id), "Zephyr", SECRET)
    reader = world.token(subject_id=subject_id, team_ids=team_ids)

    found = result_items(world.search(reader, "zephyr migration"))
    read = world.read(reader, item.knowledge_item_id)

    assert found == ([item.knowledge_item_id] if visible else [])
    assert read.status == (200 if visible else 404)


def test_search_knowledge_allow_list_limits_bases(world: SearchWorld) -> None:
    allowed, denied = world.base(name="Allowed"), world.base(name="Denied")
    inside, _ = world.publish(allowed, "Zephyr inside", SECRET)
    outside, _ = world.publish(denied, "Zephyr outside", SECRET)
    reader = world.token(knowledge_base_ids=[allowed.knowledge_base_id])

    found = result_items(world.search(reader, "zephyr migration"))
    read_outside = world.read(reader, outside.knowledge_item_id)
    narrowed = world.call({"query": "zephyr", "knowledge_base_id": denied.knowledge_base_id}, reader)

    assert found == [inside.knowledge_item_id]
    error_body(404, "knowledge_resource_unavailable", read_outside)
    error_body(404, "knowledge_resource_unavailable", narrowed)


def test_search_knowledge_narrowing_to_visible_base_keeps_only_its_items(world: SearchWorld) -> None:
    first, second = world.base(name="First"), world.base(name="Second")
    wanted, _ = world.publish(first, "Zephyr one", SECRET)
    world.publish(second, "Zephyr two", SECRET)
    reader = world.token()

    reply = world.search(reader, "zephyr migration", knowledge_base_id=first.knowledge_base_id)

    assert result_items(reply) == [wanted.knowledge_item_id]


def test_search_knowledge_narrowing_to_unknown_base_returns_resource_unavailable(world: SearchWorld) -> None:
    reply = world.call(
        {"query": "zephyr", "knowledge_base_id": "kb_01JDQ8ZC7N3V5W9X2Y4Z6A8B0C"}, world.token()
    )

    error_body(404, "knowledge_resource_unavailable", reply)


@pytest.mark.parametrize("base_id", ["httpx", "not-a-base", "kb_"])
def test_search_knowledge_narrowing_to_a_malformed_base_id_returns_validation_error(
    world: SearchWorld, base_id: str
) -> None:
    reply = world.call({"query": "timeout", "knowledge_base_id": base_id}, world.token())

    error = error_body(400, "validation_error", reply)
    assert error["details"]["fields"] == [{"field": "knowledge_base_id", "problem": shape_of(KB_PREFIX)}]


def test_search_knowledge_narrowing_to_private_base_of_other_user_returns_resource_unavailable(
    world: SearchWorld,
) -> None:
    private = world.base(scope=Scope.PRIVATE, owner_id="someone-else")
    world.publish(private, "Zephyr", SECRET)

    reply = world.call({"query": "zephyr", "knowledge_base_id": private.knowledge_base_id}, world.token())

    error_body(404, "knowledge_resource_unavailable", reply)


def test_search_knowledge_inactive_base_disappears_from_search_and_read(world: SearchWorld) -> None:
    base = world.base()
    item, _ = world.publish(base, "Zephyr", SECRET)
    reader = world.token()
    before = result_items(world.search(reader, "zephyr migration"))

    world.store.update_base(
        base.tenant_id, base.knowledge_base_id, expected_version=1, status=BaseStatus.INACTIVE
    )

    assert before == [item.knowledge_item_id]
    assert result_items(world.search(reader, "zephyr migration")) == []
    error_body(404, "knowledge_resource_unavailable", world.read(reader, item.knowledge_item_id))


def test_search_knowledge_archived_item_disappears_from_search_and_read(world: SearchWorld) -> None:
    base = world.base()
    item, revision = world.publish(base, "Zephyr", SECRET)
    reader = world.token()

    world.store.archive_item(base.tenant_id, item.knowledge_item_id, expected_version=item.version)

    assert result_items(world.search(reader, "zephyr migration")) == []
    error_body(404, "knowledge_resource_unavailable", world.read(reader, item.knowledge_item_id))
    pinned = world.read(reader, item.knowledge_item_id, knowledge_revision_id=revision.knowledge_revision_id)
    error_body(404, "knowledge_resource_unavailable", pinned)


def test_search_knowledge_addressed_read_with_wrong_base_returns_resource_unavailable(
    world: SearchWorld,
) -> None:
    home, other = world.base(name="Home"), world.base(name="Other")
    item, _ = world.publish(home, "Zephyr", SECRET)

    reply = world.read(world.token(), item.knowledge_item_id, knowledge_base_id=other.knowledge_base_id)

    error_body(404, "knowledge_resource_unavailable", reply)


def test_search_knowledge_absent_and_unauthorized_ids_answer_identical_bytes(world: SearchWorld) -> None:
    reader_tenant = world.base("acme")
    draft, _ = world.store.create_item(
        "acme",
        reader_tenant.knowledge_base_id,
        title="Draft",
        content=SECRET,
        source=Source(uri="https://docs.example.com/draft"),
        external_id=None,
        publish=False,
    )
    foreign, _ = world.publish(world.base("globex"), "Foreign", SECRET)
    private, _ = world.publish(
        world.base("acme", scope=Scope.PRIVATE, owner_id="someone-else"), "Mine", SECRET
    )
    reader = world.token("acme")

    replies = [
        world.read(reader, item_id)
        for item_id in (
            "ki_01JDQ8ZC7N3V5W9X2Y4Z6A8B0C",  # absent
            foreign.knowledge_item_id,  # another tenant's
            private.knowledge_item_id,  # another user's private base
            draft.knowledge_item_id,  # never published
        )
    ]

    assert {reply.status for reply in replies} == {404}
    assert len({reply.text for reply in replies}) == 1


def test_search_knowledge_absent_and_invisible_items_cost_the_same_dynamodb_calls(world: SearchWorld) -> None:
    hidden, _ = world.publish(world.base(scope=Scope.PRIVATE, owner_id="owner-1"), "Zephyr", SECRET)
    reader = world.token(subject_id="agent-7")
    world.read(reader, hidden.knowledge_item_id)  # warm: the first call builds clients
    operations: list[str] = []

    def record(event_name: str, **_: Any) -> None:
        operations.append(event_name.rsplit(".", 1)[-1])

    world.dynamodb.meta.events.register("before-call.dynamodb", record)
    try:
        absent = world.read(reader, "ki_01M8MSRAQ70QQ1SJHWP0AMCDPZ")
        absent_calls, operations[:] = list(operations), []
        invisible = world.read(reader, hidden.knowledge_item_id)
        invisible_calls = list(operations)
    finally:
        world.dynamodb.meta.events.unregister("before-call.dynamodb", record)

    error_body(404, "knowledge_resource_unavailable", absent)
    assert absent.text == invisible.text
    # The authorizer's token, then the item, then its base (a base no one has for the absent item).
    assert absent_calls == invisible_calls == ["GetItem", "GetItem", "GetItem"]
