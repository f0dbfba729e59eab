"""Every change the emulator makes to moto's internals, each for the life of the process:

- ``instance_tracking``: moto's model classes stop keeping every instance they create;
- ``transactions``: ``TransactWriteItems`` rolls back by journal instead of by table copy;
- ``partition_queries``: a ``Query`` reads one partition instead of the whole table;
- ``stream_retention``: stream records every reader has passed are dropped, iterators expire;
- ``queue_journal``: messages added to and removed from kept queues are told to the journal;
- ``json_answers``: item operations and ``GetRecords`` answer with their value's JSON, not
  through moto's generic serializer;
- ``backend_names``: moto's list of its service folders is read once, not on every request;
- ``arrivals``: a callback when a message or a stream record is added (the pollers' wake-up).

They replace moto's methods with copies of its logic and read its private state, so they hold for
one moto version: the one the lock pins (``moto==X`` in ``requirements/dev.lock``, what ``make
install`` installs). Importing this package compares it with the installed distribution's version
and raises ``MotoVersionError`` (an ``ImportError``) naming both when they differ. Without the
lock file (the package installed away from its repository) nothing is compared.
"""

from __future__ import annotations

import re
from importlib.metadata import version
from pathlib import Path

LOCK_FILE = Path(__file__).resolve().parents[4] / "requirements" / "dev.lock"
"""The lock ``make install`` installs from, at the repository's root."""
_PIN = re.compile(r"^moto(?:\[[^\]]*\])?==([^\s;#\\]+)", re.MULTILINE)


class MotoVersionError(ImportError):
    """The installed moto is not the version the lock pins (``installed``, ``pinned``)."""

    def __init__(self, installed: str, pinned: str, lock_file: Path) -> None:
        super().__init__(
            f"moto {installed} is installed, but {lock_file} pins moto=={pinned}: the patches of "
            f"knowledge_local.emulator.moto_patches are written for moto {pinned} (run `make install`, "
            "or update the patches with the lock)"
        )
        self.installed, self.pinned = installed, pinned


def pinned_version(lock_file: Path = LOCK_FILE) -> str | None:
    """The version ``lock_file`` pins moto to (its ``moto==X`` line, extras allowed); ``None`` when
    the file does not exist or pins no moto."""
    try:
        text = lock_file.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    pin = _PIN.search(text)
    return pin.group(1) if pin else None


def check_version(installed: str, lock_file: Path = LOCK_FILE) -> None:
    """Raise ``MotoVersionError`` when ``lock_file`` pins a moto version other than ``installed``."""
    pinned = pinned_version(lock_file)
    if pinned is not None and pinned != installed:
        raise MotoVersionError(installed, pinned, lock_file)


check_version(version("moto"))
