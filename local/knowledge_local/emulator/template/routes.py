"""The HTTP API of a SAM template, read for the local gateway: routes, their functions and authorizers.

Read from the template: every ``AWS::Serverless::Function`` (with ``Globals.Function`` defaults for
``CodeUri``, ``Handler``, ``Timeout``, ``MemorySize``) and its ``HttpApi`` events (``Method``,
``Path``, ``ApiId``, ``Auth.Authorizer``); the ``Auth`` of the API each event names (an
``AWS::Serverless::HttpApi`` resource, or ``Globals.HttpApi`` for the implicit API): its
``DefaultAuthorizer`` and its Lambda ``Authorizers`` (``FunctionArn: !GetAtt Fn.Arn``,
``AuthorizerPayloadFormatVersion``, ``EnableSimpleResponses``, ``Identity.Headers`` /
``Identity.QueryStrings``, ``Identity.ReauthorizeEvery``: the answers' cache TTL, 0 when absent).
An event without ``Path``/``Method`` is the ``$default`` route.

Matching follows API Gateway HTTP APIs: a literal path segment beats a ``{param}``, which beats a
greedy ``{proxy+}``; an explicit method beats ``ANY``; ``$default`` catches the rest. Path
parameters are URL-decoded.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import yaml

DEFAULT_ROUTE = "$default"
ANY_METHOD = "ANY"
NO_AUTHORIZER = "NONE"
DEFAULT_TIMEOUT_SECONDS = 3
DEFAULT_MEMORY_MB = 128
MAX_RESULT_TTL_SECONDS = 3600
_PARAMETER = re.compile(r"^\{([A-Za-z0-9_.-]+)(\+?)\}$")


class TemplateError(ValueError):
    """The template declares an HTTP API the local gateway cannot serve (e.g. a JWT authorizer)."""


@dataclass(frozen=True)
class FunctionSpec:
    """A Lambda function: its handler is ``handler`` (``module.attr``) under ``code_dir``."""

    logical_id: str
    code_dir: Path
    handler: str
    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS
    memory_mb: int = DEFAULT_MEMORY_MB

    @property
    def module_file(self) -> Path:
        module, _, _ = self.handler.rpartition(".")
        return self.code_dir.joinpath(*module.split(".")).with_suffix(".py")

    @property
    def attribute(self) -> str:
        return self.handler.rpartition(".")[2]


@dataclass(frozen=True)
class AuthorizerSpec:
    """A Lambda authorizer of an HTTP API (REQUEST type)."""

    name: str
    function: FunctionSpec
    payload_format_version: str = "2.0"
    simple_responses: bool = False
    identity_headers: tuple[str, ...] = ()
    identity_query_strings: tuple[str, ...] = ()
    result_ttl_seconds: int = 0
    """How long API Gateway caches an answer (``Identity.ReauthorizeEvery``); 0: not cached."""


@dataclass(frozen=True)
class Route:
    """One route: ``method`` (upper case, or ``ANY``) and ``path`` (``/a/{b}``, ``/{proxy+}`` or
    ``$default``) integrated with ``function``, behind ``authorizer`` unless it is ``None``."""

    method: str
    path: str
    function: FunctionSpec
    authorizer: AuthorizerSpec | None = None

    @cached_property
    def pattern(self) -> re.Pattern[str] | None:
        """The path as a regular expression over the encoded request path (``None``: ``$default``)."""
        return _compile(self.path)

    @property
    def specificity(self) -> tuple[Any, ...]:
        """Sort key, most specific first: per segment literal < ``{param}`` < ``{proxy+}``, then
        explicit methods before ``ANY``; ``$default`` last."""
        return _rank(self.method, self.path)

    @property
    def route_key(self) -> str:
        """``"POST /mcp"`` or ``"$default"``, as in ``routeKey`` of the event."""
        return DEFAULT_ROUTE if self.path == DEFAULT_ROUTE else f"{self.method} {self.path}"

    def path_parameters(self, method: str, raw_path: str) -> dict[str, str] | None:
        """The URL-decoded path parameters when this route matches, else ``None``."""
        if self.method not in (ANY_METHOD, method.upper()):
            return None
        if self.pattern is None:
            return {}
        matched = self.pattern.fullmatch(raw_path)
        if matched is None:
            return None
        return {name: unquote(value) for name, value in matched.groupdict().items()}


@dataclass(frozen=True)
class RouteMatch:
    route: Route
    path_parameters: dict[str, str]


class RouteTable:
    """The routes of one or more HTTP APIs, matched as API Gateway does."""

    def __init__(self, routes: Sequence[Route]) -> None:
        self.routes = sorted(routes, key=lambda route: route.specificity)

    @property
    def functions(self) -> list[FunctionSpec]:
        """Every function the routes invoke, authorizers included, each once, in route order."""
        found: dict[str, FunctionSpec] = {}
        for route in self.routes:
            for function in (route.authorizer.function if route.authorizer else None, route.function):
                if function is not None:
                    found.setdefault(function.logical_id, function)
        return list(found.values())

    def match(self, method: str, raw_path: str) -> RouteMatch | None:
        """The most specific route for ``method`` and the request's (still encoded) path."""
        for route in self.routes:
            parameters = route.path_parameters(method, raw_path)
            if parameters is not None:
                return RouteMatch(route, parameters)
        return None


def load_routes(template_path: str | Path) -> RouteTable:
    """Read the HTTP API routes of the SAM template at ``template_path``; ``TemplateError`` when an
    event, authorizer or function cannot be served locally."""
    path = Path(template_path).resolve()
    template = load_template(path)
    resources: Mapping[str, Any] = template.get("Resources") or {}
    globals_ = template.get("Globals") or {}
    functions = {
        logical_id: function_spec(logical_id, resource.get("Properties") or {}, globals_, path.parent)
        for logical_id, resource in resources.items()
        if resource.get("Type") == "AWS::Serverless::Function"
    }
    routes: list[Route] = []
    for logical_id, resource in resources.items():
        if resource.get("Type") != "AWS::Serverless::Function":
            continue
        for event in ((resource.get("Properties") or {}).get("Events") or {}).values():
            if event.get("Type") == "HttpApi":
                properties = event.get("Properties") or {}
                api_auth = _api_auth(properties.get("ApiId"), resources, globals_)
                routes.append(_route(properties, functions[logical_id], api_auth, functions))
    return RouteTable(routes)


def _route(
    properties: Mapping[str, Any],
    function: FunctionSpec,
    api_auth: Mapping[str, Any],
    functions: Mapping[str, FunctionSpec],
) -> Route:
    method = str(properties.get("Method", ANY_METHOD)).upper()
    path = str(properties.get("Path", DEFAULT_ROUTE))
    if method == "X-AMAZON-APIGATEWAY-ANY-METHOD":
        method = ANY_METHOD
    name = (properties.get("Auth") or {}).get("Authorizer") or api_auth.get("DefaultAuthorizer")
    authorizer = None
    if name and name != NO_AUTHORIZER:
        authorizer = _authorizer(str(name), api_auth, functions)
    return Route(method=method, path=path, function=function, authorizer=authorizer)


def _api_auth(api_id: Any, resources: Mapping[str, Any], globals_: Mapping[str, Any]) -> Mapping[str, Any]:
    if api_id is None:
        return (globals_.get("HttpApi") or {}).get("Auth") or {}
    logical_id = api_id.get("Ref") if isinstance(api_id, Mapping) else None
    if not isinstance(logical_id, str) or logical_id not in resources:
        raise TemplateError(f"HttpApi event names an API that is not in the template: {api_id!r}")
    return (resources[logical_id].get("Properties") or {}).get("Auth") or {}


def _authorizer(
    name: str, api_auth: Mapping[str, Any], functions: Mapping[str, FunctionSpec]
) -> AuthorizerSpec:
    config = (api_auth.get("Authorizers") or {}).get(name)
    if config is None:
        raise TemplateError(f"Unknown authorizer {name!r}.")
    if "FunctionArn" not in config:
        raise TemplateError(f"Authorizer {name!r} is not a Lambda authorizer; only those run locally.")
    logical_id = _function_of(config["FunctionArn"])
    if logical_id not in functions:
        raise TemplateError(f"Authorizer {name!r} names a function that is not in the template.")
    identity = config.get("Identity") or {}
    return AuthorizerSpec(
        name=name,
        function=functions[logical_id],
        payload_format_version=str(config.get("AuthorizerPayloadFormatVersion", "2.0")),
        simple_responses=bool(config.get("EnableSimpleResponses", False)),
        identity_headers=tuple(str(header).lower() for header in identity.get("Headers") or ()),
        identity_query_strings=tuple(str(query) for query in identity.get("QueryStrings") or ()),
        result_ttl_seconds=_result_ttl(name, identity.get("ReauthorizeEvery", 0)),
    )


def _result_ttl(name: str, value: Any) -> int:
    """``ReauthorizeEvery`` as API Gateway takes it: whole seconds from 0 to 3600."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_RESULT_TTL_SECONDS:
        raise TemplateError(
            f"Authorizer {name!r}: ReauthorizeEvery must be whole seconds from 0 to {MAX_RESULT_TTL_SECONDS}."
        )
    return value


def _function_of(arn: Any) -> str:
    """The logical id in ``!GetAtt Fn.Arn``, ``Fn::GetAtt: [Fn, Arn]`` or ``!Sub ${Fn.Arn}``."""
    if isinstance(arn, Mapping):
        if "Fn::GetAtt" in arn:
            target = arn["Fn::GetAtt"]
            return str(target[0] if isinstance(target, list) else str(target).split(".")[0])
        if "Fn::Sub" in arn:
            found = re.search(r"\$\{([A-Za-z0-9]+)\.Arn\}", str(arn["Fn::Sub"]))
            if found:
                return found.group(1)
    raise TemplateError(f"Cannot resolve the authorizer function from {arn!r}.")


def function_spec(
    logical_id: str, properties: Mapping[str, Any], globals_: Mapping[str, Any], base_dir: Path
) -> FunctionSpec:
    """The ``AWS::Serverless::Function`` ``logical_id`` from its ``Properties`` over the template's
    ``Globals`` (``globals_``), its ``CodeUri`` resolved against ``base_dir`` (the template's
    folder); ``TemplateError`` without a local ``CodeUri`` and a ``module.attribute`` ``Handler``."""
    merged = {**(globals_.get("Function") or {}), **properties}
    code_uri, handler = merged.get("CodeUri"), merged.get("Handler")
    if not isinstance(code_uri, str) or not isinstance(handler, str) or "." not in handler:
        raise TemplateError(f"Function {logical_id} needs a local CodeUri and a module.attribute Handler.")
    return FunctionSpec(
        logical_id=logical_id,
        code_dir=(base_dir / code_uri).resolve(),
        handler=handler,
        timeout_seconds=float(merged.get("Timeout", DEFAULT_TIMEOUT_SECONDS)),
        memory_mb=int(merged.get("MemorySize", DEFAULT_MEMORY_MB)),
    )


def _compile(path: str) -> re.Pattern[str] | None:
    if path == DEFAULT_ROUTE:
        return None
    parts: list[str] = []
    for segment in path.strip("/").split("/"):
        parameter = _PARAMETER.match(segment)
        if parameter is None:
            parts.append(re.escape(segment))
        elif parameter.group(2):
            parts.append(f"(?P<{_group(parameter.group(1))}>.+)")
        else:
            parts.append(f"(?P<{_group(parameter.group(1))}>[^/]+)")
    return re.compile("/" + "/".join(parts))


def _group(name: str) -> str:
    if not name.isidentifier():
        raise TemplateError(f"Path parameter names must be identifiers locally: {name!r}.")
    return name


def _rank(method: str, path: str) -> tuple[Any, ...]:
    if path == DEFAULT_ROUTE:
        return (1,)
    kinds = []
    for segment in path.strip("/").split("/"):
        parameter = _PARAMETER.match(segment)
        kinds.append(0 if parameter is None else 2 if parameter.group(2) else 1)
    return (0, kinds, -len(kinds), method == ANY_METHOD)


class _CfnLoader(yaml.SafeLoader):
    """Reads CloudFormation short-form tags as their long form (``!GetAtt A.Arn`` is
    ``{"Fn::GetAtt": "A.Arn"}``, ``!Ref X`` is ``{"Ref": "X"}``)."""


def _cfn_tag(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> Any:
    value: Any
    if isinstance(node, yaml.ScalarNode):
        value = loader.construct_scalar(node)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_mapping(node, deep=True)  # type: ignore[arg-type]
    return {suffix if suffix == "Ref" else f"Fn::{suffix}": value}


_CfnLoader.add_multi_constructor("!", _cfn_tag)


def load_template(path: Path) -> dict[str, Any]:
    """The template at ``path`` as a mapping, short-form tags in their long form (``_CfnLoader``);
    ``TemplateError`` when the YAML is not a mapping (yaml's own errors for bad YAML)."""
    with path.open(encoding="utf-8") as handle:
        loaded = yaml.load(handle, Loader=_CfnLoader)
    if not isinstance(loaded, dict):
        raise TemplateError(f"{path} is not a template.")
    return loaded
