"""Opaque ``next_token`` values of paginated listings, bound to the listing that issued them.

A token (``knowledge.adapters.next_tokens``) holds ``{"l": listing, "k": {attribute: string}}``, where
``k`` is the DynamoDB key of the last entry returned. Decoding checks that the token names the same
listing (kind and partition, which includes the tenant), carries exactly the listing's key
attributes and stays in the listing's partition, so a token from another listing or tenant, or a
hand-made one, is rejected with ``RequestValidationError`` instead of reaching DynamoDB.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from knowledge.adapters import next_tokens

TABLE_KEY = ("PK", "SK")
INDEX_KEY = ("PK", "SK", "GSI1PK", "GSI1SK")


@dataclass(frozen=True)
class Listing:
    """One paginated query.

    ``kind`` names the listing (``items``, ``bases``, ``revisions``); ``partition_attribute`` and
    ``partition`` its partition key; ``key_names`` the attributes of ``LastEvaluatedKey`` for it
    (the table key, plus the index key when it queries GSI1).
    """

    kind: str
    partition_attribute: str
    partition: str
    key_names: tuple[str, ...]

    @property
    def _binding(self) -> str:
        return f"{self.kind}:{self.partition}"

    def start_key(self, item: Mapping[str, Any]) -> dict[str, Any]:
        """The key attributes of ``item`` (a low-level DynamoDB item), usable as ``ExclusiveStartKey``."""
        return {name: item[name] for name in self.key_names}

    def encode(self, start_key: Mapping[str, Any]) -> str:
        """``start_key`` (low-level attribute values, all strings) as an opaque token."""
        return next_tokens.encode(
            {"l": self._binding, "k": {name: start_key[name]["S"] for name in self.key_names}}
        )

    def decode(self, token: str) -> dict[str, Any]:
        """The ``ExclusiveStartKey`` a token stands for.

        Raises ``RequestValidationError`` when the token is malformed or belongs to another listing.
        """
        payload = next_tokens.decode(token)
        if payload.get("l") != self._binding:
            raise next_tokens.foreign()
        start = payload.get("k")
        if (
            not isinstance(start, dict)
            or set(start) != set(self.key_names)
            or not all(isinstance(value, str) for value in start.values())
            or start[self.partition_attribute] != self.partition
        ):
            raise next_tokens.malformed()
        return {name: {"S": value} for name, value in start.items()}
