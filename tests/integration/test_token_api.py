"""``/v1/tokens`` through the real authorizer and ``KnowledgeAdminFunction`` on moto: lineage and
cascading revocation, listing, and the answer of ``POST /v1/tokens``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from knowledge.bootstrap import use_container
from knowledge.domain.access.bearer_tokens import hash_token
from knowledge_local.emulator.template.routes import load_routes
from tests.support.admin import AdminClient
from tests.support.memory import call, found, pin_memory, recall_context, remember
from tests.support.rest import SearchWorld, authorize, error_body, new_world
from tests.support.streams import StreamReader, drain
from tests.support.template import TEMPLATE

TENANT = "acme"
READ, WRITE, ADMIN, PLATFORM = "knowledge:read", "knowledge:write", "knowledge:admin", "platform:admin"
MEMORY_READ = "memory:read"
BASE = "kb_01M8MSRAQ70QQ1SJHWP0AMCDPZ"


@pytest.fixture
def world(table: Any) -> Iterator[SearchWorld]:
    built = new_world()
    yield built
    use_container(None)


@pytest.fixture
def admin(world: SearchWorld) -> AdminClient:
    return AdminClient(world.token(TENANT, "curator-1", scopes=(ADMIN, READ, WRITE)))


def _mint(issuer: AdminClient, subject: str, *scopes: str, **fields: Any) -> tuple[AdminClient, str]:
    """A token minted by ``issuer`` through ``POST /v1/tokens``: its client and its ``token_id``."""
    body = {"subject_id": subject, "scopes": list(scopes or (ADMIN, READ)), **fields}
    issued = issuer.ok("POST", "/v1/tokens", body, status=201)
    return AdminClient(f"Bearer {issued['token']}"), str(issued["token_id"])


def _token_id(client: AdminClient) -> str:
    return hash_token(str(client.authorization).removeprefix("Bearer "))


def test_revoking_a_token_refuses_its_grandchild_at_the_authorizer_and_spares_siblings(
    admin: AdminClient,
) -> None:
    child, child_id = _mint(admin, "child")
    grandchild, _ = _mint(child, "grandchild")
    sibling, _ = _mint(admin, "sibling")
    nephew, _ = _mint(sibling, "nephew")

    revoked = admin.call("DELETE", f"/v1/tokens/{child_id}")

    assert revoked.status == 204
    assert authorize(grandchild.authorization)["context"] == {"authenticated": "false", "reason": "revoked"}
    error_body(401, "authentication_required", grandchild.call("GET", "/v1/knowledge-bases"))
    error_body(
        401,
        "authentication_required",
        grandchild.call("POST", "/v1/tokens", {"subject_id": "x", "scopes": [READ]}),
    )
    assert authorize(nephew.authorization)["context"]["authenticated"] == "true"
    assert nephew.ok("GET", "/v1/knowledge-bases")["knowledge_bases"] == []


def test_revoke_twice_answers_204_both_times(admin: AdminClient) -> None:
    child, child_id = _mint(admin, "child")

    first = admin.call("DELETE", f"/v1/tokens/{child_id}")
    again = admin.call("DELETE", f"/v1/tokens/{child_id}")

    assert (first.status, again.status) == (204, 204)
    error_body(401, "authentication_required", child.call("GET", "/v1/knowledge-bases"))


def test_create_token_echoes_scopes_allow_list_and_issuer(admin: AdminClient) -> None:
    issued = admin.ok(
        "POST",
        "/v1/tokens",
        {"subject_id": "agent-1", "scopes": [READ, WRITE], "knowledge_base_ids": [BASE], "team_ids": ["ops"]},
        status=201,
    )

    assert issued["scopes"] == [READ, WRITE]
    assert issued["knowledge_base_ids"] == [BASE]
    assert (issued["tenant_id"], issued["subject_id"], issued["team_ids"]) == (TENANT, "agent-1", ["ops"])
    assert issued["issuer_token_id"] == _token_id(admin)


def test_create_token_with_an_empty_allow_list_answers_validation_error_naming_the_field(
    admin: AdminClient,
) -> None:
    reply = admin.call("POST", "/v1/tokens", {"subject_id": "x", "scopes": [READ], "knowledge_base_ids": []})

    error = error_body(400, "validation_error", reply)
    assert [problem["field"] for problem in error["details"]["fields"]] == ["knowledge_base_ids"]
    assert admin.ok("GET", "/v1/tokens")["tokens"][-1]["subject_id"] == "curator-1"


def test_list_tokens_pages_and_never_shows_secrets(admin: AdminClient) -> None:
    minted = [
        admin.ok("POST", "/v1/tokens", {"subject_id": f"agent-{n}", "scopes": [READ]}, status=201)
        for n in range(4)
    ]

    pages, next_token = [], None
    while True:
        page = admin.ok("GET", "/v1/tokens", limit=2, next_token=next_token)
        pages.append(page)
        next_token = page["next_token"]
        if next_token is None:
            break

    listed = [entry for page in pages for entry in page["tokens"]]
    assert len(pages) == 3
    assert [entry["subject_id"] for entry in listed] == ["curator-1"] + [f"agent-{n}" for n in range(4)]
    assert set(listed[1]) == {
        "token_id",
        "tenant_id",
        "subject_id",
        "team_ids",
        "scopes",
        "knowledge_base_ids",
        "issuer_token_id",
        "created_at",
        "expires_at",
        "revoked",
        "revoked_ancestor_token_id",
    }
    assert all(entry["issuer_token_id"] == _token_id(admin) for entry in listed[1:])
    text = str(pages)
    assert "kn_" not in text
    assert all(issued["token"] not in text for issued in minted)


def test_list_tokens_shows_revocation_through_an_ancestor(admin: AdminClient) -> None:
    child, child_id = _mint(admin, "child")
    _mint(child, "grandchild")
    admin.call("DELETE", f"/v1/tokens/{child_id}")

    entries = {entry["subject_id"]: entry for entry in admin.ok("GET", "/v1/tokens")["tokens"]}

    assert (entries["child"]["revoked"], entries["child"]["revoked_ancestor_token_id"]) == (True, None)
    assert (entries["grandchild"]["revoked"], entries["grandchild"]["revoked_ancestor_token_id"]) == (
        True,
        child_id,
    )
    assert entries["curator-1"]["revoked"] is False


def test_list_tokens_never_lists_another_tenants_tokens(world: SearchWorld, admin: AdminClient) -> None:
    globex = AdminClient(world.token("globex", "globex-admin", scopes=(ADMIN, READ)))
    _mint(globex, "globex-agent", READ)

    mine = admin.ok("GET", "/v1/tokens")["tokens"]
    refused = admin.call("GET", "/v1/tokens", tenant_id="globex")

    assert [entry["tenant_id"] for entry in mine] == [TENANT]
    assert error_body(403, "insufficient_scope", refused)["details"] == {"required_scope": PLATFORM}
    operator = AdminClient(world.token("platform", "operator", scopes=(PLATFORM,)))
    assert [
        entry["subject_id"] for entry in operator.ok("GET", "/v1/tokens", tenant_id="globex")["tokens"]
    ] == [
        "globex-admin",
        "globex-agent",
    ]


def test_list_tokens_shows_a_narrow_admin_only_the_tokens_it_may_revoke(admin: AdminClient) -> None:
    narrow, _ = _mint(admin, "narrow", ADMIN, READ, knowledge_base_ids=[BASE])
    _mint(admin, "writer", READ, WRITE)
    _mint(admin, "same-base", READ, knowledge_base_ids=[BASE])
    _, agent_id = _mint(narrow, "narrow", READ)

    listed = narrow.ok("GET", "/v1/tokens")["tokens"]

    assert [entry["subject_id"] for entry in listed] == ["narrow", "narrow"]
    assert listed[1]["token_id"] == agent_id
    for entry in reversed(listed):  # the narrow token last: revoking it revokes the caller
        assert narrow.call("DELETE", f"/v1/tokens/{entry['token_id']}").status == 204


def test_list_tokens_without_admin_scope_answers_insufficient_scope(world: SearchWorld) -> None:
    reader = AdminClient(world.token(TENANT, "reader", scopes=(READ,)))

    error_body(403, "insufficient_scope", reader.call("GET", "/v1/tokens"))


@pytest.mark.parametrize(
    ("query", "code"),
    [
        ({"limit": 0}, "knowledge_invalid_request"),
        ({"limit": 101}, "knowledge_invalid_request"),
        ({"next_token": "bogus"}, "validation_error"),
        ({"tenant_id": "a#b"}, "validation_error"),
    ],
)
def test_list_tokens_bad_query_answers_its_code(admin: AdminClient, query: dict[str, Any], code: str) -> None:
    error_body(400, code, admin.call("GET", "/v1/tokens", **query))


def test_list_tokens_route_is_served_by_the_admin_function_in_the_template() -> None:
    match = load_routes(TEMPLATE).match("GET", "/v1/tokens")

    assert match is not None
    assert match.route.function.logical_id == "KnowledgeAdminFunction"
    assert match.route.authorizer is not None


def _daves_notes(world: SearchWorld) -> tuple[str, str]:
    """Dave's private note (pinned) and a note for team blue, indexed: their ids."""
    stream = StreamReader()
    # platform:admin holds every memory right, whatever governs shared notes.
    dave = world.token(TENANT, "dave", scopes=(PLATFORM,), team_ids=["blue"])
    private = remember(dave, "Dave keeps the vault code 4411 in his locker.")
    team = remember(dave, "Team blue rotates the vault code on Thursdays.", scope="team", team_id="blue")
    assert (private.status, team.status) == (201, 201), (private.text, team.text)
    note_ids = (str(private.body["note"]["note_id"]), str(team.body["note"]["note_id"]))
    assert pin_memory(dave, note_ids[0]).status in (200, 201)
    drain(stream)
    return note_ids


def _sees_nothing_of(bearer: str, note_ids: tuple[str, ...]) -> None:
    """No memory path shows ``bearer`` any of ``note_ids``: search, recall, pins, reads by id."""
    assert found(bearer, "vault code") == []
    recalled = recall_context(bearer, "vault code")
    assert recalled.status == 200, recalled.text
    assert recalled.body["items"] == []
    assert call("GET", "/v1/pins", None, bearer).body["pins"] == []
    for note_id in note_ids:
        for path in (f"/v1/notes/{note_id}", f"/v1/notes/{note_id}/versions"):
            error_body(404, "memory_unavailable", call("GET", path, None, bearer))


def test_base_restricted_admin_minting_for_dave_and_team_blue_is_refused_and_reads_none_of_their_notes(
    world: SearchWorld,
) -> None:
    note_ids = _daves_notes(world)
    narrow = AdminClient(
        world.token(TENANT, "mallory", scopes=(ADMIN, MEMORY_READ), knowledge_base_ids=[BASE])
    )

    as_dave = narrow.call(
        "POST", "/v1/tokens", {"subject_id": "dave", "team_ids": ["blue"], "scopes": [ADMIN, MEMORY_READ]}
    )
    into_blue = narrow.call(
        "POST", "/v1/tokens", {"subject_id": "mallory", "team_ids": ["blue"], "scopes": [MEMORY_READ]}
    )
    own, _ = _mint(narrow, "mallory", MEMORY_READ)

    assert error_body(403, "insufficient_scope", as_dave)["details"] == {"subject_id": "dave"}
    assert error_body(403, "insufficient_scope", into_blue)["details"] == {"team_ids": ["blue"]}
    assert {entry["subject_id"] for entry in narrow.ok("GET", "/v1/tokens")["tokens"]} == {"mallory"}
    for bearer in (narrow.authorization, own.authorization):
        assert bearer is not None
        _sees_nothing_of(bearer, note_ids)


def test_tenant_administrator_minting_for_dave_and_team_blue_reads_their_notes(world: SearchWorld) -> None:
    _daves_notes(world)
    tenant_admin = AdminClient(world.token(TENANT, "curator-1", scopes=(ADMIN, MEMORY_READ)))

    as_dave, _ = _mint(tenant_admin, "dave", MEMORY_READ, team_ids=["blue"])

    assert as_dave.authorization is not None
    assert sorted(found(as_dave.authorization, "vault code")) == [
        "Dave keeps the vault code 4411 in his locker.",
        "Team blue rotates the vault code on Thursdays.",
    ]
