"""Tenant isolation under a flood: a quiet tenant's search latency, unloaded and while a noisy
tenant floods the service beyond its requests-per-second quota, against a running local runtime
(the same handlers, quota counters in moto's table, each function in execution environments of its
own):

    # in one terminal; the authorizer cache as on API Gateway (docs/reliability.md)
    KNOWLEDGE_AUTHORIZER_CACHE=true TENANT_REQUESTS_PER_SECOND=6 PORT=3192 AWS_PORT=5192 make run
    # in another
    .venv/bin/python -m bench.quotas --seconds 80 --flood-rps 40 --flood-threads 8 --probe-rps 3

Two tenants are minted with the dev token, each with a base and a few published items. A probe
thread sends the quiet tenant's lexical searches at ``--probe-rps`` on one keep-alive connection;
``--flood-threads`` threads of a child process send the noisy tenant's at ``--flood-rps`` in total.
Both are Poisson arrivals (random gaps, seeded), the usual open-loop load. Phases: warm-up,
unloaded (the probe alone), flood (probe and flood together).

Prints each phase's probe p50/p99 and the flood's answers by status, and the ratio of the flooded
p99 to the unloaded one; exit status 1 when it exceeds ``--max-ratio`` (2.0) or when the quiet
tenant saw an answer other than 200. Run the runtime with ``TENANT_REQUESTS_PER_SECOND=0`` to see
the same flood without a quota.
"""

from __future__ import annotations

import argparse
import math
import multiprocessing
import random
import statistics
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import httpx2

from knowledge_local.state import read_endpoints, read_token, state_dir

DOCUMENTS = [
    ("Deployment runbook", "Blue-green deployments switch traffic at the router after health checks."),
    ("Cache postmortem", "The outage began when the cache cluster lost quorum during a restart."),
    ("Pager rota", "The pager rota rotates every Monday at nine in the morning."),
    ("Release checklist", "Tag the release, publish the notes and watch the error dashboards."),
]
QUERIES = ["deployment traffic", "cache outage", "pager rota", "release notes"]
SCOPES = ["knowledge:read", "knowledge:write", "knowledge:admin"]
PROBE_SEED = 1
FLOOD_SEED = 100


@dataclass
class Phase:
    name: str
    probe: list[float] = field(default_factory=list)
    probe_statuses: Counter[int] = field(default_factory=Counter)
    flood_statuses: Counter[int] = field(default_factory=Counter)

    def percentile(self, fraction: float) -> float:
        ordered = sorted(self.probe)
        return ordered[min(len(ordered) - 1, math.ceil(fraction * len(ordered)) - 1)] * 1000

    def describe(self) -> str:
        flood = ", ".join(f"{status}: {count}" for status, count in sorted(self.flood_statuses.items()))
        probe = ", ".join(f"{status}: {count}" for status, count in sorted(self.probe_statuses.items()))
        return (
            f"{self.name:<22} probe p50 {self.percentile(0.5):6.1f} ms  p99 {self.percentile(0.99):6.1f} ms "
            f"({len(self.probe)} requests, mean {statistics.fmean(self.probe) * 1000:.1f} ms; {probe}); "
            f"flood {flood or 'none'}"
        )


def _post(http: httpx2.Client, path: str, body: dict[str, object]) -> httpx2.Response:
    """POST, waiting out ``429 rate_limited`` answers (the set-up must stay within the quotas)."""
    while True:
        answer = http.post(path, json=body)
        if answer.status_code != 429:
            return answer
        time.sleep(float(answer.headers.get("Retry-After", "1")))


def _tenant(api_url: str, admin: httpx2.Client, tenant_id: str) -> str:
    """Mint a token for ``tenant_id``, give it a base and ``DOCUMENTS``; its bearer token."""
    minted = _post(admin, "/v1/tokens", {"tenant_id": tenant_id, "subject_id": "bench", "scopes": SCOPES})
    minted.raise_for_status()
    token = str(minted.json()["token"])
    with httpx2.Client(base_url=api_url, headers={"Authorization": f"Bearer {token}"}, timeout=60) as http:
        base = _post(http, "/v1/knowledge-bases", {"name": "Handbook", "scope": "tenant"})
        base.raise_for_status()
        for title, content in DOCUMENTS:
            created = _post(
                http,
                f"/v1/knowledge-bases/{base.json()['knowledge_base_id']}/items",
                {"title": title, "content": content, "publish": True},
            )
            created.raise_for_status()
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            answer = _post(http, "/v1/tools/search_knowledge", {"query": "pager rota", "mode": "lexical"})
            if answer.status_code == 200 and answer.json()["results"]:
                return token
            time.sleep(1.0)
    raise RuntimeError(f"the items of {tenant_id} were not indexed within two minutes")


def _paced(rate: float, stop: threading.Event, send: Callable[[int], None], seed: int) -> None:
    """Call ``send(n)`` as Poisson arrivals at ``rate`` per second (exponential gaps drawn from
    ``seed``; catching up when late) until ``stop`` is set. Random gaps keep senders from firing in
    step, which evenly paced threads started together would."""
    gaps = random.Random(seed)
    due = time.perf_counter()
    sent = 0
    while not stop.is_set():
        delay = due - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        send(sent)
        sent += 1
        due += gaps.expovariate(rate)


def _searcher(api_url: str, token: str) -> Callable[[int], int]:
    http = httpx2.Client(base_url=api_url, headers={"Authorization": f"Bearer {token}"}, timeout=60)

    def search(n: int) -> int:
        body = {"query": QUERIES[n % len(QUERIES)], "mode": "lexical", "max_results": 3}
        return http.post("/v1/tools/search_knowledge", json=body).status_code

    return search


def _ready() -> bool:
    return True


def _flood(api_url: str, token: str, rps: float, threads: int, seconds: float) -> Counter[int]:
    """The noisy tenant's searches: ``threads`` threads at ``rps`` in total for ``seconds``; the
    answers by status. Runs in a process of its own (``_run_phase``), so the flood's threads never
    hold the probe's interpreter lock while the probe is timing an answer."""
    statuses: Counter[int] = Counter()
    lock = threading.Lock()
    stop = threading.Event()

    def sender() -> Callable[[int], None]:
        noisy = _searcher(api_url, token)

        def send(n: int) -> None:
            status = noisy(n)
            with lock:
                statuses[status] += 1

        return send

    workers = [
        threading.Thread(target=_paced, args=(rps / threads, stop, sender(), FLOOD_SEED + n))
        for n in range(threads)
    ]
    for worker in workers:
        worker.start()
    time.sleep(seconds)
    stop.set()
    for worker in workers:
        worker.join()
    return statuses


def _run_phase(
    phase: Phase,
    api_url: str,
    tokens: tuple[str, str],
    args: argparse.Namespace,
    *,
    seconds: float,
    flood: bool,
) -> Phase:
    """The probe at ``--probe-rps`` in this process for ``seconds``, and with ``flood`` the noisy
    tenant's flood in a child process at the same time."""
    stop = threading.Event()
    quiet_token, noisy_token = tokens
    quiet = _searcher(api_url, quiet_token)

    def probe(n: int) -> None:
        began = time.perf_counter()
        status = quiet(n)
        elapsed = time.perf_counter() - began
        phase.probe.append(elapsed)
        phase.probe_statuses[status] += 1

    with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn")) as pool:
        pool.submit(_ready).result()  # the child has started and imported this module: the phase begins
        flooding = (
            pool.submit(_flood, api_url, noisy_token, args.flood_rps, args.flood_threads, seconds)
            if flood
            else None
        )
        prober = threading.Thread(target=_paced, args=(args.probe_rps, stop, probe, PROBE_SEED))
        prober.start()
        time.sleep(seconds)
        stop.set()
        prober.join()
        if flooding is not None:
            phase.flood_statuses.update(flooding.result())
    return phase


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.quotas", description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=20.0, help="length of the unloaded and flood phases")
    parser.add_argument("--flood-rps", type=float, default=60.0, help="the noisy tenant's total rate")
    parser.add_argument("--flood-threads", type=int, default=4)
    parser.add_argument("--probe-rps", type=float, default=5.0, help="the quiet tenant's rate")
    parser.add_argument("--max-ratio", type=float, default=2.0)
    parser.add_argument("--state-dir", type=Path, default=None, help="the runtime's KNOWLEDGE_STATE_DIR")
    args = parser.parse_args(argv)
    directory = args.state_dir or state_dir()
    api_url = read_endpoints(directory).api_url
    run = uuid.uuid4().hex[:8]
    with httpx2.Client(
        base_url=api_url, headers={"Authorization": f"Bearer {read_token(directory)}"}, timeout=60
    ) as admin:
        tokens = (_tenant(api_url, admin, f"quiet-{run}"), _tenant(api_url, admin, f"noisy-{run}"))
    _run_phase(Phase("warm-up"), api_url, tokens, args, seconds=3.0, flood=True)
    unloaded = _run_phase(Phase("unloaded"), api_url, tokens, args, seconds=args.seconds, flood=False)
    flooded = _run_phase(Phase("flood"), api_url, tokens, args, seconds=args.seconds, flood=True)
    for phase in (unloaded, flooded):
        print(phase.describe())
    ratio = flooded.percentile(0.99) / unloaded.percentile(0.99)
    print(f"quiet tenant p99 ratio, flood / unloaded: {ratio:.2f} (at most {args.max_ratio})")
    refused = sum(
        count
        for phase in (unloaded, flooded)
        for status, count in phase.probe_statuses.items()
        if status != 200
    )
    if refused:
        print(f"the quiet tenant saw {refused} answers other than 200")
    return 0 if ratio <= args.max_ratio and not refused else 1


if __name__ == "__main__":
    sys.exit(main())
