"""Listings of the in-process stores: lookups of several ids and ``next_token`` pages, as the
DynamoDB store pages (a token of another listing or tenant is ``RequestValidationError``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

from knowledge.adapters import next_tokens
from knowledge.domain.models import Page

T = TypeVar("T")


def found(records: dict[tuple[str, str], T], tenant_id: str, record_ids: Iterable[str]) -> dict[str, T]:
    return {
        record_id: records[tenant_id, record_id]
        for record_id in dict.fromkeys(record_ids)
        if (tenant_id, record_id) in records
    }


def page(
    listing: str,
    entries: list[T],
    key: Callable[[T], str],
    *,
    limit: int,
    next_token: str | None,
    newest_first: bool = False,
) -> Page[T]:
    """Up to ``limit`` of ``entries`` in id order (descending when ``newest_first``) after the
    token's last id; the next token names the last entry when more follow."""
    if limit < 1:
        raise ValueError("limit must be at least 1")
    ordered = sorted(entries, key=key, reverse=newest_first)
    if next_token is not None:
        after = last_id(listing, next_token)
        ordered = [entry for entry in ordered if (key(entry) < after if newest_first else key(entry) > after)]
    page = ordered[:limit]
    token = next_tokens.encode({"l": listing, "k": key(page[-1])}) if len(ordered) > limit else None
    return Page[T](entries=page, next_token=token)


def last_id(listing: str, token: str) -> str:
    payload = next_tokens.decode(token)
    if payload.get("l") != listing:
        raise next_tokens.foreign()
    last = payload.get("k")
    if not isinstance(last, str):
        raise next_tokens.malformed()
    return last
