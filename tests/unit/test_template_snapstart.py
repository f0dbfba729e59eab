"""``template.yaml`` runs McpFunction with Lambda SnapStart on published versions behind the alias
``live``: every function with SnapStart publishes versions under an alias, keeps clear of what
SnapStart does not support, and (in SAM's own transform, when the SAM CLI's virtualenv exists) its
HTTP API routes and their invoke permissions target the alias, never ``$LATEST``."""

from __future__ import annotations

import json
import os
import subprocess
from typing import Any

import pytest

from tests.support.template import ROOT, load_template, resource

SNAPSTART_FUNCTIONS = sorted(
    name
    for name, entry in load_template()["Resources"].items()
    if entry["Type"] == "AWS::Serverless::Function" and "SnapStart" in entry["Properties"]
)
SNAPSTART_RUNTIMES = ("python3.12", "python3.13")
"""Python runtimes SnapStart supports (Python 3.12 and later,
https://docs.aws.amazon.com/lambda/latest/dg/snapstart.html) that this stack may use."""
SAM_PYTHON = ROOT / ".venv-sam" / "bin" / "python"
TRANSFORM = """
import json, sys
from samtranslator.translator.transform import transform
from samtranslator.yaml_helper import yaml_parse

class NoManagedPolicies:
    def load(self):
        return {}

template = yaml_parse(open(sys.argv[1]).read())
for entry in template["Resources"].values():
    properties = entry.get("Properties", {})
    if isinstance(properties.get("CodeUri"), str):
        properties["CodeUri"] = "s3://bucket/" + properties["CodeUri"].strip("/")
    if isinstance(properties.get("ContentUri"), str):
        properties["ContentUri"] = "s3://bucket/" + properties["ContentUri"].strip("/") + sys.argv[2]
print(json.dumps(transform(template, {}, NoManagedPolicies())))
"""


def _properties(function: str) -> dict[str, Any]:
    properties: dict[str, Any] = resource(function)["Properties"]
    return properties


def _transform(layer_build: str) -> dict[str, Any]:
    """``template.yaml`` as SAM transforms it, code locations standing in as S3 locations, the
    layer's ending in ``layer_build`` (``sam package`` names each upload by its content hash)."""
    assert SAM_PYTHON.exists(), f"{SAM_PYTHON} is missing: `make unit` and `make test` build it"
    done = subprocess.run(
        [str(SAM_PYTHON), "-c", TRANSFORM, str(ROOT / "template.yaml"), layer_build],
        env={**os.environ, "AWS_DEFAULT_REGION": "us-east-1"},
        capture_output=True,
        text=True,
        check=True,
    )
    output: dict[str, Any] = json.loads(done.stdout)
    return output


@pytest.fixture(scope="module")
def transformed() -> dict[str, Any]:
    return _transform("")


def _versions(template: dict[str, Any], function: str) -> list[str]:
    return [
        name
        for name, entry in template["Resources"].items()
        if entry["Type"] == "AWS::Lambda::Version" and name.startswith(f"{function}Version")
    ]


def test_mcp_function_snapstart_on_published_versions_behind_live() -> None:
    properties = _properties("McpFunction")

    assert properties["SnapStart"] == {"ApplyOn": "PublishedVersions"}
    assert properties["AutoPublishAlias"] == "live"


@pytest.mark.parametrize("function", SNAPSTART_FUNCTIONS)
def test_snapstart_function_publishes_under_an_alias(function: str) -> None:
    assert _properties(function).get("AutoPublishAlias")


@pytest.mark.parametrize("function", SNAPSTART_FUNCTIONS)
def test_snapstart_function_runtime_supports_snapstart(function: str) -> None:
    runtime = _properties(function).get("Runtime") or load_template()["Globals"]["Function"]["Runtime"]

    assert runtime in SNAPSTART_RUNTIMES


@pytest.mark.parametrize("function", SNAPSTART_FUNCTIONS)
def test_snapstart_function_uses_nothing_snapstart_refuses(function: str) -> None:
    """No provisioned concurrency, EFS or ephemeral storage over 512 MB (snapstart.html)."""
    properties = {**load_template()["Globals"]["Function"], **_properties(function)}

    assert "ProvisionedConcurrencyConfig" not in properties
    assert "FileSystemConfigs" not in properties
    assert properties.get("EphemeralStorage", {"Size": 512})["Size"] <= 512


@pytest.mark.parametrize("function", SNAPSTART_FUNCTIONS)
def test_snapstart_function_routes_invoke_the_alias(function: str, transformed: dict[str, Any]) -> None:
    alias = f"{function}Alias{_properties(function)['AutoPublishAlias']}"
    paths = transformed["Resources"]["KnowledgeHttpApi"]["Properties"]["Body"]["paths"]
    routes = [
        operation["x-amazon-apigateway-integration"]["uri"]["Fn::Sub"]
        for operations in paths.values()
        for operation in operations.values()
        if f"${{{function}" in json.dumps(operation.get("x-amazon-apigateway-integration", {}))
    ]

    assert routes
    assert all(f"${{{alias}}}" in uri for uri in routes)


@pytest.mark.parametrize("function", SNAPSTART_FUNCTIONS)
def test_snapstart_function_invoke_permissions_name_the_alias(
    function: str, transformed: dict[str, Any]
) -> None:
    alias = f"{function}Alias{_properties(function)['AutoPublishAlias']}"
    resources = transformed["Resources"]
    permissions = [
        entry["Properties"]["FunctionName"]
        for name, entry in resources.items()
        if entry["Type"] == "AWS::Lambda::Permission" and name.startswith(function)
    ]

    assert resources[alias]["Type"] == "AWS::Lambda::Alias"
    assert permissions
    assert all(target == {"Ref": alias} for target in permissions)


@pytest.mark.parametrize("function", SNAPSTART_FUNCTIONS)
def test_snapstart_function_log_group_is_the_function_one(function: str) -> None:
    """Every version and alias logs to ``/aws/lambda/{function name}``, the group the stack owns."""
    log_groups = [
        entry["Properties"]["LogGroupName"]
        for entry in load_template()["Resources"].values()
        if entry["Type"] == "AWS::Logs::LogGroup"
    ]

    assert {"Sub": f"/aws/lambda/${{{function}}}"} in log_groups


@pytest.mark.parametrize("function", SNAPSTART_FUNCTIONS)
def test_snapstart_function_new_layer_publishes_new_version(
    function: str, transformed: dict[str, Any]
) -> None:
    """The code lives in the layer: a new layer alone must move the alias to a new version (and
    snapshot), or ``live`` keeps serving the previous code."""
    rebuilt = _transform("-rebuilt")  # the same function code, another layer

    assert len(_versions(transformed, function)) == 1
    assert _versions(rebuilt, function) != _versions(transformed, function)


@pytest.mark.parametrize("function", SNAPSTART_FUNCTIONS)
def test_snapstart_function_replaced_version_is_deleted(function: str, transformed: dict[str, Any]) -> None:
    """A replaced version goes, and its cached snapshot with it (no caching charge for it)."""
    (version,) = _versions(transformed, function)

    assert transformed["Resources"][version]["DeletionPolicy"] == "Delete"
