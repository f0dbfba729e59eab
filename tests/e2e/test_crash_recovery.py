"""``kill -9`` of the whole runtime under a mixed write load, then a restart on the same state folder:
every acknowledged write is there, nothing half-applied, no delete, revocation, forget or archive
undone (docs/reliability.md, "Durable local state").

Client threads each own their entities (items, tokens, notes, queued documents) and write them at
random: create (draft or published), publish, archive, mint and revoke a token, remember, update by
key, supersede, forget (soft, redact, hard), pin and unpin, and send documents to the ingest queue.
Each write answered 2xx is acknowledged and its effect recorded; a write without an answer (the
runtime died under it) makes its entity uncertain, and it is left out of the checks. At a random
moment the runtime's process group gets SIGKILL; the restarted runtime must show every recorded
effect. The gate runs two kill points; ``make fuzz`` (``KNOWLEDGE_FUZZ=long``) runs twenty, with a
fresh seed each time.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2

from tests.e2e.runtime_process import RuntimeProcess, eventually, start_runtime
from tests.support.fuzzing import budget, is_long

KILL_POINTS = budget(2, 20)
WRITERS = 3
LOAD_SECONDS = (0.5, 3.0)
"""Each kill comes after a random time of load within these bounds, once every writer has had a
write acknowledged (the functions' environments are started by then)."""
WARM_UP_TIMEOUT_SECONDS = 90.0


@dataclass
class Item:
    item_id: str
    marker: str
    answer: dict[str, Any]
    """The item as the last acknowledged write answered it."""


@dataclass
class Note:
    note_id: str
    marker: str
    content: str
    key: str | None = None
    pinned: bool = False
    superseded_by: str | None = None
    forgotten: str | None = None


@dataclass
class Ledger:
    """What one writer had acknowledged, and what it can no longer be sure of."""

    items: dict[str, Item] = field(default_factory=dict)
    tokens: dict[str, tuple[str, bool]] = field(default_factory=dict)
    """token id -> (token, revoked)"""
    notes: dict[str, Note] = field(default_factory=dict)
    queued: dict[str, str] = field(default_factory=dict)
    """external id -> marker of a document acknowledged by the ingest queue"""
    erased: set[str] = field(default_factory=set)
    """markers of notes redacted or deleted: they must be nowhere"""
    uncertain: set[str] = field(default_factory=set)
    acknowledged: Counter[str] = field(default_factory=Counter)


class RuntimeGoneError(Exception):
    """A request got no answer: the runtime was killed under it."""


class Writer:
    def __init__(self, number: int, runtime: RuntimeProcess, base_id: str, ledger: Ledger, seed: int) -> None:
        self.number = number
        self.base_id = base_id
        self.ledger = ledger
        self.random = random.Random(seed)
        self.api = runtime.http()
        self.sqs = runtime.aws("sqs")
        self.queue_url = runtime.endpoints["ingest_queue_url"]
        self.token = runtime.token
        self.count = 0
        self.warm = threading.Event()

    def run(self, stop: threading.Event) -> None:
        creating = [self.create_item, self.mint, self.remember, self.update_by_key, self.queue_document]
        changing = [
            self.publish,
            self.archive,
            self.revoke,
            self.supersede,
            self.forget,
            self.pin,
            self.unpin,
        ]
        operations = creating + 2 * changing  # a change with nothing to change is skipped at once
        try:
            while not stop.is_set():
                self.random.choice(operations)()
        except RuntimeGoneError:
            pass
        finally:
            self.api.close()

    # -- requests ---------------------------------------------------------------------------------

    def _marker(self) -> str:
        self.count += 1
        return f"zq{self.number}x{self.count}x{self.random.getrandbits(40):x}"

    def _send(self, method: str, path: str, entity: str, body: dict[str, Any] | None = None) -> Any:
        """The JSON answer of a 2xx; ``None`` for a refusal (nothing written); ``RuntimeGoneError`` with
        ``entity`` made uncertain when no answer came."""
        try:
            response = self.api.request(method, path, json=body)
        except httpx2.TransportError:
            self.ledger.uncertain.add(entity)
            raise RuntimeGoneError from None
        if response.status_code >= 500:
            self.ledger.uncertain.add(entity)
            raise RuntimeGoneError
        if response.status_code >= 300:
            return None
        return response.json() if response.content else {}

    def _ack(self, kind: str) -> None:
        self.ledger.acknowledged[kind] += 1
        self.warm.set()

    def _pick(self, pool: dict[str, Any], usable: Any) -> str | None:
        keys = [key for key, value in pool.items() if key not in self.ledger.uncertain and usable(value)]
        return self.random.choice(keys) if keys else None

    # -- knowledge --------------------------------------------------------------------------------

    def create_item(self) -> None:
        marker = self._marker()
        publish = self.random.random() < 0.6
        answer = self._send(
            "POST",
            f"/v1/knowledge-bases/{self.base_id}/items",
            marker,
            {"title": f"Item {marker}", "content": f"Crash test item {marker}.", "publish": publish},
        )
        if answer is not None:
            self.ledger.items[answer["knowledge_item_id"]] = Item(answer["knowledge_item_id"], marker, answer)
            self._ack("create")
        self.ledger.uncertain.discard(marker)

    def publish(self) -> None:
        item_id = self._pick(self.ledger.items, lambda item: item.answer["status"] == "draft")
        if item_id is None:
            return
        item = self.ledger.items[item_id]
        answer = self._send(
            "POST",
            f"/v1/knowledge-items/{item_id}/publish",
            item_id,
            {"revision_id": item.answer["latest_revision_id"], "expected_version": item.answer["version"]},
        )
        if answer is not None:
            item.answer = answer
            self._ack("publish")

    def archive(self) -> None:
        item_id = self._pick(self.ledger.items, lambda item: item.answer["status"] != "archived")
        if item_id is None:
            return
        item = self.ledger.items[item_id]
        answer = self._send(
            "POST",
            f"/v1/knowledge-items/{item_id}/archive",
            item_id,
            {"expected_version": item.answer["version"]},
        )
        if answer is not None:
            item.answer = answer
            self._ack("archive")

    def mint(self) -> None:
        entity = self._marker()
        answer = self._send(
            "POST",
            "/v1/tokens",
            entity,
            {"subject_id": "dev", "scopes": ["knowledge:read"], "expires_in": 7200},
        )
        if answer is not None:
            self.ledger.tokens[answer["token_id"]] = (answer["token"], False)
            self._ack("mint")

    def revoke(self) -> None:
        token_id = self._pick(self.ledger.tokens, lambda token: not token[1])
        if token_id is None:
            return
        if self._send("DELETE", f"/v1/tokens/{token_id}", token_id) is not None:
            self.ledger.tokens[token_id] = (self.ledger.tokens[token_id][0], True)
            self._ack("revoke")

    def queue_document(self) -> None:
        marker = self._marker()
        body = {
            "op": "upsert",
            "knowledge_base_id": self.base_id,
            "external_id": marker,
            "title": f"Queued {marker}",
            "content": f"Queued document {marker}.",
            "publish": True,
        }
        try:
            self.sqs.send_message(
                QueueUrl=self.queue_url,
                MessageBody=json.dumps(body),
                MessageAttributes={
                    "Authorization": {"DataType": "String", "StringValue": f"Bearer {self.token}"}
                },
            )
        except Exception:  # no answer: the runtime is gone
            raise RuntimeGoneError from None
        self.ledger.queued[marker] = marker
        self._ack("queue")

    # -- memory -----------------------------------------------------------------------------------

    def _live_note(self) -> str | None:
        return self._pick(
            self.ledger.notes, lambda note: note.forgotten is None and note.superseded_by is None
        )

    def remember(self) -> None:
        marker = self._marker()
        content = f"Crash test note {marker}."
        answer = self._send("POST", "/v1/tools/remember", marker, {"content": content})
        if answer is not None:
            note_id = answer["note"]["note_id"]
            self.ledger.notes[note_id] = Note(note_id, marker, content)
            self._ack("remember")
        self.ledger.uncertain.discard(marker)

    def update_by_key(self) -> None:
        keyed = self._pick(
            self.ledger.notes,
            lambda note: note.key is not None and note.forgotten is None and not note.superseded_by,
        )
        if keyed is None or self.random.random() < 0.3:
            marker = self._marker()
            key = f"key.{self.number}.{self.count}"  # not the marker: a key is no text to erase
            content = f"Keyed note {marker} version one."
            answer = self._send(
                "POST", "/v1/tools/remember", marker, {"content": content, "semantic_key": key}
            )
            if answer is not None:
                note_id = answer["note"]["note_id"]
                self.ledger.notes[note_id] = Note(note_id, marker, content, key=key)
                self._ack("remember")
            self.ledger.uncertain.discard(marker)
            return
        note = self.ledger.notes[keyed]
        content = f"Keyed note {note.marker} changed {self.random.getrandbits(32):x}."
        answer = self._send(
            "POST", "/v1/tools/remember", keyed, {"content": content, "semantic_key": note.key}
        )
        if answer is not None:
            assert answer["note"]["note_id"] == keyed
            note.content = content
            self._ack("update_by_key")

    def supersede(self) -> None:
        old = self._live_note()
        if old is None:
            return
        marker = self._marker()
        content = f"Superseding note {marker}."
        answer = self._send("POST", "/v1/tools/remember", old, {"content": content, "supersedes": [old]})
        if answer is not None:
            note_id = answer["note"]["note_id"]
            self.ledger.notes[old].superseded_by = note_id
            self.ledger.notes[note_id] = Note(note_id, marker, content)
            self._ack("supersede")

    def forget(self) -> None:
        note_id = self._live_note()
        if note_id is None:
            return
        mode = self.random.choice(["soft", "redact", "hard"])
        if (
            self._send("POST", "/v1/tools/forget_memory", note_id, {"note_id": note_id, "mode": mode})
            is not None
        ):
            note = self.ledger.notes[note_id]
            note.forgotten = mode
            if mode != "soft":
                self.ledger.erased.add(note.marker)
            self._ack(f"forget_{mode}")

    def pin(self) -> None:
        note_id = self._pick(
            self.ledger.notes, lambda note: note.forgotten is None and not note.superseded_by
        )
        if note_id is None:
            return
        if self._send("POST", "/v1/tools/pin_memory", note_id, {"note_id": note_id}) is not None:
            self.ledger.notes[note_id].pinned = True
            self._ack("pin")

    def unpin(self) -> None:
        note_id = self._pick(self.ledger.notes, lambda note: note.pinned and note.forgotten is None)
        if note_id is None:
            return
        if self._send("POST", "/v1/tools/unpin_memory", note_id, {"note_id": note_id}) is not None:
            self.ledger.notes[note_id].pinned = False
            self._ack("unpin")


# -- the run ------------------------------------------------------------------------------------------


def _kill_the_group(runtime: RuntimeProcess) -> None:
    """SIGKILL to the runtime's process group, as a closed terminal or an OOM kill of the tree."""
    children = runtime.descendants()
    os.killpg(runtime.process.pid, signal.SIGKILL)
    runtime.process.wait(timeout=30)
    for pid in children:  # anything that left the group goes too
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def _start(work_dir: Path) -> RuntimeProcess:
    runtime = start_runtime(work_dir, seed_dir=None, own_group=True)
    try:
        runtime.wait_until_ready()
    except BaseException:
        _kill_the_group(runtime)
        raise
    return runtime


def _check(runtime: RuntimeProcess, ledgers: list[Ledger], base_id: str) -> None:
    """Every acknowledged effect is in the restarted runtime."""
    with runtime.http() as api:
        for ledger in ledgers:
            _check_items(api, ledger)
            _check_tokens(runtime, ledger)
            _check_notes(api, ledger)
            _check_queued(api, ledger, base_id)
    _check_erased(runtime, ledgers)


def _check_items(api: httpx2.Client, ledger: Ledger) -> None:
    for item_id, item in ledger.items.items():
        if item_id in ledger.uncertain:
            continue
        stored = api.get(f"/v1/knowledge-items/{item_id}")
        assert stored.status_code == 200, (item_id, stored.text)
        found = stored.json()
        for name in ("status", "version", "current_revision_id", "latest_revision_id"):
            assert found[name] == item.answer[name], (item_id, name, found[name], item.answer[name])
        revisions = api.get(f"/v1/knowledge-items/{item_id}/revisions").json()["revisions"]
        assert item.answer["latest_revision_id"] in [
            revision["knowledge_revision_id"] for revision in revisions
        ]
        if item.answer["status"] == "published":
            eventually(lambda item=item: _top_hit(api, item.marker) == item.item_id, timeout=60)
        else:
            assert _top_hit(api, item.marker) != item_id, (item_id, item.answer["status"])


def _top_hit(api: httpx2.Client, query: str) -> str | None:
    """The first item ``search_knowledge`` finds for ``query`` (a marker only one item holds)."""
    answer = api.post("/v1/tools/search_knowledge", json={"query": query, "max_results": 3})
    assert answer.status_code == 200, answer.text
    results = answer.json()["results"]
    return str(results[0]["knowledge_item_id"]) if results else None


def _check_tokens(runtime: RuntimeProcess, ledger: Ledger) -> None:
    for token_id, (token, revoked) in ledger.tokens.items():
        if token_id in ledger.uncertain:
            continue
        with runtime.http(token) as client:
            status = client.get("/v1/knowledge-bases").status_code
        assert status == (401 if revoked else 200), (token_id, revoked, status)


def _check_notes(api: httpx2.Client, ledger: Ledger) -> None:
    for note_id, note in ledger.notes.items():
        if note_id in ledger.uncertain:
            continue
        stored = api.get(f"/v1/notes/{note_id}")
        if note.forgotten is not None:
            assert stored.status_code == 404, (note_id, note.forgotten, stored.text)
            continue
        assert stored.status_code == 200, (note_id, stored.text)
        found = stored.json()["note"] if "note" in stored.json() else stored.json()
        assert found["content"] == note.content, (note_id, found["content"], note.content)
        assert found["superseded_by"] == note.superseded_by, (note_id, found["superseded_by"])
        if note.superseded_by is None:
            assert found["pinned"] == note.pinned, (note_id, found["pinned"], note.pinned)


def _check_queued(api: httpx2.Client, ledger: Ledger, base_id: str) -> None:
    for external_id in ledger.queued:

        def stored(external_id: str = external_id) -> bool:
            answer = api.get(f"/v1/knowledge-bases/{base_id}/items", params={"external_id": external_id})
            return answer.status_code == 200 and len(answer.json()["items"]) == 1

        eventually(stored, timeout=90)


def _check_erased(runtime: RuntimeProcess, ledgers: list[Ledger]) -> None:
    """Redacted and deleted notes' text is in no item of the table and no file of the state."""
    erased = {marker for ledger in ledgers for marker in ledger.erased}
    if not erased:
        return
    dynamodb = runtime.aws("dynamodb")
    table = runtime.endpoints["table_name"]
    stored = json.dumps(
        [item for page in dynamodb.get_paginator("scan").paginate(TableName=table) for item in page["Items"]],
        default=str,
    )
    on_disk = b"".join(
        path.read_bytes()
        for path in runtime.state_dir.iterdir()
        if path.name == "table.jsonl" or path.name.startswith("journal-")
    ).decode("utf-8", errors="replace")
    for marker in erased:
        assert marker not in stored, marker
        assert marker not in on_disk, marker


def test_crash_recovery_kill_9_under_load_loses_no_acknowledged_write(tmp_path: Path) -> None:
    seed = random.SystemRandom().getrandbits(32) if is_long() else 25
    chooser = random.Random(seed)
    ledgers = [Ledger() for _ in range(WRITERS)]
    runtime = _start(tmp_path)
    try:
        with runtime.http() as api:
            created = api.post("/v1/knowledge-bases", json={"name": "crash", "scope": "tenant"})
            assert created.status_code == 201, created.text
            base_id = created.json()["knowledge_base_id"]
        for kill in range(KILL_POINTS):
            stop = threading.Event()
            writers = [
                Writer(number, runtime, base_id, ledgers[number], chooser.getrandbits(32))
                for number in range(WRITERS)
            ]
            threads = [threading.Thread(target=writer.run, args=(stop,)) for writer in writers]
            for thread in threads:
                thread.start()
            deadline = time.monotonic() + WARM_UP_TIMEOUT_SECONDS
            for writer in writers:
                writer.warm.wait(max(deadline - time.monotonic(), 0))
            time.sleep(chooser.uniform(*LOAD_SECONDS))
            _kill_the_group(runtime)
            stop.set()
            for thread in threads:
                thread.join(timeout=60)
            runtime = _start(tmp_path)
            assert "Restoring the state kept in" in runtime.log
            _check(runtime, ledgers, base_id)
            acknowledged = sum(ledger.acknowledged.total() for ledger in ledgers)
            print(f"kill point {kill + 1}: {acknowledged} acknowledged, checked")
    finally:
        if runtime.process.poll() is None:
            runtime.stop()
    totals: Counter[str] = Counter()
    for ledger in ledgers:
        totals.update(ledger.acknowledged)
    print(f"seed {seed}, {KILL_POINTS} kill points, acknowledged writes: {dict(sorted(totals.items()))}")
    assert totals.total() > 0
