"""REST routes of the write API (DESIGN §6), served by ``KnowledgeAdminFunction``.

| route | scope | answer |
|---|---|---|
| ``POST /v1/knowledge-bases`` | admin | 201 base |
| ``GET /v1/knowledge-bases?limit=&next_token=`` | read | 200 ``{knowledge_bases, next_token}`` |
| ``PATCH /v1/knowledge-bases/{kb}`` | admin | 200 base |
| ``POST /v1/knowledge-bases/{kb}/archive`` | admin | 200 base (inactive) + receipt |
| ``DELETE /v1/knowledge-bases/{kb}?expected_version=&dry_run=`` | admin | 200 id, items + receipt |
| ``POST /v1/knowledge-bases/{kb}/items`` | write | 201 item + ``knowledge_revision_id`` (200 unchanged) |
| ``GET /v1/knowledge-bases/{kb}/items?external_id=&limit=&next_token=`` | read | 200 ``{items,next_token}`` |
| ``POST /v1/knowledge-bases/{kb}/reindex`` | admin | 200 counts |
| ``POST /v1/knowledge-items/{item}/revisions`` | write | 201 item + ``knowledge_revision_id`` |
| ``GET /v1/knowledge-items/{item}/revisions?limit=&next_token=`` | read | 200 ``{revisions, next_token}`` |
| ``POST /v1/knowledge-items/{item}/publish`` | write | 200 item |
| ``POST /v1/knowledge-items/{item}/archive`` | write | 200 item |
| ``GET /v1/knowledge-items/{item}`` | read | 200 item + ``indexed_revision_id`` |
| ``DELETE /v1/knowledge-items/{item}?expected_version=&dry_run=`` | admin | 200 ids + receipt |
| ``POST /v1/tokens`` | admin | 201 the token and what it holds (``TokenResponse``) |
| ``GET /v1/tokens?tenant_id=&limit=&next_token=`` | admin | 200 ``{tokens, next_token}`` |
| ``DELETE /v1/tokens/{token_id}`` | admin | 204, no body (also when already revoked); cascades |
| ``POST /v1/knowledge-bases/{kb}/data-sources`` | write | 201 data source |
| ``GET /v1/knowledge-bases/{kb}/data-sources`` | read | 200 ``{data_sources}`` |
| ``GET /v1/knowledge-bases/{kb}/data-sources/{ds}`` | read | 200 data source |
| ``DELETE /v1/knowledge-bases/{kb}/data-sources/{ds}`` | write | 204 (items stay) |
| ``POST /v1/knowledge-bases/{kb}/data-sources/{ds}/sync`` | write | 202 sync job (``queued``) |
| ``GET /v1/knowledge-bases/{kb}/sync-jobs/{job}`` | read | 200 sync job |
| ``GET /v1/usage`` | any | 200 the caller's tenant: stored counts, each quota and what is left |
| ``GET /v1/health`` | none | 200 ``{status, runtime_enabled}`` |

Scopes are ``knowledge:<scope>``. Every write (``POST``, ``PATCH``, ``DELETE``) is registered with
``knowledge.api.writes.write_route``, which pairs it with its permission check: the service's
read-only ``authorize_*`` check of scope and visibility, run before the route and before any
``Idempotency-Key`` record is read (``POST`` and ``PATCH`` accept the header), so a replay is never
answered to a caller who may not make the write. Each route then parses, calls ``CurationService``
(tokens: ``TokenAdministration``) once and answers; errors are mapped by ``knowledge.api.http``.
"""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler import Request, Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Body, Query
from pydantic import Field

from knowledge.api.http import (
    READ_ERRORS,
    WRITE_ERRORS,
    json_response,
    openapi_error_responses,
    route_responses,
)
from knowledge.api.principal import CallerPrincipal
from knowledge.api.query_parameters import CANONICAL_BOOLEAN, CANONICAL_INTEGER, NextToken
from knowledge.api.services import (
    Curation,
    DataSources,
    Quotas,
    Tokens,
    curation_service,
    data_source_service,
    token_administration,
)
from knowledge.api.writes import IdempotencyKey, write_route
from knowledge.contract.data_sources import (
    CreateDataSourceRequest,
    DataSourceList,
    DataSourceResponse,
    SyncJobResponse,
)
from knowledge.contract.usage import UsageResponse
from knowledge.contract.writes import (
    LIST_LIMIT_DEFAULT,
    LIST_LIMIT_MAX,
    ArchivedBaseResponse,
    ArchivedItemResponse,
    ArchiveRequest,
    BaseArchiveRequest,
    CreatedRevisionResponse,
    CreateItemRequest,
    CreateKnowledgeBaseRequest,
    CreateRevisionRequest,
    CreateTokenRequest,
    HealthResponse,
    KnowledgeBaseList,
    KnowledgeBaseResponse,
    KnowledgeItemDetail,
    KnowledgeItemList,
    KnowledgeItemResponse,
    PublishRequest,
    PurgedBaseResponse,
    PurgedItemResponse,
    ReindexResponse,
    RevisionList,
    TokenList,
    TokenResponse,
    UpdateKnowledgeBaseRequest,
)
from knowledge.domain.bounds import VERSION_MAX, VERSION_MIN
from knowledge.domain.identifiers import Identifier
from knowledge.domain.models import EXTERNAL_ID_MAX_CHARS, TENANT_ID_PATTERN, Principal

BASES_PATH = "/v1/knowledge-bases"
BASE_PATH = "/v1/knowledge-bases/<knowledge_base_id>"
ITEMS_PATH = "/v1/knowledge-bases/<knowledge_base_id>/items"
REINDEX_PATH = "/v1/knowledge-bases/<knowledge_base_id>/reindex"
ITEM_PATH = "/v1/knowledge-items/<knowledge_item_id>"
BASE_ARCHIVE_PATH = "/v1/knowledge-bases/<knowledge_base_id>/archive"
REVISIONS_PATH = "/v1/knowledge-items/<knowledge_item_id>/revisions"
PUBLISH_PATH = "/v1/knowledge-items/<knowledge_item_id>/publish"
ARCHIVE_PATH = "/v1/knowledge-items/<knowledge_item_id>/archive"
DATA_SOURCES_PATH = "/v1/knowledge-bases/<knowledge_base_id>/data-sources"
DATA_SOURCE_PATH = "/v1/knowledge-bases/<knowledge_base_id>/data-sources/<data_source_id>"
SYNC_PATH = "/v1/knowledge-bases/<knowledge_base_id>/data-sources/<data_source_id>/sync"
SYNC_JOB_PATH = "/v1/knowledge-bases/<knowledge_base_id>/sync-jobs/<sync_job_id>"
TOKENS_PATH = "/v1/tokens"
TOKEN_PATH = "/v1/tokens/<token_id>"
HEALTH_PATH = "/v1/health"
USAGE_PATH = "/v1/usage"

TAG = "knowledge"

router = Router()  # type: ignore[no-untyped-call]  # Powertools leaves Router.__init__ unannotated

Limit = Annotated[
    int,
    Field(ge=1, le=LIST_LIMIT_MAX),
    CANONICAL_INTEGER,
    Query(description=f"Page size, 1 to {LIST_LIMIT_MAX}."),
]


ExpectedVersion = Annotated[
    int,
    Field(ge=VERSION_MIN, le=VERSION_MAX),
    CANONICAL_INTEGER,
    Query(description=f"The version the caller last read (optimistic lock), {VERSION_MIN} to {VERSION_MAX}."),
]
DryRun = Annotated[
    bool,
    CANONICAL_BOOLEAN,
    Query(description="`true`: change nothing and answer the delete's receipt (`true` or `false` only)."),
]


def _path_parameter(request: Request, name: str) -> str:
    return str(request.path_parameters[name])


def _may_create_base(principal: Principal, request: Request) -> None:
    curation_service().authorize_base_creation(principal)


def _may_manage_base(principal: Principal, request: Request) -> None:
    curation_service().authorize_base_management(principal, _path_parameter(request, "knowledge_base_id"))


def _may_create_item(principal: Principal, request: Request) -> None:
    curation_service().authorize_item_creation(principal, _path_parameter(request, "knowledge_base_id"))


def _may_write_item(principal: Principal, request: Request) -> None:
    curation_service().authorize_item_write(principal, _path_parameter(request, "knowledge_item_id"))


def _may_write_data_sources(principal: Principal, request: Request) -> None:
    data_source_service().authorize_write(principal, _path_parameter(request, "knowledge_base_id"))


def _may_issue_token(principal: Principal, request: Request) -> None:
    token_administration().authorize_issue(principal, CreateTokenRequest.model_validate(request.json_body))


def _may_revoke_token(principal: Principal, request: Request) -> None:
    token_administration().authorize_revoke(principal)


# -- bases ----------------------------------------------------------------------------------------


@write_route(
    router,
    "POST",
    BASES_PATH,
    check=_may_create_base,
    body=CreateKnowledgeBaseRequest,
    operation_id="create_knowledge_base",
    summary="Create a knowledge base in the caller's tenant, owned by the caller.",
    description="Needs `knowledge:admin`. `scope` is `private`, `team` (with `team_id`) or `tenant`.",
    tags=[TAG],
    status_code=201,
    responses=route_responses(201, "The new base (version 1).", *WRITE_ERRORS),
)
def create_knowledge_base(
    request: Annotated[CreateKnowledgeBaseRequest, Body()],
    principal: CallerPrincipal,
    curation: Curation,
    idempotency_key: IdempotencyKey = None,
) -> Response[KnowledgeBaseResponse]:
    return json_response(201, curation.create_base(principal, request))


@router.get(
    BASES_PATH,
    operation_id="list_knowledge_bases",
    summary="Knowledge bases the caller can see (admins: every base of the tenant).",
    tags=[TAG],
    responses=route_responses(200, "One page of bases, in id order.", *READ_ERRORS),
)
def list_knowledge_bases(
    principal: CallerPrincipal,
    curation: Curation,
    limit: Limit = LIST_LIMIT_DEFAULT,
    next_token: NextToken = None,
) -> KnowledgeBaseList:
    return curation.list_bases(principal, limit=limit, next_token=next_token)


@write_route(
    router,
    "PATCH",
    BASE_PATH,
    check=_may_manage_base,
    body=UpdateKnowledgeBaseRequest,
    operation_id="update_knowledge_base",
    summary="Rename a knowledge base or change its status (active/inactive).",
    description=(
        "Needs `knowledge:admin`. An inactive base leaves search at once and is re-indexed when it "
        "becomes active again. A stale `expected_version` answers 409 with `details.current_version`."
    ),
    tags=[TAG],
    responses=route_responses(200, "The updated base.", *WRITE_ERRORS),
)
def update_knowledge_base(
    knowledge_base_id: str,
    request: Annotated[UpdateKnowledgeBaseRequest, Body()],
    principal: CallerPrincipal,
    curation: Curation,
    idempotency_key: IdempotencyKey = None,
) -> Response[KnowledgeBaseResponse]:
    return json_response(200, curation.update_base(principal, knowledge_base_id, request))


@write_route(
    router,
    "POST",
    REINDEX_PATH,
    check=_may_manage_base,
    operation_id="reindex_knowledge_base",
    summary="Rebuild the search index of one knowledge base from the store.",
    description="Needs `knowledge:admin`. Runs synchronously; an inactive base is removed from the index.",
    tags=[TAG],
    responses=route_responses(200, "What the rebuild did.", *WRITE_ERRORS),
)
def reindex_knowledge_base(
    knowledge_base_id: str,
    principal: CallerPrincipal,
    curation: Curation,
    idempotency_key: IdempotencyKey = None,
) -> Response[ReindexResponse]:
    return json_response(200, curation.reindex_base(principal, knowledge_base_id))


# -- items ----------------------------------------------------------------------------------------


@write_route(
    router,
    "POST",
    ITEMS_PATH,
    check=_may_create_item,
    body=CreateItemRequest,
    operation_id="create_knowledge_item",
    summary="Add content to a knowledge base: a new item, or a new revision of the item with `external_id`.",
    description=(
        "Needs `knowledge:write` and a base the caller can see. `content` holds at most 4,000,000 "
        "characters; `publish: true` makes the revision current (searchable within seconds)."
    ),
    tags=[TAG],
    status_code=201,
    responses={
        **route_responses(201, "The item and the revision just created.", *WRITE_ERRORS),
        **route_responses(200, "An upsert by `external_id` found content, title and source unchanged."),
    },
)
def create_knowledge_item(
    knowledge_base_id: str,
    request: Annotated[CreateItemRequest, Body()],
    principal: CallerPrincipal,
    curation: Curation,
    idempotency_key: IdempotencyKey = None,
) -> Response[CreatedRevisionResponse]:
    item, created = curation.create_item(principal, knowledge_base_id, request)
    return json_response(201 if created else 200, item)


@router.get(
    ITEMS_PATH,
    operation_id="list_knowledge_items",
    summary="Live items of a knowledge base, or the one holding `external_id`.",
    tags=[TAG],
    responses=route_responses(200, "One page of items, in id order.", *READ_ERRORS),
)
def list_knowledge_items(
    knowledge_base_id: str,
    principal: CallerPrincipal,
    curation: Curation,
    external_id: Annotated[
        Identifier | None,
        Query(min_length=1, max_length=EXTERNAL_ID_MAX_CHARS, description="Exact external id."),
    ] = None,
    limit: Limit = LIST_LIMIT_DEFAULT,
    next_token: NextToken = None,
) -> KnowledgeItemList:
    return curation.list_items(
        principal, knowledge_base_id, external_id=external_id, limit=limit, next_token=next_token
    )


@router.get(
    ITEM_PATH,
    operation_id="get_knowledge_item",
    summary="One item, with the revision the search index holds (`indexed_revision_id`).",
    tags=[TAG],
    responses=route_responses(200, "The item.", *READ_ERRORS),
)
def get_knowledge_item(
    knowledge_item_id: str, principal: CallerPrincipal, curation: Curation
) -> KnowledgeItemDetail:
    return curation.get_item(principal, knowledge_item_id)


@write_route(
    router,
    "POST",
    REVISIONS_PATH,
    check=_may_write_item,
    body=CreateRevisionRequest,
    operation_id="create_knowledge_revision",
    summary="Add a revision to an item.",
    description="Needs `knowledge:write`. `publish: true` makes it current at once.",
    tags=[TAG],
    status_code=201,
    responses={
        **route_responses(201, "The item and the revision just created.", *WRITE_ERRORS),
        **route_responses(200, "An upsert by `external_id` found content, title and source unchanged."),
    },
)
def create_knowledge_revision(
    knowledge_item_id: str,
    request: Annotated[CreateRevisionRequest, Body()],
    principal: CallerPrincipal,
    curation: Curation,
    idempotency_key: IdempotencyKey = None,
) -> Response[CreatedRevisionResponse]:
    return json_response(201, curation.add_revision(principal, knowledge_item_id, request))


@router.get(
    REVISIONS_PATH,
    operation_id="list_knowledge_revisions",
    summary="Revisions of an item, newest first.",
    tags=[TAG],
    responses=route_responses(200, "One page of revisions.", *READ_ERRORS),
)
def list_knowledge_revisions(
    knowledge_item_id: str,
    principal: CallerPrincipal,
    curation: Curation,
    limit: Limit = LIST_LIMIT_DEFAULT,
    next_token: NextToken = None,
) -> RevisionList:
    return curation.list_revisions(principal, knowledge_item_id, limit=limit, next_token=next_token)


@write_route(
    router,
    "POST",
    PUBLISH_PATH,
    check=_may_write_item,
    body=PublishRequest,
    operation_id="publish_knowledge_revision",
    summary="Make one of the item's revisions current (an older one rolls back).",
    tags=[TAG],
    responses=route_responses(200, "The item.", *WRITE_ERRORS),
)
def publish_knowledge_revision(
    knowledge_item_id: str,
    request: Annotated[PublishRequest, Body()],
    principal: CallerPrincipal,
    curation: Curation,
    idempotency_key: IdempotencyKey = None,
) -> Response[KnowledgeItemResponse]:
    return json_response(200, curation.publish(principal, knowledge_item_id, request))


@write_route(
    router,
    "POST",
    BASE_ARCHIVE_PATH,
    check=_may_manage_base,
    body=BaseArchiveRequest,
    operation_id="archive_knowledge_base",
    summary="Archive a knowledge base: it becomes inactive, out of search and reads, and is kept.",
    description=(
        "Needs `knowledge:admin`. The base's status becomes `inactive` (a PATCH with `status: active` "
        "brings it back). The `receipt` lists the base record `hidden` (table) and the passages of its "
        "published items `scheduled` (index: the indexer removes them). `dry_run: true` changes "
        "nothing and answers the receipt the archive would give (a stale `expected_version` is 409 "
        "either way)."
    ),
    tags=[TAG],
    responses=route_responses(200, "The archived base.", *WRITE_ERRORS),
)
def archive_knowledge_base(
    knowledge_base_id: str,
    request: Annotated[BaseArchiveRequest, Body()],
    principal: CallerPrincipal,
    curation: Curation,
    idempotency_key: IdempotencyKey = None,
) -> Response[ArchivedBaseResponse]:
    return json_response(200, curation.archive_base(principal, knowledge_base_id, request))


@write_route(
    router,
    "DELETE",
    BASE_PATH,
    check=_may_manage_base,
    idempotent=False,
    operation_id="purge_knowledge_base",
    summary="Delete a knowledge base for good, with every item in it (archived ones too).",
    description=(
        "Needs `knowledge:admin`. Every item of the base is purged as `DELETE "
        "/v1/knowledge-items/{item}` does, then the base record. The `receipt` lists them all "
        "together; `items` counts the items. `?dry_run=true` changes nothing and answers the receipt "
        "the purge would give; a stale `expected_version` is 409 either way. Runs in the request: "
        "for a base of many items, `POST /v1/erasures` is the job that does not time out."
    ),
    tags=[TAG],
    responses=route_responses(200, "The purged base's id, item count and receipt.", *WRITE_ERRORS),
)
def purge_knowledge_base(
    knowledge_base_id: str,
    expected_version: ExpectedVersion,
    principal: CallerPrincipal,
    curation: Curation,
    dry_run: DryRun = False,
) -> Response[PurgedBaseResponse]:
    return json_response(
        200,
        curation.purge_base(principal, knowledge_base_id, expected_version=expected_version, dry_run=dry_run),
    )


def _may_purge_item(principal: Principal, request: Request) -> None:
    curation_service().authorize_item_purge(principal, _path_parameter(request, "knowledge_item_id"))


@write_route(
    router,
    "DELETE",
    ITEM_PATH,
    check=_may_purge_item,
    idempotent=False,
    operation_id="purge_knowledge_item",
    summary="Delete an item for good: its records, index documents (history too) and cached embeddings.",
    description=(
        "Needs `knowledge:admin` on the item's base; archived items too. Deletes the item record, "
        "every revision and content page, its state records and external id (table), its documents "
        "in the search index and the history index, so `as_of` reads lose it too (index), and the "
        "cached embeddings of its chunks (embedding_cache); the answer's `receipt` lists each. "
        "`?dry_run=true` changes nothing and answers the receipt the purge would give; a stale "
        "`expected_version` is 409 either way."
    ),
    tags=[TAG],
    responses=route_responses(200, "The purged item's ids and the receipt.", *WRITE_ERRORS),
)
def purge_knowledge_item(
    knowledge_item_id: str,
    expected_version: ExpectedVersion,
    principal: CallerPrincipal,
    curation: Curation,
    dry_run: DryRun = False,
) -> Response[PurgedItemResponse]:
    return json_response(
        200,
        curation.purge_item(principal, knowledge_item_id, expected_version=expected_version, dry_run=dry_run),
    )


@write_route(
    router,
    "POST",
    ARCHIVE_PATH,
    check=_may_write_item,
    body=ArchiveRequest,
    operation_id="archive_knowledge_item",
    summary="Archive an item: it leaves search and reads, and its external_id is released.",
    description=(
        "Needs `knowledge:write`. The answer's `receipt` lists what left each store: the item record "
        "archived, its external id released (table), and the passages of its current revision, which "
        "the indexer drops (index, `scheduled`). `dry_run: true` changes nothing and answers the "
        "receipt the archive would give (a stale `expected_version` is 409 either way)."
    ),
    tags=[TAG],
    responses=route_responses(200, "The archived item.", *WRITE_ERRORS),
)
def archive_knowledge_item(
    knowledge_item_id: str,
    request: Annotated[ArchiveRequest, Body()],
    principal: CallerPrincipal,
    curation: Curation,
    idempotency_key: IdempotencyKey = None,
) -> Response[ArchivedItemResponse]:
    return json_response(200, curation.archive(principal, knowledge_item_id, request))


# -- data sources ---------------------------------------------------------------------------------


@write_route(
    router,
    "POST",
    DATA_SOURCES_PATH,
    check=_may_write_data_sources,
    body=CreateDataSourceRequest,
    operation_id="create_data_source",
    summary="Attach an S3 bucket prefix to a knowledge base, to be kept in sync with it.",
    description=(
        "Needs `knowledge:write` and a base the caller can see. `bucket` must be one the deployment "
        "grants read on (`DocumentBuckets`), else 400 `data_source_bucket_not_allowed`; `include` "
        "globs match keys relative to `prefix` (`*` within a folder, `**` across folders). Objects "
        "become items with `external_id` `{data_source_id}:{key}` and `source.uri` `s3://bucket/key`."
    ),
    tags=[TAG],
    status_code=201,
    responses=route_responses(201, "The new data source.", *WRITE_ERRORS),
)
def create_data_source(
    knowledge_base_id: str,
    request: Annotated[CreateDataSourceRequest, Body()],
    principal: CallerPrincipal,
    data_sources: DataSources,
    idempotency_key: IdempotencyKey = None,
) -> Response[DataSourceResponse]:
    return json_response(201, data_sources.create(principal, knowledge_base_id, request))


@router.get(
    DATA_SOURCES_PATH,
    operation_id="list_data_sources",
    summary="The data sources of a knowledge base, in creation order.",
    tags=[TAG],
    responses=route_responses(200, "The base's data sources.", *READ_ERRORS),
)
def list_data_sources(
    knowledge_base_id: str, principal: CallerPrincipal, data_sources: DataSources
) -> DataSourceList:
    return data_sources.list(principal, knowledge_base_id)


@router.get(
    DATA_SOURCE_PATH,
    operation_id="get_data_source",
    summary="One data source of a knowledge base.",
    tags=[TAG],
    responses=route_responses(200, "The data source.", *READ_ERRORS),
)
def get_data_source(
    knowledge_base_id: str, data_source_id: str, principal: CallerPrincipal, data_sources: DataSources
) -> DataSourceResponse:
    return data_sources.get(principal, knowledge_base_id, data_source_id)


@write_route(
    router,
    "DELETE",
    DATA_SOURCE_PATH,
    check=_may_write_data_sources,
    idempotent=False,
    operation_id="delete_data_source",
    summary="Detach a data source; the items it wrote stay in the base.",
    description="Needs `knowledge:write`. Its jobs and object records go with it; events stop reaching it.",
    tags=[TAG],
    status_code=204,
    responses={
        204: {"description": "The data source is gone; no body.", "content": {}},
        **openapi_error_responses(400, 401, 403, 404, 500, 503),
    },
)
def delete_data_source(
    knowledge_base_id: str, data_source_id: str, principal: CallerPrincipal, data_sources: DataSources
) -> Response[None]:
    data_sources.delete(principal, knowledge_base_id, data_source_id)
    return Response(status_code=204)


@write_route(
    router,
    "POST",
    SYNC_PATH,
    check=_may_write_data_sources,
    operation_id="start_sync",
    summary="Start a sync job: the base takes what changed in the bucket since the last one.",
    description=(
        "Needs `knowledge:write`. Answers 202 with the queued job; follow it with "
        "`GET /v1/knowledge-bases/{kb}/sync-jobs/{sync_job_id}`. Objects whose ETag is unchanged "
        "write nothing; changed ones become new revisions; deleted ones are archived."
    ),
    tags=[TAG],
    status_code=202,
    responses=route_responses(202, "The queued job.", *WRITE_ERRORS),
)
def start_sync(
    knowledge_base_id: str,
    data_source_id: str,
    principal: CallerPrincipal,
    data_sources: DataSources,
    idempotency_key: IdempotencyKey = None,
) -> Response[SyncJobResponse]:
    return json_response(202, data_sources.start_sync(principal, knowledge_base_id, data_source_id))


@router.get(
    SYNC_JOB_PATH,
    operation_id="get_sync_job",
    summary="A sync job: status, phase, counts and per-object failures.",
    tags=[TAG],
    responses=route_responses(200, "The job.", *READ_ERRORS),
)
def get_sync_job(
    knowledge_base_id: str, sync_job_id: str, principal: CallerPrincipal, data_sources: DataSources
) -> SyncJobResponse:
    return data_sources.get_job(principal, knowledge_base_id, sync_job_id)


# -- tokens and health ----------------------------------------------------------------------------


@write_route(
    router,
    "POST",
    TOKENS_PATH,
    check=_may_issue_token,
    body=CreateTokenRequest,
    secret=True,
    operation_id="create_token",
    summary="Issue a bearer token; it is shown once and only its SHA-256 is stored.",
    description=(
        "Needs `knowledge:admin`; another tenant needs `platform:admin` and a caller without a base "
        "allow-list. The token holds at most the caller's scopes and allow-list, and expires no later "
        "than the caller's own token (`expires_in` is capped; `expires_at` tells when). A caller "
        "with a base allow-list mints only for its own `subject_id` and a subset of its own "
        "`team_ids`; one without (a tenant administrator) for any. `token_id` "
        "(the token's SHA-256, not secret) names it for revocation; `issuer_token_id` is the "
        "caller's token, whose revocation revokes this one too. The answer echoes the token's "
        "scopes and allow-list; an empty `knowledge_base_ids` is refused (400 validation_error). "
        "A repeated `Idempotency-Key` answers 409: the token is never shown twice."
    ),
    tags=[TAG],
    status_code=201,
    responses=route_responses(201, "The new token.", *WRITE_ERRORS),
)
def create_token(
    request: Annotated[CreateTokenRequest, Body()],
    principal: CallerPrincipal,
    tokens: Tokens,
    idempotency_key: IdempotencyKey = None,
) -> Response[TokenResponse]:
    return json_response(201, tokens.issue(principal, request))


@router.get(
    TOKENS_PATH,
    operation_id="list_tokens",
    summary="Tokens the caller may revoke, in creation order, never their secrets.",
    description=(
        "Needs `knowledge:admin`; lists the tokens of `tenant_id` (default: the caller's; another "
        "tenant needs `platform:admin` and no allow-list) that the caller could revoke: those "
        "holding no scope the caller lacks and, for an allow-listed caller, an allow-list inside "
        "its own, its `subject_id` and teams among its own. Revoked and expired tokens are listed "
        "too; `revoked` is true when the token or "
        "an ancestor (`revoked_ancestor_token_id`) was revoked. A token issued a moment ago may "
        "take a moment to appear (the listing reads an index)."
    ),
    tags=[TAG],
    responses=route_responses(200, "One page of tokens.", *READ_ERRORS),
)
def list_tokens(
    principal: CallerPrincipal,
    tokens: Tokens,
    tenant_id: Annotated[
        Identifier | None,
        Query(pattern=TENANT_ID_PATTERN, description="Whose tokens to list (default: the caller's tenant)."),
    ] = None,
    limit: Limit = LIST_LIMIT_DEFAULT,
    next_token: NextToken = None,
) -> TokenList:
    return tokens.list_tokens(principal, tenant_id=tenant_id, limit=limit, next_token=next_token)


@write_route(
    router,
    "DELETE",
    TOKEN_PATH,
    check=_may_revoke_token,
    idempotent=False,
    operation_id="revoke_token",
    summary="Revoke a token by its `token_id` (the SHA-256 hex that POST /v1/tokens answered).",
    description=(
        "Needs `knowledge:admin` in the token's tenant (`platform:admin`: any tenant) and the reach "
        "to have issued it (its scopes, and its allow-list inside the caller's, its subject the "
        "caller's and its teams among the caller's when the caller has an allow-list). Every "
        "token it minted, and every token those minted, stops authenticating with it. "
        "Idempotent: revoking a revoked token answers 204 too. Another tenant's, an unknown or "
        "a malformed `token_id` answers 404. The authorizer caches answers for 300 s, so a revoked "
        "token can be accepted for up to 5 minutes."
    ),
    tags=[TAG],
    status_code=204,
    responses={
        204: {"description": "The token is revoked (or already was); no body.", "content": {}},
        **openapi_error_responses(401, 403, 404, 500, 503),
    },
)
def revoke_token(token_id: str, principal: CallerPrincipal, tokens: Tokens) -> Response[None]:
    tokens.revoke(principal, token_id)
    return Response(status_code=204)


@router.get(
    USAGE_PATH,
    operation_id="get_usage",
    summary="What the caller's tenant stores and how much of each quota is left.",
    description=(
        "Any valid token; always the caller's own tenant. `stored`: live knowledge items and notes "
        "against the stored items quota (`limit` and `remaining` null when it is off). `rates`: "
        "each rate quota (requests and writes per second, GCRA: a burst of `limit`, then one use "
        "every 1/`limit` s) with `used` (of the burst), `remaining` (admitted at once now) and "
        "`reset_seconds` (until the whole burst is back); null figures for a quota that is off. "
        "This request counts as one. Every REST answer also carries the requests quota in "
        "`RateLimit-Limit`, `RateLimit-Remaining` and `RateLimit-Reset` "
        "(draft-ietf-httpapi-ratelimit-headers-06)."
    ),
    tags=[TAG],
    responses=route_responses(200, "The tenant's usage.", 401, 429, 500, 503),
)
def get_usage(principal: CallerPrincipal, quotas: Quotas) -> UsageResponse:
    return quotas.usage(principal.tenant_id)


@router.get(
    HEALTH_PATH,
    operation_id="health",
    summary="Liveness, and whether the runtime switch lets the knowledge tools answer.",
    tags=["meta"],
    security=[{}],
    responses=route_responses(200, "The service answers.", 500),
)
def health(curation: Curation) -> HealthResponse:
    return curation.health()
