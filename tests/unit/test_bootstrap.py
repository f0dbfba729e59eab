"""The composition root picks each adapter from the settings, and ``knowledge.vocab`` seeds the
offline tokenizer vocabularies that the chunker loads."""

from __future__ import annotations

from pathlib import Path

import pytest
import tiktoken
from tiktoken_ext.openai_public import cl100k_base

from knowledge.adapters import runtime_switch
from knowledge.adapters.embedded.passages import EmbeddedIndex
from knowledge.adapters.opensearch.notes import OpenSearchNoteIndex
from knowledge.adapters.opensearch.passages import OpenSearchIndex
from knowledge.adapters.runtime_switch import ParameterRuntimeSwitch, StaticRuntimeSwitch
from knowledge.bootstrap import (
    embedder_for,
    get_container,
    history_index_for,
    index_for,
    note_index_for,
    use_container,
)
from knowledge.services.notes import NoteService
from knowledge.settings import Settings, get_settings
from knowledge.vocab import seed_tiktoken
from tests.conftest import TABLE_NAME


def test_embedder_for_bedrock_has_the_configured_model_and_dimension() -> None:
    settings = Settings(
        table_name=TABLE_NAME,
        embedder="bedrock",
        bedrock_model_id="amazon.titan-embed-text-v2:0",
        embedding_dimension=512,
    )

    embedder = embedder_for(settings)

    assert (embedder.model_id, embedder.dimension) == ("amazon.titan-embed-text-v2:0", 512)


def test_embedder_for_a_cache_path_creates_the_sqlite_cache_there(tmp_path: Path) -> None:
    path = tmp_path / "cache" / "embeddings.sqlite3"

    embedder_for(Settings(table_name=TABLE_NAME, embedding_cache_path=path))

    assert path.is_file()


def test_index_for_opensearch_names_the_configured_index() -> None:
    settings = Settings(
        table_name=TABLE_NAME,
        search_backend="opensearch",
        opensearch_url="http://127.0.0.1:9",
        opensearch_index="knowledge-chunks-test",
    )

    index = index_for(settings)

    assert isinstance(index, OpenSearchIndex)
    assert index.index_name == "knowledge-chunks-test"


def test_history_index_for_names_the_history_index_of_each_engine() -> None:
    opensearch = Settings(
        table_name=TABLE_NAME,
        search_backend="opensearch",
        opensearch_url="http://127.0.0.1:9",
        opensearch_index="knowledge-chunks-test",
    )

    index = history_index_for(opensearch)
    embedded = history_index_for(Settings(table_name=TABLE_NAME))

    assert isinstance(index, OpenSearchIndex)
    assert index.index_name == "knowledge-chunks-test-history"
    assert isinstance(embedded, EmbeddedIndex)
    assert len(embedded) == 0


def test_note_index_for_opensearch_names_the_notes_index() -> None:
    settings = Settings(
        table_name=TABLE_NAME,
        search_backend="opensearch",
        opensearch_url="http://127.0.0.1:9",
        opensearch_notes_index="knowledge-notes-test",
    )

    index = note_index_for(settings)

    assert isinstance(index, OpenSearchNoteIndex)
    assert index.index_name == "knowledge-notes-test"


def test_note_index_for_opensearch_without_its_name_is_refused() -> None:
    settings = Settings(
        table_name=TABLE_NAME, search_backend="opensearch", opensearch_url="http://127.0.0.1:9"
    )

    with pytest.raises(ValueError, match="OPENSEARCH_NOTES_INDEX"):
        note_index_for(settings)


def test_container_notes_without_an_installed_container_need_no_index_or_model_settings(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Bedrock without its model settings cannot be built: the note service never builds it up front.
    monkeypatch.setenv("TABLE_NAME", TABLE_NAME)
    monkeypatch.setenv("SEARCH_BACKEND", "opensearch")
    monkeypatch.setenv("EMBEDDER", "bedrock")
    get_settings.cache_clear()
    use_container(None)
    try:
        service = get_container().notes

        assert isinstance(service, NoteService)
        assert get_container().notes is service
    finally:
        use_container(None)
        get_settings.cache_clear()


@pytest.mark.parametrize("enabled", [True, False])
def test_runtime_switch_build_without_parameter_is_the_configured_value(enabled: bool) -> None:
    switch = runtime_switch.build(Settings(table_name=TABLE_NAME, knowledge_runtime_enabled=enabled))

    assert isinstance(switch, StaticRuntimeSwitch)
    assert switch.is_enabled() is enabled


def test_runtime_switch_build_with_parameter_reads_ssm() -> None:
    settings = Settings(table_name=TABLE_NAME, runtime_switch_parameter="/knowledge/test/runtime-enabled")

    assert isinstance(runtime_switch.build(settings), ParameterRuntimeSwitch)


def test_seed_tiktoken_writes_vocabularies_tiktoken_accepts_offline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    written = seed_tiktoken(tmp_path)
    again = seed_tiktoken(tmp_path)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))

    encoding = tiktoken.Encoding(**cl100k_base())

    assert written == again
    assert len(written) == 2
    assert encoding.decode(encoding.encode("knowledge for agents")) == "knowledge for agents"
