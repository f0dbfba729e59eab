"""The local runtime's own settings, read from the environment before anything starts.

``RuntimeSettings`` is the one list: each field is an environment variable (its name in upper
case) with its default and meaning, and ``settings_help()`` renders it for
``python -m knowledge_local.runtime --help``, together with ``PASSED_THROUGH``, the service's
settings (``knowledge.settings``) that matter locally. The runtime sets the table, queue and
endpoint variables itself.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from knowledge_local.account import LOCAL_ACCESS_KEY, LOCAL_SECRET_KEY
from knowledge_local.emulator.lambda_runtime.invoker import DEFAULT_MAX_ENVIRONMENTS
from knowledge_local.state import DEFAULT_STATE_DIR, EMBEDDING_CACHE_FILE, PROJECT_ROOT

LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR"]
DEFAULT_PORT = 3000
DEFAULT_AWS_PORT = 5000
DEFAULT_AUTH_FAILURES_PER_SECOND = 10
"""Failed authentications per client address per second before the gateway throttles the address
(``address_throttle``)."""
DEFAULT_OPENSEARCH_INDEX = "knowledge-chunks"
DEFAULT_OPENSEARCH_NOTES_INDEX = "knowledge-notes"
"""The template's index names (``OPENSEARCH_INDEX``, ``OPENSEARCH_NOTES_INDEX``)."""


class ConfigurationError(ValueError):
    """An environment variable has an invalid value; the message names it."""


class RuntimeSettings(BaseSettings):
    """Every setting of the local runtime; ``description`` is what ``--help`` prints, and
    ``json_schema_extra["shown_default"]`` the default as a person reads it, when it is not the
    value itself."""

    model_config = SettingsConfigDict(extra="ignore", frozen=True)

    port: int = Field(
        default=DEFAULT_PORT,
        ge=0,
        le=65535,
        validation_alias="PORT",
        description="port of the API (0: any free port)",
    )
    aws_port: int = Field(
        default=DEFAULT_AWS_PORT,
        ge=0,
        le=65535,
        validation_alias="AWS_PORT",
        description="port of the local AWS endpoint (moto: DynamoDB, Streams, SQS)",
    )
    host: str = Field(default="127.0.0.1", description="address the API and the AWS endpoint listen on")
    knowledge_seed_dir: str | None = Field(
        default=None,
        description="folder ingested into the seeded base on start; empty: no seed",
        json_schema_extra={"shown_default": "README.md and docs/"},
    )
    knowledge_seed_base: str = Field(
        default="project-docs", min_length=1, description="name of the seeded knowledge base"
    )
    knowledge_state_dir: Path = Field(
        default=DEFAULT_STATE_DIR,
        description="endpoints, dev token, embedding cache and the kept state; one runtime each",
        json_schema_extra={"shown_default": ".knowledge"},
    )
    log_level: LogLevel = Field(
        default="WARNING", description="Python and Powertools log level (INFO shows every request)"
    )
    knowledge_max_environments: int = Field(
        default=DEFAULT_MAX_ENVIRONMENTS,
        ge=1,
        le=64,
        description="execution environments (processes) per function at most",
    )
    knowledge_persist: bool = Field(
        default=True,
        description="keep the tables and the ingest queues in the state directory, every write on "
        "disk (journal, snapshot) before it is answered; false: in memory only, gone at stop",
    )
    knowledge_authorizer_cache: bool = Field(
        default=False,
        description="replay each token's authorizer answer for the template's ReauthorizeEvery "
        "seconds, as API Gateway does; false: every request is authorized afresh, so a revoke counts at once",
    )
    knowledge_auth_failures_per_second: int = Field(
        default=DEFAULT_AUTH_FAILURES_PER_SECOND,
        ge=0,
        le=1_000_000,
        description="failed or missing authentications per client address per second (burst as many) "
        "before the gateway answers that address 429 rate_limited without asking the authorizer; "
        "a token that works still passes; 0: no throttle",
    )
    search_backend: Literal["embedded", "opensearch"] = Field(
        default="embedded",
        description="embedded (tantivy + numpy, in this process) or opensearch: a local OpenSearch "
        "2.19 node with k-NN that the runtime starts and stops, or the cluster at OPENSEARCH_URL",
    )
    opensearch_url: str | None = Field(
        default=None,
        pattern=r"^https?://",
        description="with SEARCH_BACKEND=opensearch, a cluster to use (no auth) instead of starting a node",
        json_schema_extra={"shown_default": "none"},
    )
    opensearch_heap: str = Field(
        default="1g",
        pattern=r"^[1-9][0-9]*[mg]$",
        description="heap of the OpenSearch node the runtime starts with SEARCH_BACKEND=opensearch "
        "and no OPENSEARCH_URL (e.g. 512m, 2g)",
    )
    knowledge_runtime_enabled: bool = Field(
        default=True,
        description="false switches the tools off: each answers 503 knowledge_runtime_disabled "
        "(read by the functions too)",
    )

    @property
    def max_environments(self) -> int:
        """How many invocations of one function run at once (``invoker``)."""
        return self.knowledge_max_environments

    @field_validator("opensearch_url", mode="before")
    @classmethod
    def _unset_when_empty(cls, value: object) -> object:
        return None if value == "" else value

    @field_validator("log_level", mode="before")
    @classmethod
    def _upper(cls, value: object) -> object:
        return value.upper() if isinstance(value, str) else value


PASSED_THROUGH: tuple[tuple[str, str, str], ...] = (
    ("OPENSEARCH_INDEX", DEFAULT_OPENSEARCH_INDEX, "the chunk index, on OpenSearch"),
    ("OPENSEARCH_NOTES_INDEX", DEFAULT_OPENSEARCH_NOTES_INDEX, "the notes index, on OpenSearch"),
    ("EMBEDDER", "local", "local (all-MiniLM-L6-v2, offline) or bedrock"),
    ("EMBEDDING_CACHE_PATH", "<state dir>/embeddings.sqlite3", "the embedding cache file"),
    ("TENANT_REQUESTS_PER_SECOND", "50", "each tenant's requests per second (0: no quota)"),
    ("TENANT_WRITES_PER_SECOND", "10", "each tenant's writes per second (0: no quota)"),
    ("TENANT_MAX_STORED_ITEMS", "100000", "each tenant's stored knowledge items and notes (0: no quota)"),
)
"""``(variable, default, meaning)`` of the service's settings (``knowledge.settings``) that the
runtime hands to its functions unchanged."""


def settings_help() -> str:
    """Every setting, one line each (``NAME (default): meaning``): ``RuntimeSettings``'s fields,
    then ``PASSED_THROUGH``; the text of ``--help``'s epilog."""
    lines = ["Environment (runtime):"]
    for name, field in RuntimeSettings.model_fields.items():
        variable = str(field.validation_alias or name).upper()
        extra = field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}
        default = extra.get("shown_default", field.default)
        shown = str(default).lower() if isinstance(default, bool) else default
        lines.append(f"  {variable} ({shown}): {field.description}")
    lines.append("Environment (passed to the functions):")
    lines.extend(f"  {variable} ({default}): {meaning}" for variable, default, meaning in PASSED_THROUGH)
    return "\n".join(lines)


def function_environment(settings: RuntimeSettings) -> tuple[dict[str, str], dict[str, str]]:
    """``(forced, defaults)``: the process environment the functions run with, to apply before
    anything of ``knowledge`` is imported (Powertools reads its variables when the handlers' module
    objects are built). ``forced`` keeps every AWS call on the local endpoint with fake credentials;
    ``defaults`` (embedded index, local embedder, the embedding cache file, the tokenizer
    vocabularies ``make install`` seeds, the template's OpenSearch index names) yield to the
    caller's."""
    forced = {
        "AWS_ACCESS_KEY_ID": LOCAL_ACCESS_KEY,
        "AWS_SECRET_ACCESS_KEY": LOCAL_SECRET_KEY,
        "AWS_REGION": "us-east-1",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ACCOUNT_ID_ENDPOINT_MODE": "disabled",
        "POWERTOOLS_SERVICE_NAME": "knowledge",
        "POWERTOOLS_METRICS_NAMESPACE": "KnowledgeService",
        "POWERTOOLS_TRACE_DISABLED": "true",
        "POWERTOOLS_METRICS_DISABLED": "true",
        "POWERTOOLS_LOG_LEVEL": settings.log_level,
    }
    defaults = {
        "SEARCH_BACKEND": "embedded",
        "OPENSEARCH_INDEX": DEFAULT_OPENSEARCH_INDEX,
        "OPENSEARCH_NOTES_INDEX": DEFAULT_OPENSEARCH_NOTES_INDEX,
        "EMBEDDER": "local",
        "EMBEDDING_CACHE_PATH": str(settings.knowledge_state_dir / EMBEDDING_CACHE_FILE),
        "HF_HUB_OFFLINE": "1",
        "TIKTOKEN_CACHE_DIR": str(PROJECT_ROOT / ".cache" / "tiktoken"),
    }
    return forced, defaults


def load_settings() -> RuntimeSettings:
    """The settings from the environment; ``ConfigurationError`` naming the first bad variable."""
    try:
        settings = RuntimeSettings()
    except ValidationError as error:
        problem = error.errors(include_url=False)[0]
        name = str(problem["loc"][0]).upper() if problem["loc"] else "environment"
        raise ConfigurationError(f"{name}: {problem['msg']} (got {problem.get('input')!r}).") from None
    return settings
