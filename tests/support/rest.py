"""The REST surface under test: real handlers (authorizer, then function) over moto DynamoDB.

``SearchWorld`` installs a container of the real ``DynamoDBKnowledgeStore``, an index (an
``EmbeddedIndex`` by default; ``engine_world`` gives one on either engine of
``tests.support.index.ADAPTERS``) and the ``HashingEmbedder``; it writes knowledge with the store and
indexes it as the stream indexer would (``build_indexed_item`` + ``upsert``), so tests can also
leave the index stale on purpose.
"""

from __future__ import annotations

import base64
import importlib.util
import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from functools import cache
from typing import Any

import boto3
from moto import mock_aws

from knowledge.adapters.dynamodb.knowledge_store import DynamoDBKnowledgeStore
from knowledge.adapters.embedded.passages import EmbeddedIndex
from knowledge.adapters.runtime_switch import StaticRuntimeSwitch
from knowledge.bootstrap import Container, build_container, use_container
from knowledge.domain.models import KnowledgeBase, KnowledgeItem, Revision, Scope, Source
from knowledge.domain.retrieval.hits import IndexedItem
from knowledge.domain.segments import Segment
from knowledge.ports import RuntimeSwitch, SearchIndex
from knowledge.services.documents import build_indexed_item
from knowledge.settings import Settings
from tests.conftest import TABLE_NAME
from tests.support.embedding import HashingEmbedder
from tests.support.events import lambda_context, load_event, with_authorization, with_body
from tests.support.index import open_index
from tests.support.store import make_store, new_client
from tests.support.template import ROOT, create_table_kwargs

Handler = Callable[[dict[str, Any], Any], dict[str, Any]]
READ = "knowledge:read"


@cache
def load_handler(function: str) -> Handler:
    """``handler`` of ``functions/{function}/app.py``, imported once under a unique module name."""
    path = ROOT / "functions" / function / "app.py"
    spec = importlib.util.spec_from_file_location(f"function_{function}_app", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    handler: Handler = module.handler
    return handler


@dataclass
class Reply:
    """A function's HTTP answer: status, headers, the raw body text and its JSON."""

    status: int
    headers: dict[str, str]
    text: str

    @property
    def body(self) -> Any:
        return json.loads(self.text)

    @property
    def code(self) -> str:
        return str(self.body["error"]["code"])


def invoke(event: dict[str, Any]) -> Reply:
    """Run the search function's handler on an HTTP API v2 event."""
    response = load_handler("search_knowledge")(event, lambda_context())
    text = response["body"]
    if response.get("isBase64Encoded"):
        text = base64.b64decode(text).decode("utf-8")
    return Reply(status=response["statusCode"], headers=dict(response.get("headers") or {}), text=text)


def authorize(authorization: str | None) -> dict[str, Any]:
    """Run the authorizer's handler on a REQUEST event carrying ``authorization``."""
    event = with_authorization(load_event("authorizer_request"), authorization)
    return load_handler("authorizer")(event, lambda_context())


def search_event(body: Any, authorization: str | None) -> dict[str, Any]:
    """A search event whose authorizer context is what the authorizer answers for ``authorization``."""
    event = with_body(load_event("search_knowledge_query"), body)
    with_authorization(event, authorization)
    answer = authorize(authorization)
    assert answer["isAuthorized"] is True
    event["requestContext"]["authorizer"] = {"lambda": answer["context"]}
    return event


@dataclass
class SearchWorld:
    store: DynamoDBKnowledgeStore
    dynamodb: Any
    """The store's low-level DynamoDB client (to inject failures with botocore events)."""
    index: SearchIndex = field(default_factory=EmbeddedIndex)
    embedder: HashingEmbedder = field(default_factory=HashingEmbedder)
    settings: Settings = field(default_factory=lambda: Settings(table_name=TABLE_NAME))
    container: Container | None = None

    def install(self, runtime_switch: RuntimeSwitch | None = None) -> Container:
        """Build the container around this world's adapters and make it the process's."""
        self.container = build_container(
            self.settings,
            store=self.store,
            index=self.index,
            embedder=self.embedder,
            runtime_switch=runtime_switch or StaticRuntimeSwitch(True),
        )
        use_container(self.container)
        return self.container

    # -- knowledge --------------------------------------------------------------------------------

    def base(
        self,
        tenant_id: str = "acme",
        *,
        owner_id: str = "owner-1",
        scope: Scope = Scope.TENANT,
        team_id: str | None = None,
        name: str = "Handbook",
    ) -> KnowledgeBase:
        return self.store.create_base(tenant_id, name=name, owner_id=owner_id, scope=scope, team_id=team_id)

    def publish(
        self,
        base: KnowledgeBase,
        title: str,
        content: str,
        *,
        source: Source | None = None,
        indexed: bool = True,
        segments: tuple[Segment, ...] = (),
    ) -> tuple[KnowledgeItem, Revision]:
        """A new published item holding ``segments``, indexed unless ``indexed`` is false."""
        item, revision = self.store.create_item(
            base.tenant_id,
            base.knowledge_base_id,
            title=title,
            content=content,
            source=source or Source(uri=f"https://docs.example.com/{title.lower().replace(' ', '-')}"),
            external_id=None,
            publish=True,
            segments=segments,
        )
        if indexed:
            self.index_revision(base, item, revision, content)
        return item, revision

    def publish_many(self, base: KnowledgeBase, documents: Iterable[tuple[str, str]]) -> list[KnowledgeItem]:
        """New published items from ``(title, content)`` pairs, indexed in one batch (one commit)."""
        published = []
        for title, content in documents:
            item, revision = self.publish(base, title, content, indexed=False)
            published.append((item, revision, content))
        self.index.upsert_many(
            [self._indexed(base, item, revision, content) for item, revision, content in published]
        )
        for item, revision, _ in published:
            self._mark(item, revision)
        return [item for item, _, _ in published]

    def index_revision(
        self, base: KnowledgeBase, item: KnowledgeItem, revision: Revision, content: str
    ) -> None:
        """Put ``revision`` of ``item`` in the index as the indexer would, whatever the store says,
        and mark it as the item's indexed revision (so the item is pending only while that is not
        its current revision)."""
        self.index.upsert(self._indexed(base, item, revision, content))
        self._mark(item, revision)

    def _mark(self, item: KnowledgeItem, revision: Revision) -> None:
        self.store.set_indexed_revision(
            item.tenant_id, item.knowledge_item_id, revision.knowledge_revision_id
        )

    def _indexed(
        self, base: KnowledgeBase, item: KnowledgeItem, revision: Revision, content: str
    ) -> IndexedItem:
        assert self.container is not None, "install() the container first"
        return build_indexed_item(
            chunker=self.container.chunker,
            embedder=self.embedder,
            tenant_id=base.tenant_id,
            knowledge_base_id=base.knowledge_base_id,
            knowledge_item_id=item.knowledge_item_id,
            knowledge_revision_id=revision.knowledge_revision_id,
            version=item.version,
            owner_id=base.owner_id,
            team_id=base.team_id,
            scope=base.scope.value,
            title=revision.title,
            content=content,
        )

    # -- callers ----------------------------------------------------------------------------------

    def token(
        self,
        tenant_id: str = "acme",
        subject_id: str = "agent-7",
        *,
        scopes: Iterable[str] = (READ,),
        team_ids: Iterable[str] = (),
        knowledge_base_ids: Iterable[str] | None = None,
        expires_in: timedelta | None = None,
    ) -> str:
        """A fresh bearer token (``Bearer ...`` header value) stored through the token service."""
        assert self.container is not None, "install() the container first"
        token, _ = self.container.tokens.issue(
            tenant_id=tenant_id,
            subject_id=subject_id,
            scopes=scopes,
            team_ids=team_ids,
            knowledge_base_ids=knowledge_base_ids,
            expires_in=expires_in,
        )
        return f"Bearer {token}"

    def call(self, arguments: Any, authorization: str | None) -> Reply:
        """The authorizer, then the search function, for ``arguments`` sent as the JSON body."""
        return invoke(search_event(arguments, authorization))

    def search(self, authorization: str, query: str, **arguments: Any) -> Reply:
        reply = self.call({"query": query, **arguments}, authorization)
        assert reply.status == 200, reply.text
        return reply

    def read(self, authorization: str, item_id: str, **arguments: Any) -> Reply:
        return self.call({"knowledge_item_id": item_id, **arguments}, authorization)


def new_world(**kwargs: Any) -> SearchWorld:
    """A world on the moto table (the ``table`` fixture), its container installed."""
    client = new_client()
    world = SearchWorld(store=make_store(client), dynamodb=client, **kwargs)
    world.install()
    return world


@contextmanager
def moto_world() -> Iterator[SearchWorld]:
    """``new_world`` on a moto table of its own (for a module-scoped world, where the per-test
    ``table`` fixture cannot reach); the process's container is uninstalled afterwards."""
    with mock_aws():
        boto3.client("dynamodb", region_name="us-east-1").create_table(
            **create_table_kwargs("KnowledgeTable", TABLE_NAME)
        )
        yield new_world()
        use_container(None)


@contextmanager
def engine_world(adapter: str, opensearch_url: str | None = None, **kwargs: Any) -> Iterator[SearchWorld]:
    """``new_world`` on a fresh index of ``adapter`` (``tests.support.index.open_index``), made for
    the world's embedder; the process's container is uninstalled afterwards."""
    embedder = kwargs.pop("embedder", None) or HashingEmbedder()
    with open_index(
        adapter, opensearch_url, model_id=embedder.model_id, dimension=embedder.dimension
    ) as index:
        try:
            yield new_world(index=index, embedder=embedder, **kwargs)
        finally:
            use_container(None)


def result_items(reply: Reply) -> list[str]:
    """The item ids of a query reply, in rank order."""
    return [result["knowledge_item_id"] for result in reply.body["results"]]


def found_items(reply: Reply) -> set[str]:
    """Every item a query reply found: its results and the copies each result lists."""
    return {
        item_id
        for result in reply.body["results"]
        for item_id in (result["knowledge_item_id"], *result["duplicate_item_ids"])
    }


def error_body(status: int, code: str, reply: Reply) -> Mapping[str, Any]:
    """Assert ``reply`` is the error ``code`` with ``status`` and return its ``error`` object."""
    assert reply.status == status, reply.text
    assert reply.headers.get("Content-Type") == "application/json"
    body = reply.body
    assert body["error"]["code"] == code, reply.text
    error: Mapping[str, Any] = body["error"]
    return error
