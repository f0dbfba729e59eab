"""The services a route uses, as Powertools dependencies: one function per service, each answering
the process container's instance (``knowledge.bootstrap.get_container()``), and one route parameter
type per service (``Notes = Annotated[NoteService, Depends(note_service)]``), so a route names the
services it calls in its signature::

    def get_note(note_id: str, principal: CallerPrincipal, notes: Notes) -> NoteView: ...

A test replaces a service for the routes of one resolver with
``app.dependency_overrides[note_service] = lambda: fake``. The services are built on first use by
the container; their modules are imported then, not with this module (the parameter types name
them for the type checker only), so a function starts without the services it never calls.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from aws_lambda_powertools.event_handler.depends import Depends

from knowledge.bootstrap import get_container

if TYPE_CHECKING:
    from knowledge.services.bundles import BundleService
    from knowledge.services.curation import CurationService
    from knowledge.services.data_sources import DataSourceService
    from knowledge.services.erasure import ErasureService
    from knowledge.services.memory_search import MemorySearchService
    from knowledge.services.notes import NoteService
    from knowledge.services.pins import PinService
    from knowledge.services.quotas import QuotaService
    from knowledge.services.recall import RecallService
    from knowledge.services.search import SearchService
    from knowledge.services.token_admin import TokenAdministration


def search_service() -> SearchService:
    """Knowledge search and addressed reads (``search_knowledge``)."""
    return get_container().search


def note_service() -> NoteService:
    """The caller's notes: read, version history, forget and restore."""
    return get_container().notes


def memory_search_service() -> MemorySearchService:
    """Ranked retrieval over the caller's notes (``search_memory``)."""
    return get_container().memory_search


def recall_service() -> RecallService:
    """Context packs of the caller's notes (``recall_context``)."""
    return get_container().recall


def pin_service() -> PinService:
    """Pins, and ``remember`` (which may pin the note it writes)."""
    return get_container().pins


def curation_service() -> CurationService:
    """Knowledge bases, items and revisions (the write API)."""
    return get_container().curation


def data_source_service() -> DataSourceService:
    """A base's S3 data sources and their sync jobs."""
    return get_container().data_sources


def bundle_service() -> BundleService:
    """Export and import jobs of the caller's tenant."""
    return get_container().bundles()


def erasure_service() -> ErasureService:
    """Erasures of the caller's tenant."""
    return get_container().erasures()


def token_administration() -> TokenAdministration:
    """Issuing, listing and revoking tokens."""
    return get_container().token_admin


def quota_service() -> QuotaService:
    """The tenant quotas and their counters."""
    return get_container().quotas


if TYPE_CHECKING:
    Quotas = Annotated[QuotaService, Depends(quota_service)]
    Search = Annotated[SearchService, Depends(search_service)]
    Notes = Annotated[NoteService, Depends(note_service)]
    MemorySearch = Annotated[MemorySearchService, Depends(memory_search_service)]
    Recall = Annotated[RecallService, Depends(recall_service)]
    Pins = Annotated[PinService, Depends(pin_service)]
    Curation = Annotated[CurationService, Depends(curation_service)]
    Tokens = Annotated[TokenAdministration, Depends(token_administration)]
    DataSources = Annotated[DataSourceService, Depends(data_source_service)]
    Bundles = Annotated[BundleService, Depends(bundle_service)]
    Erasures = Annotated[ErasureService, Depends(erasure_service)]
else:  # Powertools reads the dependency, never the type: the service modules stay unimported.
    Quotas = Annotated[Any, Depends(quota_service)]
    Search = Annotated[Any, Depends(search_service)]
    Notes = Annotated[Any, Depends(note_service)]
    MemorySearch = Annotated[Any, Depends(memory_search_service)]
    Recall = Annotated[Any, Depends(recall_service)]
    Pins = Annotated[Any, Depends(pin_service)]
    Curation = Annotated[Any, Depends(curation_service)]
    Tokens = Annotated[Any, Depends(token_administration)]
    DataSources = Annotated[Any, Depends(data_source_service)]
    Bundles = Annotated[Any, Depends(bundle_service)]
    Erasures = Annotated[Any, Depends(erasure_service)]
