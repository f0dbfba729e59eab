"""The composition root picks each adapter from the settings, and ``knowledge.vocab`` seeds the
offline tokenizer vocabularies that the chunker loads."""

from __future__ import annotations

from pathlib import Path

import pytest
import tiktoken
from tiktoken_ext.openai_public import cl100k_base

from knowledge.adapters.opensearch_index import OpenSearchIndex
from knowledge.adapters.runtime_switch import ParameterRuntimeSwitch, StaticRuntimeSwitch
from knowledge.bootstrap import build_embedder, build_index, build_runtime_switch
from knowledge.settings import Settings
from knowledge.vocab import seed_tiktoken
from tests.conftest import TABLE_NAME


def test_build_embedder_bedrock_has_the_configured_model_and_dimension() -> None:
    settings = Settings(
        table_name=TABLE_NAME,
        embedder="bedrock",
        bedrock_model_id="amazon.titan-embed-text-v2:0",
        embedding_dimension=512,
    )

    embedder = build_embedder(settings)

    assert (embedder.model_id, embedder.dimension) == ("amazon.titan-embed-text-v2:0", 512)


def test_build_embedder_with_a_cache_path_creates_the_sqlite_cache_there(tmp_path: Path) -> None:
    path = tmp_path / "cache" / "embeddings.sqlite3"

    build_embedder(Settings(table_name=TABLE_NAME, embedding_cache_path=path))

    assert path.is_file()


def test_build_index_opensearch_names_the_configured_index() -> None:
    settings = Settings(
        table_name=TABLE_NAME,
        search_backend="opensearch",
        opensearch_url="http://127.0.0.1:9",
        opensearch_index="knowledge-chunks-test",
    )

    index = build_index(settings)

    assert isinstance(index, OpenSearchIndex)
    assert index.index_name == "knowledge-chunks-test"


@pytest.mark.parametrize("enabled", [True, False])
def test_build_runtime_switch_without_parameter_is_the_configured_value(enabled: bool) -> None:
    switch = build_runtime_switch(Settings(table_name=TABLE_NAME, knowledge_runtime_enabled=enabled))

    assert isinstance(switch, StaticRuntimeSwitch)
    assert switch.is_enabled() is enabled


def test_build_runtime_switch_with_parameter_reads_ssm() -> None:
    settings = Settings(table_name=TABLE_NAME, runtime_switch_parameter="/knowledge/test/runtime-enabled")

    assert isinstance(build_runtime_switch(settings), ParameterRuntimeSwitch)


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
