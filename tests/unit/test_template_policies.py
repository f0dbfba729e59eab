"""``template.yaml`` grants least privilege and bounds the stack (docs/reliability.md): the authorizer
reads token records only, the search functions only query the two indexes, ingestion cannot touch
tokens, every function has its log retention and optional reserved concurrency, routes have their
own throttles, and the production OpenSearch profile is highly available and audited."""

from __future__ import annotations

import json
from collections.abc import Iterator
from fnmatch import fnmatchcase
from typing import Any

import pytest

from knowledge.adapters.dynamodb import keys
from knowledge.adapters.opensearch.notes import HISTORY_SUFFIX
from tests.support.template import load_template, resource

FUNCTIONS = sorted(
    name
    for name, entry in load_template()["Resources"].items()
    if entry["Type"] == "AWS::Serverless::Function"
)
SEARCH_FUNCTIONS = ("SearchKnowledgeFunction", "SearchMemoryFunction", "RecallContextFunction", "McpFunction")
INDEXES = {
    load_template()["Globals"]["Function"]["Environment"]["Variables"]["OPENSEARCH_INDEX"],
    load_template()["Globals"]["Function"]["Environment"]["Variables"]["OPENSEARCH_NOTES_INDEX"],
    load_template()["Globals"]["Function"]["Environment"]["Variables"]["OPENSEARCH_NOTES_INDEX"]
    + HISTORY_SUFFIX,
}
SAM_TABLE_POLICIES = {"DynamoDBCrudPolicy", "DynamoDBReadPolicy", "DynamoDBWritePolicy"}


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _policies(function: str) -> list[Any]:
    return list(resource(function)["Properties"].get("Policies") or [])


def _statements(function: str) -> Iterator[dict[str, Any]]:
    """The inline statements of ``function`` and those of the managed policies it attaches."""
    for policy in _policies(function):
        if isinstance(policy, dict) and "Statement" in policy:
            yield from policy["Statement"]
        elif isinstance(policy, dict) and "Ref" in policy:
            yield from resource(policy["Ref"])["Properties"]["PolicyDocument"]["Statement"]


def _actions(statement: dict[str, Any]) -> set[str]:
    return set(_as_list(statement["Action"]))


def _index_paths(statement: dict[str, Any]) -> set[str]:
    """The domain sub-paths (``knowledge-chunks/_msearch``) a statement's resources name."""
    paths = set()
    for entry in _as_list(statement["Resource"]):
        text = entry["Sub"][0] if isinstance(entry["Sub"], list) else entry["Sub"]
        paths.add(text.rsplit("}/", 1)[1])  # after ${Domain}/ or .../domain/knowledge-${Stage}/
    return paths


def _leading_keys(statement: dict[str, Any]) -> list[str]:
    return list(
        statement.get("Condition", {}).get("ForAllValues:StringLike", {}).get("dynamodb:LeadingKeys", [])
    )


def _dynamodb_statements(function: str) -> list[dict[str, Any]]:
    return [s for s in _statements(function) if any(a.startswith("dynamodb:") for a in _actions(s))]


def test_authorizer_may_only_read_token_records() -> None:
    [statement] = list(_statements("AuthorizerFunction"))

    assert not SAM_TABLE_POLICIES & {
        next(iter(p)) for p in _policies("AuthorizerFunction") if isinstance(p, dict)
    }
    assert _actions(statement) == {"dynamodb:GetItem", "dynamodb:BatchGetItem"}  # the token, its lineage
    assert _leading_keys(statement) == ["TOKEN#*"]
    assert fnmatchcase(keys.token_key("ab" * 32).pk, "TOKEN#*")
    assert not fnmatchcase(keys.item_key("acme", "ki_1").pk, "TOKEN#*")


@pytest.mark.parametrize("function", SEARCH_FUNCTIONS)
def test_search_functions_may_only_read_their_three_indexes(function: str) -> None:
    es = [s for s in _statements(function) if any(a.startswith("es:") for a in _actions(s))]
    granted = {(action, path) for s in es for action in _actions(s) for path in _index_paths(s)}

    assert granted == {
        (action, f"{index}{suffix}")
        for index in INDEXES
        for action, suffix in [
            ("es:ESHttpPost", "/_msearch"),
            ("es:ESHttpGet", "/_mapping"),
            ("es:ESHttpHead", ""),
            ("es:ESHttpPut", ""),
        ]
    }
    assert not any(action in {"es:ESHttpDelete", "es:ESHttpPatch", "es:*"} for action, _ in granted)


def test_domain_access_policy_gives_the_search_roles_the_same_narrow_paths() -> None:
    statements = resource("KnowledgeSearchDomain")["Properties"]["AccessPolicies"]["Statement"]
    readers = [s for s in statements if {"GetAtt": "McpFunctionRole.Arn"} in s["Principal"]["AWS"]]

    assert {p["GetAtt"] for s in readers for p in s["Principal"]["AWS"]} == {
        f"{function}Role.Arn" for function in SEARCH_FUNCTIONS
    }
    granted = {(action, path) for s in readers for action in _actions(s) for path in _index_paths(s)}
    assert {path for _, path in granted} == {
        f"{index}{suffix}" for index in INDEXES for suffix in ("", "/_mapping", "/_msearch")
    }
    assert ("es:ESHttpPost", "knowledge-chunks/_msearch") in granted
    assert not any(path.endswith("*") for _, path in granted)


def test_ingest_consumer_may_only_read_token_records_besides_tenant_records() -> None:
    statements = _dynamodb_statements("IngestQueueFunction")
    token_key = keys.token_key("ab" * 32).pk

    [lookup] = [s for s in statements if any(fnmatchcase(token_key, p) for p in _leading_keys(s))]
    assert _actions(lookup) == {
        "dynamodb:GetItem",
        "dynamodb:BatchGetItem",
    }  # the message's token, its lineage
    assert _leading_keys(lookup) == ["TOKEN#*"]
    others = [s for s in statements if s is not lookup]
    assert others
    assert all(_leading_keys(s) == ["T#*"] for s in others)
    assert not SAM_TABLE_POLICIES & {
        next(iter(p)) for p in _policies("IngestQueueFunction") if isinstance(p, dict)
    }


@pytest.mark.parametrize("function", ["SearchKnowledgeFunction", "McpFunction"])
def test_functions_without_token_duties_cannot_reach_token_records(function: str) -> None:
    statements = _dynamodb_statements(function)
    names = {next(iter(p)) for p in _policies(function) if isinstance(p, dict)}

    assert statements
    assert not SAM_TABLE_POLICIES & names
    for statement in statements:
        patterns = _leading_keys(statement)
        assert patterns, statement["Sid"]
        assert not any(fnmatchcase(keys.token_key("ab" * 32).pk, pattern) for pattern in patterns)
        assert "dynamodb:Scan" not in _actions(statement)


@pytest.mark.parametrize("function", ["SearchKnowledgeFunction", "McpFunction"])
def test_search_functions_only_read_tenant_records_from_the_table(function: str) -> None:
    reads = [s for s in _dynamodb_statements(function) if s["Sid"] == "TenantRecordReads"]

    assert [_actions(s) for s in reads] == [{"dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:Query"}]
    assert _leading_keys(reads[0]) == ["T#*"]


@pytest.mark.parametrize("function", FUNCTIONS)
def test_every_function_has_an_optional_reserved_concurrency_parameter(function: str) -> None:
    name = function.removesuffix("Function")
    template = load_template()

    assert resource(function)["Properties"]["ReservedConcurrentExecutions"] == {
        "If": [f"Reserve{name}Concurrency", {"Ref": f"{name}ReservedConcurrency"}, {"Ref": "AWS::NoValue"}]
    }
    assert template["Parameters"][f"{name}ReservedConcurrency"]["Default"] == -1
    assert template["Conditions"][f"Reserve{name}Concurrency"] == {
        "Not": [{"Equals": [{"Ref": f"{name}ReservedConcurrency"}, "-1"]}]
    }


@pytest.mark.parametrize("function", FUNCTIONS)
def test_every_function_logs_to_a_group_with_the_retention_parameter(function: str) -> None:
    group = resource(f"{function}Logs")

    assert group["Type"] == "AWS::Logs::LogGroup"
    assert group["Properties"] == {
        "LogGroupName": {"Sub": f"/aws/lambda/${{{function}}}"},
        "RetentionInDays": {"Ref": "LogRetentionDays"},
    }


def test_every_log_group_of_the_stack_has_the_retention_parameter() -> None:
    groups = {
        name: entry["Properties"]
        for name, entry in load_template()["Resources"].items()
        if entry["Type"] == "AWS::Logs::LogGroup"
    }

    assert {name: props["RetentionInDays"] for name, props in groups.items()} == {
        name: {"Ref": "LogRetentionDays"} for name in groups
    }


def test_routes_have_throttling_parameters_and_name_real_routes() -> None:
    api = resource("KnowledgeHttpApi")["Properties"]
    routes = {
        f"{event['Properties']['Method']} {event['Properties']['Path']}"
        for function in FUNCTIONS
        for event in (resource(function)["Properties"].get("Events") or {}).values()
        if event["Type"] == "HttpApi"
    }

    assert api["DefaultRouteSettings"] == {
        "ThrottlingBurstLimit": {"Ref": "DefaultThrottleBurstLimit"},
        "ThrottlingRateLimit": {"Ref": "DefaultThrottleRateLimit"},
    }
    assert {"POST /v1/tools/search_knowledge", "POST /mcp", "POST /v1/tokens"} <= set(api["RouteSettings"])
    assert set(api["RouteSettings"]) <= routes
    parameters = load_template()["Parameters"]
    for settings in api["RouteSettings"].values():
        assert {value["Ref"] for value in settings.values()} <= set(parameters)


def test_production_opensearch_profile_is_zone_aware_audited_and_access_controlled() -> None:
    props = resource("KnowledgeSearchDomain")["Properties"]
    condition, production, dev = props["ClusterConfig"]["If"]

    assert condition == "CreateProductionOpenSearchDomain"
    assert production["InstanceCount"] == 3
    assert (production["ZoneAwarenessEnabled"], production["ZoneAwarenessConfig"]) == (
        True,
        {"AvailabilityZoneCount": 3},
    )
    assert (production["DedicatedMasterEnabled"], production["DedicatedMasterCount"]) == (True, 3)
    assert dev["InstanceCount"] == 1
    security = props["AdvancedSecurityOptions"]["If"][1]
    assert security["Enabled"] is True
    assert security["MasterUserOptions"] == {"MasterUserARN": {"Ref": "OpenSearchMasterUserArn"}}
    assert props["LogPublishingOptions"]["If"][1]["AUDIT_LOGS"]["Enabled"] is True
    assert props["EncryptionAtRestOptions"] == {"Enabled": True}
    assert props["NodeToNodeEncryptionOptions"] == {"Enabled": True}
    assert props["DomainEndpointOptions"]["EnforceHTTPS"] is True
    rule = load_template()["Rules"]["ProductionOpenSearchNeedsMasterUser"]
    assert rule["Assertions"][0]["Assert"] == {"Not": [{"Equals": [{"Ref": "OpenSearchMasterUserArn"}, ""]}]}


def test_indexer_writes_only_marks_expiry_marks_the_stored_items_count_and_the_embedding_cache() -> None:
    writes = {
        statement["Sid"]: (_actions(statement), _leading_keys(statement))
        for statement in _dynamodb_statements("IndexerFunction")
        if _actions(statement) - {"dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:Query"}
    }
    tenant, note = "acme", "nt_01M8RVT4MEBVXY7634BCZKXYZK"

    assert writes == {
        "IndexedRevisionMarks": ({"dynamodb:UpdateItem"}, ["T#*#ITEM#*", "T#*#NOTE#*"]),
        "ExpiredNoteMarks": ({"dynamodb:PutItem"}, ["T#*#NOTE#*"]),
        "StoredItemsCountedOut": ({"dynamodb:UpdateItem"}, ["T#*#QUOTA"]),
        "EmbeddingCacheWrites": ({"dynamodb:BatchWriteItem"}, ["EMB#*"]),
    }
    assert fnmatchcase(keys.expiry_counted_key(tenant, note).pk, "T#*#NOTE#*")
    assert fnmatchcase(keys.stored_items_key(tenant).pk, "T#*#QUOTA")


def test_edge_rate_rule_throttles_each_client_ip_before_the_authorizer_when_asked() -> None:
    template = load_template()
    acl, distribution = resource("EdgeWebAcl"), resource("EdgeDistribution")
    rule = acl["Properties"]["Rules"][0]

    assert template["Parameters"]["EdgeRateLimitPerIp"]["Default"] == 0  # off unless asked
    assert acl["Condition"] == distribution["Condition"] == "CreateEdge"
    assert acl["Properties"]["Scope"] == "CLOUDFRONT"
    assert rule["Statement"]["RateBasedStatement"] == {
        "Limit": {"Ref": "EdgeRateLimitPerIp"},
        "AggregateKeyType": "IP",
        "EvaluationWindowSec": 60,
    }
    assert rule["Action"]["Block"]["CustomResponse"]["ResponseCode"] == 429
    body = acl["Properties"]["CustomResponseBodies"]["RateLimited"]["Content"]
    assert json.loads(body)["error"]["code"] == "rate_limited"
    config = distribution["Properties"]["DistributionConfig"]
    assert config["WebACLId"] == {"GetAtt": "EdgeWebAcl.Arn"}
    assert config["Origins"][0]["DomainName"]["Sub"].startswith("${KnowledgeHttpApi}.execute-api.")
    assert template["Rules"]["EdgeNeedsUsEast1"]["Assertions"][0]["Assert"] == {
        "Equals": [{"Ref": "AWS::Region"}, "us-east-1"]
    }
