"""The arguments of ``knowledge`` shared by its command groups: the argparse ``type`` callables
(finite numbers, seconds, item, revision and token ids, page sizes, source URLs, base references; a
value they refuse is argparse's usage error, exit status 2, and an empty value or a placeholder such
as ``<knowledge_item_id>`` is named as such), ``UsageError`` for what only a command can check
(also exit status 2), ``parse_duration``, ``comma_list`` and ``program_name``."""

from __future__ import annotations

import argparse
import math
import re
import shlex
import sys
from datetime import datetime
from pathlib import Path

from knowledge.domain.access.bearer_tokens import TOKEN_PREFIX, is_token_id
from knowledge.domain.ids import ITEM_PREFIX, REVISION_PREFIX, is_well_formed
from knowledge.domain.sources import is_safe_uri

_DURATION = re.compile(r"^(\d+)([smhd]?)$")
_SECONDS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86_400}
_PLACEHOLDER = re.compile(r"^\s*<[^<>]*>\s*$")


class UsageError(Exception):
    """A bad argument the parser could not catch (exit status 2)."""


def program_name() -> str:
    """The command as the user ran it (``.venv/bin/knowledge`` when typed so, shell-quoted), for
    commands printed to copy; ``knowledge`` when it was not run as that script."""
    typed = sys.argv[0] if sys.argv else ""
    return shlex.quote(typed) if Path(typed).name == "knowledge" else "knowledge"


def comma_list(value: str | None) -> list[str]:
    return [entry.strip() for entry in (value or "").split(",") if entry.strip()]


def finite_number(value: str) -> float:
    """``value`` as a finite float (argparse ``type``): NaN and infinities are usage errors."""
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {value!r}") from None
    if not math.isfinite(number):
        raise argparse.ArgumentTypeError(f"must be a finite number, not {value!r}")
    return number


def moment(value: str) -> str:
    """An ``--as-of`` value: ISO-8601 date-time text with a zone (``2026-05-01T12:00:00Z``), passed
    on as written; the service says whether it is in the future."""
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an ISO-8601 date-time: {value!r}") from None
    if parsed.tzinfo is None:
        raise argparse.ArgumentTypeError(f"needs a time zone (Z or an offset such as +02:00): {value!r}")
    return value


def positive_seconds(value: str) -> float:
    """``value`` as a finite number of seconds above zero (argparse ``type``)."""
    seconds = finite_number(value)
    if seconds <= 0:
        raise argparse.ArgumentTypeError(f"must be more than 0 seconds, not {value!r}")
    return seconds


def item_id(value: str) -> str:
    """``value`` as a knowledge item id (argparse ``type``): ``ki_`` and 26 base32 characters."""
    return _identifier(value, ITEM_PREFIX, "knowledge item id", "the item column of `knowledge search`")


def revision_id(value: str) -> str:
    """``value`` as a knowledge revision id (argparse ``type``): ``kr_`` and 26 base32 characters."""
    return _identifier(value, REVISION_PREFIX, "knowledge revision id", "`knowledge search --json`")


def token_id(value: str) -> str:
    """``value`` as a token id (argparse ``type``): 64 lowercase hex characters, never a token."""
    if is_token_id(value):
        return value
    if value.startswith(TOKEN_PREFIX):
        raise argparse.ArgumentTypeError(
            "that is a token, not its id: give the token_id (64 hex characters) of `knowledge token list`"
        )
    problem = f"{value!r} is a placeholder" if _PLACEHOLDER.match(value) else f"{value!r} is not a token id"
    raise argparse.ArgumentTypeError(
        f"{problem}: give a token_id, 64 hex characters, as in `knowledge token list`"
    )


def page_size(value: str) -> int:
    try:
        size = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {value!r}") from None
    if not 1 <= size <= 100:
        raise argparse.ArgumentTypeError(f"must be 1 to 100, not {size}")
    return size


def source_base_url(value: str) -> str:
    """``value`` as the base URL of ``ingest``'s source links (argparse ``type``): an http(s) URL
    with a host, as the write API accepts it (``knowledge.domain.sources``)."""
    if not (value.lower().startswith(("https://", "http://")) and is_safe_uri(value)):
        raise argparse.ArgumentTypeError(
            f"{value!r} is not an https:// or http:// URL with a host (such as https://docs.example.com/)"
        )
    return value


def base_reference(value: str) -> str:
    """``value`` as a base id or name (argparse ``type``): anything but empty or a placeholder."""
    if not value.strip():
        raise argparse.ArgumentTypeError("empty: give a knowledge base name or id (`knowledge bases`)")
    if _PLACEHOLDER.match(value):
        raise argparse.ArgumentTypeError(
            f"{value!r} is a placeholder: put a knowledge base name or id in its place (`knowledge bases`)"
        )
    return value


def _identifier(value: str, prefix: str, kind: str, source: str) -> str:
    if is_well_formed(value, prefix):
        return value
    if not value.strip():
        problem = "empty (an unset shell variable?)"
    elif _PLACEHOLDER.match(value):
        problem = f"{value!r} is a placeholder"
    else:
        problem = f"{value!r} is not a {kind}"
    raise argparse.ArgumentTypeError(
        f"{problem}: give a {kind}, {prefix} followed by 26 base32 characters, as in {source}"
    )


def parse_duration(value: str) -> int:
    """Seconds in ``value``: ``3600``, ``90m``, ``12h`` or ``30d``."""
    matched = _DURATION.match(value.strip().lower())
    if matched is None or int(matched.group(1)) == 0:
        raise UsageError(f"--expires-in must be a positive number of seconds, or end in m, h or d: {value!r}")
    return int(matched.group(1)) * _SECONDS[matched.group(2)]
