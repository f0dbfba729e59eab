"""A local API Gateway (HTTP API) for the functions of a SAM template.

``Gateway(template_path)`` serves every ``HttpApi`` route of the template (see ``routes``) on a
threaded HTTP server. Each request becomes a payload 2.0 event (see ``http_api``); routes behind a
Lambda authorizer first call the authorizer's handler and pass its context at
``requestContext.authorizer.lambda``; then the function's handler runs and its answer is written
back. Handlers run through ``invoker.Invoker``: in execution environments of their own, one invocation
at a time each, as on Lambda.

Answers the gateway gives itself, all in the service's error envelope
(``{"type":"error","error":{"code","message","retryable","details"}}``; on AWS, API Gateway answers
these with its own ``{"message": ...}`` bodies):

- no route: 404 ``not_found``;
- identity source missing (e.g. no ``Authorization`` header): 401 ``authentication_required`` with
  ``details.reason`` ``missing``, as the functions answer a request without a token (on AWS, API
  Gateway answers this one itself: 401 ``{"message": "Unauthorized"}``);
- a client address that failed authentication too often (``address_throttle``): 429
  ``rate_limited`` with ``Retry-After`` (retryable), before the authorizer runs;
- authorizer denies: 403 ``forbidden``; authorizer fails or answers an invalid response: 500
  ``internal_error`` (retryable);
- function raises, dies or answers an invalid response: 502 ``function_error``; runs past its
  ``Timeout``: 504 ``function_timeout``; every environment of the function stays busy: 429
  ``too_many_requests`` (these three retryable);
- stopping (``drain``, ``stop``): 503 ``service_unavailable`` with ``Retry-After`` (retryable) for
  a request that arrives on a connection already open (or queued in the listening backlog) once
  the gateway stops, and for one whose invocation the stop ends; the listening socket is closed
  first, after the backlog is taken in, so new connections are refused;
- and what the HTTP server answers before routing (``gateway_server``): 400, 408, 413, 431, 500.

Authorizer answers are not cached by default, so a revocation applies at once. With
``authorizer_cache=True`` the gateway caches them as API Gateway does (``authorizer_cache``): for
the authorizer's ``ReauthorizeEvery`` seconds per identity-source value, context included, failures
not cached.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any

from knowledge.domain.access.bearer_tokens import TokenRejection
from knowledge_local.emulator.api_gateway.address_throttle import QUOTA, AddressThrottle
from knowledge_local.emulator.api_gateway.authorizer_cache import AuthorizerCache
from knowledge_local.emulator.api_gateway.gateway_server import GatewayServer
from knowledge_local.emulator.api_gateway.http_api import (
    HttpRequest,
    HttpResponse,
    InvalidResponseError,
    authorization,
    authorizer_event,
    function_response,
    gateway_error,
    request_event,
)
from knowledge_local.emulator.lambda_runtime.invoker import (
    InvocationError,
    Invocations,
    InvocationThrottledError,
    InvocationTimeoutError,
    Invoker,
    InvokerClosedError,
)
from knowledge_local.emulator.template.routes import (
    AuthorizerSpec,
    FunctionSpec,
    RouteMatch,
    RouteTable,
    load_routes,
)

log = logging.getLogger(__name__)

DRAIN_SECONDS = 2.0
"""How long a stopping gateway waits for the requests in flight before their invocations end."""
ANSWER_SECONDS = 1.0
"""How long it then waits for the last answers (503 for an invocation ended) to be written."""
RETRY_AFTER_SECONDS = 5
"""``Retry-After`` of the 503 answered while stopping."""


class Gateway:
    """Serves ``template_path``'s HTTP API on ``host:port`` (port 0: any free port) in a background
    thread, invoking functions through ``invoker`` (default: an ``Invoker`` of its own, closed by
    ``stop()``; one passed in is left to its owner).

    ``authorizer_cache`` replays an authorizer's answers for its ``ReauthorizeEvery`` seconds, as
    API Gateway does (``clock``: monotonic seconds, for the cache's expiry).

    ``address_throttle`` refuses the requests of a client address that keeps failing
    authentication, before its authorizer runs (``None``: no throttle).

    Use ``with Gateway(path) as gateway:`` or ``start()``/``stop()``; ``url`` is the base URL.
    Raises ``routes.TemplateError`` at construction for an HTTP API it cannot serve.
    """

    def __init__(
        self,
        template_path: str | Path,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        invoker: Invocations | None = None,
        authorizer_cache: bool = False,
        address_throttle: AddressThrottle | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.routes: RouteTable = load_routes(template_path)
        self._throttle = address_throttle
        self._authorizer_cache = AuthorizerCache(clock=clock) if authorizer_cache else None
        self._host, self._port = host, port
        self._given_invoker = invoker
        self._invoker: Invocations | None = None
        self._server: GatewayServer | None = None
        self._thread: threading.Thread | None = None
        self._stopping = False

    @property
    def url(self) -> str:
        """``http://host:port`` of the running server."""
        if self._server is None:
            raise RuntimeError("The gateway is not started.")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def idle_connections(self) -> int:
        """How many kept-alive connections wait for a next request (0 when not serving)."""
        server = self._server
        return 0 if server is None else server.idle_connections

    def bind(self) -> Gateway:
        """Listen on the port without serving yet (connections wait in the backlog until
        ``start``); ``OSError`` when the port is taken. Returns ``self``."""
        self._listen()
        return self

    def start(self) -> Gateway:
        """Bind (unless ``bind`` did) and serve in a daemon thread; returns ``self``."""
        if self._thread is not None:
            return self
        server = self._listen()
        self._invoker = self._given_invoker or Invoker()
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.1}, name="gateway", daemon=True
        )
        self._thread.start()
        log.info("gateway listening", extra={"url": self.url})
        return self

    def drain(self, timeout: float = DRAIN_SECONDS) -> None:
        """The first step of stopping: take in the connections queued in the listening backlog,
        close the listening socket (new connections are refused),
        answer any further request 503 ``service_unavailable``, close each connection after its
        answer, and wait at most ``timeout`` seconds for the requests in flight to be answered."""
        self._stopping = True
        server, thread = self._server, self._thread
        if server is not None:
            server.draining = True
            if thread is not None:
                server.shutdown()
            server.accept_queued()
            server.server_close()
            server.wait_for_answers(time.monotonic() + timeout)

    def stop(self, timeout: float = DRAIN_SECONDS) -> None:
        """Stop serving (``drain``, unless it was called), then close the invoker if it is the
        gateway's own (running invocations are ended: their requests answer 503), wait briefly for
        those last answers and close the connections still open."""
        if not self._stopping:
            self.drain(timeout)
        invoker = self._invoker
        if invoker is not None and invoker is not self._given_invoker:
            self._invoker = None
            invoker.close(timeout=0)
        server, self._server = self._server, None
        thread, self._thread = self._thread, None
        if server is not None:
            server.wait_for_answers(time.monotonic() + ANSWER_SECONDS)
            server.close_idle_connections()
        if thread is not None:
            thread.join(timeout=5)

    def _listen(self) -> GatewayServer:
        if self._server is None:
            self._server = GatewayServer((self._host, self._port), self.handle)
        return self._server

    def __enter__(self) -> Gateway:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # -- one request ------------------------------------------------------------------------------

    def handle(self, request: HttpRequest, port: int) -> HttpResponse:
        """Route, authorize and invoke for one request; never raises. Once stopping, 503."""
        if self._stopping:
            return _stopping()
        return self._handle(request, port)

    def _handle(self, request: HttpRequest, port: int) -> HttpResponse:
        match = self.routes.match(request.method, request.raw_path)
        if match is None:
            return gateway_error(404, "not_found", f"No route matches {request.method} {request.raw_path}.")
        context: dict[str, Any] | None = None
        authorizer = match.route.authorizer
        if authorizer is not None:
            decision = self._authorize(authorizer, request, match, port)
            if isinstance(decision, HttpResponse):
                return decision
            context = decision
        event = request_event(
            request,
            route_key=match.route.route_key,
            path_parameters=match.path_parameters,
            authorizer_context=context,
            port=port,
        )
        function = match.route.function
        try:
            return function_response(self._invoke(function, event))
        except InvokerClosedError:
            return _stopping()
        except InvocationThrottledError as error:
            log.warning("function throttled", extra={"function": function.logical_id, "error": str(error)})
            return gateway_error(
                429, "too_many_requests", "The function is busy; retry later.", retryable=True
            )
        except InvocationTimeoutError as error:
            log.error("function timed out", extra={"function": function.logical_id, "error": str(error)})
            return gateway_error(
                504, "function_timeout", "The function did not answer in time.", retryable=True
            )
        except (InvocationError, InvalidResponseError) as error:
            log.error("function failed", extra={"function": function.logical_id, "error": str(error)})
            return gateway_error(502, "function_error", "The function failed.", retryable=True)

    def _authorize(
        self, authorizer: AuthorizerSpec, request: HttpRequest, match: RouteMatch, port: int
    ) -> HttpResponse | dict[str, Any]:
        headers, query = request.header_map(), request.query_parameters()
        identity = [headers.get(name) for name in authorizer.identity_headers]
        identity += [query.get(name) for name in authorizer.identity_query_strings]
        throttled = self._throttled(request, identity)
        if throttled is not None:
            return throttled
        if any(not value for value in identity):
            self._count(request, identity, authenticated=False)
            missing = TokenRejection.MISSING
            return gateway_error(
                401, "authentication_required", missing.message, details={"reason": missing.value}
            )
        cache, key = self._authorizer_cache, (authorizer.name, *identity)
        decision = cache.get(key) if cache is not None and authorizer.result_ttl_seconds else None
        if decision is None:
            event = authorizer_event(
                request,
                route_key=match.route.route_key,
                path_parameters=match.path_parameters,
                identity_source=[value for value in identity if value],
                port=port,
            )
            try:
                decision = authorization(
                    self._invoke(authorizer.function, event), simple_responses=authorizer.simple_responses
                )
            except InvokerClosedError:
                return _stopping()
            except (InvocationError, InvalidResponseError) as error:
                log.error("authorizer failed", extra={"authorizer": authorizer.name, "error": str(error)})
                return gateway_error(500, "internal_error", "The authorizer failed.", retryable=True)
            if cache is not None:
                cache.put(key, decision, authorizer.result_ttl_seconds)
        allowed, context = decision
        authenticated = allowed and str(context.get("authenticated", "true")).lower() != "false"
        self._count(request, identity, authenticated=authenticated)
        return context if allowed else gateway_error(403, "forbidden", "The authorizer denied the request.")

    def _throttled(self, request: HttpRequest, identity: list[str | None]) -> HttpResponse | None:
        """429 when the client's address is out of failed authentications (``AddressThrottle``)."""
        throttle = self._throttle
        retry_after = None if throttle is None else throttle.retry_after(request.source_ip, identity)
        if throttle is None or retry_after is None:
            return None
        limit = throttle.rate.limit
        response = gateway_error(
            429,
            "rate_limited",
            f"Too many requests without a valid token from this address (over {limit} per second); "
            f"retry after {retry_after} s.",
            retryable=True,
            details={"quota": QUOTA, "limit": limit, "window_seconds": 1, "retry_after_seconds": retry_after},
        )
        response.headers.append(("retry-after", str(retry_after)))
        return response

    def _count(self, request: HttpRequest, identity: list[str | None], *, authenticated: bool) -> None:
        """Tell the throttle how the request's authentication went."""
        if self._throttle is None:
            return
        if authenticated:
            self._throttle.accepted(identity)
        else:
            self._throttle.failed(request.source_ip)

    def _invoke(self, function: FunctionSpec, event: dict[str, Any]) -> Any:
        invoker = self._invoker
        if invoker is None:
            raise InvokerClosedError("The gateway is not started.")
        return invoker.invoke(function, event)


def _stopping() -> HttpResponse:
    """The answer while the runtime stops: the request may be sent again once it runs again."""
    response = gateway_error(
        503, "service_unavailable", "The local runtime is stopping; retry once it runs again.", retryable=True
    )
    response.headers.append(("retry-after", str(RETRY_AFTER_SECONDS)))
    return response
