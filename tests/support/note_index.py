"""Note index adapters under test (``NOTE_ADAPTERS``), for the note index contract suite."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from knowledge.adapters.embedded_note_index import EmbeddedNoteIndex
from knowledge.ports import NoteIndex
from tests.support.index import DIMENSION, MODEL_ID

NOTE_ADAPTERS = ["embedded"]
"""Every ``NoteIndex`` adapter."""


@contextmanager
def open_note_index(adapter: str) -> Iterator[NoteIndex]:
    """A fresh, empty, ready note index of ``adapter``."""
    if adapter != "embedded":
        raise ValueError(f"unknown note index adapter {adapter!r}")
    index = EmbeddedNoteIndex()
    index.ensure_ready(model_id=MODEL_ID, dimension=DIMENSION)
    yield index
