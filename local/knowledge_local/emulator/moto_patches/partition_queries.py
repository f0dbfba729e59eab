"""DynamoDB ``Query`` for moto, reading the partition asked for instead of the whole table.

moto's ``Table.query`` starts from ``all_items()``, every item of the table sorted by key (with
Python-level comparisons), and keeps those of the partition asked for: each query costs
O(n log n) in the table's size, so reading a revision's pages, or listing a base, slows down with
every document stored (a listing on a table of 30,000 items took about a second, holding every
other DynamoDB request up). ``query`` here hands moto's own implementation only the items that can
match as the table's items, in the same order: for a query on the table's key, its partition; for
one on a secondary index, the items whose index partition key (every hash key attribute) equals
the one asked for, found with one pass and no sorting of the rest. Everything else (key
conditions, filters, limits, paging, ordering, errors) stays moto's.

``install()`` puts it in place of moto's ``Table.query`` (once, for the process). Callers serialize
DynamoDB requests (``aws_server``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from moto.dynamodb.models.dynamo_type import DynamoType, Item
from moto.dynamodb.models.table import Table

MOTO_QUERY: Callable[..., tuple[list[Item], int, dict[str, Any] | None]] = Table.query
_install_lock = threading.Lock()


def partition(table: Table, hash_key: DynamoType) -> list[Item]:
    """The items of ``table`` whose partition key is ``hash_key``."""
    if hash_key not in table.items:
        return []
    stored: Any = table.items[hash_key]  # an Item, or {range: Item} with a sort key
    return list(stored.values()) if table.has_range_key else [stored]


def index_partition(table: Table, conditions: list[tuple[str, DynamoType]]) -> list[Item]:
    """The items of ``table`` whose attributes equal every ``(name, value)`` of ``conditions`` (an
    index's hash key), in ``all_items()``'s order (by the table's key)."""
    stored: Any = table.items
    items: list[Item] = [
        item
        for value in stored.values()
        for item in (value.values() if table.has_range_key else [value])
        if all(_equals(item.attrs.get(name), expected) for name, expected in conditions)
    ]
    return sorted(
        items, key=lambda item: (item.hash_key, item.range_key) if item.range_key else item.hash_key
    )


def _equals(value: DynamoType | None, expected: DynamoType) -> bool:
    """moto's own test of an index hash key: present, not empty, equal."""
    return bool(value) and value == expected


def query(table: Table, hash_key: DynamoType | None, *args: Any, **kwargs: Any) -> Any:
    """moto's ``Table.query``, over only the items of the partition asked for (module docs)."""
    index_name = kwargs.get("index_name", args[6] if len(args) > 6 else None)
    conditions: list[tuple[str, DynamoType]] = kwargs.get("hash_key_conditions") or []
    if index_name and conditions:
        items = index_partition(table, conditions)
    elif not index_name and hash_key is not None:
        items = partition(table, hash_key)
    else:
        return MOTO_QUERY(table, hash_key, *args, **kwargs)
    vars(table)["all_items"] = lambda: items
    try:
        return MOTO_QUERY(table, hash_key, *args, **kwargs)
    finally:
        del vars(table)["all_items"]


def install() -> None:
    """Use ``query`` for every moto DynamoDB table of this process; idempotent."""
    with _install_lock:
        Table.query = query  # type: ignore[method-assign, assignment]
