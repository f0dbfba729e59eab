"""The write API (DESIGN §6) through the real handlers: the authorizer, then ``KnowledgeAdminFunction``.

Each route: its answer's shape and status, the scope it needs, invisible bases answered like absent
ones, version races with ``details.current_version``, ``Idempotency-Key`` replays, content limits,
pagination. Search checks run the indexer on the table's stream first.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from aws_lambda_powertools.event_handler import APIGatewayHttpResolver

from knowledge.adapters.embedded.passages import EmbeddedIndex
from knowledge.adapters.runtime_switch import StaticRuntimeSwitch
from knowledge.api.routes import knowledge_admin
from knowledge.bootstrap import use_container
from knowledge.domain.access.bearer_tokens import hash_token
from knowledge.domain.ids import ITEM_PREFIX, KB_PREFIX, shape_of
from knowledge.settings import Settings
from knowledge_local.emulator.template.routes import load_routes
from tests.conftest import TABLE_NAME
from tests.support.admin import AdminClient, admin_event, invoke_admin
from tests.support.rest import Reply, SearchWorld, error_body, new_world, result_items
from tests.support.store import raw_items
from tests.support.streams import StreamReader, drain, indexed_revisions
from tests.support.template import TEMPLATE

TENANT = "acme"
READ, WRITE, ADMIN, PLATFORM = "knowledge:read", "knowledge:write", "knowledge:admin", "platform:admin"
BASE_FIELDS = {"knowledge_base_id", "name", "scope", "team_id", "owner_id", "status", "version"}
ITEM_FIELDS = {
    "knowledge_base_id",
    "knowledge_item_id",
    "title",
    "status",
    "current_revision_id",
    "latest_revision_id",
    "version",
    "external_id",
    "indexed",
}
DOC = "# Deployment runbook\n\nRoll out with the blue green switch and watch the health dashboard.\n"


@pytest.fixture
def world(table: Any) -> Iterator[SearchWorld]:
    built = new_world(settings=Settings(table_name=TABLE_NAME))
    yield built
    use_container(None)


def _client(world: SearchWorld, subject: str, *scopes: str, **token: Any) -> AdminClient:
    return AdminClient(world.token(token.pop("tenant_id", TENANT), subject, scopes=scopes, **token))


@pytest.fixture
def admin(world: SearchWorld) -> AdminClient:
    return _client(world, "curator-1", ADMIN, READ, WRITE)


@pytest.fixture
def writer(world: SearchWorld) -> AdminClient:
    return _client(world, "writer-1", READ, WRITE, team_ids=["platform"])


@pytest.fixture
def reader(world: SearchWorld) -> AdminClient:
    return _client(world, "reader-1", READ)


@pytest.fixture
def base(admin: AdminClient) -> dict[str, Any]:
    body: dict[str, Any] = admin.ok(
        "POST", "/v1/knowledge-bases", {"name": "Ops", "scope": "tenant"}, status=201
    )
    return body


def _items_path(base: dict[str, Any]) -> str:
    return f"/v1/knowledge-bases/{base['knowledge_base_id']}/items"


def _new_item(client: AdminClient, base: dict[str, Any], **fields: Any) -> dict[str, Any]:
    body: dict[str, Any] = client.ok(
        "POST", _items_path(base), {"title": "Runbook", "content": DOC, **fields}, status=201
    )
    return body


def _item_path(item: dict[str, Any], suffix: str = "") -> str:
    return f"/v1/knowledge-items/{item['knowledge_item_id']}{suffix}"


# -- bases ----------------------------------------------------------------------------------------


def test_create_base_answers_201_with_base_owned_by_caller(admin: AdminClient) -> None:
    reply = admin.call(
        "POST", "/v1/knowledge-bases", {"name": "Platform", "scope": "team", "team_id": "platform"}
    )

    assert reply.status == 201
    body = reply.body
    assert set(body) == BASE_FIELDS
    assert body["knowledge_base_id"].startswith("kb_")
    assert {key: body[key] for key in BASE_FIELDS - {"knowledge_base_id"}} == {
        "name": "Platform",
        "scope": "team",
        "team_id": "platform",
        "owner_id": "curator-1",
        "status": "active",
        "version": 1,
    }


@pytest.mark.parametrize(
    "body",
    [
        {"name": "Team", "scope": "team"},
        {"name": "Tenant", "scope": "tenant", "team_id": "platform"},
        {"name": "", "scope": "tenant"},
        {"name": "   ", "scope": "tenant"},
        {"name": "Odd", "scope": "everyone"},
        {"name": 5, "scope": "tenant"},
    ],
)
def test_create_base_malformed_body_answers_validation_error(
    admin: AdminClient, body: dict[str, Any]
) -> None:
    error_body(400, "validation_error", admin.call("POST", "/v1/knowledge-bases", body))


def test_create_base_unknown_field_answers_invalid_request(admin: AdminClient) -> None:
    reply = admin.call("POST", "/v1/knowledge-bases", {"name": "Ops", "scope": "tenant", "owner_id": "x"})

    error = error_body(400, "knowledge_invalid_request", reply)
    assert error["details"]["fields"][0]["field"] == "owner_id"


def test_create_base_without_admin_scope_answers_insufficient_scope(writer: AdminClient) -> None:
    reply = writer.call("POST", "/v1/knowledge-bases", {"name": "Ops", "scope": "tenant"})

    assert error_body(403, "insufficient_scope", reply)["details"] == {"required_scope": ADMIN}


def test_write_without_token_answers_authentication_required(world: SearchWorld) -> None:
    anonymous = AdminClient(None)

    error_body(401, "authentication_required", anonymous.call("POST", "/v1/knowledge-bases", {"name": "x"}))
    error_body(401, "authentication_required", anonymous.call("GET", "/v1/knowledge-bases"))


def test_list_bases_shows_readers_visible_bases_and_admins_every_base(
    world: SearchWorld, admin: AdminClient, reader: AdminClient
) -> None:
    shared = admin.ok("POST", "/v1/knowledge-bases", {"name": "Shared", "scope": "tenant"}, status=201)
    private = admin.ok("POST", "/v1/knowledge-bases", {"name": "Mine", "scope": "private"}, status=201)
    closed = admin.ok("POST", "/v1/knowledge-bases", {"name": "Closed", "scope": "tenant"}, status=201)
    admin.ok(
        "PATCH",
        f"/v1/knowledge-bases/{closed['knowledge_base_id']}",
        {"status": "inactive", "expected_version": 1},
    )
    other_admin = _client(world, "curator-2", ADMIN, READ)
    elsewhere = _client(world, "curator-3", ADMIN, tenant_id="globex")
    elsewhere.ok("POST", "/v1/knowledge-bases", {"name": "Globex", "scope": "tenant"}, status=201)

    seen_by_reader = reader.ok("GET", "/v1/knowledge-bases")
    seen_by_admin = other_admin.ok("GET", "/v1/knowledge-bases")

    assert [entry["name"] for entry in seen_by_reader["knowledge_bases"]] == ["Shared"]
    assert [entry["name"] for entry in seen_by_admin["knowledge_bases"]] == ["Shared", "Mine", "Closed"]
    assert seen_by_admin["knowledge_bases"][0] == shared
    assert seen_by_admin["knowledge_bases"][1]["knowledge_base_id"] == private["knowledge_base_id"]
    assert seen_by_reader["next_token"] is None


def test_list_bases_paginates_with_next_token(admin: AdminClient) -> None:
    created = [
        admin.ok("POST", "/v1/knowledge-bases", {"name": f"Base {n}", "scope": "tenant"}, status=201)
        for n in range(5)
    ]
    pages, token = [], None
    while True:
        page = admin.ok("GET", "/v1/knowledge-bases", limit=2, next_token=token)
        pages.append([entry["knowledge_base_id"] for entry in page["knowledge_bases"]])
        token = page["next_token"]
        if token is None:
            break

    assert [len(page) for page in pages] == [2, 2, 1]
    assert [entry for page in pages for entry in page] == [base["knowledge_base_id"] for base in created]


@pytest.mark.parametrize("query", [{"limit": "many"}, {"next_token": "bogus"}])
def test_list_bases_bad_paging_answers_validation_error(admin: AdminClient, query: dict[str, Any]) -> None:
    error_body(400, "validation_error", admin.call("GET", "/v1/knowledge-bases", **query))


@pytest.mark.parametrize("limit", [0, 101])
def test_list_bases_limit_out_of_bounds_answers_invalid_request(admin: AdminClient, limit: int) -> None:
    error_body(400, "knowledge_invalid_request", admin.call("GET", "/v1/knowledge-bases", limit=limit))


def test_update_base_renames_and_deactivates(admin: AdminClient, base: dict[str, Any]) -> None:
    path = f"/v1/knowledge-bases/{base['knowledge_base_id']}"

    renamed = admin.ok("PATCH", path, {"name": "Operations", "expected_version": 1})
    deactivated = admin.ok("PATCH", path, {"status": "inactive", "expected_version": 2})

    assert renamed == {**base, "name": "Operations", "version": 2}
    assert deactivated == {**base, "name": "Operations", "status": "inactive", "version": 3}


def test_update_base_stale_expected_version_answers_conflict_with_current_version(
    admin: AdminClient, base: dict[str, Any]
) -> None:
    path = f"/v1/knowledge-bases/{base['knowledge_base_id']}"
    admin.ok("PATCH", path, {"name": "Operations", "expected_version": 1})

    reply = admin.call("PATCH", path, {"status": "inactive", "expected_version": 1})

    assert error_body(409, "knowledge_conflict", reply)["details"] == {"current_version": 2}


def test_update_absent_base_answers_resource_unavailable(admin: AdminClient) -> None:
    path = "/v1/knowledge-bases/kb_01M8MSRAQ70QQ1SJHWP0AMCDPZ"

    reply = admin.call("PATCH", path, {"name": "x", "expected_version": 1})

    error_body(404, "knowledge_resource_unavailable", reply)


@pytest.mark.parametrize("base_id", ["kb_%23EXT", "not-an-id", "httpx", "ki_01M8MSRAQ70QQ1SJHWP0AMCDPZ"])
def test_update_malformed_base_id_answers_validation_error_naming_the_shape(
    admin: AdminClient, base_id: str
) -> None:
    reply = admin.call("PATCH", f"/v1/knowledge-bases/{base_id}", {"name": "x", "expected_version": 1})

    error = error_body(400, "validation_error", reply)
    assert error["details"] == {"fields": [{"field": "knowledge_base_id", "problem": shape_of(KB_PREFIX)}]}


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("POST", "/v1/knowledge-bases/httpx/items", {"title": "t", "content": "c"}),
        ("GET", "/v1/knowledge-bases/httpx/items", None),
        ("GET", "/v1/knowledge-items/http2.md", None),
        ("GET", "/v1/knowledge-items/http2.md/revisions", None),
        ("POST", "/v1/knowledge-items/http2.md/archive", {"expected_version": 1}),
    ],
)
def test_malformed_id_in_any_admin_path_answers_validation_error(
    writer: AdminClient, method: str, path: str, body: dict[str, Any] | None
) -> None:
    error = error_body(400, "validation_error", writer.call(method, path, body))

    assert error["details"]["fields"][0]["problem"].startswith("must be a knowledge ")


def test_update_base_of_another_tenant_answers_resource_unavailable(
    world: SearchWorld, base: dict[str, Any]
) -> None:
    foreign = _client(world, "curator-1", ADMIN, tenant_id="globex")

    reply = foreign.call("PATCH", f"/v1/knowledge-bases/{base['knowledge_base_id']}", {"expected_version": 1})

    error_body(404, "knowledge_resource_unavailable", reply)


# -- items ----------------------------------------------------------------------------------------


def test_create_item_answers_201_with_item_and_revision(writer: AdminClient, base: dict[str, Any]) -> None:
    reply = writer.call(
        "POST",
        _items_path(base),
        {
            "title": "Runbook",
            "content": DOC,
            "source": {"uri": "https://wiki/x", "title": "Wiki"},
            "publish": True,
        },
    )

    assert reply.status == 201
    body = reply.body
    assert set(body) == ITEM_FIELDS | {"knowledge_revision_id"}
    assert body["knowledge_base_id"] == base["knowledge_base_id"]
    assert body["knowledge_item_id"].startswith("ki_")
    assert body["current_revision_id"] == body["latest_revision_id"] == body["knowledge_revision_id"]
    assert (body["title"], body["status"], body["version"], body["external_id"]) == (
        "Runbook",
        "published",
        1,
        None,
    )


def test_create_draft_item_has_no_current_revision(writer: AdminClient, base: dict[str, Any]) -> None:
    body = _new_item(writer, base)

    assert (body["status"], body["current_revision_id"]) == ("draft", None)
    assert body["latest_revision_id"] == body["knowledge_revision_id"]


def test_create_item_with_taken_external_id_adds_a_revision(
    writer: AdminClient, base: dict[str, Any]
) -> None:
    first = _new_item(writer, base, external_id="runbook", publish=True)

    second = _new_item(writer, base, external_id="runbook", content="Canary releases.", title="Runbook v2")

    assert second["knowledge_item_id"] == first["knowledge_item_id"]
    assert second["knowledge_revision_id"] != first["knowledge_revision_id"]
    # The new revision is a draft: the item keeps its current revision and that revision's title.
    assert (second["version"], second["title"], second["external_id"]) == (2, "Runbook", "runbook")
    assert second["current_revision_id"] == first["knowledge_revision_id"]
    assert second["latest_revision_id"] == second["knowledge_revision_id"]


def test_create_item_unchanged_upsert_answers_200_and_writes_nothing(
    writer: AdminClient, base: dict[str, Any]
) -> None:
    first = _new_item(writer, base, external_id="runbook", publish=True)

    again = writer.ok(
        "POST",
        _items_path(base),
        {"title": "Runbook", "content": DOC, "external_id": "runbook", "publish": True},
    )

    assert again["knowledge_revision_id"] == first["knowledge_revision_id"]
    assert again["version"] == first["version"]
    revisions = writer.ok("GET", _item_path(first, "/revisions"))["revisions"]
    assert [revision["knowledge_revision_id"] for revision in revisions] == [first["knowledge_revision_id"]]


def test_create_item_unchanged_draft_upsert_with_publish_publishes_it(
    writer: AdminClient, base: dict[str, Any]
) -> None:
    draft = _new_item(writer, base, external_id="runbook")

    published = writer.ok(
        "POST",
        _items_path(base),
        {"title": "Runbook", "content": DOC, "external_id": "runbook", "publish": True},
    )

    assert published["knowledge_revision_id"] == draft["knowledge_revision_id"]
    assert (published["status"], published["current_revision_id"]) == (
        "published",
        draft["knowledge_revision_id"],
    )


def test_create_item_content_over_limit_answers_validation_error_with_the_limit(
    writer: AdminClient, base: dict[str, Any]
) -> None:
    reply = writer.call("POST", _items_path(base), {"title": "Huge", "content": "a" * 4_000_001})

    error = error_body(400, "validation_error", reply)
    assert "4,000,000" in error["message"]
    assert error["details"]["max_chars"] == 4_000_000
    assert writer.ok("GET", _items_path(base))["items"] == []


def test_create_item_content_at_limit_is_stored(
    world: SearchWorld, writer: AdminClient, base: dict[str, Any]
) -> None:
    content = "abcdefghij" * 400_000

    body = _new_item(writer, base, content=content)

    revision = world.store.get_revision(TENANT, body["knowledge_item_id"], body["knowledge_revision_id"])
    assert revision is not None
    assert revision.total_chars == 4_000_000
    assert world.store.read_content(revision, offset=3_999_990, limit=20).text == "abcdefghij"


@pytest.mark.parametrize("scope_and_team", [("private", None), ("team", "platform"), ("team", "security")])
def test_create_item_in_base_the_writer_cannot_see_answers_resource_unavailable(
    world: SearchWorld, admin: AdminClient, scope_and_team: tuple[str, str | None]
) -> None:
    scope, team = scope_and_team
    hidden = admin.ok(
        "POST", "/v1/knowledge-bases", {"name": "Hidden", "scope": scope, "team_id": team}, status=201
    )
    outsider = _client(world, "writer-2", READ, WRITE, team_ids=["support"])

    reply = outsider.call("POST", _items_path(hidden), {"title": "x", "content": "y"})

    error_body(404, "knowledge_resource_unavailable", reply)


def test_create_item_in_team_base_of_own_team_is_allowed(admin: AdminClient, writer: AdminClient) -> None:
    team = admin.ok(
        "POST",
        "/v1/knowledge-bases",
        {"name": "Platform", "scope": "team", "team_id": "platform"},
        status=201,
    )

    assert _new_item(writer, team)["knowledge_base_id"] == team["knowledge_base_id"]


def test_create_item_in_inactive_base_answers_resource_unavailable(
    admin: AdminClient, writer: AdminClient, base: dict[str, Any]
) -> None:
    admin.ok(
        "PATCH",
        f"/v1/knowledge-bases/{base['knowledge_base_id']}",
        {"status": "inactive", "expected_version": 1},
    )

    error_body(
        404,
        "knowledge_resource_unavailable",
        writer.call("POST", _items_path(base), {"title": "x", "content": "y"}),
    )


def test_list_items_paginates_and_filters_by_external_id(writer: AdminClient, base: dict[str, Any]) -> None:
    created = [_new_item(writer, base, external_id=f"doc-{n}", publish=True) for n in range(5)]

    first = writer.ok("GET", _items_path(base), limit=3)
    second = writer.ok("GET", _items_path(base), limit=3, next_token=first["next_token"])
    by_external_id = writer.ok("GET", _items_path(base), external_id="doc-3")
    unknown = writer.ok("GET", _items_path(base), external_id="doc-9")

    assert [entry["knowledge_item_id"] for entry in first["items"] + second["items"]] == [
        entry["knowledge_item_id"] for entry in created
    ]
    assert second["next_token"] is None
    assert set(first["items"][0]) == ITEM_FIELDS | {"indexed_revision_id"}  # each item: the index mark too
    assert [entry["knowledge_item_id"] for entry in by_external_id["items"]] == [
        created[3]["knowledge_item_id"]
    ]
    assert unknown == {"items": [], "next_token": None}


def test_list_items_for_reader_shows_published_items_only(
    writer: AdminClient, reader: AdminClient, base: dict[str, Any]
) -> None:
    published = _new_item(writer, base, publish=True)
    _new_item(writer, base)

    listed = reader.ok("GET", _items_path(base))

    assert [entry["knowledge_item_id"] for entry in listed["items"]] == [published["knowledge_item_id"]]


# -- revisions, publish, archive, get -------------------------------------------------------------


def test_add_revision_answers_201_and_publishes_when_asked(writer: AdminClient, base: dict[str, Any]) -> None:
    item = _new_item(writer, base, publish=True)

    draft = writer.ok(
        "POST", _item_path(item, "/revisions"), {"content": "v2", "expected_version": 1}, status=201
    )
    live = writer.ok("POST", _item_path(item, "/revisions"), {"content": "v3", "publish": True}, status=201)

    assert set(draft) == ITEM_FIELDS | {"knowledge_revision_id"}
    assert (draft["version"], draft["current_revision_id"]) == (2, item["knowledge_revision_id"])
    assert (live["version"], live["current_revision_id"]) == (3, live["knowledge_revision_id"])
    assert live["title"] == "Runbook"


def test_add_revision_stale_expected_version_answers_conflict(
    writer: AdminClient, base: dict[str, Any]
) -> None:
    item = _new_item(writer, base)
    writer.ok("POST", _item_path(item, "/revisions"), {"content": "v2"}, status=201)

    reply = writer.call("POST", _item_path(item, "/revisions"), {"content": "v3", "expected_version": 1})

    assert error_body(409, "knowledge_conflict", reply)["details"] == {"current_version": 2}


def test_publish_older_revision_rolls_back(writer: AdminClient, base: dict[str, Any]) -> None:
    item = _new_item(writer, base, publish=True)
    newer = writer.ok("POST", _item_path(item, "/revisions"), {"content": "v2", "publish": True}, status=201)

    body = writer.ok(
        "POST",
        _item_path(item, "/publish"),
        {"revision_id": item["knowledge_revision_id"], "expected_version": 2},
    )

    assert set(body) == ITEM_FIELDS
    assert (body["current_revision_id"], body["latest_revision_id"], body["version"]) == (
        item["knowledge_revision_id"],
        newer["knowledge_revision_id"],
        3,
    )


@pytest.mark.parametrize(
    ("revision_id", "status", "code"),
    [
        ("kr_01M8MSRAQ70QQ1SJHWP0AMCDPZ", 404, "knowledge_resource_unavailable"),
        ("kr_#1", 400, "validation_error"),
        ("ki_01M8MSRAQ70QQ1SJHWP0AMCDPZ", 400, "validation_error"),
    ],
)
def test_publish_unknown_revision_answers_unavailable_and_a_malformed_one_validation_error(
    writer: AdminClient, base: dict[str, Any], revision_id: str, status: int, code: str
) -> None:
    item = _new_item(writer, base)

    reply = writer.call(
        "POST", _item_path(item, "/publish"), {"revision_id": revision_id, "expected_version": 1}
    )

    error_body(status, code, reply)


def test_publish_revision_of_another_item_answers_resource_unavailable(
    writer: AdminClient, base: dict[str, Any]
) -> None:
    item, other = _new_item(writer, base), _new_item(writer, base)

    reply = writer.call(
        "POST",
        _item_path(item, "/publish"),
        {"revision_id": other["knowledge_revision_id"], "expected_version": 1},
    )

    error_body(404, "knowledge_resource_unavailable", reply)


def test_archive_hides_item_from_readers_and_refuses_later_writes(
    writer: AdminClient, reader: AdminClient, base: dict[str, Any]
) -> None:
    item = _new_item(writer, base, publish=True, external_id="doc")

    archived = writer.ok("POST", _item_path(item, "/archive"), {"expected_version": 1})

    assert set(archived) == ITEM_FIELDS | {"dry_run", "receipt"}
    assert (archived["status"], archived["version"]) == ("archived", 2)
    assert writer.ok("GET", _item_path(item))["status"] == "archived"
    error_body(404, "knowledge_resource_unavailable", reader.call("GET", _item_path(item)))
    error_body(
        404,
        "knowledge_resource_unavailable",
        writer.call("POST", _item_path(item, "/archive"), {"expected_version": 2}),
    )
    error_body(
        404,
        "knowledge_resource_unavailable",
        writer.call("POST", _item_path(item, "/revisions"), {"content": "x"}),
    )
    assert writer.ok("GET", _items_path(base), external_id="doc")["items"] == []


def test_archive_stale_expected_version_answers_conflict(writer: AdminClient, base: dict[str, Any]) -> None:
    item = _new_item(writer, base)
    writer.ok("POST", _item_path(item, "/revisions"), {"content": "v2"}, status=201)

    reply = writer.call("POST", _item_path(item, "/archive"), {"expected_version": 1})

    assert error_body(409, "knowledge_conflict", reply)["details"] == {"current_version": 2}


def test_get_item_reports_indexed_revision_once_the_stream_is_indexed(
    world: SearchWorld, writer: AdminClient, base: dict[str, Any]
) -> None:
    reader_of_stream = StreamReader()
    item = _new_item(writer, base, publish=True)
    before = writer.ok("GET", _item_path(item))

    drain(reader_of_stream)
    after = writer.ok("GET", _item_path(item))

    assert set(before) == ITEM_FIELDS | {"indexed_revision_id"}
    assert (before["indexed_revision_id"], before["indexed"], item["indexed"]) == (None, False, False)
    assert after == {**before, "indexed_revision_id": item["knowledge_revision_id"], "indexed": True}
    hits = world.search(world.token(TENANT), "blue green switch", mode="lexical")
    assert result_items(hits) == [item["knowledge_item_id"]]


def test_get_draft_item_is_unavailable_to_readers_and_visible_to_writers(
    writer: AdminClient, reader: AdminClient, base: dict[str, Any]
) -> None:
    item = _new_item(writer, base)

    assert writer.ok("GET", _item_path(item))["status"] == "draft"
    error_body(404, "knowledge_resource_unavailable", reader.call("GET", _item_path(item)))
    error_body(404, "knowledge_resource_unavailable", reader.call("GET", _item_path(item, "/revisions")))


def test_get_absent_item_answers_resource_unavailable(reader: AdminClient) -> None:
    path = "/v1/knowledge-items/ki_01M8MSRAQ70QQ1SJHWP0AMCDPZ"

    error_body(404, "knowledge_resource_unavailable", reader.call("GET", path))


@pytest.mark.parametrize("item_id", ["ki_%23META", "kb_01M8MSRAQ70QQ1SJHWP0AMCDPZ"])
def test_get_malformed_item_id_answers_validation_error(reader: AdminClient, item_id: str) -> None:
    error = error_body(400, "validation_error", reader.call("GET", f"/v1/knowledge-items/{item_id}"))

    assert error["details"] == {"fields": [{"field": "knowledge_item_id", "problem": shape_of(ITEM_PREFIX)}]}


def test_list_revisions_newest_first_with_pagination(writer: AdminClient, base: dict[str, Any]) -> None:
    item = _new_item(writer, base, publish=True)
    later = [
        writer.ok("POST", _item_path(item, "/revisions"), {"content": f"v{n}"}, status=201)[
            "knowledge_revision_id"
        ]
        for n in range(2, 5)
    ]

    first = writer.ok("GET", _item_path(item, "/revisions"), limit=2)
    second = writer.ok("GET", _item_path(item, "/revisions"), limit=2, next_token=first["next_token"])

    listed = first["revisions"] + second["revisions"]
    assert [entry["knowledge_revision_id"] for entry in listed] == [
        *reversed(later),
        item["knowledge_revision_id"],
    ]
    assert second["next_token"] is None
    assert [entry["is_current"] for entry in listed] == [False, False, False, True]
    assert set(listed[-1]) == {
        "knowledge_base_id",
        "knowledge_item_id",
        "knowledge_revision_id",
        "title",
        "source",
        "sha256",
        "total_chars",
        "created_at",
        "published_at",
        "is_current",
    }
    assert listed[-1]["total_chars"] == len(DOC)


def test_list_revisions_for_reader_shows_published_revisions_only(
    writer: AdminClient, reader: AdminClient, base: dict[str, Any]
) -> None:
    item = _new_item(writer, base, publish=True)
    writer.ok("POST", _item_path(item, "/revisions"), {"content": "draft"}, status=201)

    listed = reader.ok("GET", _item_path(item, "/revisions"))

    assert [entry["knowledge_revision_id"] for entry in listed["revisions"]] == [
        item["knowledge_revision_id"]
    ]


WRITE_ROUTES = [
    ("POST", "{items}", {"title": "x", "content": "y"}),
    ("POST", "{item}/revisions", {"content": "y"}),
    ("POST", "{item}/publish", {"revision_id": "kr_01M8MSRAQ70QQ1SJHWP0AMCDPZ", "expected_version": 1}),
    ("POST", "{item}/archive", {"expected_version": 1}),
]


@pytest.mark.parametrize(("method", "path", "body"), WRITE_ROUTES)
def test_item_writes_without_write_scope_answer_insufficient_scope(
    writer: AdminClient,
    reader: AdminClient,
    base: dict[str, Any],
    method: str,
    path: str,
    body: dict[str, Any],
) -> None:
    item = _new_item(writer, base, publish=True)
    concrete = path.format(items=_items_path(base), item=_item_path(item))

    reply = reader.call(method, concrete, body)

    assert error_body(403, "insufficient_scope", reply)["details"] == {"required_scope": WRITE}


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("POST", "/v1/knowledge-bases", {"name": "x", "scope": "tenant"}),
        ("PATCH", "{base}", {"expected_version": 1}),
        ("POST", "{base}/reindex", None),
        ("POST", "/v1/tokens", {"subject_id": "x", "scopes": [READ]}),
    ],
)
def test_admin_routes_without_admin_scope_answer_insufficient_scope(
    writer: AdminClient, base: dict[str, Any], method: str, path: str, body: dict[str, Any] | None
) -> None:
    concrete = path.format(base=f"/v1/knowledge-bases/{base['knowledge_base_id']}")

    reply = writer.call(method, concrete, body)

    assert error_body(403, "insufficient_scope", reply)["details"] == {"required_scope": ADMIN}


def test_reads_without_read_scope_answer_insufficient_scope(world: SearchWorld, base: dict[str, Any]) -> None:
    blind = _client(world, "writer-9", WRITE)

    error_body(403, "insufficient_scope", blind.call("GET", "/v1/knowledge-bases"))
    error_body(403, "insufficient_scope", blind.call("GET", _items_path(base)))


def test_platform_admin_holds_every_scope(world: SearchWorld, base: dict[str, Any]) -> None:
    operator = _client(world, "operator", PLATFORM)

    item = _new_item(operator, base, publish=True)

    assert operator.ok("GET", _item_path(item))["status"] == "published"


# -- Idempotency-Key ------------------------------------------------------------------------------


def _with_key(client: AdminClient, method: str, path: str, body: Any, key: str) -> Reply:
    return client.call(method, path, body, headers={"Idempotency-Key": key})


def test_idempotency_key_replay_answers_the_first_answer_and_creates_nothing(
    world: SearchWorld, writer: AdminClient, base: dict[str, Any]
) -> None:
    body = {"title": "Runbook", "content": DOC, "publish": True}

    first = _with_key(writer, "POST", _items_path(base), body, "7c1e")
    again = _with_key(writer, "POST", _items_path(base), body, "7c1e")

    assert (first.status, again.status) == (201, 201)
    assert again.body == first.body
    assert again.headers.get("Idempotent-Replayed") == "true"
    assert "Idempotent-Replayed" not in first.headers
    listed = writer.ok("GET", _items_path(base))["items"]
    assert [entry["knowledge_item_id"] for entry in listed] == [first.body["knowledge_item_id"]]
    assert len(raw_items("REV#")) == 1


def test_idempotency_key_replay_of_update_keeps_the_version(admin: AdminClient, base: dict[str, Any]) -> None:
    path = f"/v1/knowledge-bases/{base['knowledge_base_id']}"
    body = {"name": "Operations", "expected_version": 1}

    first = _with_key(admin, "PATCH", path, body, "rename-1")
    again = _with_key(admin, "PATCH", path, body, "rename-1")

    assert (first.status, again.status, again.body) == (200, 200, first.body)
    assert admin.ok("GET", "/v1/knowledge-bases")["knowledge_bases"][0]["version"] == 2


def test_idempotency_key_with_another_body_answers_validation_error(
    writer: AdminClient, base: dict[str, Any]
) -> None:
    _with_key(writer, "POST", _items_path(base), {"title": "Runbook", "content": DOC}, "k-1")

    reply = _with_key(writer, "POST", _items_path(base), {"title": "Runbook", "content": "other"}, "k-1")

    assert error_body(400, "validation_error", reply)["details"] == {"header": "Idempotency-Key"}
    assert len(writer.ok("GET", _items_path(base))["items"]) == 1


def test_idempotency_key_is_scoped_to_the_caller_and_the_route(
    world: SearchWorld, writer: AdminClient, base: dict[str, Any]
) -> None:
    colleague = _client(world, "writer-2", READ, WRITE)
    body = {"title": "Runbook", "content": DOC}

    mine = _with_key(writer, "POST", _items_path(base), body, "shared-key")
    theirs = _with_key(colleague, "POST", _items_path(base), body, "shared-key")

    assert (mine.status, theirs.status) == (201, 201)
    assert mine.body["knowledge_item_id"] != theirs.body["knowledge_item_id"]
    revision = _with_key(writer, "POST", _item_path(mine.body, "/revisions"), {"content": "v2"}, "shared-key")
    assert revision.status == 201
    assert "Idempotent-Replayed" not in revision.headers


def test_idempotency_key_of_failed_write_can_be_used_again(writer: AdminClient, base: dict[str, Any]) -> None:
    item = _new_item(writer, base)
    writer.ok("POST", _item_path(item, "/revisions"), {"content": "v2"}, status=201)

    stale = _with_key(writer, "POST", _item_path(item, "/archive"), {"expected_version": 1}, "archive-1")
    fixed = _with_key(writer, "POST", _item_path(item, "/archive"), {"expected_version": 2}, "archive-1")

    assert stale.status == 409
    assert (fixed.status, fixed.body["status"]) == (200, "archived")


@pytest.mark.parametrize("key", ["", "k" * 256])
def test_idempotency_key_out_of_bounds_answers_validation_error(
    writer: AdminClient, base: dict[str, Any], key: str
) -> None:
    reply = _with_key(writer, "POST", _items_path(base), {"title": "x", "content": "y"}, key)

    error_body(400, "validation_error", reply)


# -- tokens ---------------------------------------------------------------------------------------


def test_create_token_then_use_it_through_the_authorizer(
    world: SearchWorld, admin: AdminClient, writer: AdminClient, base: dict[str, Any]
) -> None:
    item = _new_item(writer, base, publish=True)
    drain(StreamReader())

    reply = admin.call(
        "POST",
        "/v1/tokens",
        {"subject_id": "agent-42", "team_ids": ["platform"], "scopes": [READ], "expires_in": 3600},
    )

    assert reply.status == 201
    assert set(reply.body) == {
        "token",
        "token_id",
        "tenant_id",
        "subject_id",
        "team_ids",
        "scopes",
        "knowledge_base_ids",
        "issuer_token_id",
        "created_at",
        "expires_at",
    }
    assert reply.body["token_id"] == hash_token(reply.body["token"])
    assert (reply.body["scopes"], reply.body["knowledge_base_ids"]) == ([READ], None)
    assert reply.body["issuer_token_id"] == hash_token(str(admin.authorization).removeprefix("Bearer "))
    bearer = f"Bearer {reply.body['token']}"
    assert result_items(world.search(bearer, "blue green switch", mode="lexical")) == [
        item["knowledge_item_id"]
    ]
    assert AdminClient(bearer).ok("GET", _item_path(item))["knowledge_item_id"] == item["knowledge_item_id"]
    error_body(
        403,
        "insufficient_scope",
        AdminClient(bearer).call("POST", _items_path(base), {"title": "x", "content": "y"}),
    )
    assert reply.body["token"] not in str(raw_items("META"))


def test_create_token_with_scope_the_caller_lacks_answers_insufficient_scope(admin: AdminClient) -> None:
    reply = admin.call("POST", "/v1/tokens", {"subject_id": "x", "scopes": [READ, PLATFORM]})

    assert error_body(403, "insufficient_scope", reply)["details"] == {"missing_scopes": [PLATFORM]}


def test_create_token_for_another_tenant_needs_platform_admin(world: SearchWorld, admin: AdminClient) -> None:
    operator = _client(world, "operator", PLATFORM)
    body = {"tenant_id": "globex", "subject_id": "globex-admin", "scopes": [ADMIN, READ]}

    refused = admin.call("POST", "/v1/tokens", body)
    issued = operator.ok("POST", "/v1/tokens", body, status=201)

    assert error_body(403, "insufficient_scope", refused)["details"] == {"required_scope": PLATFORM}
    globex = AdminClient(f"Bearer {issued['token']}")
    created = globex.ok("POST", "/v1/knowledge-bases", {"name": "Globex", "scope": "tenant"}, status=201)
    assert created["owner_id"] == "globex-admin"
    assert [entry["name"] for entry in admin.ok("GET", "/v1/knowledge-bases")["knowledge_bases"]] == []


def test_create_token_cannot_widen_the_callers_base_allow_list(
    world: SearchWorld, base: dict[str, Any]
) -> None:
    narrow = _client(world, "curator-5", ADMIN, READ, knowledge_base_ids=[base["knowledge_base_id"]])
    other = "kb_01M8MSRAQ70QQ1SJHWP0AMCDPZ"

    widened = narrow.call(
        "POST", "/v1/tokens", {"subject_id": "curator-5", "scopes": [READ], "knowledge_base_ids": [other]}
    )
    inherited = narrow.ok("POST", "/v1/tokens", {"subject_id": "curator-5", "scopes": [READ]}, status=201)

    assert error_body(403, "insufficient_scope", widened)["details"] == {"knowledge_base_ids": [other]}
    token = world.store.get_token(hash_token(inherited["token"]))
    assert token is not None
    assert token.knowledge_base_ids == frozenset({base["knowledge_base_id"]})


@pytest.mark.parametrize(
    "body",
    [
        {"subject_id": "x", "scopes": []},
        {"subject_id": "x", "scopes": ["knowledge:everything"]},
        {"subject_id": "", "scopes": [READ]},
        {"subject_id": "x", "scopes": [READ], "tenant_id": "a#b"},
        {"subject_id": "x", "scopes": [READ], "knowledge_base_ids": ["kb_#1"]},
    ],
)
def test_create_token_malformed_body_answers_validation_error(
    admin: AdminClient, body: dict[str, Any]
) -> None:
    error_body(400, "validation_error", admin.call("POST", "/v1/tokens", body))


def test_create_token_replayed_key_answers_conflict_and_never_stores_the_token(admin: AdminClient) -> None:
    body = {"subject_id": "agent-1", "scopes": [READ]}

    first = _with_key(admin, "POST", "/v1/tokens", body, "token-1")
    again = _with_key(admin, "POST", "/v1/tokens", body, "token-1")

    assert first.status == 201
    error_body(409, "knowledge_conflict", again)
    stored = str([item for item in raw_items("") if item["PK"]["S"] == "IDEMPOTENCY"])
    assert "COMPLETED" in stored
    assert first.body["token"] not in stored


# -- health and reindex ---------------------------------------------------------------------------


def test_health_answers_without_token_with_runtime_switch_state(world: SearchWorld) -> None:
    anonymous = AdminClient(None)
    enabled = anonymous.ok("GET", "/v1/health")

    world.install(runtime_switch=StaticRuntimeSwitch(False))
    disabled = anonymous.ok("GET", "/v1/health")

    assert enabled == {"status": "ok", "runtime_enabled": True}
    assert disabled == {"status": "ok", "runtime_enabled": False}


def test_writes_do_not_depend_on_the_runtime_switch(
    world: SearchWorld, writer: AdminClient, base: dict[str, Any]
) -> None:
    world.install(runtime_switch=StaticRuntimeSwitch(False))

    assert _new_item(writer, base)["status"] == "draft"


def test_reindex_rebuilds_an_emptied_index(
    world: SearchWorld, admin: AdminClient, writer: AdminClient, base: dict[str, Any]
) -> None:
    published = [_new_item(writer, base, title=f"Runbook {n}", publish=True) for n in range(3)]
    _new_item(writer, base, title="Draft")
    drain(StreamReader())
    world.index = EmbeddedIndex()
    world.install()

    counts = admin.ok("POST", f"/v1/knowledge-bases/{base['knowledge_base_id']}/reindex")

    assert counts == {
        "knowledge_base_id": base["knowledge_base_id"],
        "status": "active",
        "scanned": 4,
        "indexed": 3,
        "queued": 0,
        "removed": 1,
        "superseded": 0,
        "skipped": 0,
    }
    assert indexed_revisions(world.index, TENANT) == {
        entry["knowledge_item_id"]: entry["knowledge_revision_id"] for entry in published
    }


def test_reindex_of_inactive_base_empties_its_part_of_the_index(
    world: SearchWorld, admin: AdminClient, writer: AdminClient, base: dict[str, Any]
) -> None:
    _new_item(writer, base, publish=True)
    drain(StreamReader())
    admin.ok(
        "PATCH",
        f"/v1/knowledge-bases/{base['knowledge_base_id']}",
        {"status": "inactive", "expected_version": 1},
    )

    counts = admin.ok("POST", f"/v1/knowledge-bases/{base['knowledge_base_id']}/reindex")

    assert (counts["status"], counts["scanned"]) == ("inactive", 0)
    assert indexed_revisions(world.index, TENANT) == {}


# -- tokens: reach of the issuer ------------------------------------------------------------------


def test_create_token_for_another_tenant_with_allow_list_answers_insufficient_scope(
    world: SearchWorld, base: dict[str, Any]
) -> None:
    narrow_operator = _client(world, "operator", PLATFORM, knowledge_base_ids=[base["knowledge_base_id"]])
    body = {"tenant_id": "elsewhere", "subject_id": "elsewhere-admin", "scopes": [PLATFORM]}

    reply = narrow_operator.call("POST", "/v1/tokens", body)

    error = error_body(403, "insufficient_scope", reply)
    assert error["details"] == {"tenant_id": "elsewhere"}
    assert "own tenant" in error["message"]
    assert [
        item
        for item in raw_items("META")
        if item["PK"]["S"].startswith("TOKEN#") and item["tenant_id"]["S"] == "elsewhere"
    ] == []


def test_create_token_with_allow_list_in_own_tenant_stays_inside_it(
    world: SearchWorld, base: dict[str, Any]
) -> None:
    narrow_operator = _client(world, "operator", PLATFORM, knowledge_base_ids=[base["knowledge_base_id"]])

    issued = narrow_operator.ok(
        "POST", "/v1/tokens", {"subject_id": "operator", "scopes": [PLATFORM]}, status=201
    )

    token = world.store.get_token(issued["token_id"])
    assert token is not None
    assert (token.tenant_id, token.knowledge_base_ids) == (TENANT, frozenset({base["knowledge_base_id"]}))


def _expiry(reply_body: dict[str, Any]) -> datetime:
    expires_at = reply_body["expires_at"]
    assert expires_at is not None
    return datetime.fromisoformat(expires_at)


@pytest.mark.parametrize("expires_in", [None, 7_200, 315_360_000])
def test_create_token_never_outlives_the_issuers_token(world: SearchWorld, expires_in: int | None) -> None:
    issuer = _client(world, "curator-9", ADMIN, READ, expires_in=timedelta(hours=1))
    issuer_record = world.store.get_token(hash_token(str(issuer.authorization).removeprefix("Bearer ")))
    assert issuer_record is not None

    body: dict[str, Any] = {"subject_id": "agent-1", "scopes": [READ]}
    if expires_in is not None:
        body["expires_in"] = expires_in
    issued = issuer.ok("POST", "/v1/tokens", body, status=201)

    stored = world.store.get_token(issued["token_id"])
    assert stored is not None
    assert stored.expires_at == issuer_record.expires_at == _expiry(issued)


def test_create_token_shorter_than_the_issuers_keeps_its_own_expiry(world: SearchWorld) -> None:
    issuer = _client(world, "curator-9", ADMIN, READ, expires_in=timedelta(hours=1))
    before = datetime.now(UTC)

    issued = issuer.ok(
        "POST", "/v1/tokens", {"subject_id": "a", "scopes": [READ], "expires_in": 60}, status=201
    )

    assert before + timedelta(seconds=60) <= _expiry(issued) <= datetime.now(UTC) + timedelta(seconds=60)


def test_create_token_by_a_token_without_expiry_has_the_asked_expiry_or_none(admin: AdminClient) -> None:
    forever = admin.ok("POST", "/v1/tokens", {"subject_id": "a", "scopes": [READ]}, status=201)

    assert forever["expires_at"] is None


def test_request_with_expired_token_in_a_cached_authorizer_answer_answers_authentication_required(
    world: SearchWorld, admin: AdminClient
) -> None:
    # API Gateway may replay an authorizer answer for 300 s; the expiry it carries still counts.
    event = admin_event("GET", "/v1/knowledge-bases", authorization=admin.authorization)
    expired = (datetime.now(UTC) - timedelta(seconds=1)).isoformat()
    event["requestContext"]["authorizer"]["lambda"]["expires_at"] = expired

    error_body(401, "authentication_required", invoke_admin(event))


# -- tokens: revocation ---------------------------------------------------------------------------


def _issue(client: AdminClient, **body: Any) -> dict[str, Any]:
    issued: dict[str, Any] = client.ok(
        "POST", "/v1/tokens", {"subject_id": "agent-1", "scopes": [READ], **body}, status=201
    )
    return issued


def test_revoke_token_answers_204_and_the_token_stops_authenticating(admin: AdminClient) -> None:
    issued = _issue(admin)
    holder = AdminClient(f"Bearer {issued['token']}")
    assert holder.call("GET", "/v1/knowledge-bases").status == 200

    revoked = admin.call("DELETE", f"/v1/tokens/{issued['token_id']}")
    again = admin.call("DELETE", f"/v1/tokens/{issued['token_id']}")

    assert (revoked.status, revoked.text) == (204, "")
    assert (again.status, again.text) == (204, "")
    error_body(401, "authentication_required", holder.call("GET", "/v1/knowledge-bases"))


def test_revoke_token_by_platform_admin_of_another_tenant_answers_204(
    world: SearchWorld, admin: AdminClient
) -> None:
    issued = _issue(admin)
    operator = _client(world, "operator", PLATFORM, tenant_id="platform")

    assert operator.call("DELETE", f"/v1/tokens/{issued['token_id']}").status == 204
    stored = world.store.get_token(issued["token_id"])
    assert stored is not None
    assert stored.revoked is True


@pytest.mark.parametrize(
    "token_id",
    ["0" * 64, "not-a-token-id", "A" * 64, "kn_" + "a" * 61],
    ids=["unknown", "short", "upper", "token"],
)
def test_revoke_unknown_or_malformed_token_answers_resource_unavailable(
    admin: AdminClient, token_id: str
) -> None:
    error_body(404, "knowledge_resource_unavailable", admin.call("DELETE", f"/v1/tokens/{token_id}"))


def test_revoke_token_of_another_tenant_answers_resource_unavailable(
    world: SearchWorld, admin: AdminClient
) -> None:
    issued = _issue(admin)
    foreign = _client(world, "curator-1", ADMIN, READ, tenant_id="globex")

    reply = foreign.call("DELETE", f"/v1/tokens/{issued['token_id']}")

    assert reply.text == admin.call("DELETE", f"/v1/tokens/{'0' * 64}").text
    error_body(404, "knowledge_resource_unavailable", reply)
    stored = world.store.get_token(issued["token_id"])
    assert stored is not None
    assert stored.revoked is False


def test_revoke_token_beyond_the_callers_reach_answers_resource_unavailable(
    world: SearchWorld, admin: AdminClient, base: dict[str, Any]
) -> None:
    operator = _client(world, "operator", PLATFORM)
    wider = _issue(admin)
    stronger = _issue(operator, scopes=[PLATFORM])
    narrow = _client(world, "curator-5", ADMIN, READ, knowledge_base_ids=[base["knowledge_base_id"]])
    inside = _issue(narrow, subject_id="curator-5")

    assert narrow.call("DELETE", f"/v1/tokens/{wider['token_id']}").status == 404
    assert admin.call("DELETE", f"/v1/tokens/{stronger['token_id']}").status == 404
    assert narrow.call("DELETE", f"/v1/tokens/{inside['token_id']}").status == 204


def test_revoke_token_without_admin_scope_answers_insufficient_scope(
    admin: AdminClient, writer: AdminClient
) -> None:
    issued = _issue(admin)

    reply = writer.call("DELETE", f"/v1/tokens/{issued['token_id']}")

    assert error_body(403, "insufficient_scope", reply)["details"] == {"required_scope": ADMIN}


def test_revoke_token_route_is_served_by_the_admin_function_in_the_template() -> None:
    match = load_routes(TEMPLATE).match("DELETE", f"/v1/tokens/{'0' * 64}")

    assert match is not None
    assert match.route.function.logical_id == "KnowledgeAdminFunction"
    assert match.route.authorizer is not None


# -- drafts are invisible to readers --------------------------------------------------------------


def test_draft_revision_title_and_id_are_hidden_from_readers(
    writer: AdminClient, reader: AdminClient, base: dict[str, Any]
) -> None:
    item = _new_item(writer, base, publish=True)
    draft = writer.ok(
        "POST",
        _item_path(item, "/revisions"),
        {"content": "Unannounced plan.", "title": "Secret codename"},
        status=201,
    )

    seen = reader.ok("GET", _item_path(item))
    listed = reader.ok("GET", _items_path(base))["items"]
    curated = writer.ok("GET", _item_path(item))

    assert (seen["title"], seen["latest_revision_id"]) == ("Runbook", item["knowledge_revision_id"])
    assert [(entry["title"], entry["latest_revision_id"]) for entry in listed] == [
        ("Runbook", item["knowledge_revision_id"])
    ]
    assert "Secret codename" not in json.dumps([seen, listed])
    assert (curated["title"], curated["latest_revision_id"]) == (
        "Runbook",
        draft["knowledge_revision_id"],
    )
    assert draft["title"] == "Runbook"


def test_publish_renames_item_to_the_revision_title_and_rollback_restores_it(
    writer: AdminClient, reader: AdminClient, base: dict[str, Any]
) -> None:
    item = _new_item(writer, base, publish=True)
    draft = writer.ok(
        "POST", _item_path(item, "/revisions"), {"content": "v2", "title": "Runbook v2"}, status=201
    )

    published = writer.ok(
        "POST",
        _item_path(item, "/publish"),
        {"revision_id": draft["knowledge_revision_id"], "expected_version": 2},
    )
    renamed = reader.ok("GET", _item_path(item))
    rolled_back = writer.ok(
        "POST",
        _item_path(item, "/publish"),
        {"revision_id": item["knowledge_revision_id"], "expected_version": 3},
    )

    assert (published["title"], renamed["title"], renamed["latest_revision_id"]) == (
        "Runbook v2",
        "Runbook v2",
        draft["knowledge_revision_id"],
    )
    assert rolled_back["title"] == "Runbook"
    assert reader.ok("GET", _item_path(item))["latest_revision_id"] == item["knowledge_revision_id"]


# -- Idempotency-Key: authorization before replay -------------------------------------------------


def test_idempotency_key_replay_to_token_without_write_scope_answers_insufficient_scope(
    world: SearchWorld, writer: AdminClient, base: dict[str, Any]
) -> None:
    body = {"title": "Runbook", "content": DOC, "publish": True}
    assert _with_key(writer, "POST", _items_path(base), body, "same-subject").status == 201
    read_only = _client(world, "writer-1", READ)

    reply = _with_key(read_only, "POST", _items_path(base), body, "same-subject")

    assert error_body(403, "insufficient_scope", reply)["details"] == {"required_scope": WRITE}
    assert "Idempotent-Replayed" not in reply.headers


def test_idempotency_key_replay_outside_the_tokens_allow_list_answers_resource_unavailable(
    world: SearchWorld, writer: AdminClient, base: dict[str, Any]
) -> None:
    item = _new_item(writer, base)
    body = {"content": "v2"}
    assert _with_key(writer, "POST", _item_path(item, "/revisions"), body, "k-rev").status == 201
    elsewhere = _client(world, "writer-1", READ, WRITE, knowledge_base_ids=["kb_01M8MSRAQ70QQ1SJHWP0AMCDPZ"])

    reply = _with_key(elsewhere, "POST", _item_path(item, "/revisions"), body, "k-rev")

    error_body(404, "knowledge_resource_unavailable", reply)


def test_idempotency_key_replay_of_archive_still_answers_the_first_answer(
    writer: AdminClient, base: dict[str, Any]
) -> None:
    item = _new_item(writer, base)

    first = _with_key(writer, "POST", _item_path(item, "/archive"), {"expected_version": 1}, "archive-2")
    again = _with_key(writer, "POST", _item_path(item, "/archive"), {"expected_version": 1}, "archive-2")

    assert (again.status, again.body, again.headers.get("Idempotent-Replayed")) == (200, first.body, "true")


def test_write_routes_answer_and_replay_after_another_resolver_includes_their_router(
    writer: AdminClient, base: dict[str, Any]
) -> None:
    # The OpenAPI document's resolver includes the serving routers too: routes must not depend on
    # which resolver included their router last.
    APIGatewayHttpResolver(enable_validation=False).include_router(knowledge_admin.router)
    body = {"title": "Runbook", "content": DOC}

    first = _with_key(writer, "POST", _items_path(base), body, "after-document")
    again = _with_key(writer, "POST", _items_path(base), body, "after-document")

    assert (first.status, again.status, again.body) == (201, 201, first.body)
    assert again.headers.get("Idempotent-Replayed") == "true"
    assert writer.ok("GET", _item_path(first.body))["knowledge_item_id"] == first.body["knowledge_item_id"]


# -- malformed bodies -----------------------------------------------------------------------------

SURROGATE = "a\ud800b"
"""Encoded by ``json.dumps`` as the escape ``\\ud800``: valid JSON syntax, not valid Unicode."""


@pytest.mark.parametrize(
    ("route", "body", "field"),
    [
        ("{items}", {"title": "t", "content": SURROGATE}, "content"),
        ("{items}", {"title": SURROGATE, "content": "c"}, "title"),
        ("{items}", {"title": "t", "content": "c", "external_id": SURROGATE}, "external_id"),
        ("{items}", {"title": "t", "content": "c", "source": {"uri": SURROGATE}}, "source.uri"),
        ("{item}/revisions", {"content": SURROGATE}, "content"),
        ("{item}/revisions", {"content": "c", "source": {"title": SURROGATE}}, "source.title"),
        ("{item}/publish", {"revision_id": SURROGATE, "expected_version": 1}, "revision_id"),
        ("/v1/knowledge-bases", {"name": SURROGATE, "scope": "tenant"}, "name"),
        ("/v1/knowledge-bases", {"name": "n", "scope": "team", "team_id": SURROGATE}, "team_id"),
        ("/v1/tokens", {"subject_id": SURROGATE, "scopes": [READ]}, "subject_id"),
        ("/v1/tokens", {"subject_id": "s", "team_ids": [SURROGATE], "scopes": [READ]}, "team_ids.0"),
        ("/v1/tokens", {"tenant_id": SURROGATE, "subject_id": "s", "scopes": [READ]}, "tenant_id"),
    ],
)
def test_write_with_lone_surrogate_answers_validation_error_and_writes_nothing(
    admin: AdminClient, base: dict[str, Any], route: str, body: dict[str, Any], field: str
) -> None:
    item = _new_item(admin, base)
    before = raw_items("")

    reply = admin.call("POST", route.format(items=_items_path(base), item=_item_path(item)), body)

    error = error_body(400, "validation_error", reply)
    assert [problem["field"] for problem in error["details"]["fields"]] == [field]
    assert "\\ud800" not in reply.text
    assert raw_items("") == before


def test_list_items_with_lone_surrogate_external_id_answers_validation_error(
    writer: AdminClient, base: dict[str, Any]
) -> None:
    event = admin_event("GET", _items_path(base), authorization=writer.authorization)
    event["rawQueryString"] = "external_id=a%ED%A0%80b"
    event["queryStringParameters"] = {"external_id": SURROGATE}

    reply = invoke_admin(event)

    error = error_body(400, "validation_error", reply)
    assert [problem["field"] for problem in error["details"]["fields"]] == ["query.external_id"]


@pytest.mark.parametrize(
    ("raw_query", "decoded", "fields"),
    [
        ("external_id=%ED%A0%80", {"external_id": "\ufffd\ufffd\ufffd"}, ["query.external_id"]),
        ("external_id=a%FFb", {"external_id": "a\ufffdb"}, ["query.external_id"]),
        ("limit=5&x%FF=1", {"limit": "5", "x\ufffd": "1"}, ["query"]),
        (
            "external_id=%FF&next_token=%C3",
            {"external_id": "\ufffd", "next_token": "\ufffd"},
            ["query.external_id", "query.next_token"],
        ),
    ],
    ids=["encoded-surrogate", "invalid-byte", "undecodable-name", "two-fields"],
)
def test_list_items_with_a_query_that_is_not_utf8_answers_validation_error(
    writer: AdminClient, base: dict[str, Any], raw_query: str, decoded: dict[str, str], fields: list[str]
) -> None:
    # queryStringParameters as a gateway decodes them: undecodable bytes become U+FFFD
    event = admin_event("GET", _items_path(base), authorization=writer.authorization)
    event["rawQueryString"] = raw_query
    event["queryStringParameters"] = decoded

    reply = invoke_admin(event)

    error = error_body(400, "validation_error", reply)
    assert error["message"] == "The request has a malformed value."
    assert [problem["field"] for problem in error["details"]["fields"]] == fields


def test_list_items_with_a_utf8_query_is_answered(writer: AdminClient, base: dict[str, Any]) -> None:
    event = admin_event("GET", _items_path(base), authorization=writer.authorization)
    event["rawQueryString"] = "external_id=caf%C3%A9+cr%C3%A8me"
    event["queryStringParameters"] = {"external_id": "café crème"}

    reply = invoke_admin(event)

    assert reply.status == 200, reply.text


NOT_JSON = {"fields": [{"field": "body", "problem": "The body is not valid JSON."}]}
NOT_AN_OBJECT = {"fields": [{"field": "body", "problem": "The body must be a JSON object."}]}


@pytest.mark.parametrize(
    ("text", "message", "details"),
    [
        ('{"expected_version": ' + "9" * 4_301 + "}", "The request body is not valid JSON.", NOT_JSON),
        ('{"name": "x", "scope": "tenant"', "The request body is not valid JSON.", NOT_JSON),
        ("[" * 100_000 + "]" * 100_000, "The request body is not valid JSON.", NOT_JSON),
        ('[{"name": "x", "scope": "tenant"}]', "The request body must be a JSON object.", NOT_AN_OBJECT),
        ('"x"', "The request body must be a JSON object.", NOT_AN_OBJECT),
    ],
    ids=["huge-integer", "truncated", "deep", "array", "string"],
)
def test_write_with_body_not_a_json_object_answers_validation_error(
    admin: AdminClient, base: dict[str, Any], text: str, message: str, details: dict[str, Any]
) -> None:
    path = f"/v1/knowledge-bases/{base['knowledge_base_id']}"

    reply = admin.call("PATCH", path, text)

    error = error_body(400, "validation_error", reply)
    assert (error["message"], error["details"]) == (message, details)
    assert admin.ok("GET", "/v1/knowledge-bases")["knowledge_bases"] == [base]


def test_archive_dry_run_changes_nothing_and_previews_the_receipt(
    writer: AdminClient, base: dict[str, Any]
) -> None:
    item = _new_item(writer, base, publish=True, external_id="handbook")

    preview = writer.ok("POST", _item_path(item, "/archive"), {"expected_version": 1, "dry_run": True})
    untouched = writer.ok("GET", _item_path(item))
    still_held = writer.ok("GET", _items_path(base), external_id="handbook")["items"]
    stale = writer.call("POST", _item_path(item, "/archive"), {"expected_version": 7, "dry_run": True})
    archived = writer.ok("POST", _item_path(item, "/archive"), {"expected_version": 1})

    assert (untouched["status"], untouched["version"]) == ("published", 1)
    assert [held["knowledge_item_id"] for held in still_held] == [item["knowledge_item_id"]]
    error_body(409, "knowledge_conflict", stale)
    assert (preview["dry_run"], archived["dry_run"]) == (True, False)
    assert preview["receipt"]["dry_run"] is True
    assert {key: value for key, value in preview["receipt"].items() if key != "dry_run"} == {
        key: value for key, value in archived["receipt"].items() if key != "dry_run"
    }
    receipt = archived["receipt"]
    assert [(entry["kind"], entry["ids"], entry["state"]) for entry in receipt["table"]] == [
        ("item", [item["knowledge_item_id"]], "archived"),
        ("external_id", ["handbook"], "purged"),
    ]
    assert [(entry["kind"], entry["ids"], entry["state"]) for entry in receipt["index"]] == [
        ("item_passages", [item["knowledge_revision_id"]], "scheduled")
    ]
    assert writer.ok("GET", _items_path(base), external_id="handbook")["items"] == []


# -- item purge -------------------------------------------------------------------------------------


def test_purge_item_dry_run_changes_nothing_and_previews_the_receipt(
    admin: AdminClient, writer: AdminClient, base: dict[str, Any]
) -> None:
    item = _new_item(writer, base, publish=True, external_id="handbook")

    preview = admin.ok("DELETE", _item_path(item), expected_version="1", dry_run="true")
    untouched = writer.ok("GET", _item_path(item))
    purged = admin.ok("DELETE", _item_path(item), expected_version="1")

    assert (untouched["status"], untouched["version"]) == ("published", 1)
    assert (preview["dry_run"], purged["dry_run"]) == (True, False)
    assert (purged["knowledge_item_id"], purged["knowledge_base_id"]) == (
        item["knowledge_item_id"],
        base["knowledge_base_id"],
    )
    assert {key: value for key, value in preview["receipt"].items() if key != "dry_run"} == {
        key: value for key, value in purged["receipt"].items() if key != "dry_run"
    }
    receipt = purged["receipt"]
    revision = item["knowledge_revision_id"]
    assert [(entry["kind"], entry["ids"], entry["state"]) for entry in receipt["table"]] == [
        ("item", [item["knowledge_item_id"]], "purged"),
        ("item_revision", [revision], "purged"),
        ("content_page", [f"{revision}#0"], "purged"),
        ("item_state", [f"{item['knowledge_item_id']}@1"], "purged"),
        ("external_id", ["handbook"], "purged"),
    ]
    assert [(entry["kind"], entry["ids"]) for entry in receipt["index"]] == [
        ("item_passages", [revision]),
        ("item_history", [f"{item['knowledge_item_id']}@1"]),
    ]
    assert receipt["embedding_cache"][0]["count"] >= 1
    error_body(404, "knowledge_resource_unavailable", writer.call("GET", _item_path(item)))
    assert writer.ok("GET", _items_path(base), external_id="handbook")["items"] == []


def test_purge_item_stale_expected_version_answers_conflict(
    admin: AdminClient, writer: AdminClient, base: dict[str, Any]
) -> None:
    item = _new_item(writer, base, publish=True)

    for dry_run in ("true", "false"):
        reply = admin.call("DELETE", _item_path(item), expected_version="2", dry_run=dry_run)
        assert error_body(409, "knowledge_conflict", reply)["details"]["current_version"] == 1
    assert writer.ok("GET", _item_path(item))["version"] == 1


def test_purge_item_without_admin_scope_answers_insufficient_scope(
    writer: AdminClient, base: dict[str, Any]
) -> None:
    item = _new_item(writer, base, publish=True)

    reply = writer.call("DELETE", _item_path(item), expected_version="1", dry_run="true")

    assert error_body(403, "insufficient_scope", reply)["details"] == {"required_scope": "knowledge:admin"}


@pytest.mark.parametrize(
    ("query", "code"),
    [
        ({}, "validation_error"),
        ({"expected_version": "01"}, "validation_error"),
        ({"expected_version": "0"}, "knowledge_invalid_request"),
        ({"expected_version": "1", "dry_run": "maybe"}, "validation_error"),
    ],
)
def test_purge_item_without_a_valid_query_answers_400(
    admin: AdminClient, writer: AdminClient, base: dict[str, Any], query: dict[str, str], code: str
) -> None:
    item = _new_item(writer, base, publish=True)

    error_body(400, code, admin.call("DELETE", _item_path(item), **query))
    assert writer.ok("GET", _item_path(item))["version"] == 1


def test_purge_item_absent_answers_resource_unavailable(admin: AdminClient) -> None:
    reply = admin.call("DELETE", "/v1/knowledge-items/ki_01M8MSRAQ70QQ1SJHWP0AMCDPZ", expected_version="1")

    error_body(404, "knowledge_resource_unavailable", reply)


# -- base archive and purge -------------------------------------------------------------------------


def test_archive_base_dry_run_previews_and_the_archive_makes_it_inactive(
    admin: AdminClient, writer: AdminClient, base: dict[str, Any]
) -> None:
    item = _new_item(writer, base, publish=True)
    path = f"/v1/knowledge-bases/{base['knowledge_base_id']}/archive"

    preview = admin.ok("POST", path, {"expected_version": 1, "dry_run": True})
    archived = admin.ok("POST", path, {"expected_version": 1})
    stale = admin.call("POST", path, {"expected_version": 1, "dry_run": True})

    assert (preview["status"], preview["version"], preview["dry_run"]) == ("active", 1, True)
    assert (archived["status"], archived["version"], archived["dry_run"]) == ("inactive", 2, False)
    assert {k: v for k, v in preview["receipt"].items() if k != "dry_run"} == {
        k: v for k, v in archived["receipt"].items() if k != "dry_run"
    }
    assert [(e["kind"], e["ids"], e["state"]) for e in archived["receipt"]["table"]] == [
        ("knowledge_base", [base["knowledge_base_id"]], "hidden")
    ]
    assert [(e["kind"], e["ids"], e["state"]) for e in archived["receipt"]["index"]] == [
        ("item_passages", [item["knowledge_revision_id"]], "scheduled")
    ]
    error_body(409, "knowledge_conflict", stale)


def test_purge_base_dry_run_previews_and_the_purge_deletes_every_item_archived_ones_too(
    admin: AdminClient, writer: AdminClient, base: dict[str, Any]
) -> None:
    live = _new_item(writer, base, publish=True, external_id="live.md")
    old = _new_item(writer, base, publish=True)
    writer.ok("POST", _item_path(old, "/archive"), {"expected_version": 1})
    path = f"/v1/knowledge-bases/{base['knowledge_base_id']}"

    preview = admin.ok("DELETE", path, expected_version="1", dry_run="true")
    still = writer.ok("GET", _item_path(live))
    purged = admin.ok("DELETE", path, expected_version="1")

    assert still["version"] == 1
    assert (preview["items"], purged["items"], purged["dry_run"]) == (2, 2, False)
    assert {k: v for k, v in preview["receipt"].items() if k != "dry_run"} == {
        k: v for k, v in purged["receipt"].items() if k != "dry_run"
    }
    table = {e["kind"]: e["ids"] for e in purged["receipt"]["table"]}
    assert table["knowledge_base"] == [base["knowledge_base_id"]]
    assert table["item"] == sorted([live["knowledge_item_id"], old["knowledge_item_id"]])
    assert table["external_id"] == ["live.md"]
    for item in (live, old):
        error_body(404, "knowledge_resource_unavailable", writer.call("GET", _item_path(item)))
    assert admin.ok("GET", "/v1/knowledge-bases")["knowledge_bases"] == []


def test_purge_base_stale_expected_version_answers_conflict_and_without_admin_forbidden(
    admin: AdminClient, writer: AdminClient, base: dict[str, Any]
) -> None:
    path = f"/v1/knowledge-bases/{base['knowledge_base_id']}"

    stale = admin.call("DELETE", path, expected_version="2", dry_run="true")
    forbidden = writer.call("DELETE", path, expected_version="1", dry_run="true")

    assert error_body(409, "knowledge_conflict", stale)["details"]["current_version"] == 1
    error_body(403, "insufficient_scope", forbidden)
