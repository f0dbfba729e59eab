"""Lambda SnapStart runtime hooks: what runs before the snapshot and what runs after each restore.

With SnapStart (``SnapStart: ApplyOn: PublishedVersions``), Lambda runs a function's init once when
a version is published, runs the before-snapshot hooks, snapshots the microVM's memory and disk, and
starts every later execution environment of that version by restoring the snapshot and running the
after-restore hooks (https://docs.aws.amazon.com/lambda/latest/dg/snapstart-runtime-hooks-python.html).
Whatever the init left in memory is then shared by every restored environment, possibly days later,
so nothing that must differ per environment may be captured
(https://docs.aws.amazon.com/lambda/latest/dg/snapstart-uniqueness.html).

``before_snapshot`` and ``after_restore`` register a hook with the runtime's
``snapshot_restore_py`` (part of Lambda's managed Python runtimes, absent elsewhere) and in this
module's own registry; ``run_before_snapshot`` and ``run_after_restore`` run that registry in the
runtime's order (before snapshot: reverse order of registration; after restore: order of
registration), so tests and the local runtime can take a snapshot and restore one without Lambda.

``refresh_after_restore`` is the package's own after-restore hook: it drops what a restored
environment must build afresh (the container with its boto3 and OpenSearch clients, credentials and
the runtime switch's cached answer; boto3's default session with its credential cache), reseeds
``random`` and forgets the last ULID. ``secrets``, ``os.urandom`` and ``uuid.uuid4`` read the
kernel's generator on every call, so nothing of theirs is captured.
"""

from __future__ import annotations

import importlib
import random
import sys
import threading
from collections.abc import Callable
from typing import Any

from knowledge.bootstrap import use_container
from knowledge.domain.ids import forget_last_ulid

Hook = Callable[[], object]

_lock = threading.Lock()
_before_snapshot: list[Hook] = []
_after_restore: list[Hook] = []


def _runtime_hooks() -> Any:
    """Lambda's ``snapshot_restore_py`` module, or ``None`` outside Lambda's managed runtimes."""
    try:
        return importlib.import_module("snapshot_restore_py")
    except ImportError:
        return None


def before_snapshot(hook: Hook) -> Hook:
    """Register ``hook`` to run before Lambda takes the snapshot (and in ``run_before_snapshot``);
    returns it, so this works as a decorator. A hook registered twice runs once."""
    with _lock:
        if hook in _before_snapshot:
            return hook
        _before_snapshot.append(hook)
    runtime = _runtime_hooks()
    if runtime is not None:
        runtime.register_before_snapshot(hook)
    return hook


def after_restore(hook: Hook) -> Hook:
    """Register ``hook`` to run after Lambda restores an environment from the snapshot (and in
    ``run_after_restore``); returns it, so this works as a decorator. A hook registered twice runs
    once."""
    with _lock:
        if hook in _after_restore:
            return hook
        _after_restore.append(hook)
    runtime = _runtime_hooks()
    if runtime is not None:
        runtime.register_after_restore(hook)
    return hook


def run_before_snapshot() -> None:
    """Run the before-snapshot hooks as Lambda does: in reverse order of registration."""
    with _lock:
        hooks = list(reversed(_before_snapshot))
    for hook in hooks:
        hook()


def run_after_restore() -> None:
    """Run the after-restore hooks as Lambda does: in order of registration."""
    with _lock:
        hooks = list(_after_restore)
    for hook in hooks:
        hook()


def refresh_after_restore() -> None:
    """Make a restored environment its own: the process's container (``use_container(None)``: its
    clients, credentials and cached answers) is built again on first use, boto3's default session
    (its credential cache) too, ``random`` is reseeded from the kernel and the next ULID draws fresh
    random bits."""
    use_container(None)
    if "boto3" in sys.modules:  # a function that never loaded boto3 has no session to drop
        import boto3

        boto3.DEFAULT_SESSION = None
    random.seed()
    forget_last_ulid()
