"""``POST /v1/tools/search_knowledge`` through the real handlers: one test per row of DESIGN §5's
error table, and the exact JSON of both success shapes."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest

from knowledge.adapters.runtime_switch import ParameterRuntimeSwitch, StaticRuntimeSwitch
from knowledge.bootstrap import use_container
from knowledge.domain.access.bearer_tokens import hash_token
from knowledge.domain.models import Scope, Source
from tests.support.events import load_event, with_authorizer_context
from tests.support.rest import SearchWorld, error_body, invoke, new_world, search_event

DOC = (
    "# Deployment runbook\n\nRoll out the release with the blue green switch. Check the health "
    "dashboard before and after the rollout, and keep the previous release warm for rollback.\n"
)


@pytest.fixture
def world(table: Any) -> Iterator[SearchWorld]:
    built = new_world()
    yield built
    use_container(None)


@pytest.fixture
def reader(world: SearchWorld) -> str:
    return world.token()


# -- validation_error ---------------------------------------------------------------------------


def test_search_knowledge_wrong_type_returns_validation_error(world: SearchWorld, reader: str) -> None:
    error = error_body(400, "validation_error", world.call({"query": 5}, reader))

    assert [problem["field"] for problem in error["details"]["fields"]] == ["query"]
    assert error["retryable"] is False


def test_search_knowledge_nan_alpha_returns_validation_error(world: SearchWorld, reader: str) -> None:
    reply = world.call('{"query": "deployment", "alpha": NaN}', reader)

    error = error_body(400, "validation_error", reply)
    assert [problem["field"] for problem in error["details"]["fields"]] == ["alpha"]


def test_search_knowledge_query_over_2000_chars_returns_validation_error(
    world: SearchWorld, reader: str
) -> None:
    error = error_body(400, "validation_error", world.call({"query": "q" * 2_001}, reader))

    assert [problem["field"] for problem in error["details"]["fields"]] == ["query"]


def test_search_knowledge_query_of_2000_chars_is_accepted(world: SearchWorld, reader: str) -> None:
    reply = world.call({"query": "q" * 2_000}, reader)

    assert reply.status == 200
    assert reply.body["type"] == "knowledge_search"


def test_search_knowledge_bad_json_event_returns_validation_error(world: SearchWorld, reader: str) -> None:
    event = load_event("search_knowledge_bad_json")
    event["requestContext"]["authorizer"] = search_event({}, reader)["requestContext"]["authorizer"]

    error = error_body(400, "validation_error", invoke(event))

    assert error["details"]["fields"] == [{"field": "body", "problem": "The body is not valid JSON."}]


@pytest.mark.parametrize("body", ["[]", '"deployment"', "null", "", "42"])
def test_search_knowledge_body_not_an_object_returns_validation_error(
    world: SearchWorld, reader: str, body: str
) -> None:
    error_body(400, "validation_error", world.call(body, reader))


@pytest.mark.parametrize("body", ["", None], ids=["empty", "absent"])
def test_search_knowledge_empty_body_answers_not_valid_json(
    world: SearchWorld, reader: str, body: str | None
) -> None:
    event = search_event({}, reader)
    event["body"] = body

    error = error_body(400, "validation_error", invoke(event))

    assert error["message"] == "The request body is not valid JSON."
    assert error["details"] == {"fields": [{"field": "body", "problem": "The body is not valid JSON."}]}


def test_search_knowledge_array_of_objects_returns_validation_error(world: SearchWorld, reader: str) -> None:
    world.publish(world.base(), "Runbook", DOC)

    reply = world.call('[{"query": "blue green"}, {"query": "rollback"}]', reader)

    error = error_body(400, "validation_error", reply)
    assert error["message"] == "The request body must be a JSON object."
    assert error["details"] == {"fields": [{"field": "body", "problem": "The body must be a JSON object."}]}


def test_search_knowledge_integer_over_4300_digits_returns_validation_error(
    world: SearchWorld, reader: str
) -> None:
    reply = world.call('{"query": "deployment", "max_results": ' + "1" * 4_301 + "}", reader)

    error = error_body(400, "validation_error", reply)
    assert error["message"] == "The request body is not valid JSON."
    assert error["details"] == {"fields": [{"field": "body", "problem": "The body is not valid JSON."}]}
    assert "4300" not in reply.text


@pytest.mark.parametrize(
    "field", ["query", "knowledge_base_id", "knowledge_item_id", "knowledge_revision_id", "mode"]
)
def test_search_knowledge_lone_surrogate_returns_validation_error(
    world: SearchWorld, reader: str, field: str
) -> None:
    # json.dumps sends the lone surrogate as the escape \ud800: JSON syntax, but not Unicode text.
    error = error_body(400, "validation_error", world.call({field: "deploy\ud800ment"}, reader))

    assert [problem["field"] for problem in error["details"]["fields"]] == [field]


def test_search_knowledge_body_over_1mb_returns_validation_error(world: SearchWorld, reader: str) -> None:
    body = '{"query": "deployment"' + " " * (1_048_576) + "}"

    error = error_body(400, "validation_error", world.call(body, reader))

    assert error["details"]["max_body_bytes"] == 1_048_576


@pytest.mark.parametrize(
    "content_type", ["application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "text/csv"]
)
def test_search_knowledge_json_body_of_other_content_type_is_read_as_json(
    world: SearchWorld, reader: str, content_type: str
) -> None:
    event = search_event({"query": "deployment"}, reader)
    event["headers"]["content-type"] = content_type

    reply = invoke(event)

    assert reply.status == 200
    assert reply.body["query"] == "deployment"


def test_search_knowledge_form_body_returns_validation_error(world: SearchWorld, reader: str) -> None:
    event = search_event("query=deployment&mode=lexical", reader)
    event["headers"]["content-type"] = "application/x-www-form-urlencoded"

    error = error_body(400, "validation_error", invoke(event))

    assert error["details"]["fields"] == [{"field": "body", "problem": "The body is not valid JSON."}]


def test_search_knowledge_base64_body_is_decoded(world: SearchWorld, reader: str) -> None:
    world.publish(world.base(), "Runbook", DOC)
    event = search_event({}, reader)
    event["body"] = "eyJxdWVyeSI6ICJibHVlIGdyZWVuIn0="  # {"query": "blue green"}
    event["isBase64Encoded"] = True

    reply = invoke(event)

    assert reply.status == 200
    assert reply.body["query"] == "blue green"


def test_search_knowledge_undecodable_body_returns_validation_error(world: SearchWorld, reader: str) -> None:
    event = search_event({}, reader)
    event["body"] = "/w=="  # the single byte 0xFF: not UTF-8
    event["isBase64Encoded"] = True

    error_body(400, "validation_error", invoke(event))


# -- knowledge_invalid_request ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({"offset": -1, "knowledge_item_id": "ki_01JDQ8ZC7N3V5W9X2Y4Z6A8B0C"}, "offset"),
        ({"limit_chars": 0, "knowledge_item_id": "ki_01JDQ8ZC7N3V5W9X2Y4Z6A8B0C"}, "limit_chars"),
        ({"limit_chars": 10_001, "knowledge_item_id": "ki_01JDQ8ZC7N3V5W9X2Y4Z6A8B0C"}, "limit_chars"),
        ({"max_results": 0, "query": "deployment"}, "max_results"),
        ({"max_results": 51, "query": "deployment"}, "max_results"),
    ],
)
def test_search_knowledge_out_of_bounds_returns_invalid_request(
    world: SearchWorld, reader: str, arguments: dict[str, Any], field: str
) -> None:
    error = error_body(400, "knowledge_invalid_request", world.call(arguments, reader))

    assert [problem["field"] for problem in error["details"]["fields"]] == [field]


@pytest.mark.parametrize(
    ("addressed", "identifier"),
    [
        ("knowledge_item_id", "ki_01JDQ8ZC7N3V5W9X2Y4Z6A8B0C"),
        ("knowledge_revision_id", "kr_01JDQ8ZC7N3V5W9X2Y4Z6A8B0C"),
    ],
)
def test_search_knowledge_query_mixed_with_ids_returns_invalid_request(
    world: SearchWorld, reader: str, addressed: str, identifier: str
) -> None:
    reply = world.call({"query": "deployment", addressed: identifier}, reader)

    error_body(400, "knowledge_invalid_request", reply)


def test_search_knowledge_unknown_field_returns_invalid_request(world: SearchWorld, reader: str) -> None:
    error = error_body(400, "knowledge_invalid_request", world.call({"query": "x", "top_k": 3}, reader))

    assert [problem["field"] for problem in error["details"]["fields"]] == ["top_k"]


# -- knowledge_query_required / knowledge_item_required -----------------------------------------


@pytest.mark.parametrize("body", [{}, {"query": "   "}, {"query": None, "mode": "lexical"}])
def test_search_knowledge_nothing_to_do_returns_query_required(
    world: SearchWorld, reader: str, body: dict[str, Any]
) -> None:
    error_body(400, "knowledge_query_required", world.call(body, reader))


def test_search_knowledge_revision_without_item_returns_item_required(
    world: SearchWorld, reader: str
) -> None:
    reply = world.call({"knowledge_revision_id": "kr_01JDQ8ZC7P4W6X0Y3Z5A7B9C1D"}, reader)

    error_body(400, "knowledge_item_required", reply)


# -- authentication_required / insufficient_scope -----------------------------------------------


def test_search_knowledge_without_authorizer_context_returns_authentication_required(
    world: SearchWorld,
) -> None:
    event = load_event("search_knowledge_no_auth")

    error = error_body(401, "authentication_required", invoke(event))

    assert error["retryable"] is False
    assert error["details"] == {"reason": "missing"}


@pytest.mark.parametrize(
    ("authorization", "reason"),
    [
        ("Bearer kn_not-a-token", "unknown"),
        ("Basic dXNlcjpwYXNz", "unknown"),
        ("Bearer ", "missing"),
        ("kn_", "unknown"),
    ],
)
def test_search_knowledge_bad_token_returns_authentication_required_with_its_reason(
    world: SearchWorld, authorization: str, reason: str
) -> None:
    error = error_body(401, "authentication_required", world.call({"query": "deployment"}, authorization))

    assert error["details"] == {"reason": reason}


def test_search_knowledge_expired_token_returns_authentication_required(world: SearchWorld) -> None:
    expired = world.token(expires_in=timedelta(seconds=-1))

    error = error_body(401, "authentication_required", world.call({"query": "deployment"}, expired))

    assert (error["message"], error["details"]) == ("The bearer token has expired.", {"reason": "expired"})


def test_search_knowledge_revoked_token_returns_authentication_required(
    world: SearchWorld, reader: str
) -> None:
    world.store.revoke_token(hash_token(reader.removeprefix("Bearer ")))

    error = error_body(401, "authentication_required", world.call({"query": "deployment"}, reader))

    assert (error["message"], error["details"]) == (
        "The bearer token has been revoked.",
        {"reason": "revoked"},
    )


def test_search_knowledge_unauthenticated_malformed_body_returns_authentication_required(
    world: SearchWorld,
) -> None:
    event = with_authorizer_context(load_event("search_knowledge_bad_json"), None)

    error_body(401, "authentication_required", invoke(event))


def test_search_knowledge_token_without_read_scope_returns_insufficient_scope(world: SearchWorld) -> None:
    writer = world.token(scopes=("knowledge:write", "knowledge:admin"))

    error = error_body(403, "insufficient_scope", world.call({"query": "deployment"}, writer))

    assert error["details"] == {"required_scope": "knowledge:read"}


# -- knowledge_resource_unavailable -------------------------------------------------------------


def test_search_knowledge_absent_item_returns_resource_unavailable(world: SearchWorld, reader: str) -> None:
    reply = world.read(reader, "ki_01JDQ8ZC7N3V5W9X2Y4Z6A8B0C")

    error = error_body(404, "knowledge_resource_unavailable", reply)
    assert error["details"] == {}


# -- knowledge_runtime_disabled -----------------------------------------------------------------


def test_search_knowledge_static_switch_off_returns_knowledge_unavailable(world: SearchWorld) -> None:
    world.install(runtime_switch=StaticRuntimeSwitch(False))

    reply = world.call({"query": "deployment"}, world.token())

    error = error_body(503, "knowledge_runtime_disabled", reply)
    assert reply.body["type"] == "knowledge_unavailable"
    assert error["retryable"] is True


def test_search_knowledge_ssm_switch_follows_parameter(world: SearchWorld) -> None:
    ssm = boto3.client("ssm", region_name="us-east-1")
    ssm.put_parameter(Name="/knowledge/test/runtime-enabled", Type="String", Value="false")
    world.install(
        runtime_switch=ParameterRuntimeSwitch(
            "/knowledge/test/runtime-enabled", max_age=0, fallback=True, ssm_client=ssm
        )
    )
    reader = world.token()

    disabled = world.call({"query": "deployment"}, reader)
    ssm.put_parameter(Name="/knowledge/test/runtime-enabled", Type="String", Value="true", Overwrite=True)
    enabled = world.call({"query": "deployment"}, reader)

    error_body(503, "knowledge_runtime_disabled", disabled)
    assert disabled.body["type"] == "knowledge_unavailable"
    assert enabled.status == 200


# -- dependency_unavailable ---------------------------------------------------------------------


def test_search_knowledge_throttled_store_returns_dependency_unavailable(world: SearchWorld) -> None:
    item, _ = world.publish(world.base(), "Runbook", DOC)
    event = search_event({"knowledge_item_id": item.knowledge_item_id}, world.token())
    client = world.dynamodb

    def throttle(**_: Any) -> None:
        from botocore.exceptions import ClientError

        raise ClientError(
            {"Error": {"Code": "ProvisionedThroughputExceededException", "Message": "Rate exceeded"}},
            "GetItem",
        )

    client.meta.events.register("before-call.dynamodb.GetItem", throttle)
    try:
        reply = invoke(event)
    finally:
        client.meta.events.unregister("before-call.dynamodb.GetItem", throttle)

    error = error_body(503, "dependency_unavailable", reply)
    assert error["retryable"] is True
    assert "Provisioned" not in reply.text


# -- success shapes -----------------------------------------------------------------------------

RESULT_FIELDS = {
    "knowledge_base_id",
    "knowledge_item_id",
    "knowledge_revision_id",
    "title",
    "excerpt",
    "locator",
    "source",
    "citation",
    "reference",
    "published_at",
    "duplicate_item_ids",
    "scores",
}
SCORE_FIELDS = {
    "final",
    "lexical",
    "lexical_normalized",
    "lexical_rank",
    "semantic",
    "semantic_normalized",
    "semantic_rank",
}
READ_FIELDS = {
    "type",
    "owner",
    "team",
    "scope",
    "knowledge_base_id",
    "knowledge_item_id",
    "knowledge_revision_id",
    "title",
    "content",
    "locator",
    "source",
    "reference",
    "content_offset",
    "content_limit",
    "content_total_chars",
    "content_truncated",
    "is_current",
    "current_revision_id",
}


def test_search_knowledge_query_result_has_every_contract_field(world: SearchWorld, reader: str) -> None:
    base = world.base()
    item, revision = world.publish(
        base, "Runbook", DOC, source=Source(uri="https://docs.example.com/runbook", title="Ops handbook")
    )

    reply = world.search(reader, "blue green rollout")

    body = reply.body
    assert set(body) == {"type", "query", "mode", "alpha", "results", "legs", "pending_index"}
    assert body["pending_index"] == {"writes": 0, "included": False}
    assert (body["type"], body["query"], body["mode"], body["alpha"]) == (
        "knowledge_search",
        "blue green rollout",
        "hybrid",
        0.5,
    )
    assert body["legs"] == {"lexical": {"terms": 3, "candidates": 1}, "semantic": {"candidates": 1}}
    (result,) = body["results"]
    assert set(result) == RESULT_FIELDS
    assert set(result["scores"]) == SCORE_FIELDS
    assert set(result["locator"]) == {"offset", "length"}
    assert result["duplicate_item_ids"] == []
    assert result["source"] == {"uri": "https://docs.example.com/runbook", "title": "Ops handbook"}
    assert (result["knowledge_base_id"], result["knowledge_item_id"], result["knowledge_revision_id"]) == (
        base.knowledge_base_id,
        item.knowledge_item_id,
        revision.knowledge_revision_id,
    )
    assert revision.published_at is not None
    assert datetime.fromisoformat(result["published_at"]) == revision.published_at


def test_search_knowledge_semantic_only_result_has_null_lexical_scores(
    world: SearchWorld, reader: str
) -> None:
    world.publish(world.base(), "Runbook", DOC)

    (result,) = world.search(reader, "rollout", mode="semantic").body["results"]

    assert result["scores"]["lexical"] is None
    assert result["scores"]["lexical_rank"] is None
    assert result["scores"]["semantic_rank"] == 1


def test_search_knowledge_addressed_read_has_every_contract_field(world: SearchWorld) -> None:
    base = world.base(scope=Scope.TEAM, team_id="platform", owner_id="owner-9")
    item, revision = world.publish(base, "Runbook", DOC)
    member = world.token(team_ids=["platform"])

    reply = world.read(member, item.knowledge_item_id, offset=2, limit_chars=18)

    body = reply.body
    assert reply.status == 200
    assert set(body) == READ_FIELDS
    assert body["type"] == "knowledge"
    assert (body["owner"], body["team"], body["scope"]) == ("owner-9", "platform", "team")
    assert body["content"] == DOC[2:20]
    assert body["locator"] == {"offset": 2, "length": 18}
    assert (body["content_offset"], body["content_limit"], body["content_total_chars"]) == (2, 18, len(DOC))
    assert body["content_truncated"] is True
    assert (body["is_current"], body["current_revision_id"]) == (True, revision.knowledge_revision_id)
    assert body["reference"] == (
        f"knowledge://{base.knowledge_base_id}/{item.knowledge_item_id}@{revision.knowledge_revision_id}#2-20"
    )


def test_search_knowledge_response_is_compact_json_with_iso_datetimes(
    world: SearchWorld, reader: str
) -> None:
    world.publish(world.base(), "Runbook", DOC)

    reply = world.search(reader, "rollout")

    published_at = reply.body["results"][0]["published_at"]
    assert isinstance(published_at, str)
    assert datetime.fromisoformat(published_at).tzinfo is not None
    assert datetime.fromisoformat(published_at) <= datetime.now(UTC)
    assert json.loads(reply.text) == reply.body


# -- request shaping ----------------------------------------------------------------------------


def test_search_knowledge_mode_is_normalized_and_echoed(world: SearchWorld, reader: str) -> None:
    modes = [
        world.search(reader, "rollout", mode=mode).body["mode"] for mode in ("LEXICAL", " rrf ", "bogus")
    ]

    assert modes == ["lexical", "rrf", "hybrid"]


@pytest.mark.parametrize(("alpha", "echoed"), [(7, 1.0), (-1, 0.0), (0.25, 0.25)])
def test_search_knowledge_alpha_is_clamped_and_echoed(
    world: SearchWorld, reader: str, alpha: float, echoed: float
) -> None:
    assert world.search(reader, "rollout", alpha=alpha).body["alpha"] == echoed


def test_search_knowledge_null_arguments_mean_defaults(world: SearchWorld, reader: str) -> None:
    world.publish(world.base(), "Runbook", DOC)

    reply = world.search(reader, "rollout", mode=None, alpha=None, max_results=None, knowledge_base_id=None)

    assert (reply.body["mode"], reply.body["alpha"], len(reply.body["results"])) == ("hybrid", 0.5, 1)


def test_search_knowledge_query_event_file_answers_for_its_authorizer_context(world: SearchWorld) -> None:
    # The event's authorizer context is tenant "acme", subject "agent-7", scope knowledge:read.
    acme = world.base("acme")
    world.publish(acme, "Deployment runbook", DOC)
    world.publish(world.base("globex"), "Deployment runbook", DOC)

    reply = invoke(load_event("search_knowledge_query"))

    assert reply.status == 200
    assert reply.body["query"] == "deployment runbook"
    assert [result["knowledge_base_id"] for result in reply.body["results"]] == [acme.knowledge_base_id]


def test_search_knowledge_consistent_finds_an_item_published_while_the_indexer_lags(
    world: SearchWorld, reader: str
) -> None:
    base = world.base()
    world.publish(base, "Runbook", DOC)
    item, revision = world.publish(base, "Heron", "The staging database is called heron.", indexed=False)

    lagging = world.search(reader, "staging heron", mode="lexical").body
    consistent = world.search(reader, "staging heron", mode="lexical", consistent=True).body

    assert (lagging["results"], lagging["pending_index"]) == ([], {"writes": 1, "included": False})
    assert [(r["knowledge_item_id"], r["knowledge_revision_id"]) for r in consistent["results"]] == [
        (item.knowledge_item_id, revision.knowledge_revision_id)
    ]
    assert consistent["pending_index"] == {"writes": 1, "included": True}


def test_search_knowledge_consistent_not_a_boolean_is_validation_error(
    world: SearchWorld, reader: str
) -> None:
    error_body(400, "validation_error", world.call({"query": "heron", "consistent": "yes"}, reader))
