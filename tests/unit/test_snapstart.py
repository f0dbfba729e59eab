"""``knowledge.snapstart``: hooks run in Lambda's order, reach Lambda's ``snapshot_restore_py`` when
the runtime has it, and ``refresh_after_restore`` leaves nothing of the snapshot's that must differ
per environment."""

from __future__ import annotations

import random
import sys
import types

import boto3
import pytest

from knowledge import snapstart
from knowledge.bootstrap import build_container, get_container, use_container
from knowledge.domain.ids import forget_last_ulid, new_ulid
from knowledge.settings import get_settings

CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


@pytest.fixture(autouse=True)
def empty_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts from no registered hooks: a function module imported earlier in the same
    process (``functions/mcp/app.py`` registers its own) must not run inside these tests."""
    monkeypatch.setattr(snapstart, "_before_snapshot", [])
    monkeypatch.setattr(snapstart, "_after_restore", [])


@pytest.fixture
def runtime_module(monkeypatch: pytest.MonkeyPatch) -> types.SimpleNamespace:
    """A stand-in for Lambda's ``snapshot_restore_py``: it keeps what is registered with it."""
    registered = types.SimpleNamespace(before=[], after=[])
    module = types.ModuleType("snapshot_restore_py")
    module.register_before_snapshot = registered.before.append  # type: ignore[attr-defined]
    module.register_after_restore = registered.after.append  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "snapshot_restore_py", module)
    return registered


def test_run_before_snapshot_order_is_reverse_of_registration() -> None:
    ran: list[str] = []

    def first() -> None:
        ran.append("first")

    def second() -> None:
        ran.append("second")

    snapstart.before_snapshot(first)
    snapstart.before_snapshot(second)
    snapstart.run_before_snapshot()

    assert ran == ["second", "first"]


def test_run_after_restore_order_is_registration_order() -> None:
    ran: list[str] = []

    def first() -> None:
        ran.append("first")

    def second() -> None:
        ran.append("second")

    snapstart.after_restore(first)
    snapstart.after_restore(second)
    snapstart.run_after_restore()

    assert ran == ["first", "second"]


def test_hook_registered_twice_runs_once() -> None:
    ran: list[str] = []

    def once() -> None:
        ran.append("once")

    assert snapstart.after_restore(once) is once
    snapstart.after_restore(once)
    snapstart.run_after_restore()

    assert ran == ["once"]


def test_before_snapshot_hook_registered_twice_runs_once() -> None:
    ran: list[str] = []

    def once() -> None:
        ran.append("once")

    assert snapstart.before_snapshot(once) is once
    snapstart.before_snapshot(once)
    snapstart.run_before_snapshot()

    assert ran == ["once"]


def test_hooks_in_lambda_runtime_reach_snapshot_restore_py(runtime_module: types.SimpleNamespace) -> None:
    def before() -> None: ...

    def after() -> None: ...

    snapstart.before_snapshot(before)
    snapstart.after_restore(after)

    assert runtime_module.before == [before]
    assert runtime_module.after == [after]


def test_refresh_after_restore_container_is_built_again(
    table: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TABLE_NAME", "knowledge-test")
    get_settings.cache_clear()
    use_container(None)
    before = get_container()
    store_before = before.store

    snapstart.refresh_after_restore()
    after = get_container()

    assert after is not before
    assert after.store is not store_before
    use_container(None)


def test_refresh_after_restore_installed_container_is_dropped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TABLE_NAME", "knowledge-test")
    installed = build_container(get_settings())
    use_container(installed)

    snapstart.refresh_after_restore()

    assert get_container() is not installed
    use_container(None)


def test_refresh_after_restore_boto3_default_session_is_new() -> None:
    boto3.setup_default_session(region_name="us-east-1")
    captured = boto3.DEFAULT_SESSION

    snapstart.refresh_after_restore()
    boto3.client("sqs", region_name="us-east-1")

    assert boto3.DEFAULT_SESSION is not None
    assert boto3.DEFAULT_SESSION is not captured


def test_refresh_after_restore_without_boto3_loaded_does_not_load_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "boto3")

    snapstart.refresh_after_restore()

    assert "boto3" not in sys.modules


def test_refresh_after_restore_random_state_differs_from_snapshot() -> None:
    random.seed(27)
    captured = random.getstate()

    snapstart.refresh_after_restore()

    assert random.getstate() != captured


def test_refresh_after_restore_random_draws_differ_between_restores() -> None:
    random.seed(27)
    snapshot = random.getstate()

    snapstart.refresh_after_restore()
    first_environment = [random.random() for _ in range(4)]
    random.setstate(snapshot)
    snapstart.refresh_after_restore()
    second_environment = [random.random() for _ in range(4)]

    assert first_environment != second_environment


def _ulid_value(ulid: str) -> int:
    """The 128-bit integer a ULID's 26 Crockford base32 characters spell."""
    value = 0
    for char in ulid:
        value = value * 32 + CROCKFORD.index(char)
    return value


def test_refresh_after_restore_ulid_does_not_continue_from_snapshot(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every environment restored while the clock still reads the snapshot's last millisecond would
    bump the same last ULID by one, so all of them would mint the same next id; after the refresh
    the next ULID draws its own random bits."""
    forget_last_ulid()  # the snapshot's process starts with no ULID of its own, whatever ran before
    monkeypatch.setattr("knowledge.domain.ids.time.time_ns", lambda: 1_795_992_668_123_000_000)
    in_snapshot = new_ulid()

    snapstart.refresh_after_restore()
    after_restore = new_ulid()

    assert after_restore[:10] == in_snapshot[:10]
    assert _ulid_value(after_restore) != _ulid_value(in_snapshot) + 1
