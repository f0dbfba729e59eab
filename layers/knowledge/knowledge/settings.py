"""Process settings: the one place that reads the environment.

Every setting is an environment variable of the same name in upper case (``TABLE_NAME``,
``SEARCH_BACKEND``, ...). Lambda functions get them from ``template.yaml``; the local runtime sets
them before it builds anything; tests pass them to ``Settings``. ``get_settings()`` is cached;
tests call ``get_settings.cache_clear()``.

No AWS resource has a default: ``TABLE_NAME`` and ``AWS_REGION`` are always required, and the
adapter that uses one needs its own when ``knowledge.bootstrap`` builds it (``OPENSEARCH_URL``,
``OPENSEARCH_INDEX`` and ``OPENSEARCH_NOTES_INDEX`` with ``SEARCH_BACKEND=opensearch``;
``BEDROCK_MODEL_ID`` and ``EMBEDDING_DIMENSION`` with ``EMBEDDER=bedrock``), so a function that
never builds it (the ingest consumer builds the store alone) never needs them. The defaults left
are the embedded ones of DESIGN §7 and limits.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    """Validated configuration. Invalid values fail at start-up with a pydantic ``ValidationError``."""

    model_config = SettingsConfigDict(extra="ignore", frozen=True)

    # DynamoDB: the single table of bases, items, revisions, pages, tokens and idempotency records.
    table_name: str = Field(min_length=1)
    aws_region: str = Field(min_length=1, validation_alias="AWS_REGION")
    """The functions' region (Lambda sets ``AWS_REGION``); requests to OpenSearch are signed for it."""

    page_size_chars: int = Field(default=50_000, ge=1_000, le=90_000)
    """Characters (code points) per stored page; at 4 UTF-8 bytes each, under the 400 KB item limit."""
    max_content_chars: int = Field(default=4_000_000, ge=1)

    index_work_queue_url: str | None = None
    """The index work queue (``IndexWorkQueue``): the stream consumer sends the parts of each
    revision there and ``IndexWorkerFunction`` indexes them. Unset, the stream consumer indexes them
    itself (tests and scripts)."""

    # Data sources (DESIGN §6, data sources).
    document_queue_url: str | None = None
    """The document queue (``DocumentQueue``): sync work and the buckets' S3 event notifications,
    consumed by ``DocumentSyncFunction``. Unset, data sources can be created but not synced."""
    document_buckets: str = ""
    """Comma-separated bucket names the deployment grants its functions read on
    (``DocumentBuckets``); a data source on another bucket is refused. Empty: none."""
    max_document_bytes: int = Field(default=50 * 1024 * 1024, ge=1)
    """Objects larger than this (``ContentLength``) are per-object failures, never downloaded."""
    sync_page_size: int = Field(default=100, ge=1, le=1000)
    """Objects per listing page; a job stores its progress after each page."""

    # Export and import (DESIGN §9).
    bundle_bucket: str | None = None
    """The bucket of export and import bundles (``BundleBucket``: keys ``bundles/<tenant>/<job>.jsonl``,
    expired after 7 days). Unset, exports and imports answer 503."""

    # Search index.
    search_backend: Literal["embedded", "opensearch"] = "embedded"
    opensearch_url: str | None = None
    opensearch_index: str | None = None
    opensearch_notes_index: str | None = None
    opensearch_auth: Literal["sigv4", "none"] = "none"
    opensearch_service: Literal["es", "aoss"] = "es"

    # Embeddings.
    embedder: Literal["local", "bedrock"] = "local"
    bedrock_model_id: str | None = None
    embedding_dimension: int | None = Field(default=None, ge=1)
    """Dimension of the Bedrock model's vectors (the local model's is fixed)."""
    embedding_cache: Literal["memory", "table"] = "memory"
    """Where embeddings are cached: process memory, or the knowledge table (``EMB#`` records), which
    the indexer uses on AWS so re-indexing unchanged text never calls the model again."""
    embedding_cache_path: Path | None = None
    """A SQLite file that keeps embeddings across processes (benchmarks, local runs); overrides
    ``embedding_cache``."""

    local_embedding_threads: int | None = Field(default=None, ge=1)
    """ONNX Runtime intra-op threads of the local model (``None``: one per core)."""
    local_embedding_spinning: bool = False
    """Whether the local model's idle intra-op threads busy-wait (ONNX Runtime's own default) rather
    than sleep. Off: on two shared cores, spinning threads take CPU from everything else
    (docs/benchmarks.md, "The model path")."""

    # Chunking.
    chunk_tokens: int = Field(default=200, ge=16)
    chunk_overlap_tokens: int = Field(default=32, ge=0)

    # Runtime switch (DESIGN §5): an SSM parameter on AWS, this variable as fallback and locally.
    knowledge_runtime_enabled: bool = True
    runtime_switch_parameter: str | None = None
    runtime_switch_max_age_seconds: int = Field(default=15, ge=0)

    # Per-tenant quotas (``knowledge.services.quotas``): GCRA rates kept in the table (a burst of
    # the limit, then evenly spaced); 0 turns a quota off.
    tenant_requests_per_second: int = Field(default=50, ge=0)
    """Authenticated requests per second per tenant, over every REST route and MCP together."""
    tenant_writes_per_second: int = Field(default=10, ge=0)
    """Writes per second per tenant (write API routes and memory writes), counted on top of requests."""
    tenant_max_stored_items: int = Field(default=100_000, ge=0)
    """Stored items per tenant (live knowledge items and notes), counted exactly in the table."""

    # Idempotency of write routes (Powertools idempotency on the table).
    idempotency_ttl_seconds: int = Field(default=3600, ge=60)


class TracingSettings(BaseSettings):
    """Whether X-Ray tracing runs, by Powertools' own rule: inside Lambda (``LAMBDA_TASK_ROOT`` is
    set), outside SAM's and Chalice's local emulation (``AWS_SAM_LOCAL``, ``AWS_CHALICE_CLI_MODE``),
    and unless ``POWERTOOLS_TRACE_DISABLED`` is true. The template turns tracing on
    (``Tracing: Active``); the local runtime sets ``POWERTOOLS_TRACE_DISABLED``."""

    model_config = SettingsConfigDict(extra="ignore", frozen=True)

    powertools_trace_disabled: bool = False
    lambda_task_root: str | None = None
    aws_sam_local: str | None = None
    aws_chalice_cli_mode: str | None = None

    @property
    def enabled(self) -> bool:
        in_lambda = bool(self.lambda_task_root) and not (self.aws_sam_local or self.aws_chalice_cli_mode)
        return in_lambda and not self.powertools_trace_disabled


@lru_cache(maxsize=1)
def get_tracing_settings() -> TracingSettings:
    """Return the tracing settings, read once from the environment."""
    return TracingSettings()


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """Return the process settings, read once from the environment."""
    return Settings()
