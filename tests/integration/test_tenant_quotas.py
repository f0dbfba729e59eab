"""Tenant quotas over the real handlers on moto: one tenant's flood is answered 429 ``rate_limited``
while another tenant keeps being answered; writes have their own, smaller quota."""

from __future__ import annotations

import pytest

from knowledge.adapters.runtime_switch import StaticRuntimeSwitch
from knowledge.bootstrap import build_container, use_container
from knowledge.services.quotas import QuotaService
from knowledge.settings import Settings
from tests.conftest import TABLE_NAME
from tests.support.admin import AdminClient
from tests.support.rest import SearchWorld, error_body, new_world
from tests.support.store import counted_calls

REQUESTS_PER_SECOND = 5
WRITES_PER_SECOND = 2
STORED_ITEMS = 100
WRITE = "knowledge:write"
ADMIN = "knowledge:admin"
READ = "knowledge:read"


class FrozenClock:
    """Epoch seconds that move only when a test moves them."""

    def __init__(self, now: float = 1_800_000_000.25) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> FrozenClock:
    return FrozenClock()


@pytest.fixture
def world(table: object, clock: FrozenClock) -> SearchWorld:
    settings = Settings(
        table_name=TABLE_NAME,
        tenant_requests_per_second=REQUESTS_PER_SECOND,
        tenant_writes_per_second=WRITES_PER_SECOND,
    )
    world = new_world(settings=settings)
    world.container = build_container(
        settings,
        store=world.store,
        index=world.index,
        embedder=world.embedder,
        runtime_switch=StaticRuntimeSwitch(True),
        quotas=QuotaService(
            world.store,
            requests_per_second=REQUESTS_PER_SECOND,
            writes_per_second=WRITES_PER_SECOND,
            clock=clock,
            stored_items_limit=STORED_ITEMS,
        ),
    )
    use_container(world.container)
    base = world.base("acme")
    world.publish(base, "Deployment runbook", "Blue-green deployments switch traffic at the router.")
    other = world.base("globex")
    world.publish(other, "Deployment runbook", "Canary deployments shift traffic a percent at a time.")
    return world


def test_quota_flood_from_one_tenant_is_refused_while_another_tenant_is_answered(
    world: SearchWorld,
) -> None:
    flooder = world.token("acme", scopes=[READ])
    neighbour = world.token("globex", scopes=[READ])

    flood_statuses = []
    neighbour_statuses = []
    for attempt in range(30):
        flood_statuses.append(world.call({"query": "deployment"}, flooder).status)
        if attempt % 6 == 0:
            neighbour_statuses.append(world.call({"query": "deployment"}, neighbour).status)

    assert flood_statuses == [200] * REQUESTS_PER_SECOND + [429] * (30 - REQUESTS_PER_SECOND)
    assert neighbour_statuses == [200] * 5


def test_quota_refusal_is_a_retryable_envelope_with_retry_after(world: SearchWorld) -> None:
    flooder = world.token("acme", scopes=[READ])
    for _ in range(REQUESTS_PER_SECOND):
        assert world.call({"query": "deployment"}, flooder).status == 200

    reply = world.call({"query": "deployment"}, flooder)

    error = error_body(429, "rate_limited", reply)
    assert error["retryable"] is True
    assert error["details"] == {
        "quota": "requests_per_second",
        "limit": REQUESTS_PER_SECOND,
        "window_seconds": 1,
        "retry_after_seconds": 1,
    }
    assert reply.headers["Retry-After"] == "1"


def test_quota_next_window_answers_the_tenant_again(world: SearchWorld, clock: FrozenClock) -> None:
    flooder = world.token("acme", scopes=[READ])
    for _ in range(REQUESTS_PER_SECOND + 1):
        world.call({"query": "deployment"}, flooder)
    assert world.call({"query": "deployment"}, flooder).status == 429

    clock.now += 1

    reply = world.call({"query": "deployment"}, flooder)
    assert reply.status == 200
    assert reply.body["results"][0]["title"] == "Deployment runbook"


def test_quota_unauthenticated_requests_are_not_counted_against_anyone(world: SearchWorld) -> None:
    for _ in range(REQUESTS_PER_SECOND * 2):
        assert world.call({"query": "deployment"}, None).status == 401

    assert world.call({"query": "deployment"}, world.token("acme", scopes=[READ])).status == 200


def test_quota_writes_beyond_the_write_quota_are_refused_and_create_nothing(world: SearchWorld) -> None:
    writer = AdminClient(world.token("acme", scopes=[READ, WRITE, ADMIN]))
    statuses = [
        writer.call("POST", "/v1/knowledge-bases", {"name": f"Base {n}", "scope": "tenant"}).status
        for n in range(WRITES_PER_SECOND + 1)
    ]

    assert statuses == [201] * WRITES_PER_SECOND + [429]
    refused = writer.call("POST", "/v1/knowledge-bases", {"name": "One more", "scope": "tenant"})
    assert error_body(429, "rate_limited", refused)["details"]["quota"] == "writes_per_second"
    names = {base.name for base in world.store.list_bases("acme", limit=50, next_token=None).entries}
    assert names == {"Handbook", "Base 0", "Base 1"}


def test_quota_window_seen_full_refuses_the_rest_of_it_without_writing_the_table(
    world: SearchWorld, clock: FrozenClock
) -> None:
    flooder = world.token("acme", scopes=[READ])
    for _ in range(REQUESTS_PER_SECOND + 1):
        world.call({"query": "deployment"}, flooder)

    with counted_calls(world.dynamodb, "UpdateItem") as refused_writes:
        refused = [world.call({"query": "deployment"}, flooder).status for _ in range(10)]
    clock.now += 1
    with counted_calls(world.dynamodb, "UpdateItem") as next_window_writes:
        answered = world.call({"query": "deployment"}, flooder)

    assert refused == [429] * 10
    assert refused_writes == []
    assert answered.status == 200
    assert next_window_writes == ["UpdateItem"]


def test_quota_answers_carry_the_ratelimit_fields_of_the_requests_quota(world: SearchWorld) -> None:
    caller = world.token("acme", scopes=[READ])

    replies = [world.call({"query": "deployment"}, caller) for _ in range(3)]

    assert [reply.headers["RateLimit-Limit"] for reply in replies] == [str(REQUESTS_PER_SECOND)] * 3
    assert [int(reply.headers["RateLimit-Remaining"]) for reply in replies] == [4, 3, 2]
    assert [reply.headers["RateLimit-Reset"] for reply in replies] == ["1"] * 3


def test_quota_refusal_carries_the_ratelimit_fields_of_the_broken_quota(world: SearchWorld) -> None:
    flooder = world.token("acme", scopes=[READ])
    for _ in range(REQUESTS_PER_SECOND):
        world.call({"query": "deployment"}, flooder)

    reply = world.call({"query": "deployment"}, flooder)

    assert reply.status == 429
    assert (reply.headers["RateLimit-Limit"], reply.headers["RateLimit-Remaining"]) == ("5", "0")
    assert reply.headers["RateLimit-Reset"] == reply.headers["Retry-After"] == "1"


def test_usage_reports_the_tenants_stored_items_and_what_is_left_of_each_quota(
    world: SearchWorld, clock: FrozenClock
) -> None:
    admin = AdminClient(world.token("acme", scopes=[READ, WRITE, ADMIN]))
    admin.ok("POST", "/v1/knowledge-bases", {"name": "Second", "scope": "tenant"}, status=201)
    clock.now += 1  # both buckets full again

    usage = admin.ok("GET", "/v1/usage")

    assert usage["type"] == "usage"
    assert usage["tenant_id"] == "acme"
    assert usage["stored"] == {
        "items": 1,
        "notes": 0,
        "total": 1,
        "limit": 100,
        "remaining": 99,
        "content_bytes": len(b"Blue-green deployments switch traffic at the router."),
    }
    rates = {rate["quota"]: rate for rate in usage["rates"]}
    assert rates["requests_per_second"] == {
        "quota": "requests_per_second",
        "limit": REQUESTS_PER_SECOND,
        "window_seconds": 1,
        "used": 1,  # this request
        "remaining": REQUESTS_PER_SECOND - 1,
        "reset_seconds": 1,
    }
    assert rates["writes_per_second"]["used"] == 0
    assert rates["writes_per_second"]["remaining"] == WRITES_PER_SECOND


def test_usage_without_a_token_is_authentication_required(world: SearchWorld) -> None:
    reply = AdminClient(None).call("GET", "/v1/usage")

    assert error_body(401, "authentication_required", reply)["retryable"] is False


def test_usage_of_a_quota_turned_off_has_null_figures(world: SearchWorld, clock: FrozenClock) -> None:
    quotas = QuotaService(world.store, requests_per_second=0, writes_per_second=3, clock=clock)

    usage = quotas.usage("acme")

    rates = {rate.quota: rate for rate in usage.rates}
    assert (rates["requests_per_second"].limit, rates["requests_per_second"].remaining) == (None, None)
    assert rates["writes_per_second"].remaining == 3
    assert (usage.stored.limit, usage.stored.remaining) == (None, None)


def test_usage_content_bytes_grow_with_each_revision(world: SearchWorld, clock: FrozenClock) -> None:
    writer = AdminClient(world.token("acme", scopes=[READ, WRITE, ADMIN]))
    before = writer.ok("GET", "/v1/usage")["stored"]["content_bytes"]
    [base] = writer.ok("GET", "/v1/knowledge-bases")["knowledge_bases"]
    clock.now += 1
    item = writer.ok(
        "POST",
        f"/v1/knowledge-bases/{base['knowledge_base_id']}/items",
        {"title": "Café", "content": "Café au lait.", "publish": True},
        status=201,
    )
    clock.now += 1
    writer.ok(
        "POST",
        f"/v1/knowledge-items/{item['knowledge_item_id']}/revisions",
        {"content": "Café noir, 2 €.", "publish": False},
        status=201,
    )
    clock.now += 1

    after = writer.ok("GET", "/v1/usage")["stored"]["content_bytes"]

    assert after - before == len("Café au lait.".encode()) + len("Café noir, 2 €.".encode())
