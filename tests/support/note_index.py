"""Note index adapters under test, for the note index contract suite: ``embedded`` (in process) and
``opensearch`` (``OpenSearchNoteIndex`` over HTTP on the real node of the ``opensearch_url``
fixture), both legs each."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager

from knowledge.adapters.embedded.notes import EmbeddedNoteIndex
from knowledge.adapters.opensearch.engine import build_opensearch_client
from knowledge.adapters.opensearch.notes import OpenSearchNoteIndex
from knowledge.domain.retrieval.hits import Leg
from knowledge.ports import NoteIndex
from tests.support.index import DIMENSION, MODEL_ID

NOTE_ADAPTERS = ["embedded", "opensearch"]
"""Every ``NoteIndex`` adapter."""
NOTE_ADAPTER_LEGS = [(adapter, leg) for adapter in NOTE_ADAPTERS for leg in (Leg.LEXICAL, Leg.SEMANTIC)]
"""``(adapter, leg)`` pairs for behaviour both legs must show."""


@contextmanager
def open_note_index(
    adapter: str, opensearch_url: str | None = None, *, history: bool = False
) -> Iterator[NoteIndex]:
    """A fresh, empty, ready note index of ``adapter`` (for ``opensearch``, a unique index on the
    node at ``opensearch_url``, deleted afterwards); with ``history``, a note history index."""
    if adapter == "embedded":
        embedded = EmbeddedNoteIndex(history=history)
        embedded.ensure_ready(model_id=MODEL_ID, dimension=DIMENSION)
        yield embedded
        return
    assert opensearch_url is not None, "the opensearch adapter needs the opensearch_url fixture"
    url = opensearch_url
    client = build_opensearch_client(url, auth="none", region="us-east-1")
    name = f"notes-contract-{uuid.uuid4().hex[:12]}"
    index = OpenSearchNoteIndex(client, name, refresh=True, history=history)
    index.ensure_ready(model_id=MODEL_ID, dimension=DIMENSION)
    try:
        yield index
    finally:
        client.indices.delete(index=name, ignore_unavailable=True)
