"""moto's list of its own service folders, read once.

moto's server picks the backend of every request by host, and for that calls
``moto.backends.list_of_moto_modules()``, which lists moto's package folder and tests each entry
with ``os.path.isdir``: about 150 system calls per request, under the dispatcher's lock that every
request (DynamoDB, Streams and SQS alike) passes through. The folders of an installed moto do not
change while it runs, so ``install()`` replaces that function with one that answers the listing
taken once (the same names, in the same order).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable

from moto import backends

MOTO_LIST_OF_MODULES: Callable[[], Iterable[str]] = backends.list_of_moto_modules
_install_lock = threading.Lock()


def install() -> None:
    """Answer ``list_of_moto_modules()`` from one listing for the rest of the process; idempotent."""
    with _install_lock:
        if backends.list_of_moto_modules is not MOTO_LIST_OF_MODULES:
            return
        names = tuple(MOTO_LIST_OF_MODULES())
        backends.list_of_moto_modules = lambda: names
