"""A hybrid search through the ``search_knowledge`` handler, timed and profiled, on moto's DynamoDB.

```sh
python -m bench.search_profile                              # 400 items, 40 queries
git archive main functions layers | tar -x -C /tmp/main-tree
python -m bench.search_profile --baseline /tmp/main-tree    # the same in both trees, side by side
```

In a fresh process per tree (that tree's ``functions/`` and ``layers/`` first on ``sys.path``), it
builds the table from ``template.yaml`` in moto (in process), publishes ``--items`` items of a few
sentences each through the DynamoDB store, indexes them in the embedded index with
feature-hashed vectors (``bench.memory.HashingVectors``: the shapes of a real corpus, no model),
then sends ``--queries`` hybrid queries (``max_results`` 10) through ``functions/search_knowledge``'s
handler, as API Gateway would, after one warm-up query. It prints the median and p95 per search in
milliseconds, DynamoDB requests per search, and, from cProfile over a second pass of the same
queries (cProfile slows moto's Python a lot, so these are shares, not wall times), the time per
search spent in the store's reads, the index, fusion, the truth check and building the answer, and
whether both trees answer the same titles in the same order.
Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
WORDS = [
    "deploy",
    "rollback",
    "release",
    "canary",
    "health",
    "dashboard",
    "ledger",
    "billing",
    "migration",
    "zephyr",
    "index",
    "search",
    "token",
    "tenant",
    "stream",
    "queue",
    "retry",
    "backoff",
    "alarm",
    "latency",
    "shard",
    "replica",
    "cache",
    "embedding",
    "vector",
]
PARTS = {
    "store reads (BatchGetItem)": ("table.py", "batch_get"),
    "index search": ("passages.py", "search"),
    "fusion": ("fusion.py", "fuse"),
    "truth check and page": ("ranking.py", "_page"),
    "results (excerpts, models)": ("search.py", "_result"),
}
"""Profile entries reported, by (file name, function): cumulative time per search."""


def _text(number: int) -> str:
    words = [WORDS[(number * 7 + step * 3) % len(WORDS)] for step in range(40)]
    return " ".join(
        f"{word.capitalize()} {WORDS[(number + i) % len(WORDS)]} step {number}.{i}."
        for i, word in enumerate(words)
    )


def child(root: Path, items: int, queries: int) -> dict[str, Any]:
    """Run in a fresh process with ``root``'s code: the figures of the module doc."""
    sys.path[:0] = [str(root / "functions" / "search_knowledge"), str(root / "layers" / "knowledge")]
    os.environ.update(
        AWS_ACCESS_KEY_ID="testing",
        AWS_SECRET_ACCESS_KEY="testing",
        AWS_DEFAULT_REGION="us-east-1",
        AWS_REGION="us-east-1",
        POWERTOOLS_TRACE_DISABLED="true",
        POWERTOOLS_METRICS_DISABLED="true",
        POWERTOOLS_LOG_LEVEL="ERROR",
        TABLE_NAME="KnowledgeTable",
        HF_HUB_OFFLINE="1",
    )
    os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(ROOT / ".cache" / "tiktoken"))
    import boto3
    from moto import mock_aws

    from bench.memory import HashingVectors
    from knowledge.adapters.dynamodb.knowledge_store import DynamoDBKnowledgeStore
    from knowledge.adapters.embedded.passages import EmbeddedIndex
    from knowledge.bootstrap import build_container, use_container
    from knowledge.domain.models import Scope, Source
    from knowledge.settings import Settings
    from knowledge_local.emulator.template.resources import load_stack

    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        table = next(iter(load_stack(ROOT / "template.yaml").tables.values()))
        client.create_table(**{**table.create_table_arguments, "TableName": "KnowledgeTable"})
        requests: list[str] = []
        client.meta.events.register("before-call.dynamodb.*", lambda model, **_: requests.append(model.name))
        store = DynamoDBKnowledgeStore("KnowledgeTable", dynamodb_client=client)
        container = build_container(
            Settings(table_name="KnowledgeTable", aws_region="us-east-1"),
            store=store,
            index=EmbeddedIndex(),
            embedder=HashingVectors(384),
        )
        use_container(container)
        base = store.create_base(
            "acme", name="Handbook", owner_id="owner-1", scope=Scope.TENANT, team_id=None
        )
        for number in range(items):
            item, _ = store.create_item(
                "acme",
                base.knowledge_base_id,
                title=f"Runbook {number}",
                content=_text(number),
                source=Source(),
                external_id=None,
                publish=True,
            )
            container.indexing.sync_item("acme", item.knowledge_item_id, last_known_version=item.version)
            print(f"\r{root.name}: {number + 1}/{items} items", end="", file=sys.stderr)
        print(file=sys.stderr)
        import app  # type: ignore[import-not-found]

        event = json.loads((ROOT / "events" / "search_knowledge_query.json").read_text())
        bodies = [
            json.dumps({"query": " ".join(WORDS[n % 20 : n % 20 + 3]), "mode": "hybrid"})
            for n in range(queries)
        ]
        context = _Context()
        app.handler({**event, "body": bodies[0]}, context)
        requests.clear()
        times = []
        results = []
        for body in bodies:
            started = time.perf_counter()
            answer = app.handler({**event, "body": body}, context)
            times.append(time.perf_counter() - started)
            results.append([result["title"] for result in json.loads(answer["body"])["results"]])
        searches = len(requests) / queries
        kinds = {kind: requests.count(kind) / queries for kind in sorted(set(requests))}
        profile = cProfile.Profile()
        for body in bodies:
            profile.enable()
            app.handler({**event, "body": body}, context)
            profile.disable()
        stats = pstats.Stats(profile).stats  # type: ignore[attr-defined]
        parts = {}
        for name, (file_name, function) in PARTS.items():
            total = sum(
                entry[3]
                for (path, _, func), entry in stats.items()
                if path.endswith(file_name) and func == function
            )
            parts[name] = 1000 * total / queries
        ordered = sorted(times)
        return {
            "median_ms": 1000 * statistics.median(ordered),
            "p95_ms": 1000 * ordered[round(0.95 * (len(ordered) - 1))],
            "dynamodb_requests_per_search": searches,
            "request_kinds": kinds,
            "parts_ms": parts,
            "results": results,
        }


class _Context:
    function_name = "search-profile"
    function_version = "$LATEST"
    memory_limit_in_mb = 1024
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:search-profile"
    aws_request_id = "00000000-0000-0000-0000-000000000000"

    def get_remaining_time_in_millis(self) -> int:
        return 29_000


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--items", type=int, default=400)
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--baseline", type=Path, help="another checkout to measure alongside")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    arguments = parser.parse_args(argv)
    if arguments.child:
        print(json.dumps(child(arguments.child, arguments.items, arguments.queries)))
        return
    trees = {"this": ROOT, **({"baseline": arguments.baseline.resolve()} if arguments.baseline else {})}
    figures = {}
    for name, root in reversed(trees.items()):
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "bench.search_profile",
                "--child",
                str(root),
                "--items",
                str(arguments.items),
                "--queries",
                str(arguments.queries),
            ],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            text=True,
            check=True,
        )
        figures[name] = json.loads(done.stdout.strip().splitlines()[-1])
    names = list(reversed(trees))
    print(f"hybrid search through the handler, {arguments.items} items, {arguments.queries} queries")
    print("| measure | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    for key in ("median_ms", "p95_ms", "dynamodb_requests_per_search"):
        print(f"| {key} | " + " | ".join(f"{figures[name][key]:.1f}" for name in names) + " |")
    print(
        "| DynamoDB requests per search, by operation | "
        + " | ".join(
            ", ".join(f"{kind} {count:.1f}" for kind, count in figures[name]["request_kinds"].items())
            for name in names
        )
        + " |"
    )
    for part in PARTS:
        print(
            f"| {part} ms | " + " | ".join(f"{figures[name]['parts_ms'][part]:.1f}" for name in names) + " |"
        )
    if len(names) == 2:
        same = figures[names[0]]["results"] == figures[names[1]]["results"]
        print(f"same results in both trees: {'yes' if same else 'NO'}")


if __name__ == "__main__":
    main()
