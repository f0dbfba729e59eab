"""Note index adapters under test, for the note index contract suite: ``embedded`` always; ``osmem``
(``OpenSearchNoteIndex`` over HTTP against the in-memory OpenSearch-compatible server, lexical leg
only: it has no k-NN); ``opensearch`` when ``OPENSEARCH_URL`` names a real cluster."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager

from knowledge.adapters.embedded_note_index import EmbeddedNoteIndex
from knowledge.adapters.opensearch_index import build_opensearch_client
from knowledge.adapters.opensearch_note_index import OpenSearchNoteIndex
from knowledge.domain.retrieval import Leg
from knowledge.ports import NoteIndex
from tests.support.index import DIMENSION, MODEL_ID, OPENSEARCH_URL

NOTE_ADAPTERS = ["embedded", "osmem"] + (["opensearch"] if OPENSEARCH_URL else [])
"""Every ``NoteIndex`` adapter."""
SEMANTIC_NOTE_ADAPTERS = ["embedded"] + (["opensearch"] if OPENSEARCH_URL else [])
NOTE_ADAPTER_LEGS = [(adapter, Leg.LEXICAL) for adapter in NOTE_ADAPTERS] + [
    (adapter, Leg.SEMANTIC) for adapter in SEMANTIC_NOTE_ADAPTERS
]
"""``(adapter, leg)`` pairs for behaviour both legs must show."""


@contextmanager
def open_note_index(adapter: str, osmem_url: str | None = None) -> Iterator[NoteIndex]:
    """A fresh, empty, ready note index of ``adapter`` (a unique OpenSearch index, deleted afterwards)."""
    if adapter == "embedded":
        embedded = EmbeddedNoteIndex()
        embedded.ensure_ready(model_id=MODEL_ID, dimension=DIMENSION)
        yield embedded
        return
    url = osmem_url if adapter == "osmem" else OPENSEARCH_URL
    assert url is not None
    client = build_opensearch_client(url, auth="none", region="us-east-1")
    name = f"notes-contract-{uuid.uuid4().hex[:12]}"
    index = OpenSearchNoteIndex(client, name, refresh=True)
    index.ensure_ready(model_id=MODEL_ID, dimension=DIMENSION)
    try:
        yield index
    finally:
        client.indices.delete(index=name, ignore_unavailable=True)
