"""Concurrent clients against a running local runtime: every answer must be the one its own
request should get.

    make run                                              # in one terminal
    python -m bench.concurrency --seconds 30 --threads 16 # in another (reads .knowledge/)

Each client thread has a tenant of its own (a token minted with the dev token), one knowledge base
in it, and one keep-alive connection, on which it repeats a mixed sequence of GETs, POSTs and a
DELETE, checking each answer against what that request must get:

- ``POST /v1/knowledge-bases/{kb}/items``: 201, the title it sent, its base;
- ``GET /v1/knowledge-items/{item}``: 200, that item with that title;
- ``GET /v1/knowledge-bases``: 200, exactly its own base (another tenant's would be a leak);
- ``POST /v1/tools/search_knowledge``: 200, results from its own base only;
- ``POST /v1/tokens`` then ``DELETE /v1/tokens/{id}``: 201 with a token, then 204 with no body.

Prints requests per second and every mismatch; exit status 1 when there is any.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2

from knowledge_local.state import read_endpoints, read_token, state_dir

CLIENT_SCOPES = ["knowledge:read", "knowledge:write", "knowledge:admin"]


@dataclass
class LoadReport:
    """What the clients saw: requests per kind, and every answer that was not the expected one."""

    seconds: float
    requests: Counter[str] = field(default_factory=Counter)
    mismatches: list[str] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def count(self, kind: str, problem: str | None) -> None:
        with self._lock:
            self.requests[kind] += 1
            if problem is not None:
                self.mismatches.append(f"{kind}: {problem}")

    @property
    def total(self) -> int:
        return sum(self.requests.values())

    def describe(self) -> str:
        rate = self.total / self.seconds if self.seconds else 0.0
        kinds = ", ".join(f"{kind} {count}" for kind, count in sorted(self.requests.items()))
        return (
            f"{self.total} requests in {self.seconds:.1f} s ({rate:.1f}/s; {kinds}); "
            f"{len(self.mismatches)} mismatches"
        )


class _Client:
    """One client thread's tenant, base and connection."""

    def __init__(self, api_url: str, admin: httpx2.Client, number: int, run: str) -> None:
        self.tenant = f"load-{run}-{number}"
        minted = admin.post(
            "/v1/tokens",
            json={"tenant_id": self.tenant, "subject_id": f"client-{number}", "scopes": CLIENT_SCOPES},
        )
        minted.raise_for_status()
        self.http = httpx2.Client(
            base_url=api_url, headers={"Authorization": f"Bearer {minted.json()['token']}"}, timeout=60
        )
        base = self.http.post("/v1/knowledge-bases", json={"name": self.tenant, "scope": "tenant"})
        base.raise_for_status()
        self.base_id = str(base.json()["knowledge_base_id"])
        self.items: list[tuple[str, str]] = []

    def step(self, number: int, report: LoadReport) -> None:
        """One round of the mixed sequence."""
        title = f"{self.tenant} note {number}"
        created = self._call(
            report,
            "post-item",
            "POST",
            f"/v1/knowledge-bases/{self.base_id}/items",
            {"title": title, "content": f"{title}: espresso and rollback runbooks."},
            lambda answer: _created_item(answer, title, self.base_id),
        )
        if created is not None:
            self.items.append((str(created["knowledge_item_id"]), title))
        if self.items:
            item_id, item_title = self.items[number % len(self.items)]
            self._call(
                report,
                "get-item",
                "GET",
                f"/v1/knowledge-items/{item_id}",
                None,
                lambda answer: _item(answer, item_id, item_title),
            )
        self._call(
            report,
            "get-bases",
            "GET",
            "/v1/knowledge-bases",
            None,
            lambda answer: _only_base(answer, self.base_id),
        )
        self._call(
            report,
            "search",
            "POST",
            "/v1/tools/search_knowledge",
            {"query": "espresso rollback"},
            lambda answer: _results_in(answer, self.base_id),
        )
        token = self._call(
            report,
            "post-token",
            "POST",
            "/v1/tokens",
            {"subject_id": f"{self.tenant}-{number}", "scopes": ["knowledge:read"]},
            lambda answer: _minted(answer),
        )
        if token is not None:
            self._call(report, "delete-token", "DELETE", f"/v1/tokens/{token['token_id']}", None, None)

    def _call(
        self,
        report: LoadReport,
        kind: str,
        method: str,
        path: str,
        body: Any,
        check: Callable[[tuple[int, Any]], str | None] | None,
    ) -> Any:
        """Send one request; count it with the first problem its answer has (``None``: none).
        ``check`` receives ``(status, json)``; no ``check`` means ``204`` with an empty body."""
        try:
            response = self.http.request(method, path, json=body)
        except httpx2.HTTPError as error:
            report.count(kind, f"{method} {path} failed: {error!r}")
            return None
        if check is None:
            problem = (
                None if (response.status_code, response.content) == (204, b"") else _unexpected(response)
            )
            report.count(kind, problem)
            return None
        try:
            answer = response.json()
        except ValueError:
            report.count(kind, _unexpected(response))
            return None
        problem = check((response.status_code, answer))
        report.count(kind, None if problem is None else f"{problem} ({_unexpected(response)})")
        return answer if problem is None else None


def _unexpected(response: httpx2.Response) -> str:
    return f"HTTP {response.status_code} {response.text[:160]!r}"


def _created_item(answer: tuple[int, Any], title: str, base_id: str) -> str | None:
    status, body = answer
    if status != 201 or body.get("title") != title or body.get("knowledge_base_id") != base_id:
        return "not the item this request created"
    return None


def _item(answer: tuple[int, Any], item_id: str, title: str) -> str | None:
    status, body = answer
    if status != 200 or body.get("knowledge_item_id") != item_id or body.get("title") != title:
        return "not the item this request read"
    return None


def _only_base(answer: tuple[int, Any], base_id: str) -> str | None:
    status, body = answer
    listed = [base.get("knowledge_base_id") for base in body.get("knowledge_bases", [])]
    return None if status == 200 and listed == [base_id] else f"listed {listed}"


def _results_in(answer: tuple[int, Any], base_id: str) -> str | None:
    status, body = answer
    foreign = [
        result.get("knowledge_base_id")
        for result in body.get("results", [])
        if result.get("knowledge_base_id") != base_id
    ]
    return None if status == 200 and "results" in body and not foreign else f"results from {foreign}"


def _minted(answer: tuple[int, Any]) -> str | None:
    status, body = answer
    return None if status == 201 and body.get("token") and body.get("token_id") else "no token"


def run_mixed_load(api_url: str, admin_token: str, *, threads: int, seconds: float) -> LoadReport:
    """Run ``threads`` clients for ``seconds`` (after their set-up) against ``api_url``;
    ``admin_token`` needs ``platform:admin`` (the dev token has it)."""
    run = uuid.uuid4().hex[:8]
    with httpx2.Client(
        base_url=api_url, headers={"Authorization": f"Bearer {admin_token}"}, timeout=60
    ) as admin:
        clients = [_Client(api_url, admin, number, run) for number in range(threads)]
    report = LoadReport(seconds=seconds)
    start = threading.Barrier(threads)
    deadline: list[float] = []

    def drive(client: _Client) -> None:
        if start.wait() == 0:
            deadline.append(time.monotonic() + seconds)
        start.wait()
        for number in itertools.count():
            if time.monotonic() >= deadline[0]:
                return
            client.step(number, report)

    workers = [threading.Thread(target=drive, args=(client,)) for client in clients]
    started = time.monotonic()
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    report.seconds = time.monotonic() - started
    for client in clients:
        client.http.close()
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.concurrency", description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--threads", type=int, default=16)
    parser.add_argument(
        "--state-dir", type=Path, default=None, help="the runtime's state folder (KNOWLEDGE_STATE_DIR)"
    )
    args = parser.parse_args(argv)
    directory = args.state_dir or state_dir()
    report = run_mixed_load(
        read_endpoints(directory).api_url, read_token(directory), threads=args.threads, seconds=args.seconds
    )
    print(report.describe())
    for mismatch in report.mismatches[:50]:
        print(f"  {mismatch}", file=sys.stderr)
    return 1 if report.mismatches else 0


if __name__ == "__main__":
    raise SystemExit(main())
