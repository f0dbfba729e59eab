"""The identifier validator (``knowledge.domain.identifiers``): which characters it refuses, how it
names them, and that every identifier of every boundary model uses it."""

from __future__ import annotations

import unicodedata
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from knowledge.contract.ingest_messages import INGEST_MESSAGE, is_tenant_id
from knowledge.contract.memory import (
    ForgetMemoryArguments,
    PinMemoryArguments,
    RecallContextArguments,
    RememberArguments,
    SearchMemoryArguments,
    UnpinMemoryArguments,
)
from knowledge.contract.writes import (
    CreateItemRequest,
    CreateKnowledgeBaseRequest,
    CreateTokenRequest,
    PublishRequest,
)
from knowledge.domain.identifiers import (
    BIDI,
    CONTROL,
    INVISIBLE,
    character_class,
    identifier_problem,
    require_identifier,
)
from tests.support.fuzzing import budget

KB = "kb_01J9Z3K4QW5E6R7T8Y9V0A1B2C"
REFUSED = {
    CONTROL: list("\x00\x01\x1b\x1f\x7f\x80\x85\x9f\u2028\u2029"),
    BIDI: list("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"),
    INVISIBLE: list(
        "\u00ad\u200b\u200c\u200d\u2060\u2064\ufeff\u180e\u034f\u115f\u3164\ufe00\ufe0f\uffa0"
        "\U0001d173\U000e0001\U000e0041\U000e0100\u2800\ufdd0\ufdef\ufffe\uffff\U0001fffe\U0010ffff"
    ),
}
ACCEPTED = [
    "a",
    "Z",
    "0",
    " ",
    "-",
    "_",
    ".",
    "/",
    "#",
    "é",
    "ß",
    "ı",
    "チ",
    "中",
    "ع",
    "א",
    "👩",
    "🏽",
    "\u00a0",
]


@pytest.mark.parametrize(
    ("character", "kind"),
    [(character, kind) for kind, characters in REFUSED.items() for character in characters],
)
def test_character_class_names_each_refused_character(character: str, kind: str) -> None:
    assert character_class(character) == kind


@pytest.mark.parametrize("character", ACCEPTED)
def test_character_class_accepts_visible_characters(character: str) -> None:
    assert character_class(character) is None


def test_identifier_problem_names_the_first_refused_code_point_and_its_position() -> None:
    assert (
        identifier_problem("ab\u202ec\x00")
        == "must not contain a bidirectional control (U+202E at character 3)"
    )
    assert (
        identifier_problem("\U000e0041x")
        == "must not contain an invisible or format character (U+E0041 at character 1)"
    )
    assert identifier_problem("alice") is None


def test_require_identifier_refuses_an_unpaired_surrogate_first() -> None:
    with pytest.raises(ValueError, match="unpaired surrogate"):
        require_identifier("a\ud800\u200b")


def _refused(character: str) -> bool:
    return (
        unicodedata.category(character) in {"Cc", "Cf", "Zl", "Zp"}
        or character in "\u034f\u115f\u1160\u17b4\u17b5\u180b\u180c\u180d\u180f\u3164\uffa0"
        or 0xFE00 <= ord(character) <= 0xFE0F
        or 0xFFF0 <= ord(character) <= 0xFFF8
        or 0xE0000 <= ord(character) <= 0xE0FFF
        or character == "\u2800"
        or 0xFDD0 <= ord(character) <= 0xFDEF
        or ord(character) % 0x10000 in {0xFFFE, 0xFFFF}
    )


@settings(max_examples=budget(200, 5_000), deadline=None)
@given(st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=40))
def test_require_identifier_refuses_exactly_the_strings_holding_a_refused_character(value: str) -> None:
    holds = [position for position, character in enumerate(value, start=1) if _refused(character)]

    if holds:
        with pytest.raises(ValueError, match=rf"at character {holds[0]}\)$"):
            require_identifier(value)
    else:
        assert require_identifier(value) == value


@settings(max_examples=budget(200, 5_000), deadline=None)
@given(
    st.text(alphabet=st.characters(categories=["L", "N", "P", "S"]), max_size=20),
    st.sampled_from([character for characters in REFUSED.values() for character in characters]),
    st.data(),
)
def test_one_refused_character_anywhere_in_a_visible_identifier_is_refused(
    visible: str, character: str, data: st.DataObject
) -> None:
    position = data.draw(st.integers(min_value=0, max_value=len(visible)))
    value = visible[:position] + character + visible[position:]

    assert require_identifier(visible) == visible
    with pytest.raises(ValueError, match=rf"U\+{ord(character):04X} at character {position + 1}\)"):
        require_identifier(value)


BAD = "alice\u202e"
MODELS: list[tuple[type[BaseModel], dict[str, Any], tuple[Any, ...]]] = [
    (CreateTokenRequest, {"subject_id": BAD, "scopes": ["knowledge:read"]}, ("subject_id",)),
    (
        CreateTokenRequest,
        {"subject_id": "a", "team_ids": [BAD], "scopes": ["knowledge:read"]},
        ("team_ids", 0),
    ),
    (CreateTokenRequest, {"tenant_id": BAD, "subject_id": "a", "scopes": ["knowledge:read"]}, ("tenant_id",)),
    (CreateKnowledgeBaseRequest, {"name": "n", "scope": "team", "team_id": BAD}, ("team_id",)),
    (CreateItemRequest, {"title": "t", "content": "c", "external_id": BAD}, ("external_id",)),
    (PublishRequest, {"revision_id": BAD, "expected_version": 1}, ("revision_id",)),
    (RememberArguments, {"content": "c", "agent_id": BAD}, ("agent_id",)),
    (RememberArguments, {"content": "c", "team_id": BAD, "scope": "team"}, ("team_id",)),
    (RememberArguments, {"content": "c", "semantic_key": BAD}, ("semantic_key",)),
    (RememberArguments, {"content": "c", "memory_id": BAD}, ("memory_id",)),
    (RememberArguments, {"content": "c", "supersedes": [BAD]}, ("supersedes", 0)),
    (SearchMemoryArguments, {"query": "q", "team_id": BAD}, ("team_id",)),
    (SearchMemoryArguments, {"query": "q", "agent_id": BAD}, ("agent_id",)),
    (RecallContextArguments, {"team_id": BAD}, ("team_id",)),
    (RecallContextArguments, {"agent_id": BAD}, ("agent_id",)),
    (PinMemoryArguments, {"note_id": BAD}, ("note_id",)),
    (UnpinMemoryArguments, {"note_id": BAD}, ("note_id",)),
    (ForgetMemoryArguments, {"note_id": BAD}, ("note_id",)),
]


@pytest.mark.parametrize(
    ("model", "data", "location"), MODELS, ids=[f"{m.__name__}.{loc[0]}" for m, _, loc in MODELS]
)
def test_every_identifier_field_of_the_boundary_models_refuses_a_bidi_control(
    model: type[BaseModel], data: dict[str, Any], location: tuple[Any, ...]
) -> None:
    with pytest.raises(ValidationError) as raised:
        model.model_validate(data)

    assert [error["loc"] for error in raised.value.errors()] == [location]


@pytest.mark.parametrize(
    ("message", "location"),
    [
        ({"op": "archive", "knowledge_base_id": KB, "external_id": "a\u200b"}, ("archive", "external_id")),
        (
            {"op": "archive", "knowledge_base_id": KB, "external_id": "a", "subject_id": "a\x1b"},
            ("archive", "subject_id"),
        ),
        (
            {"op": "archive", "knowledge_base_id": KB, "external_id": "a", "team_ids": ["\u2066"]},
            ("archive", "team_ids", 0),
        ),
        (
            {"op": "archive", "knowledge_base_id": KB, "external_id": "a", "tenant_id": "a\x00"},
            ("archive", "tenant_id"),
        ),
        ({"op": "forget", "note_id": "nt\u200d"}, ("forget", "note_id")),
    ],
)
def test_queue_messages_refuse_identifiers_with_refused_characters(
    message: dict[str, Any], location: tuple[Any, ...]
) -> None:
    with pytest.raises(ValidationError) as raised:
        INGEST_MESSAGE.validate_python(message)

    assert [error["loc"] for error in raised.value.errors()] == [location]


@pytest.mark.parametrize(
    ("value", "valid"), [("acme", True), ("ac\x00me", False), ("acme\u200b", False), ("a#b", False)]
)
def test_is_tenant_id_refuses_control_and_invisible_characters(value: str, valid: bool) -> None:
    assert is_tenant_id(value) is valid


def test_queue_forget_message_with_dry_run_is_refused_and_without_it_is_a_real_forget() -> None:
    with pytest.raises(ValidationError) as raised:
        INGEST_MESSAGE.validate_python({"op": "forget", "note_id": "nt_1", "dry_run": True})

    assert [error["loc"] for error in raised.value.errors()] == [("forget", "dry_run")]
    message: Any = INGEST_MESSAGE.validate_python({"op": "forget", "note_id": "nt_1", "mode": "hard"})
    assert message.arguments().dry_run is False
