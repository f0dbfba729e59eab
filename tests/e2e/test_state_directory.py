"""The runtime's state directory: its own dev token, kept across persisted restarts and rotatable
with ``knowledge token rotate``, and files nobody else can read. Each test runs its own
short-lived runtimes without a seed."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

from tests.e2e.runtime_process import RuntimeProcess, start_runtime

KNOWLEDGE = Path(sys.executable).parent / "knowledge"
PERSIST = {"KNOWLEDGE_PERSIST": "true"}
NO_PERSIST = {"KNOWLEDGE_PERSIST": "false"}


def _status(runtime: RuntimeProcess, token: str) -> int:
    with runtime.http(token) as api:
        return api.get("/v1/knowledge-bases").status_code


def _modes(directory: Path) -> dict[str, int]:
    """The permission bits of ``directory`` (as ``.``) and of everything under it, by relative path."""
    modes = {".": stat.S_IMODE(directory.stat().st_mode)}
    for path in directory.rglob("*"):
        modes[str(path.relative_to(directory))] = stat.S_IMODE(path.lstat().st_mode)
    return modes


def _private(modes: dict[str, int], directory: Path) -> bool:
    return all(mode == (0o700 if (directory / name).is_dir() else 0o600) for name, mode in modes.items())


def test_persisted_restart_reuses_the_dev_token_and_rotation_revokes_it(tmp_path: Path) -> None:
    first = start_runtime(tmp_path, seed_dir=None, environment=PERSIST)
    try:
        first.wait_until_ready()
        original = first.token
        with first.http() as api:
            minted = api.post("/v1/tokens", json={"subject_id": "agent", "scopes": ["knowledge:read"]})
        assert minted.status_code == 201, minted.text
        child = minted.json()["token"]

        rotation = subprocess.run(
            [str(KNOWLEDGE), "token", "rotate"],
            env={**os.environ, "KNOWLEDGE_STATE_DIR": str(first.state_dir)},
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        rotated = first.token
        after_rotation = {
            "original": _status(first, original),
            "child": _status(first, child),
            "rotated": _status(first, rotated),
        }
    finally:
        assert first.stop() == 0, first.log

    second = start_runtime(tmp_path, seed_dir=None, environment=PERSIST)  # the same state folder
    try:
        second.wait_until_ready()
        after_restart = {"original": _status(second, original), "rotated": _status(second, rotated)}
        reused = second.token
    finally:
        assert second.stop() == 0, second.log

    assert rotation.returncode == 0, rotation.stderr
    assert "1 earlier dev token(s) revoked" in rotation.stdout
    assert len(rotation.stdout.splitlines()) == 1  # the command's answer alone, no service log lines
    assert rotated not in rotation.stdout + rotation.stderr  # the token is in the file, never printed
    assert rotated != original
    assert after_rotation == {"original": 401, "child": 401, "rotated": 200}
    assert reused == rotated
    assert "reused from" in second.log
    assert after_restart == {"original": 401, "rotated": 200}


def test_unpersisted_restart_issues_a_new_dev_token_and_removes_it_on_stop(tmp_path: Path) -> None:
    first = start_runtime(tmp_path, seed_dir=None, environment=NO_PERSIST)
    try:
        first.wait_until_ready()
        original = first.token
    finally:
        assert first.stop() == 0, first.log
    removed = not (first.state_dir / "dev-token").exists()

    second = start_runtime(tmp_path, seed_dir=None, environment=NO_PERSIST)
    try:
        second.wait_until_ready()
        fresh = second.token
        statuses = {"original": _status(second, original), "fresh": _status(second, fresh)}
    finally:
        assert second.stop() == 0, second.log

    assert removed
    assert fresh != original
    assert statuses == {"original": 401, "fresh": 200}


def test_state_directory_and_every_file_in_it_are_the_owners_alone(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir(mode=0o755)
    state.chmod(0o755)
    left_over = state / "embeddings.sqlite3"  # an earlier version left it readable by others
    left_over.write_bytes(b"")
    left_over.chmod(0o644)

    runtime = start_runtime(tmp_path, seed_dir=None, environment=PERSIST)
    try:
        runtime.wait_until_ready()
        with runtime.http() as api:
            base = api.post("/v1/knowledge-bases", json={"name": "private", "scope": "tenant"})
            assert base.status_code == 201, base.text
        running = _modes(state)
    finally:
        assert runtime.stop() == 0, runtime.log
    stopped = _modes(state)

    assert {"endpoints.json", "dev-token", "embeddings.sqlite3", "embeddings.sqlite3-wal"} <= set(running)
    assert {"dev-token", "embeddings.sqlite3", "table.jsonl"} <= set(stopped)
    assert _private(running, state), running
    assert _private(stopped, state), stopped
