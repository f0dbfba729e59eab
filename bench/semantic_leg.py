"""The embedded index's semantic leg at scale: the product's leg beside the old one, in one run.

```sh
python -m bench.semantic_leg                  # 200,000 synthetic 384-d chunks, 30 queries
python -m bench.semantic_leg --chunks 50000 --queries 10
```

It fills an ``EmbeddedIndex`` through ``upsert_many`` with random unit vectors (10 chunks per item,
items spread over ten bases of one tenant), then times, query by query and alternating, the leg as
it is (``EmbeddedIndex.search`` on the semantic leg alone: a view of the whole matrix multiplied
when the caller sees at least ``VIEW_SHARE`` of the rows, else a gathered copy of the admitted
rows) and the leg as it was (``CopyingLeg``: the admitted rows always gathered into a new matrix, a
copy, and multiplied). Both run on the same vectors, for a caller who sees every base and for one
narrowed to one base (a tenth of the rows). It prints the median and p95 of each in milliseconds,
the speed-up, and in how many queries both return the same hits in the same order (with the
largest score difference: float32 rounding, since a dot product's last bit depends on the shape of
the matrix it is computed in).
Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from knowledge.adapters.embedded.passages import EmbeddedIndex
from knowledge.domain.access.visibility import VisibilityFilter
from knowledge.domain.models import Principal, Scope
from knowledge.domain.retrieval.hits import ChunkHit, IndexedChunk, IndexedItem, IndexQuery, Leg

TENANT = "bench"
DIMENSION = 384
CHUNKS_PER_ITEM = 10
BASES = 10
K = 200
BATCH_ITEMS = 500


def _unit_rows(rng: np.random.Generator, count: int) -> npt.NDArray[np.float32]:
    rows = rng.standard_normal((count, DIMENSION)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    return rows


@dataclass
class CopyingLeg:
    """The semantic leg as it was, on the same chunks: one matrix of every chunk's vector, whose
    admitted rows were gathered (a copy) and multiplied on every query."""

    vectors: npt.NDArray[np.float32]
    row_group: npt.NDArray[np.int64]
    chunks: list[ChunkHit]
    groups: dict[str, int]

    def search(self, query: IndexQuery) -> list[ChunkHit]:
        assert query.vector is not None
        vector = np.asarray(query.vector, dtype=np.float32)
        vector /= np.linalg.norm(vector)
        admitted = np.zeros(len(self.groups), dtype=np.bool_)
        for base_id, group in self.groups.items():
            admitted[group] = query.visibility.admits(
                tenant_id=TENANT, knowledge_base_id=base_id, scope="tenant", team_id=None, owner_id="owner"
            )
        rows = np.flatnonzero(admitted[self.row_group])
        scores = self.vectors[rows] @ vector
        if rows.size > query.k:
            kth = scores[np.argpartition(-scores, query.k - 1)[: query.k]].min()
            keep = np.flatnonzero(scores >= kth)
            rows, scores = rows[keep], scores[keep]
        hits = [
            self.chunks[row]._replace(score=max(-1.0, min(1.0, score)))
            for row, score in zip(rows.tolist(), scores.tolist(), strict=True)
        ]
        hits.sort(key=lambda hit: (-hit.score, hit.knowledge_item_id, hit.ordinal))
        return hits[: query.k]


def build(chunks: int, seed: int) -> tuple[EmbeddedIndex, CopyingLeg]:
    """An index of ``chunks`` random unit vectors, ``CHUNKS_PER_ITEM`` per item, over ``BASES``
    bases, and the old leg over the same vectors."""
    rng = np.random.default_rng(seed)
    index = EmbeddedIndex()
    index.ensure_ready(model_id="synthetic", dimension=DIMENSION)
    items = chunks // CHUNKS_PER_ITEM
    everything = np.zeros((items * CHUNKS_PER_ITEM, DIMENSION), dtype=np.float32)
    row_group = np.zeros(items * CHUNKS_PER_ITEM, dtype=np.int64)
    old_chunks: list[ChunkHit] = []
    for first in range(0, items, BATCH_ITEMS):
        count = min(BATCH_ITEMS, items - first)
        vectors = _unit_rows(rng, count * CHUNKS_PER_ITEM)
        everything[first * CHUNKS_PER_ITEM : (first + count) * CHUNKS_PER_ITEM] = vectors
        batch = []
        for offset in range(count):
            number = first + offset
            rows = vectors[offset * CHUNKS_PER_ITEM : (offset + 1) * CHUNKS_PER_ITEM]
            ids = {
                "knowledge_base_id": f"kb_{number % BASES:02d}",
                "knowledge_item_id": f"ki_{number:08d}",
                "knowledge_revision_id": f"kr_{number:08d}",
            }
            row_group[number * CHUNKS_PER_ITEM : (number + 1) * CHUNKS_PER_ITEM] = number % BASES
            old_chunks += [
                ChunkHit(**ids, ordinal=ordinal, start=ordinal, end=ordinal + 1, text="x", score=0.0)
                for ordinal in range(CHUNKS_PER_ITEM)
            ]
            batch.append(
                IndexedItem.model_construct(
                    knowledge_base_id=ids["knowledge_base_id"],
                    knowledge_item_id=ids["knowledge_item_id"],
                    knowledge_revision_id=ids["knowledge_revision_id"],
                    tenant_id=TENANT,
                    version=1,
                    owner_id="owner",
                    team_id=None,
                    scope=Scope.TENANT.value,
                    title=f"item {number}",
                    chunks=[
                        IndexedChunk.model_construct(
                            ordinal=ordinal, start=ordinal, end=ordinal + 1, text="x", vector=row.tolist()
                        )
                        for ordinal, row in enumerate(rows)
                    ],
                    passages=[],
                )
            )
        index.upsert_many(batch)
        print(f"\rindexing: {(first + count) * CHUNKS_PER_ITEM:,}/{chunks:,} chunks", end="", file=sys.stderr)
    print(file=sys.stderr)
    groups = {f"kb_{number:02d}": number for number in range(BASES)}
    return index, CopyingLeg(everything, row_group, old_chunks, groups)


def _milliseconds(samples: Sequence[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return 1000 * statistics.median(ordered), 1000 * p95


def compare(
    index: EmbeddedIndex, old_leg: CopyingLeg, visibility: VisibilityFilter, queries: int, seed: int
) -> str:
    """One table row: old and new median/p95 ms, the speed-up, and whether the hits agree."""
    rng = np.random.default_rng(seed)
    old_times: list[float] = []
    new_times: list[float] = []
    same = 0
    largest = 0.0
    for number in range(queries):
        query = IndexQuery(
            text="",
            vector=_unit_rows(rng, 1)[0].tolist(),
            visibility=visibility,
            k=K,
            legs=frozenset({Leg.SEMANTIC}),
        )
        started = time.perf_counter()
        old = old_leg.search(query)
        old_times.append(time.perf_counter() - started)
        started = time.perf_counter()
        new = index.search(query).semantic
        new_times.append(time.perf_counter() - started)
        same += [(h.knowledge_item_id, h.ordinal) for h in old] == [
            (h.knowledge_item_id, h.ordinal) for h in new
        ]
        largest = max([largest, *(abs(a.score - b.score) for a, b in zip(old, new, strict=False))])
        print(f"\rqueries: {number + 1}/{queries}", end="", file=sys.stderr)
    print(file=sys.stderr)
    old_median, old_p95 = _milliseconds(old_times)
    new_median, new_p95 = _milliseconds(new_times)
    return (
        f"{old_median:.1f} / {old_p95:.1f} | {new_median:.1f} / {new_p95:.1f} | "
        f"{old_median / new_median:.1f}× | {same}/{queries} (largest score difference {largest:.1e})"
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--chunks", type=int, default=200_000)
    parser.add_argument("--queries", type=int, default=30)
    parser.add_argument("--seed", type=int, default=15)
    arguments = parser.parse_args(argv)
    index, old_leg = build(arguments.chunks, arguments.seed)
    caller = Principal(tenant_id=TENANT, subject_id="reader", scopes=frozenset({"knowledge:read"}))
    cases = {
        "every base": VisibilityFilter.for_principal(caller),
        "one base": VisibilityFilter.for_principal(caller, narrow_to="kb_00"),
    }
    print(
        f"semantic leg, {len(index):,} chunks of {DIMENSION} dimensions, k = {K}, {arguments.queries} queries"
    )
    print("| visible | copy (old) median / p95 ms | views (new) median / p95 ms | speed-up | same order |")
    print("|---|---|---|---|---|")
    for name, visibility in cases.items():
        print(f"| {name} | {compare(index, old_leg, visibility, arguments.queries, arguments.seed)} |")


if __name__ == "__main__":
    main()
