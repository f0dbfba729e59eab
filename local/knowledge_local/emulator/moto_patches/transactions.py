"""DynamoDB ``TransactWriteItems`` for moto, rolled back by journal instead of by table copy.

moto's ``DynamoDBBackend.transact_write_items`` deep-copies every table a transaction names before
applying it, so that a cancelled transaction can put the copies back: every item of the table and
its stream shard (every stream record ever written, with old and new images) are copied on every
transactional write. Time and garbage per write grow with the table, and a copy that replaces a
table after a rollback leaves every open stream iterator reading the abandoned shard.

``transact_write_items`` here applies the same operations with the same checks and errors as moto's
(``TooManyTransactionsException``, ``MultipleTransactionsException``, validation errors, and
``TransactionCanceledException`` with one cancellation reason per operation, the current item for
``ReturnValuesOnConditionCheckFailure: ALL_OLD``), but journals only what it touches: a copy of
each target item before its operation runs and the length of each stream shard. A cancelled
transaction restores exactly those items and truncates the shards to their lengths, so the tables
(and their secondary indexes, which moto derives from the items) are as before and no stream
consumer ever sees a rolled-back write. Cost per transaction: its own items, whatever the table
holds.

``install()`` puts it in place of moto's method on ``DynamoDBBackend`` (once, for the process);
``MOTO_TRANSACT_WRITE_ITEMS`` keeps moto's own, against which the tests compare it.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from moto.dynamodb.comparisons import get_filter_expression
from moto.dynamodb.exceptions import (
    ConditionalCheckFailed,
    MockValidationException,
    MultipleTransactionsException,
    TooManyTransactionsException,
    TransactionCanceledException,
    TransactWriteSingleOpException,
)
from moto.dynamodb.models import DynamoDBBackend
from moto.dynamodb.models.dynamo_type import DynamoType, Item
from moto.dynamodb.models.table import Table

MAX_TRANSACTION_ITEMS = 100
"""DynamoDB's limit of actions per transaction."""
_OPERATIONS = frozenset({"ConditionCheck", "Put", "Delete", "Update"})

TransactWrite = Callable[[DynamoDBBackend, list[dict[str, Any]]], None]
MOTO_TRANSACT_WRITE_ITEMS: TransactWrite = DynamoDBBackend.transact_write_items
_install_lock = threading.Lock()

_Reason = tuple[str, str, dict[str, Any] | None] | tuple[None, None, None]


@dataclass
class _Journal:
    """What a transaction changed: the items before their operation, the shards' lengths."""

    backend: DynamoDBBackend
    items: dict[tuple[str, DynamoType, DynamoType | None], tuple[Item | None, bool]] = field(
        default_factory=dict
    )
    shards: dict[str, int] = field(default_factory=dict)

    def remember(self, table_name: str, key: dict[str, Any], *, in_place: bool) -> None:
        """Keep the item at ``key`` (and the shard's length) as it is before it changes: a copy when
        the operation changes it ``in_place`` (moto's ``update_item`` mutates the stored item), the
        item itself otherwise (a put or a delete replaces or drops it, and leaves the object alone).
        A key that names no item of an existing table is left to the operation, which refuses it."""
        table = self.backend.tables.get(table_name)
        if table is None:
            return
        try:
            hash_key, range_key = self.backend.get_keys_value(table, key)
        except (MockValidationException, TypeError, KeyError):
            return
        if table.stream_shard is not None:
            self.shards.setdefault(table_name, len(table.stream_shard.items))
        entry = (table_name, hash_key, range_key)
        if entry not in self.items:
            partition_existed = hash_key in table.items
            before = table.get_item(hash_key, range_key)
            self.items[entry] = (copy.deepcopy(before) if in_place else before, partition_existed)

    def roll_back(self) -> None:
        """Put every remembered item back as it was and drop the stream records written since."""
        for (table_name, hash_key, range_key), (before, partition_existed) in reversed(self.items.items()):
            table = self.backend.tables.get(table_name)
            if table is not None:
                _restore(table, hash_key, range_key, before, partition_existed)
        for table_name, length in self.shards.items():
            table = self.backend.tables.get(table_name)
            if table is not None and table.stream_shard is not None:
                del table.stream_shard.items[length:]


def _restore(
    table: Table, hash_key: DynamoType, range_key: DynamoType | None, before: Item | None, existed: bool
) -> None:
    """Set the item at the key to ``before`` (``None``: absent) without a stream record."""
    items: Any = table.items  # moto: {hash: Item}, or {hash: {range: Item}} with a sort key
    if range_key is None:
        if before is None:
            items.pop(hash_key, None)
        else:
            items[hash_key] = before
        return
    partition = items[hash_key]
    if before is None:
        partition.pop(range_key, None)
        if not partition and not existed:
            del items[hash_key]
    else:
        partition[range_key] = before


def transact_write_items(backend: DynamoDBBackend, transact_items: list[dict[str, Any]]) -> None:
    """``TransactWriteItems`` on ``backend``: all of ``transact_items`` or none of them (see the
    module docs). Raises moto's exceptions, as moto's own implementation does."""
    if len(transact_items) > MAX_TRANSACTION_ITEMS:
        raise TooManyTransactionsException()
    journal = _Journal(backend)
    targets: set[tuple[str, str]] = set()
    reasons: list[_Reason] = []
    for action in transact_items:
        if len(action) > 1:
            journal.roll_back()
            raise TransactWriteSingleOpException
        try:
            reasons.append(_apply(backend, action, journal, targets))
        except (MultipleTransactionsException, MockValidationException):
            journal.roll_back()
            raise
    if any(code is not None for code, _, _ in reasons):
        journal.roll_back()
        raise TransactionCanceledException(reasons)


def _apply(
    backend: DynamoDBBackend, action: dict[str, Any], journal: _Journal, targets: set[tuple[str, str]]
) -> _Reason:
    """Run one action; its cancellation reason (``(None, None, None)``: it succeeded). Validation
    errors and a second action on one item propagate: they cancel the transaction outright."""
    current_item: dict[str, Any] | None = None
    try:
        kind, operation = next(iter(action.items()))
        if kind not in _OPERATIONS:
            raise ValueError("Unsupported transaction operation")
        table_name = operation["TableName"]
        key = _target_key(backend, kind, operation)
        target = (str(table_name), str(dict(sorted(key.items()))))
        if target in targets:
            raise MultipleTransactionsException()
        targets.add(target)
        journal.remember(table_name, key, in_place=kind == "Update")
        current = backend.get_item(table_name, key)
        condition = operation.get("ConditionExpression")
        names = operation.get("ExpressionAttributeNames")
        values = operation.get("ExpressionAttributeValues")
        if condition is not None and not get_filter_expression(condition, names, values).expr(current):
            if operation.get("ReturnValuesOnConditionCheckFailure") == "ALL_OLD" and current:
                current_item = current.to_json()["Attributes"]
            raise ConditionalCheckFailed(item=current_item)
        _write(backend, kind, table_name, key, operation)
        return None, None, None
    except (MultipleTransactionsException, MockValidationException):
        raise
    except ConditionalCheckFailed as error:
        return "ConditionalCheckFailed", str(error.message), current_item
    except Exception as error:  # moto reports any other failure as that action's reason
        return type(error).__name__, str(error), current_item


def _target_key(backend: DynamoDBBackend, kind: str, operation: dict[str, Any]) -> dict[str, Any]:
    if kind != "Put":
        key: dict[str, Any] = operation["Key"]
        return key
    attributes = operation["Item"]
    table = backend.get_table(operation["TableName"])
    key = {table.hash_key_attr: attributes[table.hash_key_attr]}
    if table.range_key_attr is not None:
        key[table.range_key_attr] = attributes[table.range_key_attr]
    return key


def _write(
    backend: DynamoDBBackend, kind: str, table_name: str, key: dict[str, Any], operation: dict[str, Any]
) -> None:
    """Apply one action whose condition ``_apply`` has just checked (requests are serialized, so the
    item cannot change in between): the condition is not handed to moto to be parsed again."""
    if kind == "Put":
        backend.put_item(table_name, operation["Item"])
    elif kind == "Delete":
        backend.delete_item(table_name, key)
    elif kind == "Update":
        backend.update_item(
            table_name,
            key,
            update_expression=operation["UpdateExpression"],
            expression_attribute_names=operation.get("ExpressionAttributeNames") or {},
            expression_attribute_values=operation.get("ExpressionAttributeValues") or {},
        )


def install() -> None:
    """Use ``transact_write_items`` for every moto DynamoDB backend of this process; idempotent."""
    with _install_lock:
        DynamoDBBackend.transact_write_items = transact_write_items  # type: ignore[method-assign, assignment]
