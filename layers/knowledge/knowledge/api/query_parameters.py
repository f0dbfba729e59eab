"""Query-string parameters of the REST routes, parsed as strictly as JSON bodies.

A query string carries text only, and pydantic's lax integer parsing reads much of it as numbers
that JSON would refuse: ``1.0``, ``+5``, ``0005``, `` 5 ``, ``5_0`` (read as 50), full-width digits.
``CANONICAL_INTEGER`` accepts only the canonical decimal form of a non-negative integer: ASCII digits, no
sign, no leading zero (but ``0`` itself), no whitespace, underscore or decimal point; anything else
is 400 ``validation_error`` naming ``query.<name>``. Bounds are checked next (``Field(ge=, le=)``): a
canonical number out of its bound is the route's invalid-request code, as in a body. A parameter
given twice reaches the route as a comma-joined value (API Gateway's HTTP API), which is not
canonical either. ``CANONICAL_BOOLEAN`` likewise accepts ``true`` and ``false`` alone.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from aws_lambda_powertools.event_handler.openapi.params import Query
from pydantic import BeforeValidator

from knowledge.domain.text import Text

NOT_CANONICAL_PROBLEM = (
    "must be a whole number in plain decimal digits (no sign, leading zero, space, underscore "
    "or decimal point)"
)
NEXT_TOKEN_MAX_CHARS = 2_048

_CANONICAL = re.compile(r"0|[1-9][0-9]*")


def require_canonical_integer(value: Any) -> Any:
    """``value`` unchanged unless it is a string that is not a canonical decimal integer
    (``ValueError`` with ``NOT_CANONICAL_PROBLEM``); other types are left to the integer check."""
    if isinstance(value, str) and _CANONICAL.fullmatch(value) is None:
        raise ValueError(NOT_CANONICAL_PROBLEM)
    return value


CANONICAL_INTEGER = BeforeValidator(require_canonical_integer)
"""The canonical-form check of an integer query parameter, placed after its bounds so that the
published schema keeps them as ``minimum`` and ``maximum``:
``Annotated[int, Field(ge=1, le=100), CANONICAL_INTEGER, Query(description=...)]``."""

NOT_A_BOOLEAN_PROBLEM = "must be true or false"


def require_canonical_boolean(value: Any) -> Any:
    """``value`` unchanged unless it is a string other than ``true`` or ``false`` (``ValueError``
    with ``NOT_A_BOOLEAN_PROBLEM``): pydantic would read ``yes``, ``on``, ``1``, ``off`` or ``n``
    too, a guess no destructive flag should rest on."""
    if isinstance(value, str) and value not in ("true", "false"):
        raise ValueError(NOT_A_BOOLEAN_PROBLEM)
    return value


CANONICAL_BOOLEAN = BeforeValidator(require_canonical_boolean)
"""The check of a boolean query parameter: ``Annotated[bool, CANONICAL_BOOLEAN, Query(...)]``."""


NextToken = Annotated[
    Text | None,
    Query(
        min_length=1,
        max_length=NEXT_TOKEN_MAX_CHARS,
        description="The opaque `next_token` of the previous page.",
    ),
]
"""The ``next_token`` query parameter of a listing: opaque text, checked by the listing."""
