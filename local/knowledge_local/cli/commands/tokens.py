"""``knowledge token create|list|revoke|rotate``: bearer tokens through the token API (``create``
prints the token once; ``list`` one line per token, never a secret, and the command for the next
page; ``revoke`` takes the tokens it issued with it); ``rotate`` replaces the dev token of the local
runtime's state directory instead (``dev_token``, on its AWS endpoint: the one command that does not
use the API)."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from collections.abc import Sequence
from typing import Any

from knowledge.domain.models import Permission
from knowledge_local.cli.arguments import (
    UsageError,
    comma_list,
    page_size,
    parse_duration,
    program_name,
    token_id,
)
from knowledge_local.cli.client import KnowledgeClient
from knowledge_local.state import TOKEN_FILE, display_path, state_dir, state_dir_prefix

SCOPES = tuple(permission.value for permission in Permission)


def add_commands(commands: Any, shared: Sequence[argparse.ArgumentParser]) -> None:
    """Register ``token`` with its ``create``, ``list``, ``revoke`` and ``rotate`` on the
    ``knowledge`` parser's commands."""
    token_parser = commands.add_parser("token", help="manage bearer tokens", parents=shared)
    token_commands = token_parser.add_subparsers(dest="token_command", required=True, metavar="COMMAND")
    create = token_commands.add_parser("create", help="issue a token (printed once)", parents=shared)
    create.add_argument("--subject", default="agent", help="subject id the token acts as (agent)")
    create.add_argument(
        "--scopes", default=Permission.READ.value, help=f"comma-separated, of {', '.join(SCOPES)}"
    )
    create.add_argument("--teams", help="comma-separated team ids")
    create.add_argument("--bases", help="comma-separated knowledge base ids the token is limited to")
    create.add_argument(
        "--expires-in",
        help="lifetime: seconds, or 90m, 12h, 30d (default: never; a token minted by an expiring token "
        "expires with it, at the latest)",
    )
    create.add_argument("--tenant", help="tenant id (default: the caller's; another needs platform:admin)")
    create.set_defaults(run=_token_create)
    listing = token_commands.add_parser(
        "list", help="list the tokens you may revoke (never their secrets)", parents=shared
    )
    listing.add_argument("--limit", type=page_size, default=50, help="tokens per page, 1-100 (50)")
    listing.add_argument("--next-token", help="the next_token a previous page printed")
    listing.add_argument("--tenant", help="tenant id (default: the caller's; another needs platform:admin)")
    listing.add_argument("--json", action="store_true", help="print the API's JSON answer")
    listing.set_defaults(run=_token_list)
    revoke = token_commands.add_parser(
        "revoke", help="revoke a token and every token it issued", parents=shared
    )
    revoke.add_argument("token_id", type=token_id, help="the token's id (64 hex characters, `token list`)")
    revoke.set_defaults(run=_token_revoke)
    rotate = token_commands.add_parser(
        "rotate",
        help="make run only: write a new dev token to the state directory and revoke the old one "
        "(and every token it issued)",
    )
    rotate.set_defaults(run=_token_rotate, state_only=True)


def _token_create(client: KnowledgeClient, arguments: argparse.Namespace) -> int:
    scopes = comma_list(arguments.scopes)
    unknown = sorted(set(scopes) - set(SCOPES))
    if unknown:
        raise UsageError(f"unknown scope(s) {', '.join(unknown)}; choose from {', '.join(SCOPES)}")
    answer = client.create_token(
        tenant_id=arguments.tenant,
        subject_id=arguments.subject,
        scopes=scopes,
        team_ids=comma_list(arguments.teams),
        knowledge_base_ids=comma_list(arguments.bases) if arguments.bases is not None else None,
        expires_in=parse_duration(arguments.expires_in) if arguments.expires_in is not None else None,
    )
    print(answer["token"])
    print(
        f"Token for {arguments.subject} with {', '.join(scopes)}: shown once, store it now.", file=sys.stderr
    )
    return 0


def _token_list(client: KnowledgeClient, arguments: argparse.Namespace) -> int:
    page = client.tokens(limit=arguments.limit, next_token=arguments.next_token, tenant_id=arguments.tenant)
    if arguments.json:
        print(json.dumps(page, indent=2, ensure_ascii=False))
        return 0
    tokens = page.get("tokens") or []
    print(tokens_table(tokens) if tokens else "No tokens.")
    next_token = page.get("next_token")
    if next_token:
        more = [
            f"{state_dir_prefix(state_dir())}{program_name()} token list --limit {arguments.limit}",
            *(["--tenant", shlex.quote(arguments.tenant)] if arguments.tenant else []),
            "--next-token",
            shlex.quote(str(next_token)),
        ]
        print(f"more tokens: {' '.join(more)}", file=sys.stderr)
    return 0


def _token_revoke(client: KnowledgeClient, arguments: argparse.Namespace) -> int:
    client.revoke_token(arguments.token_id)
    print(f"Revoked {arguments.token_id} and every token it issued (directly or not).")
    return 0


def _token_rotate(arguments: argparse.Namespace) -> int:
    from knowledge.observability import logger as service_logger
    from knowledge_local.cli.dev_token import rotate_running  # boto3 and the store: only for this command

    if getattr(arguments, "api_url", None) or getattr(arguments, "token", None):
        raise UsageError(
            "token rotate replaces the dev token of the local runtime's state directory "
            "(KNOWLEDGE_STATE_DIR); it takes no --api-url or --token"
        )
    directory = state_dir()
    # The token service logs each token it writes as a Lambda would (JSON on stdout); the command's
    # own answer is the line below, and a warning or an error still reaches the terminal.
    level = service_logger.log_level
    service_logger.setLevel("WARNING")
    try:
        rotated = rotate_running(directory)
    finally:
        service_logger.setLevel(level)
    print(
        f"New dev token written to {display_path(directory / TOKEN_FILE)}; {rotated.revoked} earlier "
        "dev token(s) revoked, with every token they issued."
    )
    return 0


def tokens_table(tokens: list[dict[str, Any]]) -> str:
    """One line per token: id, subject, scopes, bases, issuer, expiry and state, in aligned columns
    (ids shortened to 12 characters: enough to tell them apart, ``--json`` has them whole)."""

    def short(token_id: Any) -> str:
        return str(token_id)[:12] if token_id else "-"

    def state(token: dict[str, Any]) -> str:
        if token.get("revoked_ancestor_token_id"):
            return f"revoked (via {short(token['revoked_ancestor_token_id'])})"
        return "revoked" if token.get("revoked") else "active"

    rows = [
        (
            str(token.get("token_id", "")),
            str(token.get("subject_id", "")),
            ",".join(token.get("scopes") or []),
            ",".join(token["knowledge_base_ids"]) if token.get("knowledge_base_ids") is not None else "all",
            short(token.get("issuer_token_id")),
            str(token.get("expires_at") or "never"),
            state(token),
        )
        for token in tokens
    ]
    header = ("token_id", "subject", "scopes", "bases", "issuer", "expires", "state")
    widths = [max(len(row[column]) for row in [header, *rows]) for column in range(len(header))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in [header, *rows]
    )
