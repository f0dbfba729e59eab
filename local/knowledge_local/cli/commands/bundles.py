"""``knowledge export [--base B ...] [--path-prefix P] [--no-notes] [--vectors] [--out FILE]
[--timeout S]`` and ``knowledge import FILE [--timeout S]``: take the tenant's knowledge and memory
out as a JSONL bundle, or put a bundle in (DESIGN §9 "Export and import"; docs/portability.md).

``export`` starts an export job (``POST /v1/exports``), follows it on stderr (status, seconds) and
downloads the bundle from its presigned URL to ``--out`` (default ``export-<export_id>.jsonl``);
it prints the path, the records by kind and the size. ``import`` creates an import, uploads the
file to its presigned URL, starts it and follows it; it prints the records by kind (imported,
already present, conflicts) and the first conflicts. The presigned URLs are fetched without the
bearer token. Exit status 1 when the job fails or has not ended after ``--timeout`` seconds.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import httpx2

from knowledge_local.cli.arguments import UsageError, base_reference, positive_seconds
from knowledge_local.cli.client import ApiError, KnowledgeClient
from knowledge_local.cli.commands.search import base_id
from knowledge_local.cli.progress import StatusLine

POLL_SECONDS = 0.5
TRANSFER_TIMEOUT_SECONDS = 300.0
TIMEOUT_HELP = "give up following the job after this many seconds"


def add_commands(commands: Any, shared: Sequence[argparse.ArgumentParser]) -> None:
    """Register ``export`` and ``import`` on the ``knowledge`` parser's commands."""
    export = commands.add_parser(
        "export", help="export the tenant's knowledge and memory as a JSONL bundle", parents=shared
    )
    export.add_argument(
        "--base",
        action="append",
        type=base_reference,
        help="a base id (kb_...) or name to export; repeatable (default: every base)",
    )
    export.add_argument("--no-bases", action="store_true", help="export no base (notes only)")
    export.add_argument("--path-prefix", help="export only the notes under this path (default: every note)")
    export.add_argument("--no-notes", dest="notes", action="store_false", help="leave the notes and pins out")
    export.add_argument(
        "--vectors", action="store_true", help="carry the cached embeddings (same model: no embedding again)"
    )
    export.add_argument("--out", type=Path, help="the bundle's file (default: export-<export_id>.jsonl)")
    export.add_argument("--timeout", type=positive_seconds, default=None, help=TIMEOUT_HELP)
    export.set_defaults(run=_export)
    into = commands.add_parser("import", help="import a JSONL bundle into the tenant", parents=shared)
    into.add_argument("bundle", type=Path, help="the bundle file (from `knowledge export`)")
    into.add_argument("--timeout", type=positive_seconds, default=None, help=TIMEOUT_HELP)
    into.set_defaults(run=_import)


def _export(client: KnowledgeClient, arguments: argparse.Namespace) -> int:
    if arguments.out is not None and not arguments.out.parent.is_dir():
        raise UsageError(f"--out {arguments.out}: the folder {arguments.out.parent} does not exist")
    body: dict[str, Any] = {"include_notes": arguments.notes, "include_vectors": arguments.vectors}
    if arguments.no_bases:
        body["knowledge_base_ids"] = []
    elif arguments.base:
        body["knowledge_base_ids"] = [base_id(client, base, inactive=True) for base in arguments.base]
    if arguments.path_prefix:
        body["path_prefix"] = arguments.path_prefix
    job = client.request("POST", "/v1/exports", json=body)
    print(f"export {job['job_id']} started", file=sys.stderr, flush=True)
    job = follow(client, f"/v1/exports/{job['job_id']}", timeout=arguments.timeout)
    if job["status"] != "succeeded":
        print(f"error: export {job['job_id']} failed: {job.get('error')}", file=sys.stderr)
        return 1
    out: Path = arguments.out or Path(f"export-{job['job_id']}.jsonl")
    size = download(str(job["download_url"]), out)
    print(f"{out}: {describe(job['counts'])}; {size:,} bytes")
    return 0


def _import(client: KnowledgeClient, arguments: argparse.Namespace) -> int:
    bundle: Path = arguments.bundle
    if not bundle.is_file():
        raise UsageError(f"no bundle file at {bundle}")
    job = client.request("POST", "/v1/imports", json={})
    upload(str(job["upload_url"]), bundle)
    job = client.request("POST", f"/v1/imports/{job['job_id']}/start")
    print(f"import {job['job_id']} of {bundle} started", file=sys.stderr, flush=True)
    job = follow(client, f"/v1/imports/{job['job_id']}", timeout=arguments.timeout)
    if job["status"] != "succeeded":
        print(f"error: import {job['job_id']} failed: {job.get('error')}", file=sys.stderr)
        return 1
    print(f"{bundle}: {describe(job['counts'])}")
    for conflict in job.get("conflicts") or []:
        print(f"  conflict {conflict}: its external id or semantic key is held by another record")
    return 0


def follow(
    client: KnowledgeClient,
    path: str,
    *,
    timeout: float | None = None,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> dict[str, Any]:
    """Poll the job at ``path`` (an export, import or erasure) until it ends, its status, an
    erasure's phase and records so far, and the elapsed time on stderr; ``ApiError``
    (``job_timeout``) after ``timeout`` seconds (the job goes on)."""
    started = clock()
    status = StatusLine(sys.stderr, redraw=sys.stderr.isatty(), clock=clock)
    while True:
        job = client.request("GET", path)
        elapsed = clock() - started
        kind = job.get("kind", "erasure")
        if job["status"] in ("succeeded", "failed"):
            status.close(f"{kind} {job['status']} in {elapsed:.1f} s")
            return job
        done = f" in phase {job['phase']}, {describe(job['erased'])} so far" if "phase" in job else ""
        waiting = " (waiting for the document queue's worker)" if job["status"] == "queued" else ""
        status.update(f"{kind} {job['status']}{done} for {elapsed:.0f} s{waiting}", key=job["status"])
        if timeout is not None and elapsed >= timeout:
            status.close()
            job_id = job.get("job_id") or job.get("erasure_id")
            raise ApiError(
                None,
                "job_timeout",
                f"{kind} {job_id} is still {job['status']} after {timeout:.0f} s; "
                f"it goes on: `GET {path}` tells how it ends",
            )
        sleep(POLL_SECONDS)


def describe(counts: dict[str, int]) -> str:
    """``"2 base, 40 item, 12 note"`` (export) or ``"40 item.imported, 2 item.present"`` (import)."""
    return ", ".join(f"{count:,} {name}" for name, count in sorted(counts.items())) or "nothing"


def download(url: str, out: Path) -> int:
    """Stream the presigned ``url`` into ``out`` (no bearer token is sent); its size in bytes."""
    size = 0
    try:
        with httpx2.stream("GET", url, timeout=TRANSFER_TIMEOUT_SECONDS) as response:
            if not response.is_success:
                status = response.status_code
                raise ApiError(status, "download_failed", f"the bundle download answered {status}")
            with out.open("wb") as file:
                for data in response.iter_bytes():
                    file.write(data)
                    size += len(data)
    except httpx2.TransportError as error:
        raise ApiError(None, "unreachable", f"cannot download the bundle ({error})") from None
    except OSError as error:
        raise UsageError(f"cannot write the bundle to {out}: {error.strerror or error}") from None
    return size


def upload(url: str, bundle: Path) -> None:
    """PUT ``bundle`` to the presigned ``url`` (no bearer token is sent)."""
    try:
        with bundle.open("rb") as file:
            response = httpx2.put(url, content=file.read(), timeout=TRANSFER_TIMEOUT_SECONDS)
    except httpx2.TransportError as error:
        raise ApiError(None, "unreachable", f"cannot upload the bundle ({error})") from None
    if not response.is_success:
        status = response.status_code
        raise ApiError(status, "upload_failed", f"the bundle upload answered {status}")
