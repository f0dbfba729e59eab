"""``Idempotency-Key`` on write routes, with Powertools idempotency on the knowledge table.

A write sent with ``Idempotency-Key: <1..255 characters>`` runs once: a repeat within
``IDEMPOTENCY_TTL_SECONDS`` (one hour by default) answers the first answer, status and body, with
``Idempotent-Replayed: true``, and changes nothing. Records live in the knowledge table
(``PK = "IDEMPOTENCY"``, ``SK = "knowledge-api#<sha256>"``, TTL attribute ``expiration``), keyed by
tenant, subject, method and path, and the header value, so two callers (or two routes) never share
a key. Powertools' in-progress record makes concurrent repeats safe; an invocation that dies is
released when its Lambda time is up.

Authorization comes before the store: the route runs the service's read-only check of the write
(scope, and visibility of the target base or item) before ``IdempotentWrites.run`` consults any
record, so a replay is answered only to a caller who may make that write now. The key names the
subject, not the token, on purpose: the same caller retrying with a rotated token still gets its
replay, and a token of the same subject with fewer scopes or a narrower base allow-list is refused
by the check (403/404) before any stored answer is read.

- The same key with a different body is refused with 400 ``validation_error`` (``details.header``):
  the request is malformed, not racing anything, and a 409 would tell clients to re-read a version.
- A repeat while the first request still runs answers 409 ``knowledge_conflict``, ``retryable``.
- Only successes are kept: a write that failed (a 409 on a stale version, a 404) holds no record,
  so the same key can be retried after fixing the request.
- A token (``POST /v1/tokens``) is shown once and never stored: the record keeps the status only,
  and a repeat answers 409 ``knowledge_conflict`` instead of a second token.
- The idempotency table unreachable: 503 ``dependency_unavailable``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from functools import cache
from typing import TYPE_CHECKING, Any

from knowledge.domain.models import Principal
from knowledge.errors import (
    ConflictError,
    DependencyUnavailableError,
    KnowledgeError,
    RequestValidationError,
)
from knowledge.observability import logger

if TYPE_CHECKING:  # Powertools' idempotency (and boto3 with it) is imported by the first keyed write
    from aws_lambda_powertools.utilities.idempotency.persistence.base import BasePersistenceLayer
    from aws_lambda_powertools.utilities.idempotency.persistence.datarecord import DataRecord
    from aws_lambda_powertools.utilities.idempotency.serialization.base import BaseIdempotencySerializer
    from aws_lambda_powertools.utilities.typing import LambdaContext

IDEMPOTENCY_KEY_HEADER = "Idempotency-Key"
REPLAYED_HEADER = "Idempotent-Replayed"
KEY_MAX_CHARS = 255
KEY_PREFIX = "knowledge-api"
"""Stable across function renames, so a key outlives a redeployment."""


@dataclass(frozen=True)
class Answer:
    """A write's HTTP answer. ``secret`` bodies (a new token) are never stored; ``replayed`` marks an
    answer read back from a first request."""

    status: int
    body: Mapping[str, Any]
    secret: bool = False
    replayed: bool = field(default=False, compare=False)


class RequestInProgressError(KnowledgeError):
    """The first request with this ``Idempotency-Key`` is still running; retry shortly."""

    code = "knowledge_conflict"
    retryable = True

    def __init__(self) -> None:
        super().__init__(
            "A request with this Idempotency-Key is still in progress; retry shortly.",
            {"current_version": None, "header": IDEMPOTENCY_KEY_HEADER},
        )


@cache
def _answer_serializer() -> BaseIdempotencySerializer:
    """Stores an ``Answer`` as ``{status, body, secret}`` (a secret answer's body is left out)."""
    from aws_lambda_powertools.utilities.idempotency.serialization.base import BaseIdempotencySerializer

    class AnswerSerializer(BaseIdempotencySerializer):
        def to_dict(self, data: Answer) -> dict[str, Any]:
            return {
                "status": data.status,
                "body": {} if data.secret else dict(data.body),
                "secret": data.secret,
            }

        def from_dict(self, data: dict[str, Any]) -> Answer:
            return Answer(
                status=int(data["status"]), body=dict(data["body"]), secret=bool(data.get("secret"))
            )

    return AnswerSerializer()


def _replayed(response: Any, idempotent_data: DataRecord) -> Any:
    return replace(response, replayed=True) if isinstance(response, Answer) else response


@dataclass(frozen=True)
class IdempotentWrites:
    """Runs writes at most once per ``Idempotency-Key`` (see the module docs)."""

    persistence: BasePersistenceLayer
    expires_after_seconds: int

    def run(
        self,
        write: Callable[[], Answer],
        *,
        principal: Principal,
        route: str,
        key: str | None,
        payload: Any,
        context: LambdaContext | None,
    ) -> Answer:
        """``write()``, or the answer of the first request with ``key``; without a key, just ``write()``.

        ``route`` is the method and concrete path; ``payload`` (JSON-ready) is compared with the first
        request's. Raises ``RequestValidationError``, ``RequestInProgressError``, ``ConflictError``
        (a secret answer cannot be replayed) or ``DependencyUnavailableError``; errors of ``write``
        propagate unchanged.
        """
        if key is None:
            return write()
        from aws_lambda_powertools.utilities.idempotency import IdempotencyConfig, idempotent_function
        from aws_lambda_powertools.utilities.idempotency.exceptions import (
            IdempotencyAlreadyInProgressError,
            IdempotencyInconsistentStateError,
            IdempotencyPersistenceLayerError,
            IdempotencyValidationError,
        )

        config = IdempotencyConfig(
            event_key_jmespath="[tenant_id, subject_id, route, key]",
            payload_validation_jmespath="body",
            raise_on_no_idempotency_key=True,
            expires_after_seconds=self.expires_after_seconds,
            hash_function="sha256",
            response_hook=_replayed,
        )
        if context is not None:
            config.register_lambda_context(context)
        once = idempotent_function(
            lambda request: write(),
            data_keyword_argument="request",
            persistence_store=self.persistence,
            config=config,
            output_serializer=_answer_serializer(),
            key_prefix=KEY_PREFIX,
        )
        request = {
            "tenant_id": principal.tenant_id,
            "subject_id": principal.subject_id,
            "route": route,
            "key": key,
            "body": payload,
        }
        try:
            answer: Answer = once(request=request)
        except IdempotencyValidationError as error:
            raise RequestValidationError(
                "This Idempotency-Key was already used with a different request; use a new key.",
                {"header": IDEMPOTENCY_KEY_HEADER},
            ) from error
        except IdempotencyAlreadyInProgressError as error:
            raise RequestInProgressError() from error
        except (IdempotencyPersistenceLayerError, IdempotencyInconsistentStateError) as error:
            logger.warning("idempotency store unavailable", extra={"error_type": type(error).__name__})
            raise DependencyUnavailableError(
                "The idempotency store is temporarily unavailable; retry later."
            ) from error
        if answer.replayed:
            logger.info("idempotent request replayed", extra={"route": route, "status": answer.status})
            if answer.secret:
                raise ConflictError(
                    "The request with this Idempotency-Key already succeeded; its answer is shown only once.",
                    current_version=None,
                )
        return answer
