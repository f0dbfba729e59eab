"""The loop shared by the local event source mappings: a daemon thread that polls until stopped and
survives every error (logged, then retried with a capped exponential backoff)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, Sequence
from typing import Any

log = logging.getLogger(__name__)

MAX_ERROR_BACKOFF_SECONDS = 5.0


class Poller:
    """Calls ``poll_once()`` in a daemon thread named ``name``; each call returns how many seconds to
    wait before the next one, a wait that ``wake()`` (something arrived) cuts short. ``stop()`` ends
    the loop after the current call."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._stopping = threading.Event()
        self._woken = threading.Event()
        self._thread: threading.Thread | None = None

    def poll_once(self) -> float:
        raise NotImplementedError

    def start(self) -> None:
        if self._thread is None:
            self._stopping.clear()
            self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
            self._thread.start()

    def wake(self) -> None:
        """Poll at once: end the current wait, or skip the next one when a call is running (so a
        wake during a call is never lost). Cheap and safe from any thread."""
        self._woken.set()

    def request_stop(self) -> None:
        """Make the loop end after the current call, without waiting for it."""
        self._stopping.set()
        self._woken.set()

    def stop(self, timeout: float = 5.0) -> None:
        """``request_stop()``, then wait at most ``timeout`` seconds for the loop to end."""
        self.request_stop()
        if self._thread is not None:
            self._thread.join(timeout=timeout)
            self._thread = None

    @property
    def stopping(self) -> bool:
        return self._stopping.is_set()

    def _run(self) -> None:
        delay, failures = 0.0, 0
        while True:
            if delay > 0:
                self._woken.wait(delay)
            self._woken.clear()
            if self._stopping.is_set():
                return
            try:
                delay, failures = self.poll_once(), 0
            except Exception:
                failures += 1
                delay = min(MAX_ERROR_BACKOFF_SECONDS, 0.25 * 2**failures)
                log.exception("poll failed; retrying", extra={"poller": self.name, "delay_s": delay})


def failed_item_identifiers(answer: Any, identifiers: Sequence[str]) -> list[str] | None:
    """The ``batchItemFailures[].itemIdentifier`` of a function's answer, in batch order.

    ``[]``: every record succeeded (no answer or no failures). ``None``: the whole batch failed, as
    Lambda decides when an identifier is missing, empty or not one of the batch's ``identifiers``.
    """
    if answer is None:
        return []
    if not isinstance(answer, Mapping):
        return None
    failures = answer.get("batchItemFailures")
    if failures is None:
        return []
    if not isinstance(failures, list):
        return None
    failed: set[str] = set()
    for failure in failures:
        identifier = failure.get("itemIdentifier") if isinstance(failure, Mapping) else None
        if not isinstance(identifier, str) or identifier not in identifiers:
            return None
        failed.add(identifier)
    return [identifier for identifier in identifiers if identifier in failed]
