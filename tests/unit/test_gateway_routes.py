"""Routes, authorizers and handlers read from SAM templates for the local gateway."""

from __future__ import annotations

from pathlib import Path

import pytest

from knowledge_local.emulator.template.routes import ANY_METHOD, TemplateError, load_routes
from tests.support.template import ROOT, TEMPLATE

FIXTURE = ROOT / "tests" / "fixtures" / "gateway" / "template.yaml"


def test_routes_project_template_mcp_routes_use_token_authorizer() -> None:
    table = load_routes(TEMPLATE)

    for method in ("POST", "GET", "DELETE"):
        match = table.match(method, "/mcp")
        assert match is not None, method
        assert match.route.function.logical_id == "McpFunction"
        assert match.route.function.module_file == ROOT / "functions" / "mcp" / "app.py"
        authorizer = match.route.authorizer
        assert authorizer is not None
        assert authorizer.function.module_file == ROOT / "functions" / "authorizer" / "app.py"
        assert authorizer.simple_responses is True
        assert authorizer.identity_headers == ("authorization",)


def test_routes_project_template_search_route_needs_auth_and_openapi_does_not() -> None:
    table = load_routes(TEMPLATE)

    search = table.match("POST", "/v1/tools/search_knowledge")
    openapi = table.match("GET", "/v1/openapi.json")

    assert search is not None
    assert search.route.authorizer is not None
    assert openapi is not None
    assert openapi.route.authorizer is None


def test_routes_project_template_every_handler_file_exists() -> None:
    table = load_routes(TEMPLATE)

    for route in table.routes:
        assert route.function.module_file.is_file(), route.route_key


def test_routes_fixture_template_merges_globals_and_function_settings() -> None:
    match = load_routes(FIXTURE).match("GET", "/sleep")

    assert match is not None
    function = match.route.function
    assert (function.handler, function.timeout_seconds, function.memory_mb) == ("app.sleep", 1.0, 128)


def test_routes_fixture_template_decodes_path_parameters() -> None:
    match = load_routes(FIXTURE).match("GET", "/items/caf%C3%A9%2F1")

    assert match is not None
    assert match.route.route_key == "GET /items/{item}"
    assert match.path_parameters == {"item": "café/1"}


def test_routes_fixture_template_unknown_path_matches_nothing() -> None:
    table = load_routes(FIXTURE)

    assert table.match("GET", "/items") is None
    assert table.match("GET", "/items/a/b") is None
    assert table.match("PUT", "/items/a") is None


def test_routes_greedy_proxy_route_matches_any_method_and_depth() -> None:
    match = load_routes(FIXTURE).match("OPTIONS", "/files/a/b")

    assert match is not None
    assert match.route.method == ANY_METHOD
    assert match.path_parameters == {"proxy": "a/b"}


def test_routes_jwt_authorizer_is_refused(tmp_path: Path) -> None:
    template = tmp_path / "template.yaml"
    template.write_text(
        """
Resources:
  Api:
    Type: AWS::Serverless::HttpApi
    Properties:
      Auth:
        DefaultAuthorizer: Jwt
        Authorizers:
          Jwt:
            JwtConfiguration:
              issuer: https://issuer.example.com
              audience: [api]
  Fn:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: fn/
      Handler: app.handler
      Events:
        Get:
          Type: HttpApi
          Properties:
            ApiId: !Ref Api
            Path: /x
            Method: GET
""",
        encoding="utf-8",
    )

    with pytest.raises(TemplateError, match="only those run locally"):
        load_routes(template)


def test_routes_authorizer_result_ttl_is_read_from_reauthorize_every() -> None:
    project = load_routes(TEMPLATE).match("POST", "/v1/tools/search_knowledge")
    fixture = load_routes(FIXTURE).match("GET", "/items/a")

    assert project is not None
    assert project.route.authorizer is not None
    assert project.route.authorizer.result_ttl_seconds == 300
    assert fixture is not None
    assert fixture.route.authorizer is not None
    assert fixture.route.authorizer.result_ttl_seconds == 60


@pytest.mark.parametrize("value", ["-1", "3601", "1.5", "true", "soon"])
def test_routes_reauthorize_every_outside_whole_seconds_0_to_3600_is_refused(
    tmp_path: Path, value: str
) -> None:
    text = FIXTURE.read_text(encoding="utf-8").replace("ReauthorizeEvery: 60", f"ReauthorizeEvery: {value}")
    template = tmp_path / "template.yaml"
    template.write_text(text, encoding="utf-8")

    with pytest.raises(TemplateError, match="ReauthorizeEvery must be whole seconds from 0 to 3600"):
        load_routes(template)
