"""REST routes of export and import (DESIGN §9 "Export and import"), served by
``KnowledgeAdminFunction``.

| route | answer |
|---|---|
| ``POST /v1/exports`` | 202 export job (``queued``) |
| ``GET /v1/exports/{export_id}`` | 200 export job (+ ``download_url`` once ``succeeded``) |
| ``POST /v1/imports`` | 201 import job (``awaiting_upload``, ``upload_url``) |
| ``POST /v1/imports/{import_id}/start`` | 202 import job (``queued``) |
| ``GET /v1/imports/{import_id}`` | 200 import job |

Every route needs ``knowledge:admin`` and ``memory:admin`` (``platform:admin`` implies both). A
caller with a base allow-list is refused (403): a bundle holds every base and note of the tenant.
"""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler import Request, Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Body

from knowledge.api.http import (
    READ_ERRORS,
    WRITE_ERRORS,
    json_response,
    route_responses,
)
from knowledge.api.principal import CallerPrincipal
from knowledge.api.services import Bundles, bundle_service
from knowledge.api.writes import IdempotencyKey, write_route
from knowledge.contract.bundles import BundleJobResponse, ExportRequest, ImportRequest
from knowledge.domain.bundles import BundleJobKind
from knowledge.domain.models import Principal

EXPORTS_PATH = "/v1/exports"
EXPORT_PATH = "/v1/exports/<export_id>"
IMPORTS_PATH = "/v1/imports"
IMPORT_PATH = "/v1/imports/<import_id>"
IMPORT_START_PATH = "/v1/imports/<import_id>/start"

TAG = "export and import"
ACCESS = (
    "Needs `knowledge:admin` and `memory:admin` (`platform:admin` implies both) and a token without "
    "a base allow-list: a bundle holds every base and note of the tenant, whoever owns them."
)

router = Router()  # type: ignore[no-untyped-call]  # Powertools leaves Router.__init__ unannotated


def _may_move_bundles(principal: Principal, request: Request) -> None:
    bundle_service().authorize(principal)


@write_route(
    router,
    "POST",
    EXPORTS_PATH,
    check=_may_move_bundles,
    body=ExportRequest,
    operation_id="start_export",
    summary="Export the tenant's knowledge and memory as a JSONL bundle (a job).",
    description=(
        f"{ACCESS} Answers 202 with the queued job; follow it with `GET /v1/exports/{{export_id}}`, "
        "which carries a presigned `download_url` once it has `succeeded`. The bundle holds the "
        "chosen bases (default every base; `[]` none) with every item, every revision with its "
        "content and every item state; the notes under `path_prefix` (default every note) with "
        "every version; their pins; and, with `include_vectors`, the cached embeddings of its "
        "texts. Ids, versions and timestamps are kept. An unknown base id is 404."
    ),
    tags=[TAG],
    status_code=202,
    responses=route_responses(202, "The queued export.", *WRITE_ERRORS),
)
def start_export(
    request: Annotated[ExportRequest, Body()],
    principal: CallerPrincipal,
    bundles: Bundles,
    idempotency_key: IdempotencyKey = None,
) -> Response[BundleJobResponse]:
    return json_response(202, bundles.start_export(principal, request))


@router.get(
    EXPORT_PATH,
    operation_id="get_export",
    summary="An export job: status, counts, size and, once succeeded, a presigned download URL.",
    description=ACCESS,
    tags=[TAG],
    responses=route_responses(200, "The export job.", *READ_ERRORS),
)
def get_export(export_id: str, principal: CallerPrincipal, bundles: Bundles) -> BundleJobResponse:
    return bundles.get_job(principal, export_id, BundleJobKind.EXPORT)


@write_route(
    router,
    "POST",
    IMPORTS_PATH,
    check=_may_move_bundles,
    body=ImportRequest,
    operation_id="create_import",
    summary="Create an import: upload a bundle to its upload_url, then start it.",
    description=(
        f"{ACCESS} Answers 201 with the import `awaiting_upload` and a presigned `upload_url`: PUT "
        "the bundle there, then `POST /v1/imports/{import_id}/start`. Every record goes into the "
        "caller's tenant with its ids, versions and timestamps; a record the tenant already has "
        "(same id) is left as it is (`present`), so importing twice changes nothing; a record "
        "whose external id or semantic key another record holds is a conflict, left out and named "
        "in the job. Imported content is indexed by the stream as any write; vectors of the same "
        "embedding model are reused, others are embedded again."
    ),
    tags=[TAG],
    status_code=201,
    responses=route_responses(201, "The import, awaiting its upload.", *WRITE_ERRORS),
)
def create_import(
    request: Annotated[ImportRequest, Body()],
    principal: CallerPrincipal,
    bundles: Bundles,
    idempotency_key: IdempotencyKey = None,
) -> Response[BundleJobResponse]:
    return json_response(201, bundles.create_import(principal))


@write_route(
    router,
    "POST",
    IMPORT_START_PATH,
    check=_may_move_bundles,
    operation_id="start_import",
    summary="Start an import whose bundle was uploaded.",
    description=(
        f"{ACCESS} Answers 202 with the queued job (a started import answers as it stands); 400 "
        "`knowledge_invalid_request` when nothing was uploaded yet. Follow it with "
        "`GET /v1/imports/{import_id}`."
    ),
    tags=[TAG],
    status_code=202,
    responses=route_responses(202, "The queued import.", *WRITE_ERRORS),
)
def start_import(
    import_id: str, principal: CallerPrincipal, bundles: Bundles, idempotency_key: IdempotencyKey = None
) -> Response[BundleJobResponse]:
    return json_response(202, bundles.start_import(principal, import_id))


@router.get(
    IMPORT_PATH,
    operation_id="get_import",
    summary="An import job: status, counts by kind (imported, present, conflicts) and conflicts.",
    description=ACCESS,
    tags=[TAG],
    responses=route_responses(200, "The import job.", *READ_ERRORS),
)
def get_import(import_id: str, principal: CallerPrincipal, bundles: Bundles) -> BundleJobResponse:
    return bundles.get_job(principal, import_id, BundleJobKind.IMPORT)
