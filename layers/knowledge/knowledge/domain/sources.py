"""Where written content came from, as a write accepts it: ``SafeSource``, a ``Source`` whose
``uri`` is safe to turn into a link.

Search results hand ``source.uri`` to agents and user interfaces, which render it as a link, so a
write accepts only:

- an absolute ``https:`` or ``http:`` URL with a host (``https://docs.example.com/http2``), or an
  ``s3:`` URL with a bucket (``s3://docs/kafka/lag.md``: pipelines ingest from buckets; no browser
  runs anything from it);
- a relative reference without a scheme (``guides/http2.md``, ``/docs/http2``, ``#streams``),
  which ``knowledge ingest`` writes by default: the file's path under the ingested folder.

Every other scheme (``javascript:``, ``data:``, ``vbscript:``, ``file:`` — the last would publish a
curator's local paths), a scheme-relative ``//host`` reference, and control characters or
whitespace anywhere (browsers drop some of them before reading the scheme, so ``java\\tscript:``
is ``javascript:``) are ``validation_error`` on the ``source`` field. The value stays a plain
``Source``, so it compares equal to the stored one (an unchanged upsert writes nothing).
"""

from __future__ import annotations

import re
from typing import Annotated
from urllib.parse import urlsplit

from pydantic import AfterValidator
from pydantic_core import PydanticCustomError

from knowledge.domain.models import Source

SAFE_SCHEMES = frozenset({"https", "http", "s3"})
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")
_UNSAFE_CHARACTER = re.compile(r"[\x00-\x20\x7f-\x9f]")
URI_PROBLEM = (
    "uri must be an https://, http:// or s3:// URL with a host, or a relative reference without a scheme "
    "(such as guides/http2.md), with no spaces or control characters"
)


def is_safe_uri(uri: str) -> bool:
    """True when ``uri`` is an http(s) or s3 URL with a host or a scheme-less relative reference."""
    if not uri or _UNSAFE_CHARACTER.search(uri) or uri.startswith(("//", "\\")):
        return False
    scheme = _SCHEME.match(uri)
    if scheme is None:
        return ":" not in uri.split("/", 1)[0]
    return scheme.group(1).lower() in SAFE_SCHEMES and bool(urlsplit(uri).hostname)


def _require_safe_uri(source: Source) -> Source:
    if source.uri is not None and not is_safe_uri(source.uri):
        raise PydanticCustomError("unsafe_uri", URI_PROBLEM)
    return source


SafeSource = Annotated[Source, AfterValidator(_require_safe_uri)]
"""A write's ``source``: ``uri`` is checked by ``is_safe_uri`` (``validation_error`` otherwise)."""
