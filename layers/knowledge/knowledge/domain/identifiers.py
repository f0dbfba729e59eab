"""Identifiers the service accepts: visible text, so that what a person reads is what is stored.

An identifier (``tenant_id``, ``subject_id``, ``team_id``/``team_ids``, ``agent_id``,
``external_id``, ``semantic_key``, and every id a caller names: ``knowledge_base_id``,
``note_id``...) is compared byte for byte, shown in listings and logs and carried in tokens. A
character that changes how text displays without being seen would let two different identifiers
look the same (``alice\\u200b`` shows as ``alice``) or make a listing lie (a right-to-left override
reverses what follows it), and a control character can drive a terminal (ESC) or cut a string
short (NUL). Every identifier field of every request model (REST bodies and queries, tool
arguments, queue messages, tokens) is therefore an ``Identifier`` or ``StrictIdentifier``, which
refuse, with a pydantic validation error (400 ``validation_error`` at the boundary, naming the
field and the character's code point, never echoing the value):

- control characters: C0 (U+0000 to U+001F, NUL and ESC included), DEL (U+007F), C1 (U+0080 to
  U+009F), and the line and paragraph separators U+2028 and U+2029;
- bidirectional controls: the embeddings and overrides U+202A to U+202E, the isolates U+2066 to
  U+2069, the marks U+200E, U+200F and U+061C;
- invisible characters: every other format character (Unicode category Cf: U+200B to U+200D,
  U+2060, U+FEFF, U+00AD, the tag characters...), the other default-ignorable code points
  (Unicode's ``Default_Ignorable_Code_Point``: variation selectors, Hangul fillers...), the
  Braille blank U+2800 (drawn as a space) and the noncharacters (U+FDD0 to U+FDEF and the last two
  code points of every plane, U+FFFE, U+FFFF...).

Unpaired surrogates are refused first (``knowledge.domain.text``). Ordinary spaces are the field's
own business (a tenant id refuses them, a subject id may hold them).
"""

from __future__ import annotations

import unicodedata
from typing import Annotated

from pydantic import AfterValidator, StrictStr

from knowledge.domain.text import require_unicode

CONTROL = "a control character"
BIDI = "a bidirectional control"
INVISIBLE = "an invisible or format character"

_BIDI_CONTROLS = frozenset(
    [0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)],
)
_LINE_SEPARATORS = frozenset({0x2028, 0x2029})
_DEFAULT_IGNORABLE_RANGES = (
    (0x034F, 0x034F),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFF8),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
)
"""Unicode's ``Default_Ignorable_Code_Point`` ranges (DerivedCoreProperties.txt) outside category
Cf, which the category check already covers."""
_BRAILLE_BLANK = 0x2800


def character_class(character: str) -> str | None:
    """What makes ``character`` (one code point) unfit for an identifier: ``CONTROL``, ``BIDI`` or
    ``INVISIBLE``; ``None`` when it is fine."""
    point = ord(character)
    category = unicodedata.category(character)
    if category == "Cc" or point in _LINE_SEPARATORS:
        return CONTROL
    if point in _BIDI_CONTROLS:
        return BIDI
    if category == "Cf" or any(low <= point <= high for low, high in _DEFAULT_IGNORABLE_RANGES):
        return INVISIBLE
    if point == _BRAILLE_BLANK or 0xFDD0 <= point <= 0xFDEF or point & 0xFFFE == 0xFFFE:
        return INVISIBLE
    return None


def identifier_problem(value: str) -> str | None:
    """The first problem of ``value`` as an identifier, worded for ``details.fields[].problem``
    ("must not contain a bidirectional control (U+202E at character 3)", characters counted from
    1 in code points); ``None`` when it has none."""
    for position, character in enumerate(value, start=1):
        kind = character_class(character)
        if kind is not None:
            return f"must not contain {kind} (U+{ord(character):04X} at character {position})"
    return None


def require_identifier(value: str) -> str:
    """``value`` unchanged when it is valid Unicode without control, bidirectional or invisible
    characters; ``ValueError`` naming the first such character otherwise."""
    require_unicode(value)
    problem = identifier_problem(value)
    if problem is not None:
        raise ValueError(problem)
    return value


Identifier = Annotated[str, AfterValidator(require_identifier)]
"""A ``str`` identifier of visible characters (for models that are strict as a whole)."""

StrictIdentifier = Annotated[StrictStr, AfterValidator(require_identifier)]
"""A strict ``str`` identifier (no coercion from other JSON types) of visible characters."""

VisibleText = Identifier
"""Free text shown to people on one line (a note's ``path``, a base's ``name``): spaces allowed,
control, bidirectional and invisible characters refused as in an identifier."""

StrictVisibleText = StrictIdentifier
"""``VisibleText``, strict (no coercion from other JSON types)."""
