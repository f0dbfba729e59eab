"""Memory per write on the local AWS endpoint stays small and does not grow with what is stored:
120 small items (after 20 to warm up) through the store's real write path (pages, then the sealing
transaction with the external id's guard), each followed by a read of the table's stream, as the
stream poller reads it.

Before the fix every write left a copy of the whole table behind (moto's transaction rollback
copies, kept alive by its instance tracking): megabytes per write, more with every write."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import tracemalloc
from typing import Any

from knowledge.adapters.dynamodb.knowledge_store import DynamoDBKnowledgeStore
from knowledge.domain.models import Scope, Source
from knowledge_local.account import aws_client
from knowledge_local.emulator.aws_server import AwsServer
from tests.support.template import ROOT, create_table_kwargs

TABLE = "write-memory"
WARM_UP_WRITES = 20
MEASURED_WRITES = 120
BYTES_PER_WRITE = 24_000
"""What one small item may keep, all told: its four records in moto (item, revision, page, guard),
the shard iterators of its stream read (kept for their 15 minutes) and the caches' share; about
16 KB measured. moto's instance tracking alone, left on, keeps about 31 KB per write; its table
copies, megabytes."""
CONTENT = "A small runbook paragraph about rolling back a release with the blue green switch. " * 8


class _Writes:
    """A store on the local AWS endpoint, and a reader of its table's stream."""

    def __init__(self, aws: AwsServer) -> None:
        dynamodb = aws_client("dynamodb", aws.url)
        dynamodb.create_table(**create_table_kwargs("KnowledgeTable", TABLE))
        self.store = DynamoDBKnowledgeStore(TABLE, dynamodb_client=dynamodb)
        self.base = self.store.create_base(
            "tenant-a", name="Runbooks", owner_id="owner", scope=Scope.TENANT, team_id=None
        )
        self.streams = aws_client("dynamodbstreams", aws.url)
        arn = dynamodb.describe_table(TableName=TABLE)["Table"]["LatestStreamArn"]
        shard = self.streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"][0]["ShardId"]
        self.iterator: Any = self.streams.get_shard_iterator(
            StreamArn=arn, ShardId=shard, ShardIteratorType="TRIM_HORIZON"
        )["ShardIterator"]
        self.written = 0

    def write(self, count: int) -> None:
        for _ in range(count):
            self.written += 1
            self.store.create_item(
                "tenant-a",
                self.base.knowledge_base_id,
                title=f"Runbook {self.written}",
                content=CONTENT,
                source=Source(),
                external_id=f"runbook-{self.written}.md",
                publish=True,
            )
            self.iterator = self.streams.get_records(ShardIterator=self.iterator, Limit=1000)[
                "NextShardIterator"
            ]


def measure() -> dict[str, int]:
    """Traced bytes at the start, half-way and end of the measured writes (run in a fresh
    interpreter by the test, away from the test runner's tracers and workers)."""
    with AwsServer(port=0) as aws:
        writes = _Writes(aws)
        writes.write(WARM_UP_WRITES)
        tracemalloc.start()
        try:
            gc.collect()
            start = tracemalloc.get_traced_memory()[0]
            half = _traced_after(writes, MEASURED_WRITES // 2)
            end = _traced_after(writes, MEASURED_WRITES - MEASURED_WRITES // 2)
        finally:
            tracemalloc.stop()
    return {"start": start, "half": half, "end": end}


def _traced_after(writes: _Writes, count: int) -> int:
    writes.write(count)
    gc.collect()
    return tracemalloc.get_traced_memory()[0]


def test_local_aws_server_memory_per_write_is_small_and_constant() -> None:
    # A coverage tracer (pytest-cov sets COV_CORE_* for subprocesses) keeps ~28 KB per request
    # thread of moto's server: the interpreter measured runs without it.
    environment = {name: value for name, value in os.environ.items() if not name.startswith("COV_CORE")}
    code = f"import json; from {__name__} import measure; print(json.dumps(measure()))"
    run = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=environment, capture_output=True, text=True, timeout=600
    )
    assert run.returncode == 0, run.stderr
    traced = json.loads(run.stdout.strip().splitlines()[-1])

    first, second = traced["half"] - traced["start"], traced["end"] - traced["half"]
    assert (traced["end"] - traced["start"]) / MEASURED_WRITES < BYTES_PER_WRITE
    assert second < 1.5 * first + 16 * BYTES_PER_WRITE
