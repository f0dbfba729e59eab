"""REST routes of tenant erasure (DESIGN §12 "Tenant erasure"), served by
``KnowledgeAdminFunction``.

| route | answer |
|---|---|
| ``POST /v1/erasures`` | 202 erasure job (``queued``) |
| ``GET /v1/erasures/{erasure_id}`` | 200 erasure job: phase, records erased so far, receipt |

Both need ``knowledge:admin`` and ``memory:admin`` (``platform:admin`` implies both) on a token
without a base allow-list.
"""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler import Request, Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Body

from knowledge.api.http import READ_ERRORS, WRITE_ERRORS, json_response, route_responses
from knowledge.api.principal import CallerPrincipal
from knowledge.api.services import Erasures, erasure_service
from knowledge.api.writes import IdempotencyKey, write_route
from knowledge.contract.erasure import ErasureRequest, ErasureResponse
from knowledge.domain.models import Principal

ERASURES_PATH = "/v1/erasures"
ERASURE_PATH = "/v1/erasures/<erasure_id>"

TAG = "export and import"
ACCESS = (
    "Needs `knowledge:admin` and `memory:admin` (`platform:admin` implies both) and a token without "
    "a base allow-list: an erasure deletes every base and note of the tenant, whoever owns them."
)

router = Router()  # type: ignore[no-untyped-call]  # Powertools leaves Router.__init__ unannotated


def _may_erase(principal: Principal, request: Request) -> None:
    erasure_service().authorize(principal)


@write_route(
    router,
    "POST",
    ERASURES_PATH,
    check=_may_erase,
    body=ErasureRequest,
    operation_id="start_erasure",
    summary="Erase the tenant: every base, item and note, for good (a job), or count it (dry run).",
    description=(
        f"{ACCESS} Answers 202 with the queued job; follow it with `GET /v1/erasures/{{erasure_id}}`. "
        "The job purges every item of every base (table records, live and history index documents, "
        "cached embeddings), then the base, then deletes every note as a hard forget does (versions, "
        "claims, pin, cached embeddings). A real erasure needs `confirm_tenant_id` equal to the "
        "caller's tenant (400 `knowledge_invalid_request` otherwise, with `details.tenant_id`); "
        "`dry_run: true` deletes nothing and its receipt lists what would go, equal to the real "
        "erasure's for the same state. With `knowledge_base_ids`, only those bases are erased (their "
        "items, then the bases; no note): a base purge as a job, for a base too large for one "
        "request; an unknown base is 404. Each receipt entry names the first 100 ids of its kind and "
        "counts them all. Kept: tokens, quotas, data source configurations and export bundles "
        "(expired by the bucket after 7 days)."
    ),
    tags=[TAG],
    status_code=202,
    responses=route_responses(202, "The queued erasure.", *WRITE_ERRORS),
)
def start_erasure(
    request: Annotated[ErasureRequest, Body()],
    principal: CallerPrincipal,
    erasures: Erasures,
    idempotency_key: IdempotencyKey = None,
) -> Response[ErasureResponse]:
    return json_response(202, erasures.start(principal, request))


@router.get(
    ERASURE_PATH,
    operation_id="get_erasure",
    summary="An erasure job: status, phase, records erased so far and its receipt.",
    description=ACCESS,
    tags=[TAG],
    responses=route_responses(200, "The erasure job.", *READ_ERRORS),
)
def get_erasure(erasure_id: str, principal: CallerPrincipal, erasures: Erasures) -> ErasureResponse:
    return erasures.get(principal, erasure_id)
