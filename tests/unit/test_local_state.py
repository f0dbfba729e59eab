"""The state directory's files (``knowledge_local.state``): written whole and private, and a
directory left readable by others made private again."""

from __future__ import annotations

import stat
from pathlib import Path

from knowledge_local.state import (
    Endpoints,
    make_private,
    read_endpoints,
    read_token,
    write_endpoints,
    write_token,
)

ENDPOINTS = Endpoints(
    api_url="http://127.0.0.1:3000",
    aws_endpoint_url="http://127.0.0.1:5000",
    table_name="KnowledgeTable",
    ingest_queue_url=None,
    ingest_dlq_url=None,
)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def test_written_state_files_are_owner_only_and_leave_no_partial_file(tmp_path: Path) -> None:
    state = tmp_path / "state"

    endpoints = write_endpoints(state, ENDPOINTS)
    token = write_token(state, "kn_first")
    write_token(state, "kn_second")

    assert (_mode(endpoints), _mode(token), _mode(state)) == (0o600, 0o600, 0o700)
    assert (read_endpoints(state), read_token(state)) == (ENDPOINTS, "kn_second")
    assert sorted(path.name for path in state.iterdir()) == ["dev-token", "endpoints.json"]


def test_make_private_closes_every_folder_and_file_and_leaves_links(tmp_path: Path) -> None:
    state = tmp_path / "state"
    (state / "nested").mkdir(parents=True)
    for path in (state / "embeddings.sqlite3", state / "nested" / "journal.log"):
        path.write_text("x", encoding="utf-8")
        path.chmod(0o644)
    outside = tmp_path / "outside.txt"
    outside.write_text("x", encoding="utf-8")
    outside.chmod(0o644)
    (state / "link").symlink_to(outside)
    for folder in (state, state / "nested"):
        folder.chmod(0o755)

    make_private(state)

    assert {
        name: _mode(state / name) for name in (".", "nested", "embeddings.sqlite3", "nested/journal.log")
    } == {".": 0o700, "nested": 0o700, "embeddings.sqlite3": 0o600, "nested/journal.log": 0o600}
    assert _mode(outside) == 0o644
