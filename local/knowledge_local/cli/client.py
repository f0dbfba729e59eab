"""A small HTTP client of the knowledge API (DESIGN §5 and §6) for the ``knowledge`` command and the
runtime's seeding. JSON in and out, bearer token on every call.

Every method returns the decoded JSON answer (``{}`` for a 204) or raises ``ApiError``: for an error
answer it carries the HTTP status and the envelope's ``code``, ``message`` and ``details`` (API
Gateway's own ``{"message"}`` answers get the code ``gateway_error``); for an unreachable server the
code ``unreachable``.

A retryable 429 (a tenant's requests or writes quota, every environment of a function busy) is
refused before any work is done, so every call, writes included, is sent again after the answer's
``Retry-After`` (at most ``MAX_RETRY_AFTER_SECONDS``), up to ``RATE_LIMIT_ATTEMPTS`` sends in all;
then, or for a 429 that is not retryable (the stored items quota), it raises as any error.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from types import TracebackType
from typing import Any

import httpx2

DEFAULT_TIMEOUT_SECONDS = 60.0
LIST_PAGE_SIZE = 100
RATE_LIMIT_ATTEMPTS = 6
"""Sends of one call while it is answered a retryable 429."""
MAX_RETRY_AFTER_SECONDS = 10
"""The longest ``Retry-After`` waited for; a longer one is raised at once."""


class ApiError(Exception):
    """An error answer of the API, or no answer at all; ``details`` is the envelope's
    ``error.details`` (``{}`` when it has none)."""

    def __init__(
        self, status: int | None, code: str, message: str, details: Mapping[str, Any] | None = None
    ) -> None:
        super().__init__(f"{code}: {message}")
        self.status, self.code, self.message = status, code, message
        self.details: dict[str, Any] = dict(details or {})

    def detail_lines(self) -> list[str]:
        """The details as lines a person can read: one per field problem of ``details.fields``
        (``max_results: must be between 1 and 50``), then one per other entry (``reason: expired``)."""
        lines: list[str] = []
        for name, value in self.details.items():
            if name == "fields" and isinstance(value, list):
                lines.extend(_field_line(problem) for problem in value)
            else:
                rendered = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
                lines.append(f"{name}: {rendered}")
        return lines


def _field_line(problem: Any) -> str:
    if isinstance(problem, Mapping):
        return f"{problem.get('field', 'body')}: {problem.get('problem', 'invalid')}"
    return str(problem)


class KnowledgeClient:
    """The API at ``api_url`` (e.g. ``http://127.0.0.1:3000``) as ``token``'s holder."""

    def __init__(
        self,
        api_url: str,
        token: str,
        *,
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
        transport: httpx2.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.api_url = api_url.rstrip("/")
        options: dict[str, Any] = {} if transport is None else {"transport": transport}
        self._http = httpx2.Client(
            base_url=self.api_url, headers={"Authorization": f"Bearer {token}"}, timeout=timeout, **options
        )
        self._sleep = sleep

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> KnowledgeClient:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # -- the tool ---------------------------------------------------------------------------------

    def search_knowledge(self, **arguments: Any) -> dict[str, Any]:
        """``POST /v1/tools/search_knowledge`` with the tool's arguments (``None`` values left out)."""
        body = {name: value for name, value in arguments.items() if value is not None}
        return self.request("POST", "/v1/tools/search_knowledge", json=body)

    def call_tool(self, name: str, **arguments: Any) -> dict[str, Any]:
        """``POST /v1/tools/{name}`` (``remember``, ``search_memory``, ``recall_context``,
        ``forget_memory``, ``pin_memory``, ``unpin_memory``) with the tool's arguments (``None``
        values left out)."""
        return self.call_tool_with_status(name, **arguments)[1]

    def call_tool_with_status(self, name: str, **arguments: Any) -> tuple[int, dict[str, Any]]:
        """``call_tool``, with the HTTP status of the answer (201 when something was created)."""
        body = {key: value for key, value in arguments.items() if value is not None}
        return self._send("POST", f"/v1/tools/{name}", json=body)

    def pins(self) -> Iterator[dict[str, Any]]:
        """Every pin that applies to the caller (``GET /v1/pins``), in pin order, following
        ``next_token``."""
        yield from self._paged("/v1/pins", "pins", {})

    # -- bases and items --------------------------------------------------------------------------

    def bases(self) -> Iterator[dict[str, Any]]:
        """Every base the caller can list, following ``next_token``."""
        yield from self._paged("/v1/knowledge-bases", "knowledge_bases", {})

    def create_base(self, name: str, *, scope: str = "tenant", team_id: str | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {"name": name, "scope": scope}
        if team_id is not None:
            body["team_id"] = team_id
        return self.request("POST", "/v1/knowledge-bases", json=body)

    def bases_named(self, name: str) -> list[dict[str, Any]]:
        """The active bases called ``name`` (the API allows several), in listing order."""
        return [base for base in self.bases() if base.get("name") == name and base.get("status") == "active"]

    def base_with_id(self, knowledge_base_id: str) -> dict[str, Any] | None:
        """The base ``knowledge_base_id`` when the caller can list it."""
        return next(
            (base for base in self.bases() if base.get("knowledge_base_id") == knowledge_base_id), None
        )

    def put_item(
        self,
        knowledge_base_id: str,
        *,
        title: str,
        content: str,
        external_id: str | None = None,
        source: Mapping[str, str | None] | None = None,
        publish: bool = True,
        segments: Sequence[Mapping[str, Any]] = (),
    ) -> tuple[int, dict[str, Any]]:
        """``POST /v1/knowledge-bases/{kb}/items``: a new item, or a new revision of the item with
        ``external_id``, with its ``segments`` when there are any. Returns the HTTP status (201
        created, 200 otherwise) and the item."""
        body: dict[str, Any] = {"title": title, "content": content, "publish": publish}
        if external_id is not None:
            body["external_id"] = external_id
        if source is not None:
            body["source"] = dict(source)
        if segments:
            body["segments"] = [dict(segment) for segment in segments]
        return self._send("POST", f"/v1/knowledge-bases/{knowledge_base_id}/items", json=body)

    def items(self, knowledge_base_id: str) -> Iterator[dict[str, Any]]:
        """Every live (not archived) item of the base, following ``next_token``."""
        yield from self._paged(f"/v1/knowledge-bases/{knowledge_base_id}/items", "items", {})

    def item(self, knowledge_item_id: str) -> dict[str, Any]:
        """``GET /v1/knowledge-items/{item}`` (with ``indexed_revision_id``)."""
        return self.request("GET", f"/v1/knowledge-items/{knowledge_item_id}")

    def latest_revision(self, knowledge_item_id: str) -> dict[str, Any] | None:
        """The item's newest revision (``sha256``, ``title``, ``source``, ``is_current``...)."""
        page = self.request("GET", f"/v1/knowledge-items/{knowledge_item_id}/revisions", params={"limit": 1})
        revisions = page.get("revisions") or []
        return revisions[0] if revisions else None

    def publish(
        self, knowledge_item_id: str, knowledge_revision_id: str, *, expected_version: int
    ) -> dict[str, Any]:
        return self.request(
            "POST",
            f"/v1/knowledge-items/{knowledge_item_id}/publish",
            json={"revision_id": knowledge_revision_id, "expected_version": expected_version},
        )

    def archive_item(self, knowledge_item_id: str, *, expected_version: int) -> dict[str, Any]:
        """``POST /v1/knowledge-items/{item}/archive``: the archived item."""
        return self.request(
            "POST",
            f"/v1/knowledge-items/{knowledge_item_id}/archive",
            json={"expected_version": expected_version},
        )

    def create_token(self, **fields: Any) -> dict[str, Any]:
        """``POST /v1/tokens``; ``None`` values are left out."""
        body = {name: value for name, value in fields.items() if value is not None}
        return self.request("POST", "/v1/tokens", json=body)

    def tokens(
        self, *, limit: int, next_token: str | None = None, tenant_id: str | None = None
    ) -> dict[str, Any]:
        """One page of ``GET /v1/tokens``: ``{"tokens": [...], "next_token"}``."""
        params = {"limit": limit, "next_token": next_token, "tenant_id": tenant_id}
        return self.request(
            "GET", "/v1/tokens", params={name: value for name, value in params.items() if value is not None}
        )

    def revoke_token(self, token_id: str) -> None:
        """``DELETE /v1/tokens/{token_id}`` (204; revoking a revoked token succeeds too)."""
        self.request("DELETE", f"/v1/tokens/{token_id}")

    # -- data sources -----------------------------------------------------------------------------

    def data_sources(self, knowledge_base_id: str) -> list[dict[str, Any]]:
        """The base's data sources (``GET .../data-sources``)."""
        answer = self.request("GET", f"/v1/knowledge-bases/{knowledge_base_id}/data-sources")
        return list(answer.get("data_sources") or [])

    def create_data_source(
        self, knowledge_base_id: str, *, bucket: str, prefix: str, include: list[str]
    ) -> dict[str, Any]:
        body = {"type": "s3", "bucket": bucket, "prefix": prefix, "include": include}
        return self.request("POST", f"/v1/knowledge-bases/{knowledge_base_id}/data-sources", json=body)

    def start_sync(self, knowledge_base_id: str, data_source_id: str) -> dict[str, Any]:
        """``POST .../data-sources/{ds}/sync``: the queued job."""
        return self.request(
            "POST", f"/v1/knowledge-bases/{knowledge_base_id}/data-sources/{data_source_id}/sync"
        )

    def sync_job(self, knowledge_base_id: str, sync_job_id: str) -> dict[str, Any]:
        return self.request("GET", f"/v1/knowledge-bases/{knowledge_base_id}/sync-jobs/{sync_job_id}")

    # -- transport --------------------------------------------------------------------------------

    def request(
        self, method: str, path: str, *, json: Any = None, params: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        return self._send(method, path, json=json, params=params)[1]

    def _send(
        self, method: str, path: str, *, json: Any = None, params: Mapping[str, Any] | None = None
    ) -> tuple[int, dict[str, Any]]:
        for attempt in range(1, RATE_LIMIT_ATTEMPTS + 1):
            try:
                response = self._http.request(method, path, json=json, params=params)
            except httpx2.TransportError as error:
                raise ApiError(
                    None,
                    "unreachable",
                    f"cannot reach the knowledge API at {self.api_url} ({error}); is `make run` running?",
                ) from None
            try:
                body = response.json()
            except ValueError:
                body = None
            delay = _retry_after(response, body)
            if delay is None or attempt == RATE_LIMIT_ATTEMPTS:
                break
            self._sleep(delay)
        if response.status_code == 204:
            return response.status_code, {}
        if response.is_success and isinstance(body, dict):
            return response.status_code, body
        raise _api_error(response.status_code, body, response.text)

    def _paged(self, path: str, key: str, params: dict[str, Any]) -> Iterator[dict[str, Any]]:
        query = {"limit": LIST_PAGE_SIZE, **params}
        while True:
            page = self.request("GET", path, params=query)
            yield from page.get(key) or []
            if not page.get("next_token"):
                return
            query["next_token"] = page["next_token"]


def _retry_after(response: httpx2.Response, body: Any) -> float | None:
    """Seconds to wait before sending again a call answered a retryable 429; ``None``: do not."""
    if response.status_code != 429:
        return None
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict) or error.get("retryable") is not True:
        return None
    header = response.headers.get("Retry-After", "1").strip()
    if not header.isdigit() or int(header) > MAX_RETRY_AFTER_SECONDS:
        return None
    return float(int(header))


def _api_error(status: int, body: Any, text: str) -> ApiError:
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        error = body["error"]
        details = error.get("details")
        return ApiError(
            status,
            str(error.get("code", "error")),
            str(error.get("message", "")),
            details if isinstance(details, Mapping) else None,
        )
    if isinstance(body, dict) and "message" in body:
        return ApiError(status, "gateway_error", str(body["message"]))
    return ApiError(status, "http_error", f"HTTP {status}: {text[:200]}")
