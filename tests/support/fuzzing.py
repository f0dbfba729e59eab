"""Budgets of the property and fuzz tests: a fast one for ``make test`` and a long one for
``make fuzz``, which sets ``KNOWLEDGE_FUZZ=long``."""

from __future__ import annotations

import os


def is_long() -> bool:
    """True under ``make fuzz``."""
    return os.environ.get("KNOWLEDGE_FUZZ", "").strip().lower() == "long"


def budget(fast: int, long: int) -> int:
    """``long`` under ``make fuzz``, else ``fast`` (examples or cases per test)."""
    return long if is_long() else fast
