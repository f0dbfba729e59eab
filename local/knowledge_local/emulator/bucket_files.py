"""The local buckets' objects on disk (``KNOWLEDGE_PERSIST``): a folder of the state directory per
bucket (``documents-bucket/``, ``bundles-bucket/``) holds one file per object, named by its key
percent-encoded (so no key can name a path outside the folder).

``save`` writes the bucket there on a clean stop (into a new folder, then swapped in, so a crash
while saving keeps the previous copy); ``restore`` puts the files back into the fresh bucket on
start, before its notifications are set up. Objects uploaded after the last clean stop are lost
with a crash: a sync then finds them gone and archives their items (upload them again).
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path
from urllib.parse import quote, unquote

from knowledge_local.account import aws_client

log = logging.getLogger(__name__)

FOLDER = "documents-bucket"
BUNDLES_FOLDER = "bundles-bucket"
_NAME_MAX_BYTES = 250


def save(endpoint_url: str, bucket: str, state_dir: Path, folder: str = FOLDER) -> int:
    """Write every object of ``bucket`` into ``folder`` of ``state_dir``; the number of objects
    written."""
    s3 = aws_client("s3", endpoint_url)
    target = state_dir / folder
    fresh = state_dir / f"{folder}.new"
    shutil.rmtree(fresh, ignore_errors=True)
    fresh.mkdir(mode=0o700)
    saved = 0
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        for entry in page.get("Contents", []):
            name = quote(entry["Key"], safe="")
            if len(name.encode()) > _NAME_MAX_BYTES:
                log.warning(
                    "object not saved: its key is too long for a file name", extra={"bytes": len(name)}
                )
                continue
            body = s3.get_object(Bucket=bucket, Key=entry["Key"])["Body"]
            (fresh / name).write_bytes(body.read())
            (fresh / name).chmod(0o600)
            saved += 1
    old = state_dir / f"{folder}.old"
    shutil.rmtree(old, ignore_errors=True)
    if target.exists():
        target.rename(old)
    fresh.rename(target)
    shutil.rmtree(old, ignore_errors=True)
    return saved


def restore(endpoint_url: str, bucket: str, state_dir: Path, folder: str = FOLDER) -> int:
    """Put the objects saved in ``folder`` of ``state_dir`` back into ``bucket``; the number of
    objects restored."""
    saved = state_dir / folder
    if not saved.is_dir():
        return 0
    s3 = aws_client("s3", endpoint_url)
    restored = 0
    for path in sorted(saved.iterdir()):
        if path.is_file():
            s3.put_object(Bucket=bucket, Key=unquote(path.name), Body=path.read_bytes())
            restored += 1
    return restored
