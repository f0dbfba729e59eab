"""``SafeSource``: the source a write accepts, with a uri safe to render as a link."""

from __future__ import annotations

import pytest
from pydantic import TypeAdapter, ValidationError

from knowledge.contract.writes import CreateItemRequest
from knowledge.domain.models import Source
from knowledge.domain.sources import URI_PROBLEM, SafeSource

SOURCES: TypeAdapter[Source] = TypeAdapter(SafeSource)


@pytest.mark.parametrize(
    "uri",
    [
        "https://docs.example.com/http2",
        "HTTP://example.com:8080/a?b=c#d",
        "guides/http2.md",
        "/docs/http2",
        "#streams",
        "guides/HTTP%202.md",
        "s3://docs/kafka/lag.md",
    ],
)
def test_safe_source_safe_uri_is_kept_as_a_plain_source(uri: str) -> None:
    assert SOURCES.validate_python({"uri": uri, "title": "t"}) == Source(uri=uri, title="t")


@pytest.mark.parametrize(
    "uri",
    [
        "javascript:alert(1)",
        "JavaScript:alert(1)",
        "java\tscript:alert(1)",
        " javascript:alert(1)",
        "data:text/html,<script>alert(1)</script>",
        "vbscript:msgbox",
        "file:///home/curator/docs/http2.md",
        "//evil.example.com/x",
        "https:///no-host",
        "mailto:someone@example.com",
        "s3:///no-bucket",
        "",
    ],
)
def test_safe_source_unsafe_uri_is_refused_with_a_fixed_problem(uri: str) -> None:
    with pytest.raises(ValidationError) as raised:
        SOURCES.validate_python({"uri": uri})

    [problem] = raised.value.errors()
    assert problem["msg"] == URI_PROBLEM


def test_create_item_request_refuses_a_javascript_source() -> None:
    with pytest.raises(ValidationError) as raised:
        CreateItemRequest.model_validate(
            {"title": "t", "content": "c", "source": {"uri": "javascript:alert(1)", "title": "x"}}
        )

    assert raised.value.errors()[0]["loc"] == ("source",)
