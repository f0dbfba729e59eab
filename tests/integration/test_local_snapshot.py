"""The saved table (``knowledge_local.emulator.snapshot``): every item of a table comes back exactly, binary
and nested values included, and a file that is not a saved table is a clear error."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from knowledge_local.account import aws_client
from knowledge_local.emulator import snapshot
from knowledge_local.emulator.aws_server import AwsServer
from tests.support.template import create_table_kwargs

ITEMS: list[dict[str, Any]] = [
    {"PK": {"S": "T#a#KB#kb"}, "SK": {"S": "META"}, "GSI1PK": {"S": "T#a#BASES"}, "GSI1SK": {"S": "kb"}},
    {
        "PK": {"S": "T#a#ITEM#ki"},
        "SK": {"S": "META"},
        "version": {"N": "3"},
        "blob": {"B": b"\x00\xffbinary"},
        "blobs": {"BS": [b"one", b"\x01two"]},
        "source": {
            "M": {"uri": {"S": "file:///x.md"}, "tags": {"L": [{"S": "a"}, {"N": "2"}, {"NULL": True}]}}
        },
        "flags": {"SS": ["x", "y"]},
        "published": {"BOOL": True},
    },
]


def _table(aws: AwsServer) -> tuple[Any, str]:
    client = aws_client("dynamodb", aws.url)
    name = f"snapshot-{uuid.uuid4().hex[:8]}"
    client.create_table(**create_table_kwargs("KnowledgeTable", name))
    return client, name


def _items(client: Any, name: str) -> list[dict[str, Any]]:
    return sorted(client.scan(TableName=name, ConsistentRead=True)["Items"], key=lambda item: item["PK"]["S"])


def test_snapshot_saved_table_comes_back_exactly(tmp_path: Path) -> None:
    with AwsServer(port=0) as aws:
        client, saved_from = _table(aws)
        for item in ITEMS:
            client.put_item(TableName=saved_from, Item=item)

        count = snapshot.save(tmp_path, journal_through=4, items={saved_from: aws.export_table(saved_from)})
        loaded = snapshot.load(tmp_path, legacy_table="unused")
        _, restored_into = _table(aws)
        restored = snapshot.restore_items(client, restored_into, loaded.items[saved_from])

        assert (count, restored, loaded.journal_through) == (2, 2, 4)
        assert _items(client, restored_into) == _items(client, saved_from)


def test_snapshot_of_an_earlier_version_is_the_knowledge_table_before_any_journal(tmp_path: Path) -> None:
    with AwsServer(port=0) as aws:
        client, saved_from = _table(aws)
        for item in ITEMS:
            client.put_item(TableName=saved_from, Item=item)
        exported = aws.export_table(saved_from)
        (tmp_path / snapshot.SNAPSHOT_FILE).write_text("".join(f"{item}\n" for item in exported))

        loaded = snapshot.load(tmp_path, legacy_table="KnowledgeTable")

        assert loaded.journal_through == 0
        assert loaded.items == {"KnowledgeTable": exported}


def test_snapshot_absent_is_an_empty_one(tmp_path: Path) -> None:
    loaded = snapshot.load(tmp_path, legacy_table="KnowledgeTable")

    assert (loaded.journal_through, loaded.item_count, loaded.messages) == (0, 0, [])


@pytest.mark.parametrize(
    "content",
    ["not json\n", '{"snapshot": 1, "journal_through": 2}\n{"neither": 1}\n', "[1, 2]\n"],
)
def test_snapshot_file_that_is_not_a_saved_table_is_refused(tmp_path: Path, content: str) -> None:
    (tmp_path / snapshot.SNAPSHOT_FILE).write_text(content, encoding="utf-8")

    with pytest.raises(snapshot.SnapshotError, match=r"table\.jsonl is not a saved table"):
        snapshot.load(tmp_path, legacy_table="KnowledgeTable")


def test_snapshot_file_is_readable_by_its_owner_only(tmp_path: Path) -> None:
    (tmp_path / snapshot.SNAPSHOT_FILE).write_text("", encoding="utf-8")
    (tmp_path / snapshot.SNAPSHOT_FILE).chmod(0o644)

    snapshot.save(tmp_path, journal_through=0, items={"t": ['{"pk": {"S": "a"}}']})

    assert (tmp_path / snapshot.SNAPSHOT_FILE).stat().st_mode & 0o777 == 0o600
