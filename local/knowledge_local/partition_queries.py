"""DynamoDB ``Query`` on a table's own key for moto, reading one partition instead of the table.

moto's ``Table.query`` starts from ``all_items()``, every item of the table sorted by key, and keeps
those of the partition asked for: each query costs O(n log n) in the table's size, so reading a
revision's pages slows down with every document stored. A query on the table's key (no
``IndexName``) can only return items of its partition, so ``query`` here hands moto's own
implementation that partition alone as the table's items; everything else (key conditions,
filters, limits, paging, ordering, errors) stays moto's. Queries on a secondary index are left as
they are.

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


def query(table: Table, hash_key: DynamoType | None, *args: Any, **kwargs: Any) -> Any:
    """moto's ``Table.query``, over ``hash_key``'s partition when no index is named."""
    index_name = kwargs.get("index_name", args[6] if len(args) > 6 else None)
    if index_name or hash_key is None:
        return MOTO_QUERY(table, hash_key, *args, **kwargs)
    items = partition(table, hash_key)
    vars(table)["all_items"] = lambda: items
    try:
        return MOTO_QUERY(table, hash_key, *args, **kwargs)
    finally:
        del vars(table)["all_items"]


def install() -> None:
    """Use ``query`` for every moto DynamoDB table of this process; idempotent."""
    with _install_lock:
        Table.query = query  # type: ignore[method-assign, assignment]
