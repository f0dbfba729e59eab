"""The moto version check of ``knowledge_local.emulator.moto_patches``: the installed moto must be
the version ``requirements/dev.lock`` pins, else importing the patches fails naming both."""

from __future__ import annotations

import importlib
import importlib.metadata
from importlib.metadata import version
from pathlib import Path

import pytest

from knowledge_local.emulator import moto_patches
from knowledge_local.emulator.moto_patches import (
    LOCK_FILE,
    MotoVersionError,
    check_version,
    pinned_version,
)


def _lock(tmp_path: Path, text: str) -> Path:
    lock = tmp_path / "dev.lock"
    lock.write_text(text, encoding="utf-8")
    return lock


def test_pinned_version_is_the_moto_line_of_the_lock(tmp_path: Path) -> None:
    lock = _lock(tmp_path, "mpmath==1.3.0\nmoto==5.2.5\nmotor==3.7.0\n")

    assert pinned_version(lock) == "5.2.5"


def test_pinned_version_accepts_extras_and_hashes(tmp_path: Path) -> None:
    lock = _lock(tmp_path, "moto[server]==5.1.0 \\\n    --hash=sha256:00\n")

    assert pinned_version(lock) == "5.1.0"


def test_pinned_version_without_moto_or_without_lock_is_none(tmp_path: Path) -> None:
    assert pinned_version(_lock(tmp_path, "motor==3.7.0\nboto3==1.0\n")) is None
    assert pinned_version(tmp_path / "missing.lock") is None


def test_check_version_same_version_passes(tmp_path: Path) -> None:
    check_version("5.2.5", _lock(tmp_path, "moto==5.2.5\n"))


def test_check_version_other_version_names_both(tmp_path: Path) -> None:
    lock = _lock(tmp_path, "moto==5.2.5\n")

    with pytest.raises(MotoVersionError) as raised:
        check_version("5.3.0", lock)

    assert (raised.value.installed, raised.value.pinned) == ("5.3.0", "5.2.5")
    assert "moto 5.3.0 is installed" in str(raised.value)
    assert f"{lock} pins moto==5.2.5" in str(raised.value)
    assert isinstance(raised.value, ImportError)


def test_check_version_without_lock_compares_nothing(tmp_path: Path) -> None:
    check_version("5.3.0", tmp_path / "missing.lock")


def test_repository_lock_pins_the_installed_moto() -> None:
    assert LOCK_FILE.is_file()
    assert pinned_version() == version("moto")


def test_importing_the_patches_with_another_moto_fails_naming_both(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(importlib.metadata, "version", lambda name: "0.0.1")
    try:
        with pytest.raises(ImportError, match=r"moto 0\.0\.1 is installed, but .*dev\.lock pins moto=="):
            importlib.reload(moto_patches)
    finally:
        monkeypatch.undo()
        importlib.reload(moto_patches)
