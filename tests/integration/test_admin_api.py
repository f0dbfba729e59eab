"""The write API (DESIGN §6) through the real handlers: the authorizer, then ``KnowledgeAdminFunction``.

Each route: its answer's shape and status, the scope it needs, invisible bases answered like absent
ones, version races with ``details.current_version``, ``Idempotency-Key`` replays, content limits,
pagination. Search checks run the indexer on the table's stream first.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from knowledge.adapters.embedded_index import EmbeddedIndex
from knowledge.adapters.runtime_switch import StaticRuntimeSwitch
from knowledge.bootstrap import use_container
from knowledge.domain.tokens import hash_token
from knowledge.settings import Settings
from tests.conftest import TABLE_NAME
from tests.support.admin import AdminClient
from tests.support.rest import Reply, SearchWorld, error_body, new_world, result_items
from tests.support.store import raw_items
from tests.support.streams import StreamReader, drain, indexed_revisions

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


@pytest.mark.parametrize("query", [{"limit": 0}, {"limit": 101}, {"limit": "many"}, {"next_token": "bogus"}])
def test_list_bases_bad_paging_answers_validation_error(admin: AdminClient, query: dict[str, Any]) -> None:
    error_body(400, "validation_error", admin.call("GET", "/v1/knowledge-bases", **query))


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


@pytest.mark.parametrize("base_id", ["kb_01M8MSRAQ70QQ1SJHWP0AMCDPZ", "kb_%23EXT", "not-an-id"])
def test_update_absent_or_malformed_base_answers_resource_unavailable(
    admin: AdminClient, base_id: str
) -> None:
    reply = admin.call("PATCH", f"/v1/knowledge-bases/{base_id}", {"name": "x", "expected_version": 1})

    error_body(404, "knowledge_resource_unavailable", reply)


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
    assert (second["version"], second["title"], second["external_id"]) == (2, "Runbook v2", "runbook")
    assert second["current_revision_id"] == first["knowledge_revision_id"]  # not published
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
    assert set(first["items"][0]) == ITEM_FIELDS
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
    "revision_id", ["kr_01M8MSRAQ70QQ1SJHWP0AMCDPZ", "kr_#1", "ki_01M8MSRAQ70QQ1SJHWP0AMCDPZ"]
)
def test_publish_unknown_revision_answers_resource_unavailable(
    writer: AdminClient, base: dict[str, Any], revision_id: str
) -> None:
    item = _new_item(writer, base)

    reply = writer.call(
        "POST", _item_path(item, "/publish"), {"revision_id": revision_id, "expected_version": 1}
    )

    error_body(404, "knowledge_resource_unavailable", reply)


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

    assert set(archived) == ITEM_FIELDS
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
    assert before["indexed_revision_id"] is None
    assert after == {**before, "indexed_revision_id": item["knowledge_revision_id"]}
    hits = world.search(world.token(TENANT), "blue green switch", mode="lexical")
    assert result_items(hits) == [item["knowledge_item_id"]]


def test_get_draft_item_is_unavailable_to_readers_and_visible_to_writers(
    writer: AdminClient, reader: AdminClient, base: dict[str, Any]
) -> None:
    item = _new_item(writer, base)

    assert writer.ok("GET", _item_path(item))["status"] == "draft"
    error_body(404, "knowledge_resource_unavailable", reader.call("GET", _item_path(item)))
    error_body(404, "knowledge_resource_unavailable", reader.call("GET", _item_path(item, "/revisions")))


@pytest.mark.parametrize(
    "item_id", ["ki_01M8MSRAQ70QQ1SJHWP0AMCDPZ", "ki_%23META", "kb_01M8MSRAQ70QQ1SJHWP0AMCDPZ"]
)
def test_get_absent_or_malformed_item_answers_resource_unavailable(reader: AdminClient, item_id: str) -> None:
    error_body(404, "knowledge_resource_unavailable", reader.call("GET", f"/v1/knowledge-items/{item_id}"))


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
    assert set(reply.body) == {"token"}
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
        "POST", "/v1/tokens", {"subject_id": "x", "scopes": [READ], "knowledge_base_ids": [other]}
    )
    inherited = narrow.ok("POST", "/v1/tokens", {"subject_id": "x", "scopes": [READ]}, status=201)

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
        {"subject_id": "x", "scopes": [READ], "expires_in": 0},
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
