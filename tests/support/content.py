"""Revision content for the content tests of both stores: mixed scripts with grapheme clusters
that straddle page boundaries."""

from __future__ import annotations

import random

from knowledge.domain.models import Revision, Source
from knowledge.ports import CatalogStore
from tests.support.store import make_base

TENANT = "tenant-a"
PAGE = 1_000
FAMILY = "\U0001f469\u200d\U0001f469\u200d\U0001f467\u200d\U0001f466"  # 7 code points, one grapheme
FLAG = "\U0001f1eb\U0001f1f7"
THUMBS = "\U0001f44d\U0001f3fd"
CJK = "知識ベースの検索"
COMBINING = "e\u0301te\u0301 cafe\u0301 n\u0303"


def unicode_content() -> str:
    """About 3,600 code points mixing scripts, with a ZWJ sequence straddling the first page boundary."""
    pieces = ["a" * (PAGE - 3), FAMILY]
    rng = random.Random(7)
    alphabet = [FAMILY, FLAG, THUMBS, CJK, COMBINING, "plain words ", "\n\n## Heading\n", "Ω≈ç√"]
    while sum(map(len, pieces)) < 3_600:
        pieces.append(rng.choice(alphabet))
    return "".join(pieces)


def store_revision(store: CatalogStore, content: str) -> Revision:
    base = make_base(store, TENANT)
    _, revision = store.create_item(
        TENANT,
        base.knowledge_base_id,
        title="Doc",
        content=content,
        source=Source(),
        external_id=None,
        publish=True,
    )
    return revision
