"""``knowledge sync --base BASE [--prefix P] [--include GLOB ...] [--bucket B] [--no-wait]
[--timeout S]``: keep a base in step with an S3 bucket prefix. Reuses the base's data source with
the same bucket, prefix and globs (or creates it), starts a sync job and follows it on stderr
(phase, pages, counts, objects per second) until it ends; prints ``name (kb_...): <counts>`` and
one line per object that failed. The bucket defaults to the local runtime's
(``documents_bucket`` in ``endpoints.json``). Exit status 1 when the job fails, or has not ended
after ``--timeout`` seconds."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from knowledge_local.cli.arguments import UsageError, base_reference, positive_seconds
from knowledge_local.cli.client import ApiError, KnowledgeClient
from knowledge_local.cli.ingestion import ensure_base
from knowledge_local.cli.progress import StatusLine, per_time
from knowledge_local.state import StateError, read_endpoints, state_dir

POLL_SECONDS = 0.5
COUNTS = ("scanned", "added", "updated", "unchanged", "deleted", "failed")


def add_commands(commands: Any, shared: Sequence[argparse.ArgumentParser]) -> None:
    """Register ``sync`` on the ``knowledge`` parser's commands."""
    parser = commands.add_parser(
        "sync", help="sync a base with an S3 bucket prefix and follow the job", parents=shared
    )
    parser.add_argument(
        "--base",
        required=True,
        type=base_reference,
        help="base id (kb_...) or name (created if new)",
    )
    parser.add_argument("--prefix", default="", help="key prefix (default: the whole bucket)")
    parser.add_argument(
        "--include",
        action="append",
        help="glob relative to the prefix (`*` within a folder, `**` across); repeatable (default: **)",
    )
    parser.add_argument("--bucket", help="bucket name (default: the local runtime's documents bucket)")
    parser.add_argument("--no-wait", dest="wait", action="store_false", help="start the job and return")
    parser.add_argument(
        "--timeout", type=positive_seconds, default=None, help="give up following after this many seconds"
    )
    parser.set_defaults(run=_sync)


def _sync(client: KnowledgeClient, arguments: argparse.Namespace) -> int:
    bucket = arguments.bucket or _local_bucket()
    include = arguments.include or ["**"]
    base, created = ensure_base(client, arguments.base)
    base_id = str(base["knowledge_base_id"])
    if created:
        print(f"created knowledge base {base['name']} ({base_id})", file=sys.stderr, flush=True)
    source = data_source_for(client, base_id, bucket=bucket, prefix=arguments.prefix, include=include)
    job = client.start_sync(base_id, str(source["data_source_id"]))
    print(
        f"sync {job['sync_job_id']} of s3://{bucket}/{arguments.prefix} started", file=sys.stderr, flush=True
    )
    if not arguments.wait:
        print(job["sync_job_id"])
        return 0
    job = follow(client, base_id, str(job["sync_job_id"]), timeout=arguments.timeout)
    print(f"{base['name']} ({base_id}): {job['status']}, {describe(job['counts'])}")
    for failure in job.get("failures") or []:
        print(f"  failed {failure['key']}: {failure['reason']}: {failure['message']}")
    if job["status"] != "succeeded":
        if job.get("error"):
            print(f"error: {job['error']}", file=sys.stderr)
        return 1
    return 0


def data_source_for(
    client: KnowledgeClient, base_id: str, *, bucket: str, prefix: str, include: list[str]
) -> dict[str, Any]:
    """The base's data source on exactly ``bucket``, ``prefix`` and ``include``, created if none."""
    for source in client.data_sources(base_id):
        if source["bucket"] == bucket and source["prefix"] == prefix and source["include"] == include:
            return source
    return client.create_data_source(base_id, bucket=bucket, prefix=prefix, include=include)


def follow(
    client: KnowledgeClient,
    base_id: str,
    sync_job_id: str,
    *,
    timeout: float | None = None,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> dict[str, Any]:
    """Poll the job until it ends, showing its progress on stderr; ``ApiError`` (``sync_timeout``)
    after ``timeout`` seconds."""
    started = clock()
    status = StatusLine(sys.stderr, redraw=sys.stderr.isatty(), clock=clock)
    while True:
        job = client.sync_job(base_id, sync_job_id)
        elapsed = clock() - started
        if job["status"] in ("succeeded", "failed"):
            status.close(_progress(job, elapsed))
            return job
        status.update(_progress(job, elapsed), key=job["counts"]["scanned"])
        if timeout is not None and elapsed >= timeout:
            status.close()
            raise ApiError(
                None,
                "sync_timeout",
                f"sync {sync_job_id} is still {job['status']} after {timeout:.0f} s; "
                f"it goes on: `GET /v1/knowledge-bases/{base_id}/sync-jobs/{sync_job_id}` tells how it ends",
            )
        sleep(POLL_SECONDS)


def describe(counts: dict[str, int]) -> str:
    """``"12 scanned, 3 added, 1 updated, 8 unchanged, 0 deleted, 0 failed"``."""
    return ", ".join(f"{counts.get(name, 0)} {name}" for name in COUNTS)


def _progress(job: dict[str, Any], elapsed: float) -> str:
    scanned = job["counts"]["scanned"]
    rate = per_time(scanned / elapsed) if elapsed > 0 else "0/s"
    return f"sync {job['status']}, {job['phase']}, page {job['pages']}: {describe(job['counts'])} ({rate})"


def _local_bucket() -> str:
    try:
        bucket = read_endpoints(state_dir()).documents_bucket
    except StateError as error:
        raise UsageError(f"give --bucket, or start the local runtime ({error})") from None
    if not bucket:
        raise UsageError("the local runtime has no documents bucket: give --bucket")
    return bucket
