"""What both OpenSearch adapters (the chunk index and the notes index) share: the client, the one
mapping of transport errors to domain errors, the vector check, and the two-leg search.

``search_legs`` runs the requested legs of one search in a single ``_msearch`` routed to the
tenant's shard. The lexical leg's body sorts every match by score and then id inside the engine, so
its first ``k`` are exact. A kNN query does not: the Lucene engine keeps the ``k`` nearest vectors
of each shard, and among vectors tied at the ``k``-th score it keeps whichever its graph search
reached first, before any sort runs. So the semantic leg asks for ``k + 1`` neighbours; when the
last of them still ties with the ``k``-th, it asks again for twice as many (up to ``MAX_KNN_K``,
the engine's limit), then sorts and keeps the best ``k``, so ties at the cut fall by id as on every
other adapter.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Generic, Literal, NamedTuple, Protocol, TypeVar

import boto3
from opensearchpy import AWSV4SignerAuth, Connection, OpenSearch, RequestsHttpConnection
from opensearchpy.exceptions import ConnectionError as OpenSearchConnectionError
from opensearchpy.exceptions import TransportError

from knowledge.domain.retrieval.hits import Leg
from knowledge.errors import DependencyUnavailableError, IndexConfigurationError
from knowledge.observability import logger

if TYPE_CHECKING:
    from knowledge.settings import Settings

FLOAT32_MAX = 3.4028234663852886e38
"""The largest finite float32, the type of a ``knn_vector``'s components."""
MAX_KNN_K = 10_000
"""The largest ``k`` (and ``size``) a kNN query may ask for (k-NN plugin, ``index.max_result_window``)."""


def build_opensearch_client(
    url: str,
    *,
    auth: Literal["sigv4", "none"],
    region: str,
    service: str = "es",
    timeout_seconds: float = 10.0,
    max_retries: int = 2,
    connection_class: type[Connection] = RequestsHttpConnection,
) -> Any:
    """An ``OpenSearch`` client for ``url`` (``https://…`` on AWS, ``http://127.0.0.1:…`` locally).

    ``auth="sigv4"`` signs every request with the default botocore credential chain (Lambda role,
    environment, profile) for ``service`` (``es`` for managed domains, ``aoss`` for Serverless);
    credentials are refreshed by botocore and frozen per request by the signer. Connection errors,
    timeouts and 502/503/504 are retried ``max_retries`` times by the transport; 429 is left to the
    caller (``DependencyUnavailableError`` is retryable) and to the bulk helper's backoff.
    ``connection_class`` is the HTTP connection (tests inject faults through one).
    Raises ``IndexConfigurationError`` when SigV4 is requested and no credentials are found.
    """
    http_auth: Any = None
    if auth == "sigv4":
        credentials = boto3.Session().get_credentials()
        if credentials is None:
            raise IndexConfigurationError("No AWS credentials are available to sign search index requests.")
        http_auth = AWSV4SignerAuth(credentials, region, service)
    return OpenSearch(
        hosts=[url],
        http_auth=http_auth,
        connection_class=connection_class,
        verify_certs=True,
        timeout=timeout_seconds,
        max_retries=max_retries,
        retry_on_timeout=True,
        retry_on_status=(502, 503, 504),
    )


@contextmanager
def translated(operation: str) -> Iterator[None]:
    """Map opensearch-py transport errors to domain errors once, for every call of both adapters:
    unreachable, 429 and 5xx → ``DependencyUnavailableError``; a missing index →
    ``IndexConfigurationError``; anything else is raised as it is."""
    try:
        yield
    except OpenSearchConnectionError as error:
        logger.warning(
            "search index unreachable", extra={"operation": operation, "error": type(error).__name__}
        )
        raise DependencyUnavailableError("The search index is unavailable.") from error
    except TransportError as error:
        status = error.status_code
        if isinstance(status, int) and (status == 429 or status >= 500):
            logger.warning("search index failed", extra={"operation": operation, "status": status})
            raise DependencyUnavailableError("The search index is unavailable.") from error
        if status == 404 and error.error == "index_not_found_exception":
            raise IndexConfigurationError(
                "The search index does not exist; ensure_ready creates it."
            ) from error
        raise


def document_error(result: Mapping[str, Any]) -> Exception:
    """The domain error for a failed bulk item other than a version conflict."""
    status = result.get("status")
    error = result.get("error")
    kind = error.get("type") if isinstance(error, dict) else error
    logger.warning("search index rejected a document", extra={"status": status, "error_type": kind})
    if isinstance(status, int) and (status == 429 or status >= 500):
        return DependencyUnavailableError("The search index is unavailable.")
    return IndexConfigurationError("The search index rejected a document; check its mapping.")


def document_version(client: Any, index: str, tenant_id: str, document_id: str) -> int | None:
    """The record version the document ``document_id`` of ``index`` holds, live (external version
    ``2·v``) or a tombstone (``2·v + 1``): ``v``; ``None`` when there is no such document."""
    with translated("held_version"):
        answer = client.mget(index=index, body={"docs": [{"_id": document_id, "routing": tenant_id}]})
    found = [doc for doc in answer["docs"] if doc.get("found")]
    return int(found[0]["_version"]) // 2 if found else None


def check_vector(vector: Sequence[float], dimension: int) -> None:
    """Raise ``ValueError`` for a vector of another dimension, one with a component that is NaN,
    infinite or beyond float32's range (``knn_vector`` stores float32 and refuses such a document
    with a 400), or one whose norm is zero or overflows float32 (no cosine similarity): the vectors
    the embedded indexes refuse too."""
    if len(vector) != dimension:
        raise ValueError(f"vector has {len(vector)} dimensions; the index expects {dimension}")
    squares = 0.0
    for component in vector:
        if not abs(component) <= FLOAT32_MAX:  # NaN compares false
            raise ValueError("a zero or non-finite vector has no cosine similarity")
        squares += component * component
    if squares == 0.0 or math.sqrt(squares) > FLOAT32_MAX:
        raise ValueError("a zero or non-finite vector has no cosine similarity")


class _Scored(Protocol):
    @property
    def score(self) -> float: ...


H = TypeVar("H", bound=_Scored)

BodyAt = Callable[[int], dict[str, Any]]
"""A leg's search body for a fetch depth (its ``size``, and ``k`` of a kNN clause)."""
Parse = Callable[[Mapping[str, Any], bool], list[H]]
"""Hits of one answer, sorted best first with ties by id; the flag says the leg is semantic."""


def _leg_hits(leg: Leg, response: Mapping[str, Any], parse: Parse[H]) -> list[H]:
    """One ``_msearch`` answer's hits; its error mapped as ``translated`` maps a whole request's (a
    missing index → ``IndexConfigurationError``), any other → ``DependencyUnavailableError`` naming
    the leg, so a failed semantic leg can be degraded to the lexical one."""
    if "error" in response:
        error = response["error"]
        kind = error.get("type") if isinstance(error, dict) else error
        logger.warning(
            "search leg failed",
            extra={"leg": leg.value, "status": response.get("status"), "error_type": kind},
        )
        if kind == "index_not_found_exception":
            raise IndexConfigurationError("The search index does not exist; ensure_ready creates it.")
        raise DependencyUnavailableError("The search index could not run the search.", {"leg": leg.value})
    return parse(response, leg is Leg.SEMANTIC)


def _first_depth(leg: Leg, k: int) -> int:
    return min(k + 1, MAX_KNN_K) if leg is Leg.SEMANTIC else k


def _tie_runs_past(hits: Sequence[_Scored], k: int, depth: int) -> bool:
    """Whether the hits tied with the ``k``-th reach the end of a full fetch of ``depth``."""
    return depth < MAX_KNN_K and len(hits) >= depth > k and hits[-1].score >= hits[k - 1].score


class Found(NamedTuple, Generic[H]):
    """What ``search_legs`` found: each answered leg's best hits, and the leg the engine failed (a
    tolerated one), if any."""

    hits: dict[Leg, list[H]]
    failed: Leg | None = None


def search_legs(
    client: Any,
    index: str,
    routing: str,
    legs: Sequence[tuple[Leg, BodyAt]],
    k: int,
    parse: Parse[H],
    tolerate: frozenset[Leg] = frozenset(),
) -> Found[H]:
    """Each leg's best ``k`` hits (see the module docs), from one ``_msearch`` and, for a semantic
    leg tied past its first fetch, wider kNN searches.

    A leg the engine fails is ``Found.failed`` when it is in ``tolerate`` and another leg answered;
    otherwise ``DependencyUnavailableError`` (details ``{"leg": ...}``). Raises what ``translated``
    maps for the requests themselves.
    """
    if not legs:
        return Found({})
    depths = {leg: _first_depth(leg, k) for leg, _ in legs}
    lines: list[dict[str, Any]] = []
    for leg, body_at in legs:
        lines += [{"routing": routing}, body_at(depths[leg])]
    with translated("search"):
        answer = client.msearch(index=index, body=lines)
    found: dict[Leg, list[H]] = {}
    failures: list[DependencyUnavailableError] = []
    for (leg, body_at), response in zip(legs, answer["responses"], strict=True):
        try:
            hits = _leg_hits(leg, response, parse)
            depth = depths[leg]
            while leg is Leg.SEMANTIC and _tie_runs_past(hits, k, depth):
                depth = min(2 * depth, MAX_KNN_K)
                with translated("search"):
                    wider = client.msearch(index=index, body=[{"routing": routing}, body_at(depth)])
                hits = _leg_hits(leg, wider["responses"][0], parse)
        except DependencyUnavailableError as error:
            if leg not in tolerate:
                raise
            failures.append(error)
            continue
        found[leg] = hits[:k]
    if not failures:
        return Found(found)
    if not found:
        raise failures[0]
    failed = Leg(failures[0].details["leg"])
    return Found(found, failed)


def client_of(settings: Settings, index_setting: str, index_name: str | None) -> tuple[OpenSearch, str]:
    """The client of ``OPENSEARCH_URL`` (``OPENSEARCH_AUTH``, signed for ``OPENSEARCH_SERVICE`` in
    ``AWS_REGION``) and ``index_name``; ``ValueError`` naming ``index_setting`` when either is unset."""
    url = settings.opensearch_url
    if not url or not index_name:
        raise ValueError(f"SEARCH_BACKEND=opensearch needs OPENSEARCH_URL and {index_setting}.")
    client = build_opensearch_client(
        url, auth=settings.opensearch_auth, region=settings.aws_region, service=settings.opensearch_service
    )
    return client, index_name


BM25_K1 = 1.2
BM25_B = 0.75


def lucene_bm25(
    query_terms: Sequence[str],
    vectors: Mapping[str, Any],
    added: Sequence[Mapping[str, Any]],
    *,
    beside: bool = False,
) -> float | None:
    """OpenSearch's BM25 (``dsl.text_settings``: k1 1.2, b 0.75, no overlap discount; its ``BM25``
    similarity keeps the ``k1 + 1`` factor Lucene 8 dropped, as a boost) of one artificial
    document, from its ``_termvectors`` answer for one field (``terms`` with ``term_freq`` and
    ``doc_freq``, ``field_statistics`` with ``doc_count`` and ``sum_ttf``): the statistics of the
    shard that scores the index's own hits in the same search (those of the ``added`` documents,
    such answers, while it holds none); summed over ``query_terms`` as a ``match`` query sums its
    clauses. With ``beside``, the ``added`` documents count beside the shard's (document count,
    total length, document frequencies), so a document scores as it will once indexed. ``None``
    when the document holds none of them."""
    terms: Mapping[str, Any] = vectors.get("terms", {})
    if not any(term in terms for term in query_terms):
        return None
    length = _length(vectors)
    statistics = vectors.get("field_statistics", {})
    held = max(0, int(statistics.get("doc_count", 0)))
    documents, total = held, max(0, int(statistics.get("sum_ttf", 0))) if held else 0
    if beside or not held:
        documents, total = documents + len(added), total + sum(_length(other) for other in added)
    average = max(total / documents, 1.0)
    norm = BM25_K1 * (1 - BM25_B + BM25_B * length / average)
    score = 0.0
    for term in query_terms:
        entry = terms.get(term)
        if entry is None:
            continue
        frequency = int(entry.get("term_freq", 0))
        frequency_in = int(entry.get("doc_freq", 0)) if held else 0
        if beside or not held:
            frequency_in += sum(1 for other in added if term in other.get("terms", {}))
        idf = math.log(1 + (documents - frequency_in + 0.5) / (frequency_in + 0.5))
        score += idf * (1 + BM25_K1) * frequency / (frequency + norm)
    return score


def _length(vectors: Mapping[str, Any]) -> int:
    """The number of terms of an artificial document's field (its term frequencies summed)."""
    return sum(int(entry.get("term_freq", 0)) for entry in vectors.get("terms", {}).values())


def cosine(left: Sequence[float], right: Sequence[float]) -> float:
    """Cosine similarity in [-1, 1]; 0 for a zero vector."""
    dot = sum(a * b for a, b in zip(left, right, strict=True))
    size = math.sqrt(sum(a * a for a in left)) * math.sqrt(sum(b * b for b in right))
    return max(-1.0, min(1.0, dot / size)) if size else 0.0
