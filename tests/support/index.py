"""Search index adapters under test and builders of indexed items, shared by the index suites.

Adapters: ``embedded`` (in process) and ``opensearch`` (``OpenSearchIndex`` over HTTP on the real
OpenSearch node of the ``opensearch_url`` fixture, k-NN plugin included). Both run the whole contract
suite, both legs.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from knowledge.adapters.embedded.passages import EmbeddedIndex
from knowledge.adapters.opensearch.engine import build_opensearch_client
from knowledge.adapters.opensearch.passages import OpenSearchIndex
from knowledge.domain.access.visibility import VisibilityFilter
from knowledge.domain.retrieval.hits import Chunk, IndexedChunk, IndexedItem, IndexQuery, Leg, LegHits
from knowledge.ports import SearchIndex

MODEL_ID = "contract-model"
DIMENSION = 8

ADAPTERS = ["embedded", "opensearch"]
"""Every adapter: both legs, writes, versions, configuration."""
ADAPTER_LEGS = [(adapter, leg) for adapter in ADAPTERS for leg in (Leg.LEXICAL, Leg.SEMANTIC)]
"""``(adapter, leg)`` pairs for behaviour that both legs must show, such as visibility."""


@contextmanager
def open_index(
    adapter: str, opensearch_url: str | None = None, *, model_id: str = MODEL_ID, dimension: int = DIMENSION
) -> Iterator[SearchIndex]:
    """A fresh, empty index of ``adapter`` made ready for ``model_id`` and ``dimension`` (for
    ``opensearch``, a unique index on the node at ``opensearch_url``, deleted afterwards)."""
    if adapter == "embedded":
        index: SearchIndex = EmbeddedIndex()
        index.ensure_ready(model_id=model_id, dimension=dimension)
        yield index
        return
    assert opensearch_url is not None, "the opensearch adapter needs the opensearch_url fixture"
    url = opensearch_url
    client = build_opensearch_client(url, auth="none", region="us-east-1")
    name = f"contract-{uuid.uuid4().hex[:12]}"
    index = OpenSearchIndex(client, name, refresh=True)
    index.ensure_ready(model_id=model_id, dimension=dimension)
    try:
        yield index
    finally:
        client.indices.delete(index=name, ignore_unavailable=True)


def axis(position: int, dimension: int = DIMENSION) -> list[float]:
    """The unit vector along ``position``."""
    vector = [0.0] * dimension
    vector[position % dimension] = 1.0
    return vector


def at_angle(cosine: float, dimension: int = DIMENSION) -> list[float]:
    """A unit vector whose cosine with ``axis(0)`` is ``cosine``."""
    vector = [0.0] * dimension
    vector[0] = cosine
    vector[1] = math.sqrt(max(0.0, 1.0 - cosine * cosine))
    return vector


def item(
    item_id: str,
    texts: Sequence[str] = ("plain chunk text",),
    *,
    tenant: str = "t1",
    base: str = "kb_a",
    version: int = 1,
    revision: str | None = None,
    title: str = "Untitled",
    scope: str = "tenant",
    owner: str = "owner",
    team: str | None = None,
    vectors: Sequence[Sequence[float]] | None = None,
) -> IndexedItem:
    """An item whose chunk ``n`` holds ``texts[n]`` at consecutive offsets and vector ``vectors[n]``
    (default ``axis(n + 1)``, orthogonal to the usual query vector ``axis(0)``); its passages are the
    same spans, so both legs see the same units."""
    chunks = []
    offset = 0
    for ordinal, text in enumerate(texts):
        vector = list(vectors[ordinal]) if vectors is not None else axis(ordinal + 1)
        chunks.append(
            IndexedChunk(ordinal=ordinal, start=offset, end=offset + len(text), text=text, vector=vector)
        )
        offset += len(text)
    return IndexedItem(
        tenant_id=tenant,
        knowledge_base_id=base,
        knowledge_item_id=item_id,
        knowledge_revision_id=revision or f"kr_{item_id}_v{version}",
        version=version,
        owner_id=owner,
        team_id=team,
        scope=scope,
        title=title,
        chunks=chunks,
        passages=[Chunk(ordinal=c.ordinal, start=c.start, end=c.end, text=c.text) for c in chunks],
    )


def viewer(
    *,
    tenant: str = "t1",
    subject: str = "reader",
    teams: Sequence[str] = (),
    bases: Sequence[str] | None = None,
) -> VisibilityFilter:
    return VisibilityFilter(
        tenant_id=tenant,
        subject_id=subject,
        team_ids=frozenset(teams),
        knowledge_base_ids=None if bases is None else frozenset(bases),
    )


def query(
    text: str = "",
    *,
    leg: Leg = Leg.LEXICAL,
    vector: Sequence[float] | None = None,
    visibility: VisibilityFilter | None = None,
    k: int = 10,
) -> IndexQuery:
    """A one-leg query; the semantic leg defaults to the vector ``axis(0)``."""
    if leg is Leg.SEMANTIC and vector is None:
        vector = axis(0)
    return IndexQuery(
        text=text,
        vector=None if vector is None else list(vector),
        visibility=visibility or viewer(),
        k=k,
        legs=frozenset({leg}),
    )


def leg_hits(hits: LegHits, leg: Leg) -> list[tuple[str, int]]:
    """``(item id, ordinal)`` of one leg's hits, in order."""
    chosen = hits.lexical if leg is Leg.LEXICAL else hits.semantic
    return [(hit.knowledge_item_id, hit.ordinal) for hit in chosen]


def found_items(index: SearchIndex, text: str, visibility: VisibilityFilter | None = None) -> set[str]:
    """Item ids the lexical leg returns for ``text``."""
    hits = index.search(query(text, visibility=visibility))
    return {hit.knowledge_item_id for hit in hits.lexical}
