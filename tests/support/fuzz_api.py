"""The whole HTTP API in process for the fuzz tests: the gateway (routes and authorizer from
``template.yaml``) over the real handlers, a container of fakes (in-memory store, embedded
indexes, hashing embedder) and moto for what only DynamoDB holds (idempotency records).

Also the one check every answer must pass: no 5xx, and every error in the service's envelope
``{"type":"error","error":{"code","message","retryable","details"}}``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import boto3
import pytest
from moto import mock_aws

from knowledge.adapters.embedded.notes import EmbeddedNoteIndex
from knowledge.adapters.embedded.passages import EmbeddedIndex
from knowledge.adapters.in_process.store import InProcessKnowledgeStore
from knowledge.adapters.runtime_switch import StaticRuntimeSwitch
from knowledge.bootstrap import Container, build_container, use_container
from knowledge.contract.memory import RememberArguments
from knowledge.domain.models import Permission, Principal, Scope, Source
from knowledge.settings import Settings
from knowledge_local.emulator.api_gateway.gateway import Gateway
from tests.conftest import TABLE_NAME
from tests.support.embedding import HashingEmbedder
from tests.support.inline_invoker import InlineInvoker
from tests.support.template import TEMPLATE, create_table_kwargs
from tests.support.wsgi_gateway import WsgiGateway

TENANT = "acme"
SUBJECT = "fuzzer"
ENVELOPE_TYPES = {"error", "knowledge_unavailable"}
ERROR_FIELDS = {"code", "message", "retryable", "details"}


BUNDLE_BUCKET = "knowledge-bundles"


@dataclass
class FuzzApi:
    app: WsgiGateway
    container: Container
    authorization: str
    """``Bearer ...`` of a token holding every scope in ``TENANT``."""
    ids: dict[str, str]
    """Ids that exist, by name: ``knowledge_base_id``, ``knowledge_item_id``,
    ``knowledge_revision_id`` and ``note_id``."""


@contextmanager
def fuzz_api() -> Iterator[FuzzApi]:
    """The API, seeded with one base, one published item and one note of ``TENANT``."""
    with pytest.MonkeyPatch.context() as patch, mock_aws():
        patch.setenv("TABLE_NAME", TABLE_NAME)
        boto3.client("dynamodb", region_name="us-east-1").create_table(
            **create_table_kwargs("KnowledgeTable", TABLE_NAME)
        )
        # A deployment's document queue and bundle bucket: syncs, exports and imports answer as deployed.
        queue_url = boto3.client("sqs", region_name="us-east-1").create_queue(QueueName="documents")[
            "QueueUrl"
        ]
        boto3.client("s3", region_name="us-east-1").create_bucket(Bucket=BUNDLE_BUCKET)
        embedder = HashingEmbedder()
        container = build_container(
            Settings(table_name=TABLE_NAME, document_queue_url=queue_url, bundle_bucket=BUNDLE_BUCKET),
            store=InProcessKnowledgeStore(),
            index=EmbeddedIndex(),
            embedder=embedder,
            note_index=EmbeddedNoteIndex(),
            runtime_switch=StaticRuntimeSwitch(True),
        )
        use_container(container)
        try:
            token, _ = container.tokens.issue(
                tenant_id=TENANT, subject_id=SUBJECT, scopes=[scope.value for scope in Permission]
            )
            ids = _seed(container)
            with Gateway(TEMPLATE, invoker=InlineInvoker()) as gateway:
                yield FuzzApi(WsgiGateway(gateway), container, f"Bearer {token}", ids)
        finally:
            use_container(None)


def _seed(container: Container) -> dict[str, str]:
    store = container.store
    base = store.create_base(TENANT, name="Handbook", owner_id=SUBJECT, scope=Scope.TENANT, team_id=None)
    item, revision = store.create_item(
        TENANT,
        base.knowledge_base_id,
        title="Runbook",
        content="Restart the ingest worker, then check the dead-letter queue.",
        source=Source(uri="https://docs.example.com/runbook"),
        external_id="runbook",
        publish=True,
    )
    container.indexing.sync_item(TENANT, item.knowledge_item_id, last_known_version=item.version)
    author = Principal(
        tenant_id=TENANT,
        subject_id=SUBJECT,
        scopes=frozenset({Permission.MEMORY_READ.value, Permission.MEMORY_WRITE.value}),
    )
    note = container.notes.remember(
        author, RememberArguments(content="The staging db is pg-2.")
    ).response.note
    return {
        "knowledge_base_id": base.knowledge_base_id,
        "knowledge_item_id": item.knowledge_item_id,
        "knowledge_revision_id": revision.knowledge_revision_id,
        "note_id": note.note_id,
    }


def report(config: pytest.Config, what: str, api: FuzzApi) -> None:
    """One line on the terminal: how many requests ``what`` sent and how many answered 5xx."""
    line = f"\n{what}: {api.app.requests} requests, {api.app.server_errors} answered 5xx"
    capture = config.pluginmanager.get_plugin("capturemanager")
    if capture is None:
        print(line)
        return
    with capture.global_and_fixture_disabled():
        print(line)


def check_answer(status: int, headers: Mapping[str, str], body: bytes, *, what: str) -> None:
    """No 5xx; a 4xx is the service's error envelope, with JSON ``Content-Type``."""
    assert status < 500, f"{what}: {status} {body[:500]!r}"
    if status < 400:
        return
    content_type = {name.lower(): value for name, value in headers.items()}.get("content-type", "")
    assert content_type.split(";")[0].strip() == "application/json", f"{what}: {status} {content_type!r}"
    envelope: Any = json.loads(body)
    assert isinstance(envelope, dict), f"{what}: {body[:500]!r}"
    assert set(envelope) == {"type", "error"}, f"{what}: {body[:500]!r}"
    assert envelope["type"] in ENVELOPE_TYPES, f"{what}: {body[:500]!r}"
    error = envelope["error"]
    assert set(error) == ERROR_FIELDS, f"{what}: {body[:500]!r}"
    assert isinstance(error["code"], str), what
    assert error["code"], what
    assert isinstance(error["message"], str), what
    assert isinstance(error["retryable"], bool), what
    assert isinstance(error["details"], dict), what
