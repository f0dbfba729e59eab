"""Settings: no AWS resource has a default, and each adapter asks for its own when it is built."""

from __future__ import annotations

import re

import pytest
from pydantic import ValidationError

from knowledge.bootstrap import embedder_for, index_for
from knowledge.settings import Settings, get_settings
from tests.conftest import TABLE_NAME
from tests.support.template import ROOT

PACKAGE = ROOT / "layers" / "knowledge" / "knowledge"


def test_settings_without_table_name_raise_validation_error() -> None:
    with pytest.raises(ValidationError, match="table_name"):
        get_settings()


def test_settings_without_region_raise_validation_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_REGION")

    with pytest.raises(ValidationError, match="AWS_REGION"):
        Settings(table_name=TABLE_NAME)


def test_settings_read_table_and_region_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TABLE_NAME", "knowledge-prod")
    monkeypatch.setenv("AWS_REGION", "eu-west-1")

    settings = get_settings()

    assert (settings.table_name, settings.aws_region) == ("knowledge-prod", "eu-west-1")


@pytest.mark.parametrize(
    "configured",
    [{}, {"opensearch_url": "https://search.example.com"}, {"opensearch_index": "knowledge-chunks"}],
    ids=["neither", "no-index", "no-url"],
)
def test_index_for_opensearch_without_url_or_index_raises_value_error(configured: dict[str, str]) -> None:
    settings = Settings(table_name=TABLE_NAME, search_backend="opensearch", **configured)

    with pytest.raises(ValueError, match="OPENSEARCH_URL and OPENSEARCH_INDEX"):
        index_for(settings)


@pytest.mark.parametrize(
    "configured",
    [{}, {"bedrock_model_id": "amazon.titan-embed-text-v2:0"}, {"embedding_dimension": 1024}],
    ids=["neither", "no-dimension", "no-model"],
)
def test_embedder_for_bedrock_without_model_or_dimension_raises_value_error(
    configured: dict[str, object],
) -> None:
    settings = Settings(table_name=TABLE_NAME, embedder="bedrock", **configured)

    with pytest.raises(ValueError, match="BEDROCK_MODEL_ID and EMBEDDING_DIMENSION"):
        embedder_for(settings)


def test_every_setting_is_read_by_the_package() -> None:
    source = "\n".join(
        path.read_text(encoding="utf-8") for path in PACKAGE.rglob("*.py") if path.name != "settings.py"
    )

    unread = [name for name in Settings.model_fields if not re.search(rf"\bsettings\.{name}\b", source)]

    assert unread == []
