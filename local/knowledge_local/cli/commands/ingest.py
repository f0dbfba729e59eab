"""``knowledge ingest PATH --base BASE [--archive-missing --source-base-url URL --no-wait
--stall-timeout S --timeout S]``: the documents of a file or folder (.md, .markdown, .txt, .rst,
.pdf, .docx, .html, .htm, .csv, .xlsx, converted by ``knowledge.conversion`` with their pages,
sections, sheets and rows as segments) through the write API (``ingestion``), one item each; a base
name no base has creates the base, and says so on stderr with the existing names close to it. Shows
the sending, then the wait for the index, on stderr (count, rate, ETA, what is left), and prints
``name (kb_...): <summary>`` once the index holds every item (unless ``--no-wait``). The wait goes
on while documents keep becoming searchable; it fails (exit status 1, naming what is left and how to
check later) when none has for ``--stall-timeout`` seconds, or after ``--timeout`` seconds in all if
given."""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from knowledge_local.cli.arguments import (
    UsageError,
    base_reference,
    positive_seconds,
    program_name,
    source_base_url,
)
from knowledge_local.cli.client import KnowledgeClient
from knowledge_local.cli.documents import SUFFIXES, DocumentError, collect_documents
from knowledge_local.cli.ingestion import (
    DEFAULT_STALL_SECONDS,
    IndexWaitTimeoutError,
    archive_missing,
    ensure_base,
    ingest_into,
    similar_names,
    wait_for_index,
)

_KINDS = ", ".join(sorted(SUFFIXES))


def add_commands(commands: Any, shared: Sequence[argparse.ArgumentParser]) -> None:
    """Register ``ingest`` on the ``knowledge`` parser's commands."""
    ingest_parser = commands.add_parser("ingest", help=f"ingest files or folders of {_KINDS}", parents=shared)
    ingest_parser.add_argument("path", help="a file or a folder (searched recursively)")
    ingest_parser.add_argument(
        "--base",
        required=True,
        type=base_reference,
        help="knowledge base id (kb_...) or name (a new name creates the base)",
    )
    ingest_parser.add_argument(
        "--archive-missing",
        action="store_true",
        help="archive the base's items whose file (external_id) is no longer in the folder "
        "(default: they stay published)",
    )
    ingest_parser.add_argument(
        "--source-base-url",
        type=source_base_url,
        help="https:// or http:// URL each file's path (file name included) is appended to for its "
        "source.uri: one that serves the files under their own names, such as a repository's tree "
        "(default: the path under the folder, relative)",
    )
    ingest_parser.add_argument(
        "--no-wait", dest="wait", action="store_false", help="do not wait until the index holds the documents"
    )
    ingest_parser.add_argument(
        "--stall-timeout",
        type=positive_seconds,
        default=None,
        help="give up waiting once no document has become searchable for this many seconds "
        f"(default: {DEFAULT_STALL_SECONDS:.0f}, longer while the smallest document left is one of many "
        "parts)",
    )
    ingest_parser.add_argument(
        "--timeout",
        type=positive_seconds,
        default=None,
        help="give up waiting for the index after this many seconds in all "
        "(default: no limit while documents keep becoming searchable)",
    )
    ingest_parser.set_defaults(run=_ingest)


def _ingest(client: KnowledgeClient, arguments: argparse.Namespace) -> int:
    path = Path(arguments.path)
    collection = collect_documents(path)
    if arguments.archive_missing and not path.is_dir():
        raise UsageError(f"--archive-missing needs a folder, and {path} is a file")
    for skipped in collection.skipped:
        print(f"warning: skipped {skipped.path}: {skipped.reason}", file=sys.stderr)
    if not collection.documents:
        raise DocumentError(
            f"Nothing to ingest under {path}: no {_KINDS} file with text ({len(collection.skipped)} skipped)."
        )
    base, created = ensure_base(client, arguments.base)
    if created:
        _announce_created(client, base)
    summary = ingest_into(
        client, collection.documents, base, created=created, source_base_url=arguments.source_base_url
    )
    summary.skipped = len(collection.skipped)
    if arguments.archive_missing:
        summary.archived = archive_missing(client, summary.knowledge_base_id, collection.external_ids)
    line = f"{summary.base_name} ({summary.knowledge_base_id}): {summary.describe()}"
    if arguments.wait:
        print(f"{line}; waiting for the index...", file=sys.stderr, flush=True)
        try:
            wait_for_index(client, summary, stall_timeout=arguments.stall_timeout, timeout=arguments.timeout)
        except IndexWaitTimeoutError as error:
            error.hint = _check_later(arguments)
            raise
        line += ", all indexed"
    print(line)
    return 0


def _announce_created(client: KnowledgeClient, base: dict[str, Any]) -> None:
    """Say on stderr that ``ingest`` created ``base``, naming existing bases it may be a typo of."""
    name, base_id = str(base.get("name")), str(base["knowledge_base_id"])
    others = [
        str(known.get("name"))
        for known in client.bases()
        if known.get("knowledge_base_id") != base_id and known.get("status") == "active"
    ]
    close = similar_names(name, others)
    note = f" (existing bases with a close name: {', '.join(close)})" if close else ""
    print(f"created knowledge base {name} ({base_id}){note}", file=sys.stderr, flush=True)


def _check_later(arguments: argparse.Namespace) -> str:
    """How to see later whether the documents became searchable: the same command, which sends
    nothing unchanged and waits for what is not searchable yet."""
    again = [program_name(), "ingest", shlex.quote(arguments.path), "--base", shlex.quote(arguments.base)]
    if arguments.source_base_url:
        again += ["--source-base-url", shlex.quote(arguments.source_base_url)]
    return (
        f"check later with `{' '.join(again)}` (it sends nothing unchanged and waits for the rest); "
        "on a busy machine, wait longer with --stall-timeout"
    )
