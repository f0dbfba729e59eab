"""Strings the service accepts: valid Unicode text, so every one of them encodes as UTF-8.

JSON may escape a lone UTF-16 surrogate (``"\\ud800"``); Python's ``json`` decodes it into a ``str``
that cannot be encoded as UTF-8, so hashing, DynamoDB and the search index would fail on it later.
Every string field of every request model (REST bodies and queries, tool arguments, queue
messages) uses ``Text`` or ``StrictText``, which refuse such strings with a pydantic validation
error, answered as 400 ``validation_error`` at the boundary.
"""

from __future__ import annotations

import unicodedata
from typing import Annotated

from pydantic import AfterValidator, StrictStr

UNPAIRED_SURROGATE_PROBLEM = "must be valid Unicode text (it contains an unpaired surrogate)"


def require_unicode(value: str) -> str:
    """``value`` unchanged when it encodes as UTF-8; ``ValueError`` when it holds a lone surrogate
    (U+D800 to U+DFFF)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(UNPAIRED_SURROGATE_PROBLEM) from None
    return value


Text = Annotated[str, AfterValidator(require_unicode)]
"""A ``str`` that encodes as UTF-8 (for models that are strict as a whole)."""

StrictText = Annotated[StrictStr, AfterValidator(require_unicode)]
"""A strict ``str`` (no coercion from other JSON types) that encodes as UTF-8."""


def is_blank(value: str) -> bool:
    """``True`` when ``value`` holds nothing but whitespace, control characters (Unicode category
    Cc: NUL, escapes) and format characters (Cf: BOM, zero-width space and joiners, bidi marks):
    text with nothing in it a reader or the analyzer could match."""
    return all(character.isspace() or unicodedata.category(character) in ("Cc", "Cf") for character in value)
