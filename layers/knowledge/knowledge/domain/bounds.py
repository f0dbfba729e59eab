"""Bounds of the integers the boundaries accept, where the field itself has no natural bound.

DynamoDB numbers hold 38 significant digits; a larger integer fails to serialize, which is a
server error rather than the caller's. Every integer of every boundary model (REST bodies, query
strings, MCP arguments, queue messages) is therefore bounded, and a value out of its bound answers
the surface's invalid-request code (``knowledge_invalid_request`` or ``memory_invalid_request``)
with ``details.fields`` naming the field and the bound. Fields with a natural bound (``limit``,
``max_results``, ``limit_chars``, ``ttl_seconds``, ``expires_in``) keep it; the ones below have none.
"""

from __future__ import annotations

INTEGER_MAX = 2**53 - 1
"""9,007,199,254,740,991: the largest integer every JSON client holds exactly (an IEEE-754 double's
53-bit mantissa), and well inside DynamoDB's 38 digits."""

VERSION_MIN, VERSION_MAX = 1, INTEGER_MAX
"""Bounds of every ``version`` and ``expected_version``: versions start at 1 and move by one per
write, so no real version comes near the maximum."""

OFFSET_MAX = INTEGER_MAX
"""Bound of a character ``offset``; an offset past the end of a revision is refused on its own."""
