"""The dev token of a state directory: one per directory, kept across restarts, rotatable.

The dev token is a root token (no issuer) of tenant ``dev``, subject ``dev``, with every scope and
no expiry, written to ``dev-token`` in the state directory (mode 0600, ``state.write_token``).

- ``ensure`` (each start of ``make run``): the token in ``dev-token`` is reused when the table
  (restored from the state directory with ``KNOWLEDGE_PERSIST``) holds it as a valid dev token;
  otherwise (no file, a fresh table, a revoked token) a new one is issued and replaces the file.
- ``rotate`` (``knowledge token rotate``, ``rotate_running``: on a running runtime, whose table is
  written at its AWS endpoint): a new dev token replaces the file.

Whenever a dev token is issued, every other valid dev token of the table is revoked, and with it
every token it minted (``TokenService``'s lineage check): a table never holds more than one valid
dev token, so neither restarts nor rotations leave never-expiring admin tokens behind. The new
token is written before the old ones are revoked, so an interruption leaves a file that works.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from knowledge.adapters.dynamodb.knowledge_store import DynamoDBKnowledgeStore
from knowledge.domain.models import Permission, TokenRecord
from knowledge.ports import TokenStore
from knowledge.services.tokens import TokenService
from knowledge_local.account import aws_client
from knowledge_local.state import StateError, read_token, running_instance, write_token

TENANT_ID = "dev"
SUBJECT_ID = "dev"
SCOPES = tuple(permission.value for permission in Permission)
LISTING_PAGE = 100


@dataclass(frozen=True)
class DevToken:
    """The state directory's dev token; ``reused`` when it was already there and valid."""

    token: str
    reused: bool
    revoked: int = 0
    """Other dev tokens revoked when this one was issued."""


def is_dev_token(record: TokenRecord) -> bool:
    """True for a dev token's record: a root token of ``dev``/``dev`` holding every scope, with
    no allow-list and no expiry."""
    return (
        record.tenant_id == TENANT_ID
        and record.subject_id == SUBJECT_ID
        and record.scopes == frozenset(SCOPES)
        and not record.ancestor_token_ids
        and record.knowledge_base_ids is None
        and record.expires_at is None
    )


def ensure(tokens: TokenService, store: TokenStore, directory: Path) -> DevToken:
    """The dev token of ``directory``: the one in its ``dev-token`` file when ``tokens`` resolves
    it to a dev token, else a new one (written to the file; other dev tokens revoked)."""
    saved = _saved(directory)
    if saved is not None:
        record = tokens.resolve(saved)
        if record is not None and is_dev_token(record):
            return DevToken(saved, reused=True)
    return _issue(tokens, store, directory)


def rotate(tokens: TokenService, store: TokenStore, directory: Path) -> DevToken:
    """A new dev token for ``directory``, written to its ``dev-token`` file; every other dev token
    (the previous one included) is revoked with what it minted."""
    return _issue(tokens, store, directory)


def rotate_running(directory: Path) -> DevToken:
    """``rotate`` for the runtime serving from ``directory``, whose table is written at its AWS
    endpoint (``endpoints.json``). ``StateError`` when no runtime answers from ``directory``."""
    endpoints = running_instance(directory)
    if endpoints is None:
        raise StateError(
            f"No runtime serves from {directory}: start it (`make run`), then rotate its dev token."
        )
    store = DynamoDBKnowledgeStore(
        endpoints.table_name, dynamodb_client=aws_client("dynamodb", endpoints.aws_endpoint_url)
    )
    return rotate(TokenService(store), store, directory)


def _saved(directory: Path) -> str | None:
    try:
        return read_token(directory)
    except StateError:
        return None
    except (OSError, UnicodeDecodeError):
        return None


def _issue(tokens: TokenService, store: TokenStore, directory: Path) -> DevToken:
    token, record = tokens.issue(tenant_id=TENANT_ID, subject_id=SUBJECT_ID, scopes=SCOPES)
    write_token(directory, token)
    revoked = _revoke_other_dev_tokens(store, keep=record.token_hash)
    return DevToken(token, reused=False, revoked=revoked)


def _revoke_other_dev_tokens(store: TokenStore, *, keep: str) -> int:
    """Revoke every valid dev token but ``keep``; how many were revoked."""

    def other_valid_dev_token(record: TokenRecord) -> bool:
        return record.token_hash != keep and not record.revoked and is_dev_token(record)

    stale: list[str] = []
    next_token: str | None = None
    while True:
        page = store.list_tokens(
            TENANT_ID, limit=LISTING_PAGE, next_token=next_token, admits=other_valid_dev_token
        )
        stale.extend(record.token_hash for record in page.entries)
        next_token = page.next_token
        if next_token is None:
            break
    for token_hash in stale:
        store.revoke_token(token_hash)
    return len(stale)
