"""The runtime's local embedder takes its thread settings from ``Settings`` (no model is loaded)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from knowledge.adapters.local_embedder import build
from knowledge.settings import Settings
from tests.conftest import TABLE_NAME


def test_local_embedder_build_defaults_give_one_thread_per_core_that_sleeps() -> None:
    embedder = build(Settings(table_name=TABLE_NAME))

    assert (embedder.threads, embedder.spinning) == (None, False)


def test_local_embedder_build_settings_set_threads_and_spinning() -> None:
    settings = Settings(table_name=TABLE_NAME, local_embedding_threads=1, local_embedding_spinning=True)

    embedder = build(settings)

    assert (embedder.threads, embedder.spinning) == (1, True)


def test_local_embedder_settings_read_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOCAL_EMBEDDING_THREADS", "2")
    monkeypatch.setenv("LOCAL_EMBEDDING_SPINNING", "true")

    settings = Settings(table_name=TABLE_NAME)

    assert (settings.local_embedding_threads, settings.local_embedding_spinning) == (2, True)


def test_local_embedder_settings_zero_threads_rejected() -> None:
    with pytest.raises(ValidationError, match="local_embedding_threads"):
        Settings(table_name=TABLE_NAME, local_embedding_threads=0)
