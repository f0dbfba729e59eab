"""Per-request AWS cost model of a search and of an ingested document, with a monthly total.

    python -m bench.cost [--data-dir ../shared/data/scifact] [--searches 1000000] [--documents 100000]

The request counts are read off the code paths (each row names where), not measured on AWS; the
token counts are computed on SciFact (cl100k_base counts of the test claims and of the embedded
chunks, title prepended, from the project's chunker: Titan's own tokenizer differs by some percent);
record sizes are estimated from SciFact documents. Prices are us-east-1 list prices (``PRICES``).
Prints a Markdown table; no AWS call is made.
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bench.relevance import _read_jsonl
from knowledge.domain.memory.context_pack import count_cl100k
from knowledge.domain.retrieval.chunking import Chunker, embedding_text
from knowledge.services.ranking import window

PRICES = {
    "dynamodb_read_unit": 0.125 / 1e6,  # on-demand, per read request unit
    "dynamodb_write_unit": 0.625 / 1e6,  # on-demand, per write request unit
    "bedrock_titan_v2_token": 0.02 / 1e6,  # Titan Text Embeddings V2, per input token
    "lambda_request": 0.20 / 1e6,
    "lambda_gb_second": 0.0000166667,  # x86
    "http_api_request": 1.00 / 1e6,  # first 300 million a month
    "sqs_request": 0.40 / 1e6,  # standard queue, per 64 KB chunk
    "opensearch_instance_hour": 0.167,  # r6g.large.search, on demand
}
PRICE_NOTE = (
    "us-east-1 on-demand list prices as published by AWS in 2025 (DynamoDB after its November 2024 "
    "cut), not re-checked from this machine, which reaches no AWS site: check before quoting"
)
OPENSEARCH_NODES = 2
"""A managed domain of two r6g.large.search data nodes (one replica): billed per hour, not per request."""
HOURS_PER_MONTH = 730
WINDOW = window(10)
"""Fused candidates one truth-check read covers for a page of 10 results."""


@dataclass(frozen=True)
class Line:
    what: str
    where: str
    read_units: float = 0.0
    write_units: float = 0.0
    tokens: float = 0.0
    opensearch_requests: int = 0
    lambda_gb_seconds: float = 0.0
    lambda_requests: int = 0
    api_requests: int = 0
    sqs_requests: int = 0

    def cost(self) -> float:
        return (
            self.read_units * PRICES["dynamodb_read_unit"]
            + self.write_units * PRICES["dynamodb_write_unit"]
            + self.tokens * PRICES["bedrock_titan_v2_token"]
            + self.lambda_requests * PRICES["lambda_request"]
            + self.lambda_gb_seconds * PRICES["lambda_gb_second"]
            + self.api_requests * PRICES["http_api_request"]
            + self.sqs_requests * PRICES["sqs_request"]
        )


def _units(size_bytes: float, unit: int) -> int:
    return max(1, math.ceil(size_bytes / unit))


def scifact_figures(data_dir: Path, sample: int = 500) -> dict[str, float]:
    """Mean query tokens, embedded tokens per document, chunks per document and content bytes."""
    chunker = Chunker(max_tokens=200, overlap_tokens=32)
    docs = list(_read_jsonl(data_dir / "corpus.jsonl"))[:sample]
    tokens, chunks, sizes = [], [], []
    for doc in docs:
        pieces = chunker.split(doc.get("text", ""))
        chunks.append(max(1, len(pieces)))
        tokens.append(sum(count_cl100k(embedding_text(doc.get("title", ""), p.text)) for p in pieces))
        sizes.append(len(json.dumps(doc).encode()))
    claims = [row["text"] for row in _read_jsonl(data_dir / "queries.jsonl")]
    return {
        "query_tokens": sum(count_cl100k(claim) for claim in claims) / len(claims),
        "document_tokens": sum(tokens) / len(tokens),
        "chunks": sum(chunks) / len(chunks),
        "content_bytes": sum(sizes) / len(sizes),
    }


def search_lines(figures: dict[str, float]) -> list[Line]:
    """One hybrid ``search_knowledge`` call, max_results 10, query embedding not cached."""
    return [
        Line("API Gateway HTTP API request", "template.yaml", api_requests=1),
        Line(
            "authorizer: token GetItem (consistent)",
            "services/tokens.py: get_token",
            read_units=1,
            lambda_requests=1,
            lambda_gb_seconds=0.5 * 0.02,
        ),
        Line(
            "query vector: cache BatchGetItem miss, Titan v2, cache PutItem (1.6 KB)",
            "bootstrap.py embedder_for; embedding_cache.py DynamoDBEmbeddingCache",
            read_units=1,
            write_units=2,
            tokens=figures["query_tokens"],
        ),
        Line("one _msearch (BM25 leg + knn leg)", "adapters/opensearch/passages.py", opensearch_requests=1),
        Line(
            f"truth check: one BatchGetItem of {WINDOW} items, their {WINDOW} revisions and the base"
            " (consistent)",
            "services/ranking.py: window(10), store.read_candidates",
            read_units=2 * WINDOW + 1,
        ),
        Line(
            "SearchKnowledgeFunction, 1,024 MB, ~150 ms",
            "template.yaml MemorySize",
            lambda_requests=1,
            lambda_gb_seconds=1.0 * 0.15,
        ),
    ]


def ingest_lines(figures: dict[str, float]) -> list[Line]:
    """One new document through the write API (published at once), then the stream indexer."""
    content = figures["content_bytes"]
    chunks = figures["chunks"]
    # TransactWriteItems costs 2 write units per KB of each record: item, external-id guard,
    # revision, and the content in pages.
    transaction = 2 * (_units(600, 1024) + _units(300, 1024) + _units(600, 1024) + _units(content, 1024))
    return [
        Line(
            "API Gateway request + admin Lambda (512 MB, ~200 ms)",
            "template.yaml",
            api_requests=1,
            lambda_requests=2,
            lambda_gb_seconds=0.5 * 0.2 + 0.5 * 0.02,
            read_units=1,
        ),
        Line("external-id lookup (Query)", "services/upsert.py: find_item_by_external_id", read_units=1),
        Line(
            "create: TransactWriteItems (item, guard, revision, pages)",
            "adapters/dynamodb/item_records.py: create_item",
            write_units=transaction,
        ),
        Line(
            "indexer: get_item, get_base, get_revision, pages Query (consistent)",
            "services/indexing.py",
            read_units=3 + _units(content, 4096),
            lambda_requests=1,
            lambda_gb_seconds=1.0 * 1.0,
        ),
        Line(
            f"chunk vectors: cache BatchGetItem miss, Titan v2, {chunks:.1f} cache PutItems",
            "services/documents.py build_indexed_item; embedding_cache.py",
            read_units=chunks,
            write_units=2 * chunks,
            tokens=figures["document_tokens"],
        ),
        Line("OpenSearch bulk (chunks, versioned)", "adapters/opensearch/passages.py", opensearch_requests=1),
        Line("set_indexed_revision UpdateItem", "services/indexing.py", write_units=1),
    ]


def totals(lines: Sequence[Line]) -> Line:
    return Line(
        "total",
        "",
        read_units=sum(line.read_units for line in lines),
        write_units=sum(line.write_units for line in lines),
        tokens=sum(line.tokens for line in lines),
        opensearch_requests=sum(line.opensearch_requests for line in lines),
        lambda_gb_seconds=sum(line.lambda_gb_seconds for line in lines),
        lambda_requests=sum(line.lambda_requests for line in lines),
        api_requests=sum(line.api_requests for line in lines),
        sqs_requests=sum(line.sqs_requests for line in lines),
    )


def table(title: str, lines: Sequence[Line]) -> list[str]:
    rows = [
        f"**{title}**",
        "",
        "| step | code path | RRU | WRU | Titan tokens | OpenSearch requests | Lambda GB-s | $ |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for line in [*lines, totals(lines)]:
        rows.append(
            f"| {line.what} | {line.where} | {line.read_units:g} | {line.write_units:g} | "
            f"{line.tokens:.0f} | {line.opensearch_requests} | {line.lambda_gb_seconds:g} | "
            f"{line.cost():.8f} |"
        )
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data-dir", type=Path, default=Path("../shared/data/scifact"))
    parser.add_argument("--searches", type=int, default=1_000_000)
    parser.add_argument("--documents", type=int, default=100_000)
    args = parser.parse_args(argv)
    figures = scifact_figures(args.data_dir)
    search, ingest = search_lines(figures), ingest_lines(figures)
    print(
        f"SciFact: {figures['query_tokens']:.1f} tokens per claim, {figures['document_tokens']:.0f} embedded "
        f"tokens and {figures['chunks']:.2f} chunks per document, {figures['content_bytes']:.0f} bytes\n"
    )
    print("\n".join(table("One search (hybrid, 10 results)", search)))
    print()
    print("\n".join(table("One ingested document (SciFact-sized)", ingest)))
    searches = totals(search).cost() * args.searches
    documents = totals(ingest).cost() * args.documents
    opensearch = OPENSEARCH_NODES * HOURS_PER_MONTH * PRICES["opensearch_instance_hour"]
    print()
    print("| a month | requests | $ |")
    print("|---|---|---|")
    print(f"| searches | {args.searches:,} | {searches:,.2f} |")
    print(f"| ingested documents | {args.documents:,} | {documents:,.2f} |")
    domain = f"OpenSearch domain ({OPENSEARCH_NODES} × r6g.large.search, {HOURS_PER_MONTH} h)"
    print(f"| {domain} | fixed | {opensearch:,.2f} |")
    print(f"| **total** | | **{searches + documents + opensearch:,.2f}** |")
    print(f"\nPrices: {PRICE_NOTE}.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
