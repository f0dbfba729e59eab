"""The local runtime's own settings, read from the environment before anything starts.

| variable | default | meaning |
|---|---|---|
| ``PORT`` | 3000 | port of the API (0: any free port) |
| ``AWS_PORT`` | 5000 | port of the local AWS endpoint (moto: DynamoDB, Streams, SQS) |
| ``KNOWLEDGE_SEED_DIR`` | ``README.md`` and ``docs/`` | folder ingested on start; empty: none |
| ``KNOWLEDGE_SEED_BASE`` | ``project-docs`` | name of the seeded knowledge base |
| ``KNOWLEDGE_STATE_DIR`` | ``.knowledge`` at the project root | endpoints, token, cache; one runtime each |
| ``LOG_LEVEL`` | ``WARNING`` | Python and Powertools log level (``INFO`` shows every request) |
| ``KNOWLEDGE_MAX_ENVIRONMENTS`` | 4 | execution environments (processes) per function at most |
| ``KNOWLEDGE_PERSIST`` | ``false`` | keep the table in the state folder across restarts (``snapshot``) |

The service's settings (``knowledge.settings``: ``SEARCH_BACKEND``, ``EMBEDDER``,
``EMBEDDING_CACHE_PATH``, ``KNOWLEDGE_RUNTIME_ENABLED``...) are passed through; the runtime sets
the table, queue and endpoint variables itself.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from knowledge_local.invoker import DEFAULT_MAX_ENVIRONMENTS
from knowledge_local.state import DEFAULT_STATE_DIR, EMBEDDING_CACHE_FILE, PROJECT_ROOT

LOCAL_ACCESS_KEY = "local"
LOCAL_SECRET_KEY = "local"
"""moto accepts any key pair; a fixed fake one keeps real credentials out of the local runtime."""

LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR"]
DEFAULT_PORT = 3000
DEFAULT_AWS_PORT = 5000


class ConfigurationError(ValueError):
    """An environment variable has an invalid value; the message names it."""


class RuntimeSettings(BaseSettings):
    model_config = SettingsConfigDict(extra="ignore", frozen=True)

    port: int = Field(default=DEFAULT_PORT, ge=0, le=65535, validation_alias="PORT")
    aws_port: int = Field(default=DEFAULT_AWS_PORT, ge=0, le=65535, validation_alias="AWS_PORT")
    host: str = "127.0.0.1"
    knowledge_seed_dir: str | None = None
    """``None``: the project's docs; ``""``: no seeding."""
    knowledge_seed_base: str = Field(default="project-docs", min_length=1)
    knowledge_state_dir: Path = DEFAULT_STATE_DIR
    log_level: LogLevel = "WARNING"
    knowledge_max_environments: int = Field(default=DEFAULT_MAX_ENVIRONMENTS, ge=1, le=64)
    knowledge_persist: bool = False

    @property
    def max_environments(self) -> int:
        """How many invocations of one function run at once (``invoker``)."""
        return self.knowledge_max_environments

    @field_validator("log_level", mode="before")
    @classmethod
    def _upper(cls, value: object) -> object:
        return value.upper() if isinstance(value, str) else value


def function_environment(settings: RuntimeSettings) -> tuple[dict[str, str], dict[str, str]]:
    """``(forced, defaults)``: the process environment the functions run with, to apply before
    anything of ``knowledge`` is imported (Powertools reads its variables when the handlers' module
    objects are built). ``forced`` keeps every AWS call on the local endpoint with fake credentials;
    ``defaults`` (embedded index, local embedder, the embedding cache file, the tokenizer
    vocabularies ``make install`` seeds) yield to the caller's."""
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
