"""Prefixed ULIDs (``kb_``, ``ki_``, ``kr_``, ``nt_``, ``pn_``, ``ds_``, ``sj_``, ``ex_``, ``im_``):
26 Crockford base32 characters, sortable by creation time.

ULID spec: 48-bit millisecond timestamp then 80 random bits (https://github.com/ulid/spec).
Within one process, ids from the same millisecond stay increasing (the random part is bumped).
"""

from __future__ import annotations

import os
import re
import threading
import time

from knowledge.errors import RequestValidationError

_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_lock = threading.Lock()
_last = (0, 0)

KB_PREFIX = "kb_"
ITEM_PREFIX = "ki_"
REVISION_PREFIX = "kr_"
NOTE_PREFIX = "nt_"
PIN_PREFIX = "pn_"
DATA_SOURCE_PREFIX = "ds_"
SYNC_JOB_PREFIX = "sj_"
EXPORT_PREFIX = "ex_"
IMPORT_PREFIX = "im_"
ERASURE_PREFIX = "er_"

KINDS = {
    KB_PREFIX: "knowledge base id",
    ITEM_PREFIX: "knowledge item id",
    REVISION_PREFIX: "knowledge revision id",
    NOTE_PREFIX: "note id",
    PIN_PREFIX: "pin id",
    DATA_SOURCE_PREFIX: "data source id",
    SYNC_JOB_PREFIX: "sync job id",
    EXPORT_PREFIX: "export id",
    IMPORT_PREFIX: "import id",
    ERASURE_PREFIX: "erasure id",
}
"""What each prefix names, for error messages."""
_EXAMPLE_ULID = "01J9Z3K4QW5E6R7T8Y9V0A1B2C"

_ID_RE = re.compile(r"^(kb|ki|kr|nt|pn|ds|sj|ex|im|er)_[0-9A-HJKMNP-TV-Z]{26}$")


def _encode(value: int) -> str:
    chars = []
    for _ in range(26):
        value, rem = divmod(value, 32)
        chars.append(_ALPHABET[rem])
    return "".join(reversed(chars))


def new_ulid() -> str:
    """A monotonic ULID string of 26 characters."""
    global _last
    with _lock:
        millis = time.time_ns() // 1_000_000
        last_millis, last_rand = _last
        if millis <= last_millis:
            millis, rand = last_millis, last_rand + 1
        else:
            rand = int.from_bytes(os.urandom(10), "big")
        _last = (millis, rand)
    return _encode((millis << 80) | (rand & ((1 << 80) - 1)))


def forget_last_ulid() -> None:
    """Forget the last ULID's millisecond and random part, so the next one draws fresh random bits
    whatever the clock says (after a Lambda SnapStart restore, every restored environment would
    otherwise continue from the same last ULID)."""
    global _last
    with _lock:
        _last = (0, 0)


def new_base_id() -> str:
    return KB_PREFIX + new_ulid()


def new_item_id() -> str:
    return ITEM_PREFIX + new_ulid()


def new_revision_id() -> str:
    return REVISION_PREFIX + new_ulid()


def new_note_id() -> str:
    return NOTE_PREFIX + new_ulid()


def new_pin_id() -> str:
    return PIN_PREFIX + new_ulid()


def new_data_source_id() -> str:
    return DATA_SOURCE_PREFIX + new_ulid()


def new_sync_job_id() -> str:
    return SYNC_JOB_PREFIX + new_ulid()


def new_export_id() -> str:
    return EXPORT_PREFIX + new_ulid()


def new_import_id() -> str:
    return IMPORT_PREFIX + new_ulid()


def new_erasure_id() -> str:
    return ERASURE_PREFIX + new_ulid()


def is_well_formed(identifier: str, prefix: str) -> bool:
    """True when ``identifier`` is ``prefix`` followed by a ULID; guessed junk is rejected cheaply."""
    return identifier.startswith(prefix) and _ID_RE.match(identifier) is not None


def shape_of(prefix: str) -> str:
    """The expected shape of an id with ``prefix``, in words (the ``problem`` of a malformed one)."""
    kind = KINDS[prefix]
    article = "an" if kind[0] in "aeiou" else "a"
    return (
        f"must be {article} {kind}: {prefix} followed by 26 Crockford base32 characters "
        "(digits and capital letters but I, L, O and U), such as "
        f"{prefix}{_EXAMPLE_ULID}"
    )


def require_well_formed(identifier: str, prefix: str, field: str) -> str:
    """``identifier`` when it is well formed for ``prefix``.

    Raises ``RequestValidationError`` (400 ``validation_error``) otherwise, with
    ``details.fields == [{"field": field, "problem": shape_of(prefix)}]``. The check is on the
    shape alone, before any lookup, so it says nothing about what exists; the value is not echoed.
    """
    if not is_well_formed(identifier, prefix):
        raise RequestValidationError(
            f"{field} is not a well-formed {KINDS[prefix]}.",
            {"fields": [{"field": field, "problem": shape_of(prefix)}]},
        )
    return identifier
